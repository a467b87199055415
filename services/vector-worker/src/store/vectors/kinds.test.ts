/**
 * Vector kinds on real Postgres: sparse search (dot product, IDF with and without a corpus, the
 * inverted index following every write), multivectors (MaxSim per distance, legacy forms,
 * validation), datatypes (uint8, float16, turbo4), mixed named vectors and named vector
 * create/delete. Expected scores are computed by hand in the test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bm25 } from './bm25.ts';
import { dropSparseIndex } from './sparse.ts';
import { openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
beforeAll(async () => {
  t = await openTestStore('kinds');
});
afterAll(async () => {
  await t.close();
});

const ids = (points: { id: unknown }[]) => points.map((p) => p.id);
const idf = (n: number, df: number) => Math.log((n - df + 0.5) / (df + 0.5) + 1);

describe('sparse vectors', () => {
  beforeAll(async () => {
    await t.store.createCollection('sparse', {
      vectors: { dense: { size: 2, distance: 'Dot' } },
      sparse_vectors: { text: {}, rare: { modifier: 'idf' } },
    });
    await t.store.upsertPoints('sparse', {
      points: [
        { id: 1, vector: { text: { indices: [3, 1], values: [0.5, 2] }, rare: { indices: [0, 1], values: [1, 1] } }, payload: { t: 'a' } },
        { id: 2, vector: { text: { indices: [1, 7], values: [1, 4] }, rare: { indices: [0], values: [1] } }, payload: { t: 'a' } },
        { id: 3, vector: { text: { indices: [9], values: [1] }, rare: { indices: [0, 1, 2], values: [1, 1, 1] } }, payload: { t: 'b' } },
        { id: 4, vector: { dense: [1, 0] }, payload: { t: 'b' } },
      ],
    });
  });

  it('scores are dot products over shared dimensions; points without one are not found', async () => {
    const res = await t.store.queryPoints('sparse', { query: { indices: [1, 7, 3], values: [1, 0.5, 2] }, using: 'text' });
    // 1: 2·1 + 0.5·2 = 3; 2: 1·1 + 4·0.5 = 3 → tie, id order; 3 shares nothing.
    expect(res.points.map((p) => [p.id, p.score])).toEqual([
      [1, 3],
      [2, 3],
    ]);
  });

  it('retrieve returns indices sorted, values with them', async () => {
    const [rec] = await t.store.retrievePoints('sparse', { ids: [1], with_vector: ['text'] });
    expect(rec!.vector).toEqual({ text: { indices: [1, 3], values: [2, 0.5] } });
  });

  it('by point id, filter, threshold and the deprecated search form', async () => {
    const byId = await t.store.queryPoints('sparse', { query: 2, using: 'text' });
    // From 2's vector {1: 1, 7: 4}: point 1 scores 2·1 = 2; 2 itself is left out.
    expect(byId.points.map((p) => [p.id, p.score])).toEqual([[1, 2]]);
    const filtered = await t.store.queryPoints('sparse', {
      query: { indices: [1], values: [1] },
      using: 'text',
      filter: { must: [{ key: 't', match: { value: 'a' } }] },
      score_threshold: 1.5,
    });
    expect(ids(filtered.points)).toEqual([1]);
    const legacy = await t.store.searchPoints('sparse', { vector: { name: 'text', vector: { indices: [7], values: [1] } }, limit: 5 });
    expect(legacy.map((p) => [p.id, p.score])).toEqual([[2, 4]]);
  });

  it('the index follows updates and deletes of vectors and points', async () => {
    await t.store.upsertPoints('sparse', { points: [{ id: 10, vector: { text: { indices: [42], values: [2] } } }] });
    const q = { query: { indices: [42], values: [1] }, using: 'text' };
    expect(ids((await t.store.queryPoints('sparse', q)).points)).toEqual([10]);
    await t.store.updateVectors('sparse', { points: [{ id: 10, vector: { text: { indices: [43], values: [1] } } }] });
    expect((await t.store.queryPoints('sparse', q)).points).toEqual([]);
    await t.store.updateVectors('sparse', { points: [{ id: 10, vector: { text: { indices: [42], values: [3] } } }] });
    expect((await t.store.queryPoints('sparse', q)).points.map((p) => p.score)).toEqual([3]);
    await t.store.deleteVectors('sparse', { points: [10], vector: ['text'] });
    expect((await t.store.queryPoints('sparse', q)).points).toEqual([]);
    await t.store.updateVectors('sparse', { points: [{ id: 10, vector: { text: { indices: [42], values: [1] } } }] });
    await t.store.deletePoints('sparse', { points: [10] });
    expect((await t.store.queryPoints('sparse', q)).points).toEqual([]);
    const [row] = await t.sql<{ n: number }[]>`
      select count(*)::int as n from ${t.sql(t.schema)}.${t.sql('points_1_sparse')} where idx = 42`;
    expect(row!.n).toBe(0);
  });

  it('IDF weights the query by ln((N − df + 0.5)/(df + 0.5) + 1), globally or over a corpus', async () => {
    const q = { query: { indices: [0, 1, 2], values: [1, 1, 1] }, using: 'rare' };
    const global = Object.fromEntries((await t.store.queryPoints('sparse', q)).points.map((p) => [p.id, p.score]));
    // N = 3 points with `rare`; df = [3, 2, 1].
    expect(global[3]).toBeCloseTo(idf(3, 3) + idf(3, 2) + idf(3, 1), 5);
    expect(global[1]).toBeCloseTo(idf(3, 3) + idf(3, 2), 5);
    expect(global[2]).toBeCloseTo(idf(3, 3), 5);
    const corpus = await t.store.queryPoints('sparse', { ...q, params: { idf: { corpus: { must: [{ key: 't', match: { value: 'b' } }] } } } });
    // Corpus: only point 3 has `rare` (N = 1, df = [1, 1, 1]).
    const byId = Object.fromEntries(corpus.points.map((p) => [p.id, p.score]));
    expect(byId[3]).toBeCloseTo(3 * idf(1, 1), 5);
    expect(byId[2]).toBeCloseTo(idf(1, 1), 5);
  });

  it('errors in Qdrant wording', async () => {
    const err = await qdrantError(t.store.queryPoints('sparse', { query: [1, 0], using: 'dense', params: { idf: 'global' } }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('idf');
    const dup = await qdrantError(
      t.store.createCollection('dup', { vectors: { a: { size: 2, distance: 'Dot' } }, sparse_vectors: { a: {} } }),
    );
    expect(dup.message).toContain("Dense and sparse vector names must be unique - duplicate found with 'a'");
    const turbo = await qdrantError(t.store.createCollection('t4', { sparse_vectors: { s: { index: { datatype: 'turbo4' } } } }));
    expect(turbo.message).toContain('sparse vectors do not support');
    const len = await qdrantError(
      t.store.upsertPoints('sparse', { points: [{ id: 5, vector: { text: { indices: [1, 2], values: [1] } } }] }),
    );
    expect(len.status).toBe(422);
    expect(len.message).toBe('Validation error in JSON body: [points[0].vector.?.values: Validation error: must be the same length as indices [{}]]');
  });

  it('MMR on a sparse vector: with full diversity the second pick is the least like the first', async () => {
    await t.store.createCollection('mmr', { sparse_vectors: { s: {} } });
    await t.store.upsertPoints('mmr', {
      points: [
        { id: 1, vector: { s: { indices: [1, 2], values: [1, 1] } } },
        { id: 2, vector: { s: { indices: [1, 2], values: [1, 0.9] } } },
        { id: 3, vector: { s: { indices: [1, 5], values: [0.8, 1] } } },
      ],
    });
    const q = { indices: [1, 2], values: [1, 1] };
    const plain = await t.store.queryPoints('mmr', { query: q, using: 's' });
    expect(plain.points.map((p) => [p.id, p.score])).toEqual([[1, 2], [2, 1.9], [3, 0.8]]);
    // λ = 0: after 1, point 3 (similarity 0.8 to 1) beats point 2 (1.9); scores stay the nearest ones.
    const diverse = await t.store.queryPoints('mmr', { query: { nearest: q, mmr: { diversity: 1 } }, using: 's' });
    expect(diverse.points.map((p) => [p.id, p.score])).toEqual([[1, 2], [3, 0.8], [2, 1.9]]);
  });

  it('BM25 documents become sparse vectors: murmur3 token ids, stop words dropped, TF saturation', async () => {
    // abs(mmh3.hash(token)): "hello" 613153351, "foo" |−156908512|.
    expect(bm25({ text: 'Hello, the FOO!', model: 'qdrant/bm25' }, true)).toEqual({ indices: [156908512, 613153351], values: [1, 1] });
    const doc = bm25({ text: 'foo foo hello', model: 'qdrant/bm25' }, false);
    // tf·2.2 / (tf + 1.2·(0.25 + 0.75·3/256)), len = 3.
    const norm = 1.2 * (0.25 + (0.75 * 3) / 256);
    expect(doc.values[0]).toBeCloseTo((2 * 2.2) / (2 + norm), 5);
    expect(doc.values[1]).toBeCloseTo(2.2 / (1 + norm), 5);
    await t.store.upsertPoints('sparse', { points: [{ id: 20, vector: { text: { text: 'foo bar', model: 'qdrant/bm25' } } }] });
    const res = await t.store.queryPoints('sparse', { query: { text: 'foo', model: 'qdrant/bm25' }, using: 'text' });
    expect(ids(res.points)).toEqual([20]);
    await t.store.deletePoints('sparse', { points: [20] });
  });

  it('a collection made before the inverted index gets it, filled, from sparse_index_create (migration 0004)', async () => {
    await t.store.createCollection('old', { sparse_vectors: { s: {} } });
    await t.store.upsertPoints('old', { points: [{ id: 1, vector: { s: { indices: [4], values: [2] } } }] });
    const [{ id }] = (await t.sql`select id from ${t.sql(t.schema)}.collections where name = 'old'`) as unknown as [{ id: number }];
    // As before this change: no posting table, no trigger.
    await t.sql.begin((tx) => dropSparseIndex(tx, t.schema, id));
    await t.sql`select ${t.sql(t.schema)}.sparse_index_create(${t.schema}, ${id})`;
    const res = await t.store.queryPoints('old', { query: { indices: [4], values: [1] }, using: 's' });
    expect(res.points.map((p) => [p.id, p.score])).toEqual([[1, 2]]);
  });

  it('has_vector sees sparse vectors', async () => {
    const res = await t.store.countPoints('sparse', { filter: { must: [{ has_vector: 'text' }] } });
    expect(res.count).toBe(3);
  });
});

describe('multivectors', () => {
  beforeAll(async () => {
    await t.store.createCollection('multi', {
      vectors: {
        dot: { size: 2, distance: 'Dot', multivector_config: { comparator: 'max_sim' } },
        l2: { size: 2, distance: 'Euclid', multivector_config: { comparator: 'max_sim' } },
      },
    });
    await t.store.upsertPoints('multi', {
      points: [
        { id: 1, vector: { dot: [[1, 0], [0, 2]], l2: [[0, 0], [3, 4]] } },
        { id: 2, vector: { dot: [[2, 2]], l2: [[1, 1]] } },
      ],
    });
  });

  it('Dot: Σ over query rows of the best dot product', async () => {
    const res = await t.store.queryPoints('multi', { query: [[1, 1], [1, 0]], using: 'dot', with_vector: ['dot'] });
    // 1: max(1, 2) + max(1, 0) = 3; 2: 4 + 2 = 6.
    expect(res.points.map((p) => [p.id, p.score])).toEqual([
      [2, 6],
      [1, 3],
    ]);
    expect(res.points[1]!.vector).toEqual({ dot: [[1, 0], [0, 2]] });
  });

  it('Euclid: √|Σ max −d²|, closest first', async () => {
    const res = await t.store.queryPoints('multi', { query: [[0, 0], [3, 3]], using: 'l2' });
    // 1: rows (0,0)→0, (3,3)→min(18, 1) = 1 → √1; 2: (0,0)→2, (3,3)→8 → √10.
    expect(res.points.map((p) => p.id)).toEqual([1, 2]);
    expect(res.points[0]!.score).toBe(1);
    expect(res.points[1]!.score).toBeCloseTo(Math.sqrt(10), 5);
  });

  it('a plain vector is a one-row multivector (upsert and query); rows are validated', async () => {
    await t.store.upsertPoints('multi', { points: [{ id: 3, vector: { dot: [1, 1] } }] });
    const [rec] = await t.store.retrievePoints('multi', { ids: [3], with_vector: true });
    expect(rec!.vector).toEqual({ dot: [[1, 1]] });
    const res = await t.store.queryPoints('multi', { query: [1, 0], using: 'dot', limit: 1 });
    expect(res.points.map((p) => [p.id, p.score])).toEqual([[2, 2]]);
    const ragged = await qdrantError(t.store.upsertPoints('multi', { points: [{ id: 4, vector: { dot: [[1, 1], [1]] } }] }));
    expect(ragged.message).toContain('points[0].vector.?.data: all vectors must have the same dimension, found vector with dimension 1');
    const dim = await qdrantError(t.store.upsertPoints('multi', { points: [{ id: 4, vector: { dot: [[1, 1, 1]] } }] }));
    expect(dim.message).toBe('Wrong input: Vector dimension error: expected dim: 2, got 3');
  });

  it('recommend best_score on a multivector scores by MaxSim', async () => {
    const res = await t.store.queryPoints('multi', { query: { recommend: { negative: [[1, 0]], strategy: 'best_score' } }, using: 'dot' });
    for (const p of res.points) expect(p.score).toBeLessThan(0);
  });
});

describe('datatypes', () => {
  it('uint8 truncates and saturates; float16 rounds to half precision; turbo4 keeps 4-bit levels', async () => {
    await t.store.createCollection('types', {
      vectors: {
        u8: { size: 3, distance: 'Dot', datatype: 'uint8' },
        f16: { size: 2, distance: 'Dot', datatype: 'float16' },
        t4: { size: 4, distance: 'Dot', datatype: 'turbo4' },
      },
    });
    await t.store.upsertPoints('types', {
      points: [{ id: 1, vector: { u8: [1.9, -3, 300], f16: [0.1, 1], t4: [1, -0.5, 0.1, 0.7] } }],
    });
    const [rec] = await t.store.retrievePoints('types', { ids: [1], with_vector: true });
    const v = rec!.vector as Record<string, number[]>;
    expect(v.u8).toEqual([1, 0, 255]);
    // The nearest half-precision value of 0.1 (0.0999755859375), printed as its shortest f32 form.
    expect(v.f16).toEqual([0.099975586, 1]);
    // Levels k·max/7: 1 → 7/7, −0.5 → −3/7 (−3.5 rounds up), 0.1 → 1/7, 0.7 → 5/7.
    expect(v.t4!.map((x) => Math.round(x * 7))).toEqual([7, -3, 1, 5]);
    const res = await t.store.queryPoints('types', { query: [1, 1], using: 'f16' });
    expect(res.points[0]!.score).toBeCloseTo(1.0999755859375, 5);
  });
});

describe('named vectors on an existing collection', () => {
  it('creates a dense and a sparse vector, deletes and re-creates with another size', async () => {
    await t.store.createCollection('names', { vectors: { a: { size: 2, distance: 'Dot' } } });
    await t.store.upsertPoints('names', { points: [{ id: 1, vector: { a: [1, 2] } }] });
    await t.store.createVectorName('names', 'b', { dense: { size: 3, distance: 'Cosine' } });
    await t.store.createVectorName('names', 's', { sparse: {} });
    await t.store.updateVectors('names', { points: [{ id: 1, vector: { b: [0, 3, 4], s: { indices: [5], values: [1] } } }] });
    let [rec] = await t.store.retrievePoints('names', { ids: [1], with_vector: true });
    expect(rec!.vector).toEqual({ a: [1, 2], b: [0, 0.6, 0.8], s: { indices: [5], values: [1] } });
    await t.store.deleteVectorName('names', 'a');
    await t.store.deleteVectorName('names', 's');
    await t.store.createVectorName('names', 'a', { dense: { size: 5, distance: 'Dot' } });
    [rec] = await t.store.retrievePoints('names', { ids: [1], with_vector: true });
    expect(rec!.vector).toEqual({ b: [0, 0.6, 0.8] });
    const info = await t.store.getCollection('names');
    expect(Object.keys(info.config.params.vectors)).toEqual(['a', 'b']);
    const exists = await qdrantError(t.store.createVectorName('names', 'b', { dense: { size: 3, distance: 'Dot' } }));
    expect(exists.status).toBe(400);
    const zero = await qdrantError(t.store.createVectorName('names', 'z', { dense: { size: 0, distance: 'Dot' } }));
    expect(zero.status).toBe(422);
    expect(zero.message).toContain('size');
  });
});
