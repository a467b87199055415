/**
 * Search and query: ports of Qdrant's test_score_threshold.py, test_euclid_dist.py,
 * test_manhattan_dist.py, test_query.py, test_payload_selector.py, and filtered-search recall
 * against a brute-force top-k.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { basicCollectionSetup, dot, openTestStore, qdrantError, TEST_DATABASE_URL, type TestStore } from '../test-support.ts';
import { VectorStore } from '../vector-store.ts';
import { KNN_SESSION, knnSessionPool } from './search.ts';

let t: TestStore;
beforeAll(async () => {
  t = await openTestStore('search');
  await basicCollectionSetup(t.store, 'basic');
  await t.store.createFieldIndex('basic', { field_name: 'price', field_schema: 'float' });
});
afterAll(async () => {
  await t.close();
});

// biome-ignore lint/correctness/noPrecisionLoss: u64::MAX as a JSON client sends it (parsed to the nearest double).
const U64_MAX = 18446744073709551615;

describe('scores and thresholds', () => {
  it('Dot scores are raw dot products, best first', async () => {
    const q = [0.2, 0.1, 0.9, 0.7];
    const res = await t.store.searchPoints('basic', { vector: q, limit: 3, with_vector: true });
    expect(res).toHaveLength(3);
    for (const p of res) expect(p.score).toBeCloseTo(dot(q, p.vector as number[]), 5);
    expect(res[0]!.score).toBeGreaterThanOrEqual(res[1]!.score);
  });

  it('score_threshold is strict (test_score_threshold)', async () => {
    const q = { vector: [0.2, 0.1, 0.9, 0.7], limit: 3 };
    const res = await t.store.searchPoints('basic', q);
    const second = res[1]!.score;
    expect(await t.store.searchPoints('basic', { ...q, score_threshold: second + 0.0001 })).toHaveLength(1);
    expect(await t.store.searchPoints('basic', { ...q, score_threshold: second - 0.0001 })).toHaveLength(2);
    // Exactly the second score: strict, so it is left out.
    expect(await t.store.searchPoints('basic', { ...q, score_threshold: second })).toHaveLength(1);
  });

  it('query score_threshold (test_query.test_score_threshold): 8 dense points, fewer above the 4th score', async () => {
    const all = (await t.store.queryPoints('basic', { query: [0.1, 0.2, 0.3, 0.4] })).points;
    expect(all).toHaveLength(8);
    const threshold = all[3]!.score;
    const some = (await t.store.queryPoints('basic', { query: [0.1, 0.2, 0.3, 0.4], score_threshold: threshold })).points;
    expect(some.length).toBeLessThan(8);
    for (const p of some) expect(p.score).toBeGreaterThanOrEqual(threshold);
  });

  for (const [distance, scores, kept] of [
    ['Euclid', [1.0, Math.SQRT2, 2 * Math.SQRT2], 2],
    ['Manhattan', [1.0, 2.0, 4.0], 1],
  ] as const) {
    it(`${distance}: ascending distances as scores, threshold keeps score < t (test_${distance.toLowerCase()}_dist)`, async () => {
      const name = `dist_${distance}`;
      await t.store.createCollection(name, { vectors: { size: 2, distance } });
      await t.store.upsertPoints(name, {
        points: [
          { id: 1, vector: [0.0, 0.0], payload: { city: 'Berlin' } },
          { id: 2, vector: [0.0, 1.0], payload: { city: ['Berlin', 'London'] } },
          { id: 3, vector: [-1.0, -1.0], payload: { city: ['Berlin', 'Moscow'] } },
        ],
      });
      const res = await t.store.searchPoints(name, { vector: [1.0, 1.0], limit: 3 });
      expect(res.map((p) => p.id)).toEqual([2, 1, 3]);
      res.forEach((p, i) => expect(p.score).toBeCloseTo(scores[i]!, 5));
      const cut = await t.store.searchPoints(name, { vector: [1.0, 1.0], limit: 3, score_threshold: 1.5 });
      expect(cut.map((p) => p.id)).toEqual([2, 1].slice(0, kept));
      // Same through query.
      const q = await t.store.queryPoints(name, { query: [1.0, 1.0], score_threshold: 1.5 });
      expect(q.points.map((p) => p.id)).toEqual([2, 1].slice(0, kept));
    });
  }

  it('Cosine: a point scores 1 against itself; scores are cosine similarities', async () => {
    await t.store.createCollection('cos', { vectors: { size: 3, distance: 'Cosine' } });
    await t.store.upsertPoints('cos', {
      points: [
        { id: 1, vector: [1, 0, 0] },
        { id: 2, vector: [1, 1, 0] },
        { id: 3, vector: [-1, 0, 0] },
      ],
    });
    const res = (await t.store.queryPoints('cos', { query: [2, 0, 0] })).points;
    expect(res.map((p) => p.id)).toEqual([1, 2, 3]);
    expect(res[0]!.score).toBeCloseTo(1, 6);
    expect(res[1]!.score).toBeCloseTo(Math.SQRT1_2, 6);
    expect(res[2]!.score).toBeCloseTo(-1, 6);
    const above = (await t.store.queryPoints('cos', { query: [2, 0, 0], score_threshold: 0 })).points;
    expect(above.map((p) => p.id)).toEqual([1, 2]);
  });
});

describe('query', () => {
  it('search, query with a raw vector and {nearest} agree, also with limit u64::MAX (test_basic_search*)', async () => {
    const q = [0.1, 0.2, 0.3, 0.4];
    for (const limit of [10, U64_MAX]) {
      const search = await t.store.searchPoints('basic', { vector: q, limit });
      const raw = (await t.store.queryPoints('basic', { query: q, limit })).points;
      const nearest = (await t.store.queryPoints('basic', { query: { nearest: q }, limit })).points;
      expect(search).toHaveLength(8);
      expect(raw).toEqual(search);
      expect(nearest).toEqual(search);
    }
  });

  it('no query: id order like scroll, offset skips (test_basic_scroll, test_basic_scroll_offset)', async () => {
    const scroll = (await t.store.scrollPoints('basic', {})).points;
    const query = (await t.store.queryPoints('basic', { with_payload: true })).points;
    expect(query.map((p) => p.id)).toEqual(scroll.map((p) => p.id));
    expect(query.map((p) => p.payload)).toEqual(scroll.map((p) => p.payload));
    const scrollFrom2 = (await t.store.scrollPoints('basic', { offset: 2 })).points;
    const skip1 = (await t.store.queryPoints('basic', { with_payload: true, offset: 1 })).points;
    expect(skip1.map((p) => p.id)).toEqual(scrollFrom2.map((p) => p.id));
    expect(query.every((p) => p.score === 0 && typeof p.version === 'number')).toBe(true);
  });

  it('query by point id: nearest to its vector, the point itself excluded', async () => {
    const byId = (await t.store.queryPoints('basic', { query: 1, limit: 3 })).points;
    const byVector = (await t.store.queryPoints('basic', { query: [0.05, 0.61, 0.76, 0.74], limit: 4 })).points;
    expect(byId.map((p) => p.id)).not.toContain(1);
    expect(byId.map((p) => p.id)).toEqual(byVector.filter((p) => p.id !== 1).slice(0, 3).map((p) => p.id));
    const nested = (await t.store.queryPoints('basic', { query: { nearest: 1 }, limit: 3 })).points;
    expect(nested).toEqual(byId);
    const err = await qdrantError(t.store.queryPoints('basic', { query: 12345 }));
    expect(err.status).toBe(404);
    // Qdrant 1.19 reads the referenced points first (test_relevance_feedback's wording).
    expect(err.message).toBe('Not found: No point with id 12345 found');
    // Point 9 has only a sparse vector.
    expect((await qdrantError(t.store.queryPoints('basic', { query: 9 }))).status).toBe(404);
  });

  it('using a named vector, filter, offset, with_vector names', async () => {
    await t.store.createCollection('nv', {
      vectors: { image: { size: 2, distance: 'Euclid' }, text: { size: 2, distance: 'Dot' } },
    });
    await t.store.upsertPoints('nv', {
      points: [1, 2, 3, 4, 5].map((i) => ({ id: i, vector: { image: [i, 0], text: [0, i] }, payload: { odd: i % 2 === 1 } })),
    });
    const image = (await t.store.queryPoints('nv', { query: [0, 0], using: 'image' })).points;
    expect(image.map((p) => p.id)).toEqual([1, 2, 3, 4, 5]);
    const text = (await t.store.queryPoints('nv', { query: [0, 1], using: 'text', with_vector: ['text'] })).points;
    expect(text.map((p) => p.id)).toEqual([5, 4, 3, 2, 1]);
    expect(text[0]!.vector).toEqual({ text: [0, 5] });
    const odd = (
      await t.store.queryPoints('nv', {
        query: [0, 0],
        using: 'image',
        filter: { must: [{ key: 'odd', match: { value: true } }] },
        offset: 1,
        limit: 5,
      })
    ).points;
    expect(odd.map((p) => p.id)).toEqual([3, 5]);
    let err = await qdrantError(t.store.queryPoints('nv', { query: [0, 0] }));
    expect(err.message).toBe('Wrong input: Not existing vector name error: ');
    err = await qdrantError(t.store.queryPoints('nv', { query: [0, 0], using: 'audio' }));
    expect(err.message).toBe('Wrong input: Not existing vector name error: audio');
  });

  it('query validation (test_query_validation)', async () => {
    let err = await qdrantError(t.store.queryPoints('basic', { prefetch: [{ query: { recommend: { positive: [1] } } }] }));
    expect(err.message).toBe(
      "Bad request: A query is needed to merge the prefetches. Can't have prefetches without defining a query.",
    );
    err = await qdrantError(t.store.queryPoints('basic', { score_threshold: 10 }));
    expect(err.message).toBe(
      "Bad request: A query is needed to use the score_threshold. Can't have score_threshold without defining a query.",
    );
    err = await qdrantError(t.store.queryPoints('basic', { score_threshold: 10, query: { order_by: { key: 'price' } } }));
    expect(err.message).toBe("Bad request: Can't use score_threshold with an order_by query.");
    err = await qdrantError(t.store.queryPoints('basic', { query: [1, 2, 3, 4], limit: 0 }));
    expect(err.status).toBe(422);
    expect(err.message).toBe('Validation error in JSON body: [internal.limit: value 0 invalid, must be 1 or larger]');
    err = await qdrantError(t.store.queryPoints('basic', { query: [1, 2, 3, 4], limit: -1 }));
    expect(err.status).toBe(400);
    err = await qdrantError(t.store.queryPoints('basic', { query: { fusion: 'rrf' } }));
    expect(err.status).toBe(400);
    expect(err.message).toBe('Bad request: A fusion query needs prefetches to fuse');
  });

  it('prefetch then rescore equals the plain query (root_and_rescored_query), also with limit u64::MAX', async () => {
    for (const query of [[0.1, 0.2, 0.3, 0.4], { nearest: [0.1, 0.2, 0.3, 0.4] }]) {
      for (const limit of [undefined, U64_MAX]) {
        const root = (await t.store.queryPoints('basic', { query, limit, with_payload: true })).points;
        const nested = (await t.store.queryPoints('basic', { prefetch: { limit: 1000 }, query, limit, with_payload: true })).points;
        expect(root).toHaveLength(8);
        expect(nested).toEqual(root);
      }
    }
  });

  it('prefetch: rescoring only sees the candidates; root filter applies to prefetches', async () => {
    const res = (
      await t.store.queryPoints('basic', {
        prefetch: [{ filter: { must: [{ has_id: [1, 2, 3] }] }, limit: 10 }],
        query: [0.1, 0.2, 0.3, 0.4],
        filter: { must_not: [{ has_id: [2] }] },
      })
    ).points;
    expect(res.map((p) => p.id).sort()).toEqual([1, 3]);
  });

  it('rrf fusion of two prefetches matches Qdrant\'s formula 1 / (rank + 2) (test_basic_rrf)', async () => {
    const a = await t.store.searchPoints('basic', { vector: [0.1, 0.2, 0.3, 0.4], limit: 10 });
    const b = await t.store.searchPoints('basic', { vector: [0.5, 0.6, 0.7, 0.8], limit: 10 });
    const expected = new Map<unknown, number>();
    for (const list of [a, b]) list.forEach((p, pos) => expected.set(p.id, (expected.get(p.id) ?? 0) + 1 / (pos + 2)));
    const res = (
      await t.store.queryPoints('basic', {
        prefetch: [{ query: [0.1, 0.2, 0.3, 0.4] }, { query: [0.5, 0.6, 0.7, 0.8] }],
        query: { fusion: 'rrf' },
      })
    ).points;
    expect(res).toHaveLength(8);
    for (const p of res) expect(p.score).toBeCloseTo(expected.get(p.id)!, 6);
    for (let i = 1; i < res.length; i++) expect(res[i - 1]!.score).toBeGreaterThanOrEqual(res[i]!.score);
    // With a threshold (test_query.test_score_threshold with rrf).
    const cut = (
      await t.store.queryPoints('basic', {
        prefetch: [{ query: [0.1, 0.2, 0.3, 0.4] }, { query: [0.5, 0.6, 0.7, 0.8] }],
        query: { rrf: { k: 2 } },
        score_threshold: res[3]!.score,
      })
    ).points;
    expect(cut.length).toBeLessThan(8);
  });

  it('query by id inside a prefetch: the referenced point is excluded everywhere', async () => {
    const res = (await t.store.queryPoints('basic', { prefetch: { query: 1, limit: 5 }, query: [0.1, 0.2, 0.3, 0.4] })).points;
    expect(res.map((p) => p.id)).not.toContain(1);
    expect(res).toHaveLength(5);
  });

  it('order_by on an indexed numeric payload key (test_basic_order_by)', async () => {
    const scroll = (await t.store.scrollPoints('basic', { order_by: 'price' })).points;
    expect(scroll.map((p) => p.id)).toEqual([4, 3, 1, 2]);
    const desc = (await t.store.scrollPoints('basic', { order_by: { key: 'price', direction: 'desc' } })).points;
    expect(desc.map((p) => p.id)).toEqual([2, 1, 3, 4]);
    const query = (await t.store.queryPoints('basic', { query: { order_by: 'price' }, with_payload: true })).points;
    expect(query.map((p) => p.id)).toEqual([4, 3, 1, 2]);
    expect(query.map((p) => p.score)).toEqual([9, 9.5, 10, 11]);
    const err = await qdrantError(t.store.scrollPoints('basic', { order_by: 'city' }));
    expect(err.message).toMatch(/^Bad request: No range index for `order_by` key: `city`/);
  });

  it('random sample returns every point once (test_basic_random_query)', async () => {
    const res = (await t.store.queryPoints('basic', { query: { sample: 'random' } })).points;
    expect(res.map((p) => p.id).sort((a, b) => Number(a) - Number(b))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('query batch', async () => {
    const res = await t.store.queryBatch('basic', {
      searches: [{ query: [0.2, 0.1, 0.9, 0.7], limit: 3 }, { filter: { must: [{ has_id: [1, 2] }] } }],
    });
    expect(res.map((r) => r.points.length)).toEqual([3, 2]);
  });
});

describe('payload selectors (test_payload_selector)', () => {
  beforeAll(async () => {
    await t.store.createCollection('nested', { vectors: { size: 2, distance: 'Dot' } });
    await t.store.upsertPoints('nested', {
      points: [
        {
          id: 1,
          vector: [1, 0],
          payload: {
            country: {
              name: 'Germany',
              capital: 'Berlin',
              cities: [
                { name: 'Berlin', population: 3.7, sightseeing: ['Brandenburg Gate', 'Reichstag'] },
                { name: 'Munich', population: 1.5, sightseeing: ['Marienplatz', 'Olympiapark'] },
              ],
            },
          },
        },
        { id: 2, vector: [0, 1], payload: { country: { name: 'Japan', capital: 'Tokyo', cities: [] } } },
      ],
    });
  });
  const germany = { filter: { must: [{ key: 'country.name', match: { value: 'Germany' } }] }, limit: 3 };
  const scrollPayload = async (with_payload: unknown) =>
    (await t.store.scrollPoints('nested', { ...germany, with_payload })).points[0]!.payload;

  it('false, true, include, include through arrays, exclude', async () => {
    expect(await scrollPayload(false)).toBeUndefined();
    expect(((await scrollPayload(true)) as { country: { cities: unknown[] } }).country.cities).toHaveLength(2);
    expect(await scrollPayload({ include: ['country.name', 'country.capital'] })).toEqual({
      country: { name: 'Germany', capital: 'Berlin' },
    });
    expect(await scrollPayload(['country.name'])).toEqual({ country: { name: 'Germany' } });
    expect(await scrollPayload({ include: ['country.cities[].name'] })).toEqual({
      country: { cities: [{ name: 'Berlin' }, { name: 'Munich' }] },
    });
    expect(await scrollPayload({ exclude: ['country.cities'] })).toEqual({ country: { name: 'Germany', capital: 'Berlin' } });
    expect(await scrollPayload({ exclude: ['country.name', 'country.capital', 'country.cities[].sightseeing'] })).toEqual({
      country: {
        cities: [
          { name: 'Berlin', population: 3.7 },
          { name: 'Munich', population: 1.5 },
        ],
      },
    });
  });

  it('selectors apply to query results too', async () => {
    const res = await t.store.queryPoints('nested', { query: [1, 0], limit: 1, with_payload: { include: ['country.capital'] } });
    expect(res.points[0]!.payload).toEqual({ country: { capital: 'Berlin' } });
  });
});

describe('filtered search recall', () => {
  const N = 2000;
  const DIM = 32;
  // Deterministic pseudo-random numbers (mulberry32).
  let seed = 42;
  const rand = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const vectors: number[][] = [];
  const unit = (v: number[]) => {
    const n = Math.sqrt(dot(v, v));
    return v.map((x) => x / n);
  };

  beforeAll(async () => {
    await t.store.createCollection('recall', { vectors: { size: DIM, distance: 'Cosine' } });
    for (let i = 0; i < N; i++) vectors.push(Array.from({ length: DIM }, () => rand() * 2 - 1));
    const points = vectors.map((v, i) => ({
      id: i,
      vector: v,
      payload: { tag: i % 10 === 0, rare: i % 200 === 7, n: i, bucket: i % 10 },
    }));
    for (let i = 0; i < N; i += 500) {
      await t.store.upsertPoints('recall', { points: points.slice(i, i + 500) });
    }
    // Fresh statistics, so the planner sees a realistic table.
    await t.sql`analyze ${t.sql(t.schema)}.${t.sql('points_' + (await tableId()))}`;
  });

  async function tableId(): Promise<number> {
    const [row] = await t.sql<{ id: number }[]>`select id from ${t.sql(t.schema)}.collections where name = 'recall'`;
    return row!.id;
  }

  function bruteForce(q: number[], keep: (i: number) => boolean, k: number): number[] {
    const uq = unit(q);
    return vectors
      .map((v, i) => ({ i, s: dot(unit(v), uq) }))
      .filter((x) => keep(x.i))
      .sort((a, b) => b.s - a.s)
      .slice(0, k)
      .map((x) => x.i);
  }

  it('10% tag filter: top-10 equals the exact top-10, for several queries', async () => {
    for (let trial = 0; trial < 5; trial++) {
      const q = Array.from({ length: DIM }, () => rand() * 2 - 1);
      const res = await t.store.queryPoints('recall', {
        query: q,
        limit: 10,
        filter: { must: [{ key: 'tag', match: { value: true } }] },
      });
      expect(res.points).toHaveLength(10);
      expect(res.points.map((p) => p.id)).toEqual(bruteForce(q, (i) => i % 10 === 0, 10));
    }
  });

  it('0.5% filter (10 matching points): all 10 come back', async () => {
    const q = Array.from({ length: DIM }, () => rand() * 2 - 1);
    const res = await t.store.queryPoints('recall', {
      query: q,
      limit: 10,
      filter: { must: [{ key: 'rare', match: { value: true } }] },
    });
    expect(res.points.map((p) => p.id)).toEqual(bruteForce(q, (i) => i % 200 === 7, 10));
  });

  it('range filter with offset, and unfiltered top-20', async () => {
    const q = Array.from({ length: DIM }, () => rand() * 2 - 1);
    const res = await t.store.queryPoints('recall', {
      query: q,
      limit: 10,
      offset: 5,
      filter: { must: [{ key: 'n', range: { lt: 700 } }] },
    });
    expect(res.points.map((p) => p.id)).toEqual(bruteForce(q, (i) => i < 700, 15).slice(5));
    const all = await t.store.queryPoints('recall', { query: q, limit: 20 });
    const exact = bruteForce(q, () => true, 20);
    const overlap = all.points.filter((p) => exact.includes(p.id as number)).length;
    expect(overlap).toBeGreaterThanOrEqual(19);
  });

  it('10% range filter (not GIN-indexable): HNSW iterative scan, top-10 equals the exact top-10', async () => {
    for (let trial = 0; trial < 5; trial++) {
      const q = Array.from({ length: DIM }, () => rand() * 2 - 1);
      const res = await t.store.queryPoints('recall', {
        query: q,
        limit: 10,
        filter: { must: [{ key: 'bucket', range: { gte: 3, lt: 4 } }] },
      });
      expect(res.points.map((p) => p.id)).toEqual(bruteForce(q, (i) => i % 10 === 3, 10));
    }
  });

  it('a filter estimated to keep more than full_scan_threshold allows runs on the HNSW index (EXPLAIN of the captured query)', async () => {
    // 10 KB (Qdrant's minimum) × 3 / 128 bytes per vector: above ~240 estimated points the walk is taken.
    await t.store.updateCollection('recall', { hnsw_config: { full_scan_threshold: 10 } });
    let captured: { query: string; params: unknown[] } | undefined;
    const spy = postgres(TEST_DATABASE_URL, {
      onnotice: () => {},
      max: 1,
      debug: (_conn, query, params) => {
        if (query.includes('candidates')) captured = { query, params: params as unknown[] };
      },
    });
    try {
      const store = new VectorStore(spy, { schema: t.schema });
      const q = Array.from({ length: DIM }, () => rand() * 2 - 1);
      await store.queryPoints('recall', { query: q, limit: 10, filter: { must: [{ key: 'bucket', range: { gte: 3 } }] } });
      expect(captured).toBeDefined();
      const plan = await spy.begin(async (tx) => {
        await tx`select set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', '40', true)`;
        return tx.unsafe(`explain ${captured!.query}`, captured!.params as never[]);
      });
      expect(plan.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Index Scan using points_\d+_v0_idx/);
    } finally {
      await spy.end();
      await t.store.updateCollection('recall', { hnsw_config: { full_scan_threshold: 10_000 } });
    }
  });

  it('a pool started with the kNN session settings searches in one statement, with the same answers', async () => {
    const statements: string[] = [];
    const pool = knnSessionPool(postgres(TEST_DATABASE_URL, { onnotice: () => {}, max: 1, connection: KNN_SESSION, debug: (_c, query) => void statements.push(query) }));
    try {
      const store = new VectorStore(pool, { schema: t.schema });
      for (let trial = 0; trial < 3; trial++) {
        const q = Array.from({ length: DIM }, () => rand() * 2 - 1);
        statements.length = 0;
        const res = await store.queryPoints('recall', { query: q, limit: 10 });
        expect(statements.some((s) => s.includes('candidates'))).toBe(true);
        expect(statements.some((s) => s.includes('set_config') || /^\s*begin/i.test(s))).toBe(false);
        expect(res.points.map((p) => p.id)).toEqual((await t.store.queryPoints('recall', { query: q, limit: 10 })).points.map((p) => p.id));
      }
    } finally {
      await pool.end();
    }
  });

  it('a filter estimated below the threshold is scored exactly: the true top-10 even far from the query', async () => {
    let knn = 0;
    const spy = postgres(TEST_DATABASE_URL, { onnotice: () => {}, max: 1, debug: (_c, query) => void (query.includes('candidates') && knn++) });
    try {
      const store = new VectorStore(spy, { schema: t.schema });
      for (let trial = 0; trial < 3; trial++) {
        const q = Array.from({ length: DIM }, () => rand() * 2 - 1);
        const res = await store.queryPoints('recall', { query: q, limit: 10, filter: { must: [{ key: 'bucket', match: { value: 5 } }] } });
        expect(res.points.map((p) => p.id)).toEqual(bruteForce(q, (i) => i % 10 === 5, 10));
      }
      expect(knn).toBe(0);
    } finally {
      await spy.end();
    }
  });
});

describe('one statement per repeated query', () => {
  it('after the first query: no catalog read, the page (payload, vectors) read by the search itself, a repeated filter not EXPLAINed again', async () => {
    const statements: string[] = [];
    const pool = knnSessionPool(postgres(TEST_DATABASE_URL, { onnotice: () => {}, max: 1, connection: KNN_SESSION, debug: (_c, query) => void statements.push(query) }));
    try {
      const store = new VectorStore(pool, { schema: t.schema });
      const q = [0.2, 0.1, 0.9, 0.7];
      const bodies = [
        { query: q, limit: 3, with_payload: true },
        { query: q, limit: 2, offset: 1, with_payload: ['city'], with_vector: true },
        { query: q, limit: 3, with_payload: true, filter: { must: [{ key: 'city', match: { value: 'London' } }] } },
      ];
      for (const body of bodies) {
        await store.queryPoints('basic', body); // loads the catalog, asks the planner about the filter
        statements.length = 0;
        const res = await store.queryPoints('basic', body);
        expect(statements).toHaveLength(1);
        expect(res).toEqual(await t.store.queryPoints('basic', body));
        expect(res.points.length).toBeGreaterThan(0);
      }
    } finally {
      await pool.end();
    }
  });
});

describe('collection metadata cached by another worker', () => {
  it('a catalog change is seen once announced (forgetCatalog); a collection dropped and recreated behind the cache is found again', async () => {
    const other = new VectorStore(t.sql, { schema: t.schema }); // a second worker on the same schema
    const body = { query: [1, 0, 0, 0], limit: 5, with_payload: true };
    await t.store.createCollection('cached', { vectors: { size: 4, distance: 'Dot' } });
    await t.store.upsertPoints('cached', { points: [{ id: 1, vector: [1, 0, 0, 0], payload: { a: 1 } }] }, { wait: true });
    expect((await other.queryPoints('cached', body)).points.map((p) => p.payload)).toEqual([{ a: 1 }]);

    // Dropped and recreated while `other` still holds the old metadata (no announcement heard).
    await t.store.deleteCollection('cached');
    await t.store.createCollection('cached', { vectors: { size: 4, distance: 'Dot' } });
    await t.store.upsertPoints('cached', { points: [{ id: 2, vector: [1, 0, 0, 0], payload: { a: 2 } }] }, { wait: true });
    expect((await other.queryPoints('cached', body)).points.map((p) => [p.id, p.payload])).toEqual([[2, { a: 2 }]]);

    await t.store.updateCollection('cached', { strict_mode_config: { enabled: true, max_query_limit: 1 } });
    other.forgetCatalog(); // what the bus message does (main.ts)
    expect((await qdrantError(other.queryPoints('cached', body))).message).toMatch(/Limit exceeded 5 > 1 for "limit"/);
    await t.store.deleteCollection('cached');
    other.forgetCatalog();
    expect((await qdrantError(other.queryPoints('cached', body))).status).toBe(404);
  });
});
