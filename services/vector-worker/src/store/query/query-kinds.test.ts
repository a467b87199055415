/**
 * The query kinds beyond nearest — recommend, discover, context, relevance feedback, formula,
 * DBSF, MMR, order_by over prefetches, groups, lookup_from — and the legacy recommend / discover /
 * search-groups endpoints. Scores are recomputed here by hand from the basic setup's vectors
 * (Dot, so Qdrant's raw similarity is the dot product), as Qdrant's scorers define them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicCollectionSetup, dot, openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
beforeAll(async () => {
  t = await openTestStore('qkinds');
  await basicCollectionSetup(t.store, 'basic');
  await t.store.createFieldIndex('basic', { field_name: 'price', field_schema: 'float' });
});
afterAll(async () => {
  await t.close();
});

/** The dense vectors of the basic setup (points 9 and 10 have none). */
const V: Record<number, number[]> = {
  1: [0.05, 0.61, 0.76, 0.74],
  2: [0.19, 0.81, 0.75, 0.11],
  3: [0.36, 0.55, 0.47, 0.94],
  4: [0.18, 0.01, 0.85, 0.8],
  5: [0.24, 0.18, 0.22, 0.44],
  6: [0.35, 0.08, 0.11, 0.44],
  7: [0.25, 0.98, 0.14, 0.43],
  8: [0.79, 0.53, 0.72, 0.15],
};
const ALL = Object.keys(V).map(Number);
const fastSigmoid = (x: number) => x / (1 + Math.abs(x));
const scaled = (x: number) => 0.5 * (fastSigmoid(x) + 1);
const EPS = 1.1920929e-7;

/** Ids sorted by an expected score (best first, ties by id), without `exclude`. */
function expectedOrder(score: (v: number[]) => number, exclude: number[] = []): { id: number; score: number }[] {
  return ALL.filter((id) => !exclude.includes(id))
    .map((id) => ({ id, score: score(V[id]!) }))
    .sort((a, b) => b.score - a.score || a.id - b.id);
}

function expectScores(got: { id: unknown; score: number }[], want: { id: number; score: number }[]): void {
  expect(got.map((p) => p.id)).toEqual(want.map((p) => p.id));
  got.forEach((p, i) => expect(p.score).toBeCloseTo(want[i]!.score, 5));
}

const query = async (body: Record<string, unknown>) => (await t.store.queryPoints('basic', { limit: 10, ...body })).points;

describe('recommend', () => {
  it('best_score: sigmoid of the best positive similarity, or minus that of the best negative', async () => {
    const got = await query({ query: { recommend: { positive: [1, 7], negative: [4], strategy: 'best_score' } } });
    const want = expectedOrder((v) => {
      const p = Math.max(dot(v, V[1]!), dot(v, V[7]!));
      const n = dot(v, V[4]!);
      return p > n ? scaled(p) : -scaled(n);
    }, [1, 7, 4]);
    expectScores(got, want);
    expect(got.some((p) => p.score < 0)).toBe(true);
  });

  it('best_score with only negatives: every score is negative', async () => {
    const got = await query({ query: { recommend: { negative: [1, 2], strategy: 'best_score' } } });
    expectScores(got, expectedOrder((v) => -scaled(Math.max(dot(v, V[1]!), dot(v, V[2]!))), [1, 2]));
  });

  it('sum_scores: Σ positive similarities − Σ negative similarities, raw vectors as examples', async () => {
    const neg = [0.1, 0.2, 0.3, 0.4];
    const got = await query({ query: { recommend: { positive: [3, 5], negative: [neg], strategy: 'sum_scores' } } });
    expectScores(got, expectedOrder((v) => dot(v, V[3]!) + dot(v, V[5]!) - dot(v, neg), [3, 5]));
  });

  it('average_vector (default): a nearest search with 2·avg(pos) − avg(neg)', async () => {
    const q = V[1]!.map((x, i) => (x + V[2]![i]!) / 2).map((p, i) => p + p - V[6]![i]!);
    const got = await query({ query: { recommend: { positive: [1, 2], negative: [6] } }, params: { exact: true } });
    expectScores(got, expectedOrder((v) => dot(v, q), [1, 2, 6]));
  });

  it('validation: no examples is 422, a missing id 404, average_vector without positives 400', async () => {
    let err = await qdrantError(query({ query: { recommend: { positive: [] } } }));
    expect(err.status).toBe(422);
    expect(err.message).toBe(
      'Validation error in JSON body: [internal.query.recommend.positives, negatives: At least one positive or negative vector/id must be provided]',
    );
    err = await qdrantError(query({ query: { recommend: { positive: [1, 4242] } } }));
    expect([err.status, err.message]).toEqual([404, 'Not found: No point with id 4242 found']);
    err = await qdrantError(query({ query: { recommend: { negative: [1] } } }));
    expect([err.status, err.message]).toEqual([400, 'Wrong input: Positive vectors should not be empty with `average` strategy']);
    err = await qdrantError(query({ query: { recommend: { positive: [[1, 2, 3]] } } }));
    expect([err.status, err.message]).toEqual([400, 'Wrong input: Vector dimension error: expected dim: 4, got 3']);
  });
});

describe('discover and context', () => {
  it('discover: Σ ±1 per context pair + scaled sigmoid of the target similarity', async () => {
    const got = await query({ query: { discover: { target: 5, context: [{ positive: 3, negative: 4 }, { positive: 7, negative: 8 }] } } });
    const rank = (v: number[], p: number, n: number) => Math.sign(dot(v, V[p]!) - dot(v, V[n]!));
    const want = expectedOrder((v) => rank(v, 3, 4) + rank(v, 7, 8) + scaled(dot(v, V[5]!)), [5, 3, 4, 7, 8]);
    expectScores(got, want);
    // The integer part counts satisfied pairs, the fraction is the target part.
    expect(Math.floor(got[0]!.score)).toBe(rank(V[got[0]!.id as number]!, 3, 4) + rank(V[got[0]!.id as number]!, 7, 8));
  });

  it('context: Σ fast_sigmoid(min(sim(pos) − sim(neg) − ε, 0)), never above 0', async () => {
    const got = await query({ query: { context: [{ positive: 2, negative: 4 }] }, limit: 100 });
    const want = expectedOrder((v) => fastSigmoid(Math.min(dot(v, V[2]!) - dot(v, V[4]!) - EPS, 0)), [2, 4]);
    expectScores(got, want);
    expect(got.every((p) => p.score <= 0)).toBe(true);
  });

  it('discover needs `context` (null means none: then it ranks like nearest)', async () => {
    const err = await qdrantError(t.store.queryPoints('basic', { query: { discover: { target: 1 } } }));
    expect(err.status).toBe(400);
    const discover = await query({ query: { discover: { target: [0.2, 0.1, 0.9, 0.7], context: null } } });
    const nearest = await query({ query: [0.2, 0.1, 0.9, 0.7] });
    expect(discover.map((p) => p.id)).toEqual(nearest.map((p) => p.id));
    discover.forEach((p, i) => expect(p.score).toBeCloseTo(scaled(nearest[i]!.score), 6));
  });
});

describe('relevance feedback', () => {
  it('naive: a·sim(target) + (Δscore^b · c)·(sim(best) − sim(worst))', async () => {
    const target = [0.1, 0.2, 0.3, 0.4];
    const strategy = { naive: { a: 0.5, b: 2, c: 3 } };
    const got = await query({
      query: { relevance_feedback: { target, feedback: [{ example: 2, score: 0.9 }, { example: 6, score: 0.2 }], strategy } },
    });
    const w = (0.9 - 0.2) ** 2 * 3;
    expectScores(got, expectedOrder((v) => 0.5 * dot(v, target) + w * (dot(v, V[2]!) - dot(v, V[6]!)), [2, 6]));
  });

  it('validation: empty feedback and a negative b are 422', async () => {
    const base = { target: [0.1, 0.2, 0.3, 0.4], strategy: { naive: { a: 1, b: 1, c: 1 } } };
    let err = await qdrantError(query({ query: { relevance_feedback: { ...base, feedback: [] } } }));
    expect([err.status, err.message]).toEqual([
      422,
      'Validation error in JSON body: [internal.query.relevance_feedback.feedback: feedback elements must be non-empty]',
    ]);
    err = await qdrantError(
      query({ query: { relevance_feedback: { ...base, feedback: [{ example: 1, score: 1 }], strategy: { naive: { a: 1, b: -1, c: 1 } } } } }),
    );
    expect(err.message).toBe(
      'Validation error in JSON body: [internal.query.relevance_feedback.strategy.naive.b: value -1.0 invalid, must be 0.0 or larger]',
    );
  });
});

describe('fusion, formula, mmr, order_by over prefetches', () => {
  const a = [0.1, 0.2, 0.3, 0.4];
  const b = [0.5, 0.6, 0.7, 0.8];

  it('dbsf: each list normalised by mean ± 3 sample std, then summed', async () => {
    const la = await query({ query: a, limit: 4 });
    const lb = await query({ query: b, limit: 4 });
    const norm = (l: { id: unknown; score: number }[]) => {
      const mean = l.reduce((s, p) => s + p.score, 0) / l.length;
      const std = Math.sqrt(l.reduce((s, p) => s + (p.score - mean) ** 2, 0) / (l.length - 1));
      return l.map((p) => ({ id: p.id as number, score: (p.score - (mean - 3 * std)) / (6 * std) }));
    };
    const sums = new Map<number, number>();
    for (const p of [...norm(la), ...norm(lb)]) sums.set(p.id, (sums.get(p.id) ?? 0) + p.score);
    const want = [...sums].map(([id, score]) => ({ id, score })).sort((x, y) => y.score - x.score);
    const got = await query({ prefetch: [{ query: a, limit: 4 }, { query: b, limit: 4 }], query: { fusion: 'dbsf' } });
    expectScores(got, want);
  });

  it('formula: $score, payload keys with defaults, conditions; non-finite results are 400', async () => {
    const got = await query({
      prefetch: { query: a, limit: 8 },
      query: {
        formula: { sum: [{ mult: ['$score', 2] }, 'price', { mult: [10, { key: 'city', match: { value: 'London' } }] }] },
        defaults: { price: 1 },
      },
      with_payload: true,
    });
    const price = (id: number) => ({ 1: 10, 2: 11, 3: 9.5, 4: 9 })[id] ?? 1;
    const london = (id: number) => (id === 2 || id === 4 ? 10 : 0);
    expectScores(got, expectedOrder((v) => 2 * dot(v, a), []).map(({ id, score }) => ({ id, score: score + price(id) + london(id) })).sort((x, y) => y.score - x.score));
    const err = await qdrantError(query({ prefetch: { query: a }, query: { formula: { ln: 0 } } }));
    expect([err.status, err.message]).toEqual([400, 'Bad request: The expression ln(0) = -inf produced a non-finite number']);
    const missing = await qdrantError(query({ prefetch: { query: a }, query: { formula: 'count' } }));
    expect(missing.message).toBe(
      'Bad request: Expected number value for count in the payload and/or in the formula defaults. Error: No value found in a payload nor defaults',
    );
  });

  it('mmr: the nearest candidates re-ordered for diversity, keeping their nearest scores', async () => {
    const nearest = await query({ query: { nearest: [0.35, 0.08, 0.11, 0.47] } });
    const mmr = await query({ query: { nearest: [0.35, 0.08, 0.11, 0.47], mmr: { diversity: 0.9 } } });
    expect(mmr[0]).toEqual(nearest[0]);
    expect(new Set(mmr.map((p) => p.id))).toEqual(new Set(nearest.map((p) => p.id)));
    expect(mmr.map((p) => p.id)).not.toEqual(nearest.map((p) => p.id));
    const score = new Map(nearest.map((p) => [p.id, p.score]));
    for (const p of mmr) expect(p.score).toBe(score.get(p.id));
    const err = await qdrantError(query({ query: { nearest: [1, 2, 3, 4], mmr: { diversity: 2 } } }));
    expect(err.status).toBe(422);
  });

  it('order_by and sample rescore the prefetched points only', async () => {
    const got = await query({ prefetch: { query: a, limit: 3 }, query: { order_by: { key: 'price', direction: 'desc' } }, with_payload: true });
    const top3 = (await query({ query: a, limit: 3, with_payload: true })).map((p) => p.id);
    // Only points with a numeric price take part in an order_by.
    expect(new Set(got.map((p) => p.id))).toEqual(new Set(top3.filter((id) => [1, 2, 3, 4].includes(id as number))));
    expect(got.map((p) => p.score)).toEqual([...got.map((p) => p.score)].sort((x, y) => y - x));
    const sample = await query({ prefetch: { query: a, limit: 3 }, query: { sample: 'random' } });
    expect(new Set(sample.map((p) => p.id))).toEqual(new Set(top3));
  });
});

describe('lookup_from', () => {
  beforeAll(async () => {
    await t.store.createCollection('other', { vectors: { o: { size: 4, distance: 'Dot' } } });
    await t.store.upsertPoints('other', { points: [{ id: 1, vector: { o: [1, 0, 0, 0] } }, { id: 2, vector: { o: [0, 0, 0, 2] } }] });
  });

  it('ids are read from the other collection and not excluded here', async () => {
    const byId = await query({ query: { recommend: { positive: [1], negative: [2] } }, lookup_from: { collection: 'other', vector: 'o' } });
    const byVector = await query({ query: { recommend: { positive: [[1, 0, 0, 0]], negative: [[0, 0, 0, 2]] } } });
    expect(byId).toEqual(byVector);
    expect(byId).toHaveLength(8);
  });

  it('errors: missing collection, missing point, unknown vector (after the points are found)', async () => {
    const q = { query: { recommend: { positive: [1] } } };
    let err = await qdrantError(query({ ...q, lookup_from: { collection: 'nope', vector: 'o' } }));
    expect([err.status, err.message]).toEqual([404, 'Not found: Collection nope not found']);
    err = await qdrantError(query({ query: { recommend: { positive: [3] } }, lookup_from: { collection: 'other', vector: 'x' } }));
    expect([err.status, err.message]).toEqual([404, 'Not found: No point with id 3 found']);
    err = await qdrantError(query({ ...q, lookup_from: { collection: 'other', vector: 'x' } }));
    expect([err.status, err.message]).toEqual([400, 'Wrong input: Not existing vector name error: x']);
  });
});

describe('groups', () => {
  it('query groups: one group per city value (arrays join several), best hits first, group_size and limit', async () => {
    const q = [0.2, 0.1, 0.9, 0.7];
    const ranked = await query({ query: q, with_payload: true });
    const res = await t.store.queryGroups('basic', { query: q, group_by: 'city', group_size: 2, limit: 2, with_payload: true });
    // Expected by hand: walk the ranking, bucket by each string value of `city`.
    const groups = new Map<string, number[]>();
    for (const p of ranked) {
      const city = p.payload?.city;
      for (const c of new Set(Array.isArray(city) ? city : city === undefined || city === null ? [] : [city])) {
        if (typeof c !== 'string') continue;
        if (!groups.has(c) && groups.size >= 2) continue;
        const g = groups.get(c) ?? [];
        if (g.length < 2) g.push(p.id as number);
        groups.set(c, g);
      }
    }
    expect(res.groups.map((g) => [g.id, g.hits.map((h) => h.id)])).toEqual([...groups]);
    const score = new Map(ranked.map((p) => [p.id, p.score]));
    for (const g of res.groups) for (const h of g.hits) expect(h.score).toBe(score.get(h.id));
  });

  it('with_lookup reads the record whose id is the group id', async () => {
    await t.store.createCollection('owners', { vectors: { size: 2, distance: 'Dot' } });
    await t.store.upsertPoints('owners', { points: [{ id: 0, vector: [1, 1], payload: { name: 'zero' } }] });
    const res = await t.store.queryGroups('basic', { query: [0.1, 0.2, 0.3, 0.4], group_by: 'count', with_lookup: { collection: 'owners' } });
    expect(res.groups).toHaveLength(1);
    expect(res.groups[0]).toMatchObject({ id: 0, hits: [{ id: 5 }], lookup: { id: 0, payload: { name: 'zero' } } });
  });

  it('search groups (deprecated) equals query groups with the same vector', async () => {
    const body = { group_by: 'city', group_size: 3, limit: 3 };
    const search = await t.store.searchGroups('basic', { vector: [0.2, 0.1, 0.9, 0.7], ...body });
    const q = await t.store.queryGroups('basic', { query: [0.2, 0.1, 0.9, 0.7], ...body });
    expect(search).toEqual(q);
    expect((await qdrantError(t.store.searchGroups('basic', { vector: [1, 2, 3, 4], group_by: 'city', limit: 3 }))).status).toBe(400);
  });
});

describe('legacy recommend and discover', () => {
  it('recommend (+ batch) answers what the query API answers', async () => {
    const legacy = await t.store.recommendPoints('basic', { positive: [1], negative: [4], strategy: 'best_score', limit: 5 });
    const viaQuery = await query({ query: { recommend: { positive: [1], negative: [4], strategy: 'best_score' } }, limit: 5 });
    expect(legacy).toEqual(viaQuery);
    const batch = await t.store.recommendBatch('basic', { searches: [{ positive: [1], negative: [4], strategy: 'best_score', limit: 5 }] });
    expect(batch).toEqual([legacy]);
    const err = await qdrantError(t.store.recommendPoints('basic', { negative: [1], limit: 3 }));
    expect([err.status, err.message]).toEqual([400, 'Bad request: At least one positive vector ID required with this strategy']);
  });

  it('discover: with context a discover query, without it a nearest search, without target a context search', async () => {
    const ctx = [{ positive: 3, negative: 4 }];
    expect(await t.store.discoverPoints('basic', { target: 5, context: ctx, limit: 4 })).toEqual(
      await query({ query: { discover: { target: 5, context: ctx } }, limit: 4 }),
    );
    expect(await t.store.discoverPoints('basic', { target: 5, limit: 4 })).toEqual(await query({ query: 5, limit: 4 }));
    expect(await t.store.discoverBatch('basic', { searches: [{ context: ctx, limit: 4 }] })).toEqual([await query({ query: { context: ctx }, limit: 4 })]);
    expect((await qdrantError(t.store.discoverPoints('basic', { limit: 4 }))).status).toBe(400);
  });

  it('recommend groups', async () => {
    const res = await t.store.recommendGroups('basic', { positive: [1], group_by: 'city', group_size: 1, limit: 2 });
    expect(res.groups).toHaveLength(2);
    expect(res.groups.every((g) => g.hits.length === 1)).toBe(true);
  });
});

describe('Euclid: similarities are negated squared distances', () => {
  it('best_score on Euclid', async () => {
    await t.store.createCollection('eu', { vectors: { size: 2, distance: 'Euclid' } });
    const pts = { 1: [0, 0], 2: [1, 0], 3: [0, 2], 4: [3, 3] } as Record<number, number[]>;
    await t.store.upsertPoints('eu', { points: Object.entries(pts).map(([id, vector]) => ({ id: Number(id), vector })) });
    const got = (await t.store.queryPoints('eu', { query: { recommend: { positive: [[0, 1]], negative: [[3, 0]], strategy: 'best_score' } } })).points;
    const sim = (a: number[], b: number[]) => -((a[0]! - b[0]!) ** 2 + (a[1]! - b[1]!) ** 2);
    const want = Object.entries(pts)
      .map(([id, v]) => {
        const p = sim(v, [0, 1]);
        const n = sim(v, [3, 0]);
        return { id: Number(id), score: p > n ? scaled(p) : -scaled(n) };
      })
      .sort((a, b) => b.score - a.score || a.id - b.id);
    expectScores(got, want);
  });
});

describe('sparse vectors: the same kinds over dot products of shared dimensions', () => {
  const S: Record<number, { indices: number[]; values: number[] }> = {
    1: { indices: [1, 2], values: [1, 2] },
    2: { indices: [2, 3], values: [3, 1] },
    3: { indices: [3, 4], values: [2, 2] },
    4: { indices: [1, 4], values: [0.5, 1] },
    5: { indices: [7], values: [4] },
  };
  const sdot = (a: { indices: number[]; values: number[] }, b: { indices: number[]; values: number[] }) =>
    a.indices.reduce((s, idx, k) => {
      const j = b.indices.indexOf(idx);
      return j < 0 ? s : s + a.values[k]! * b.values[j]!;
    }, 0);
  const order = (score: (v: (typeof S)[number]) => number, exclude: number[]) =>
    Object.entries(S)
      .map(([id, v]) => ({ id: Number(id), score: score(v) }))
      .filter((p) => !exclude.includes(p.id))
      .sort((a, b) => b.score - a.score || a.id - b.id);

  beforeAll(async () => {
    await t.store.createCollection('sp', { sparse_vectors: { text: {} } });
    await t.store.upsertPoints('sp', { points: Object.entries(S).map(([id, v]) => ({ id: Number(id), vector: { text: v } })) });
  });
  const sq = async (body: Record<string, unknown>) => (await t.store.queryPoints('sp', { using: 'text', limit: 10, ...body })).points;

  it('best_score and sum_scores: every point holding the vector is scored (0 without shared dimensions)', async () => {
    const best = await sq({ query: { recommend: { positive: [1], negative: [3], strategy: 'best_score' } } });
    expectScores(best, order((v) => (sdot(v, S[1]!) > sdot(v, S[3]!) ? scaled(sdot(v, S[1]!)) : -scaled(sdot(v, S[3]!))), [1, 3]));
    const raw = { indices: [4, 7], values: [1, 1] };
    const sum = await sq({ query: { recommend: { positive: [2, raw], negative: [1], strategy: 'sum_scores' } } });
    expectScores(sum, order((v) => sdot(v, S[2]!) + sdot(v, raw) - sdot(v, S[1]!), [2, 1]));
  });

  it('average_vector: a sparse search with 2·avg(pos) − avg(neg) over the union of dimensions', async () => {
    // avg(pos) of 1 and 2 = {1: .5, 2: 2.5, 3: .5}; 2·that − point 4 {1: .5, 4: 1} = {1: .5, 2: 5, 3: 1, 4: −1}
    const q = { indices: [1, 2, 3, 4], values: [0.5, 5, 1, -1] };
    const got = await sq({ query: { recommend: { positive: [1, 2], negative: [4] } } });
    // A sparse search finds only points sharing a dimension with the query.
    expectScores(got, order((v) => sdot(v, q), [1, 2, 4]).filter((p) => p.id !== 5));
  });

  it('discover and context', async () => {
    const d = await sq({ query: { discover: { target: 4, context: [{ positive: 2, negative: 5 }] } } });
    expectScores(d, order((v) => Math.sign(sdot(v, S[2]!) - sdot(v, S[5]!)) + scaled(sdot(v, S[4]!)), [4, 2, 5]));
    const c = await sq({ query: { context: { positive: 3, negative: 1 } } });
    expectScores(c, order((v) => fastSigmoid(Math.min(sdot(v, S[3]!) - sdot(v, S[1]!) - EPS, 0)), [3, 1]));
  });

  it('a dense example for a sparse vector is a conversion error', async () => {
    const err = await qdrantError(sq({ query: { recommend: { positive: [[1, 2]], strategy: 'best_score' } } }));
    expect([err.status, err.message]).toEqual([400, 'Wrong input: Conversion between sparse and regular vectors failed']);
  });
});

describe('formula functions', () => {
  beforeAll(async () => {
    await t.store.createCollection('fx', { vectors: { size: 2, distance: 'Dot' } });
    await t.store.upsertPoints('fx', {
      points: [
        { id: 1, vector: [1, 0], payload: { x: 4, t: '2024-01-01T00:00:00Z', loc: { lat: 52.52, lon: 13.405 } } },
        { id: 2, vector: [0, 1], payload: { x: 12, t: '2024-01-02T00:00:00Z', loc: { lat: 48.8566, lon: 2.3522 } } },
      ],
    });
  });
  const fx = async (formula: unknown, defaults: Record<string, unknown> = {}) =>
    new Map((await t.store.queryPoints('fx', { prefetch: { query: [1, 1] }, query: { formula, defaults } })).points.map((p) => [p.id, p.score]));

  it('decays: lambda from midpoint and scale, as Qdrant', async () => {
    const x = { 1: 4, 2: 12 } as Record<number, number>;
    const params = { x: 'x', target: 10, scale: 2, midpoint: 0.25 };
    const exp = await fx({ exp_decay: params });
    const gauss = await fx({ gauss_decay: params });
    const lin = await fx({ lin_decay: params });
    for (const id of [1, 2]) {
      const d = Math.abs(x[id]! - 10);
      expect(exp.get(id)).toBeCloseTo(Math.exp((Math.log(0.25) / 2) * d), 6);
      expect(gauss.get(id)).toBeCloseTo(Math.exp((Math.log(0.25) / 4) * d * d), 6);
      expect(lin.get(id)).toBeCloseTo(Math.max(0, 1 - ((1 - 0.25) / 2) * d), 6);
    }
    const err = await qdrantError(fx({ exp_decay: { x: 'x', midpoint: 1 } }));
    expect(err.message).toBe('Bad request: Decay midpoint should be in the range (0.0, 1.0), got 1.');
  });

  it('pow, sqrt, div with by_zero_default, datetime_key minus a datetime, geo_distance in metres', async () => {
    const p = await fx({ sum: [{ pow: { base: 'x', exponent: 2 } }, { sqrt: 'x' }] });
    expect(p.get(1)).toBeCloseTo(16 + 2, 6);
    const d = await fx({ div: { left: 1, right: { sum: ['x', -4] }, by_zero_default: 7 } });
    expect(d.get(1)).toBe(7);
    expect(d.get(2)).toBeCloseTo(1 / 8, 6);
    const dt = await fx({ sum: [{ datetime_key: 't' }, { neg: { datetime: '2024-01-01T00:00:00' } }] });
    expect([dt.get(1), dt.get(2)]).toEqual([0, 86400]);
    const geo = await fx({ geo_distance: { origin: { lat: 52.52, lon: 13.405 }, to: 'loc' } });
    expect(geo.get(1)).toBe(0);
    // Berlin → Paris, haversine on Qdrant's mean Earth radius: about 878 km.
    expect(geo.get(2)! / 1000).toBeCloseTo(877.5, 0);
  });

  it('a threshold equal to a printed score leaves the point out (f32 comparison)', async () => {
    const all = await t.store.queryPoints('basic', { query: { recommend: { positive: [1], negative: [4], strategy: 'sum_scores' } } });
    const second = all.points[1]!.score;
    const cut = await t.store.queryPoints('basic', { query: { recommend: { positive: [1], negative: [4], strategy: 'sum_scores' } }, score_threshold: second });
    expect(cut.points.map((p) => p.id)).toEqual([all.points[0]!.id]);
  });
});
