import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VectorStore } from '../vector-store.ts';
import { RateLimitError } from './rate-limit.ts';
import { basicCollectionSetup, openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
beforeAll(async () => {
  t = await openTestStore('strict');
});
afterAll(async () => {
  await t.close();
});

const strict = (name: string, config: Record<string, unknown>) => t.store.updateCollection(name, { strict_mode_config: config });
const query = (name: string, body: Record<string, unknown>, opts = {}) => t.store.queryPoints(name, { query: [0.2, 0.1, 0.9, 0.7], ...body }, opts);
const strictConfig = async (name: string) => (await t.store.getCollection(name)).config.strict_mode_config as Record<string, unknown>;

describe('strict mode configuration', () => {
  it('PATCH merges: given keys replace, null keeps the stored value; GET echoes the result', async () => {
    await basicCollectionSetup(t.store, 'cfg');
    await strict('cfg', { enabled: true, write_rate_limit: 1, max_query_limit: 10 });
    await strict('cfg', { read_rate_limit: 2, write_rate_limit: null });
    expect(await strictConfig('cfg')).toEqual({ enabled: true, write_rate_limit: 1, max_query_limit: 10, read_rate_limit: 2 });
  });

  it('refuses a bad value with Qdrant\'s validation error', async () => {
    await basicCollectionSetup(t.store, 'cfg-bad');
    const err = await qdrantError(strict('cfg-bad', { enabled: true, max_query_limit: 0 }));
    expect(err.status).toBe(422);
    expect(err.message).toBe('Validation error in JSON body: [strict_mode_config.max_query_limit: value 0 invalid, must be 1 or larger]');
  });

  it('is off while enabled is not true', async () => {
    await basicCollectionSetup(t.store, 'off');
    await strict('off', { enabled: false, max_query_limit: 1 });
    expect((await query('off', { limit: 5 })).points).toHaveLength(5);
  });
});

describe('read checks', () => {
  it('limit, timeout, hnsw_ef, exact, oversampling, batch size: 400 with Qdrant\'s wording', async () => {
    await basicCollectionSetup(t.store, 'reads');
    await strict('reads', {
      enabled: true,
      max_query_limit: 3,
      max_timeout: 2,
      search_max_hnsw_ef: 4,
      search_allow_exact: false,
      search_max_oversampling: 1.5,
      search_max_batchsize: 2,
    });
    const cases: [() => Promise<unknown>, string][] = [
      [() => query('reads', { limit: 4 }), 'Bad request: Limit exceeded 4 > 3 for "limit". Help: Reduce the "limit" parameter to or below 3.'],
      [() => query('reads', { limit: 3 }, { timeout: 3 }), 'Bad request: Limit exceeded 3 > 2 for "timeout". Help: Reduce the "timeout" parameter to or below 2.'],
      [() => query('reads', { limit: 3, params: { hnsw_ef: 5 } }), 'Bad request: Limit exceeded 5 > 4 for "hnsw_ef". Help: Reduce the "hnsw_ef" parameter to or below 4.'],
      [() => query('reads', { limit: 3, params: { exact: true } }), 'Bad request: Exact search disabled!. Help: Set exact=false.'],
      [
        () => query('reads', { limit: 3, params: { quantization: { oversampling: 2 } } }),
        'Bad request: Limit exceeded 2 > 1.5 for "oversampling". Help: Reduce the "oversampling" parameter to or below 1.5.',
      ],
      [
        () => t.store.queryBatch('reads', { searches: [{ query: [1, 0, 0, 0], limit: 1 }, { query: [1, 0, 0, 0], limit: 1 }, { query: [1, 0, 0, 0], limit: 1 }] }),
        'Bad request: Limit exceeded 3 > 2 for "search batch size". Help: Reduce the "search batch size" parameter to or below 2.',
      ],
      // count is exact by default, and exact search is disabled
      [() => t.store.countPoints('reads', {}), 'Bad request: Exact search disabled!. Help: Set exact=false.'],
    ];
    for (const [run, message] of cases) {
      const err = await qdrantError(run());
      expect(err.status).toBe(400);
      expect(err.message).toBe(message);
    }
    expect((await query('reads', { limit: 3 }, { timeout: 2 })).points).toHaveLength(3);
    expect(await t.store.countPoints('reads', { exact: false })).toEqual({ count: 10 });
  });

  it('unindexed filtering: the key and the index types that would serve it; an index fixes it', async () => {
    await basicCollectionSetup(t.store, 'unindexed');
    await strict('unindexed', { enabled: true, unindexed_filtering_retrieve: false });
    const filter = { must: [{ key: 'count', match: { value: 0 } }] };
    const err = await qdrantError(query('unindexed', { filter }));
    expect(err.message).toBe(
      'Bad request: Index required but not found for "count" of one of the following types: [integer]. Help: Create an index for this key or use a different filter.',
    );
    // An integer index without `lookup` cannot serve a match.
    await t.store.createFieldIndex('unindexed', { field_name: 'count', field_schema: { type: 'integer', lookup: false, range: true } }, { wait: true });
    await qdrantError(query('unindexed', { filter }));
    await t.store.createFieldIndex('unindexed', { field_name: 'count', field_schema: 'integer' }, { wait: true });
    expect((await query('unindexed', { filter })).points.map((p) => p.id)).toEqual([5]);

    // Nested keys are checked with their full path; values_count is served by any index.
    const nested = { must: [{ nested: { key: 'country.cities', filter: { must: [{ key: 'sightseeing', values_count: { lt: 3 } }] } } }] };
    const e2 = await qdrantError(t.store.scrollPoints('unindexed', { filter: nested }));
    expect(e2.message).toContain('Index required but not found for "country.cities[].sightseeing"');
    await t.store.createFieldIndex('unindexed', { field_name: 'country.cities[].sightseeing', field_schema: 'integer' }, { wait: true });
    await t.store.scrollPoints('unindexed', { filter: nested });
  });

  it('a vector without HNSW (m = 0) cannot be searched when exact search is disabled, unless rescoring or tenant-filtered', async () => {
    await basicCollectionSetup(t.store, 'fullscan');
    await t.store.updateCollection('fullscan', { hnsw_config: { m: 0, payload_m: 16 } });
    await strict('fullscan', { enabled: true, search_allow_exact: false });
    const err = await qdrantError(query('fullscan', { limit: 3 }));
    expect(err.status).toBe(400);
    expect(err.message).toBe(
      'Bad request: Request is forbidden because global vector indexing is disabled (hnsw_config.m = 0). Help: Use tenant-specific filter, enable global vector indexing or enable strict mode `search_allow_exact` option',
    );
    // Rescoring prefetched candidates is not a full scan; the prefetch itself is.
    await qdrantError(t.store.queryPoints('fullscan', { prefetch: { query: [1, 0, 0, 0] }, query: [1, 0, 0, 0] }));
    // A filter on a tenant index makes the payload graph usable.
    await t.store.createFieldIndex('fullscan', { field_name: 'city', field_schema: { type: 'keyword', is_tenant: true } }, { wait: true });
    const tenant = { must: [{ key: 'city', match: { value: 'Berlin' } }] };
    expect((await query('fullscan', { limit: 3, filter: tenant })).points.length).toBeGreaterThan(0);
    // …and the outer query only rescores what the (tenant-filtered) prefetch found.
    const rescored = await t.store.queryPoints('fullscan', { prefetch: { query: [1, 0, 0, 0], filter: tenant }, query: [0, 1, 0, 0] });
    expect(rescored.points.map((p) => p.id).sort()).toEqual([1, 2, 3]);
  });

  it('filter condition count and condition size', async () => {
    await basicCollectionSetup(t.store, 'conds');
    await strict('conds', { enabled: true, filter_max_conditions: 2, condition_max_size: 3 });
    const cond = (i: number) => ({ key: 'price', match: { value: i } });
    const e1 = await qdrantError(query('conds', { filter: { should: [cond(1), cond(2), cond(3)] } }));
    expect(e1.message).toBe('Bad request: Filter condition limit reached (3 > 2). Help: Reduce the amount of conditions of your filter.');
    const e2 = await qdrantError(query('conds', { filter: { must: [{ key: 'price', match: { any: [1, 2, 3, 4] } }] } }));
    expect(e2.message).toBe('Bad request: Condition size limit reached (4 > 3). Help: Reduce the size of your condition.');
    await query('conds', { filter: { must: [{ key: 'price', match: { any: [1, 2, 3] } }, cond(1)] } });
  });
});

describe('write checks', () => {
  it('batch sizes, filtered writes, sparse length, payload index count', async () => {
    await basicCollectionSetup(t.store, 'writes');
    await strict('writes', {
      enabled: true,
      upsert_max_batchsize: 2,
      unindexed_filtering_update: false,
      sparse_config: { 'sparse-text': { max_length: 2 } },
      max_payload_index_count: 1,
    });
    const three = [1, 2, 3].map((id) => ({ id, vector: [1, 2, 3, 4] }));
    const e1 = await qdrantError(t.store.upsertPoints('writes', { points: three }));
    expect(e1.message).toBe('Bad request: Limit exceeded 3 > 2 for "upsert limit". Help: Reduce the "upsert limit" parameter to or below 2.');
    const e2 = await qdrantError(t.store.batchUpdate('writes', { operations: [{ upsert: { batch: { ids: [1, 2, 3], vectors: [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4]] } } }] }));
    expect(e2.message).toContain('"upsert limit"');
    const e3 = await qdrantError(t.store.updateVectors('writes', { points: three }));
    expect(e3.message).toContain('"update limit"');
    const e4 = await qdrantError(t.store.deletePoints('writes', { filter: { must: [{ key: 'city', match: { value: 'Berlin' } }] } }));
    expect(e4.message).toBe(
      'Bad request: Index required but not found for "city" of one of the following types: [keyword]. Help: Create an index for this key or use a different filter.',
    );
    const e5 = await qdrantError(t.store.upsertPoints('writes', { points: [{ id: 9, vector: { 'sparse-text': { indices: [1, 2, 3], values: [1, 1, 1] } } }] }));
    expect(e5.message).toBe("Bad request: Sparse vector 'sparse-text' has a limit of 2 indices, but 3 were provided!");

    await t.store.createFieldIndex('writes', { field_name: 'city', field_schema: 'keyword' });
    await t.store.deletePoints('writes', { filter: { must: [{ key: 'city', match: { value: 'Berlin' } }] } }, { wait: true });
    const e6 = await qdrantError(t.store.createFieldIndex('writes', { field_name: 'price', field_schema: 'float' }));
    expect(e6.status).toBe(400);
    expect(e6.message).toBe(
      'Bad request: Collection already has the maximum number of payload indices (1). Help: Please delete an existing index before creating a new one.',
    );
    // Nothing of the refused writes was applied.
    expect((await t.store.retrievePoints('writes', { ids: [1, 2, 3, 9] })).map((p) => p.id)).toEqual([9]);
  });

  it('points count and vector storage size are checked before each upsert', async () => {
    await basicCollectionSetup(t.store, 'sizes');
    await strict('sizes', { enabled: true, max_points_count: 11 });
    await t.store.upsertPoints('sizes', { points: [{ id: 11, vector: [1, 2, 3, 4] }] }, { wait: true });
    const e1 = await qdrantError(t.store.upsertPoints('sizes', { points: [{ id: 12, vector: [1, 2, 3, 4] }] }));
    expect(e1.message).toBe('Bad request: Max points count limit of 11 reached!');
    // 9 dense vectors of 4 float32 = 144 bytes.
    await strict('sizes', { enabled: true, max_points_count: 1000, max_collection_vector_size_bytes: 144 });
    const e2 = await qdrantError(t.store.upsertPoints('sizes', { points: [{ id: 12, vector: [1, 2, 3, 4] }] }));
    // Qdrant prints the limit in MB as an f32: 144 / 2^20.
    expect(e2.message).toBe('Bad request: Max vector storage size limit of 0.0001373291MB reached!');
  });
});

describe('rate limits (token buckets in Postgres, shared by replicas)', () => {
  it('read: a request above capacity never passes; spent tokens are refused with the cost and a retry time', async () => {
    await basicCollectionSetup(t.store, 'rl-read');
    await strict('rl-read', { enabled: true, read_rate_limit: 4 });
    const over = await qdrantError(t.store.retrievePoints('rl-read', { ids: [1, 2, 3, 4, 5] }));
    expect(over.status).toBe(429);
    expect(over.message).toBe(
      'Rate limiting exceeded: Read rate limit exceeded, request larger than rate limiter capacity, please try to split your request',
    );
    expect(await t.store.retrievePoints('rl-read', { ids: [1, 2, 3, 4] })).toHaveLength(4);
    // A second worker on the same database draws from the same bucket.
    const replica = new VectorStore(t.sql, { schema: t.schema });
    const spent = await qdrantError(replica.retrievePoints('rl-read', { ids: [1, 2, 3, 4] }));
    expect(spent).toBeInstanceOf(RateLimitError);
    expect(spent.status).toBe(429);
    expect(spent.message).toMatch(/^Rate limiting exceeded: Read rate limit exceeded: Operation requires 4 tokens but only 0\.0 were available\. Retry after \d+s$/);
    expect(Number.isInteger(spent.details.retry_after) && (spent.details.retry_after as number) >= 1).toBe(true);
    // Setting strict mode again refills the bucket.
    await strict('rl-read', { read_rate_limit: 4 });
    expect(await replica.retrievePoints('rl-read', { ids: [1, 2, 3, 4] })).toHaveLength(4);
    // Scroll costs 1 + its filter conditions.
    const scroll = await qdrantError(t.store.scrollPoints('rl-read', { filter: { must: [{ key: 'a', match: { value: 1 } }] } }));
    expect(scroll.message).toContain('Operation requires 2 tokens');
  });

  it('write: upserts cost a token per point; filtered writes cost the estimated matches', async () => {
    await basicCollectionSetup(t.store, 'rl-write');
    await strict('rl-write', { enabled: true, write_rate_limit: 10 });
    const points = (n: number) => ({ batch: { ids: Array.from({ length: n }, (_, i) => i + 1), vectors: Array.from({ length: n }, () => [1, 2, 3, 4]) } });
    const over = await qdrantError(t.store.batchUpdate('rl-write', { operations: [{ upsert: points(11) }] }));
    expect(over.message).toBe(
      'Rate limiting exceeded: Write rate limit exceeded, request larger than rate limiter capacity, please try to split your request',
    );
    await t.store.upsertPoints('rl-write', points(10), { wait: true });
    const spent = await qdrantError(t.store.upsertPoints('rl-write', points(10)));
    expect(spent.message).toMatch(/^Rate limiting exceeded: Write rate limit exceeded: Operation requires 10 tokens but only 0\.0 were available\. Retry after \d+s$/);

    // An unindexed filter over 10 points is estimated at half of them, as Qdrant does.
    await strict('rl-write', { write_rate_limit: 7 });
    const filter = { must: [{ key: 'City', match: { value: 'Berlin' } }] };
    await t.store.overwritePayload('rl-write', { payload: { x: 1 }, filter });
    const e = await qdrantError(t.store.overwritePayload('rl-write', { payload: { x: 1 }, filter }));
    expect(e.message).toContain('Operation requires 5 tokens but only 2.0 were available');
  });
});

describe('conditional upserts (update_mode)', () => {
  it('insert_only leaves existing points; update_only skips new ids', async () => {
    await basicCollectionSetup(t.store, 'modes');
    const body = (mode: string) => ({
      points: [
        { id: 1, vector: [9, 9, 9, 9], payload: { updated: true } },
        { id: 999, vector: [1, 1, 1, 1], payload: { new: mode } },
      ],
      update_mode: mode,
    });
    await t.store.upsertPoints('modes', body('insert_only'), { wait: true });
    expect((await t.store.getPoint('modes', '1')).payload).toEqual({ city: 'Berlin', price: 10 });
    expect((await t.store.getPoint('modes', '999')).payload).toEqual({ new: 'insert_only' });
    await t.store.upsertPoints('modes', body('update_only'), { wait: true });
    expect((await t.store.getPoint('modes', '1')).payload).toEqual({ updated: true });
    expect((await t.store.getPoint('modes', '999')).payload).toEqual({ new: 'update_only' });
    await t.store.deletePoints('modes', { points: [999] }, { wait: true });
    await t.store.upsertPoints('modes', body('update_only'), { wait: true });
    expect((await qdrantError(t.store.getPoint('modes', '999'))).status).toBe(404);
    const bad = await qdrantError(t.store.upsertPoints('modes', { ...body('x'), update_mode: 'sometimes' }));
    expect(bad.status).toBe(400);
  });
});

describe('wait and timeout', () => {
  it('a write still blocked after `timeout` answers wait_timeout and is applied afterwards', async () => {
    await basicCollectionSetup(t.store, 'waits');
    // Another transaction holds the collection row exclusively: the write waits for it.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = t.sql.begin(async (tx) => {
      await tx`select 1 from ${tx(t.schema)}.collections where name = 'waits' for update`;
      locked();
      await released;
    });
    await isLocked;
    const answer = await t.store.upsertPoints('waits', { points: [{ id: 77, vector: [1, 1, 1, 1] }] }, { wait: true, timeout: 1 });
    expect(answer).toEqual({ operation_id: null, status: 'wait_timeout' });
    release();
    await holder;
    let found = false;
    for (let i = 0; i < 50 && !found; i++) {
      found = (await t.store.retrievePoints('waits', { ids: [77] })).length === 1;
      if (!found) await new Promise((r) => setTimeout(r, 50));
    }
    expect(found).toBe(true);
    expect(await t.store.upsertPoints('waits', { points: [{ id: 78, vector: [1, 1, 1, 1] }] }, { wait: true, timeout: 5 })).toMatchObject({ status: 'completed' });
  });
});

describe('collection info', () => {
  it('metadata merges and null removes a key; warnings; update_queue; indexing_threshold 0 → nothing indexed', async () => {
    await basicCollectionSetup(t.store, 'info');
    await t.store.updateCollection('info', { metadata: { a: 'x', b: 'y' } });
    await t.store.updateCollection('info', { metadata: { a: 'z', b: null } });
    const info = await t.store.getCollection('info');
    expect(info.config.metadata).toEqual({ a: 'z' });
    expect(info.update_queue).toEqual({ length: 0 });
    expect(info.warnings).toBeUndefined();

    await t.store.deleteCollection('w');
    await t.store.createCollection('w', {
      vectors: { v: { size: 4, distance: 'Dot', hnsw_config: { inline_storage: true } } },
      optimizers_config: { indexing_threshold: 0 },
    });
    await t.store.upsertPoints('w', { points: [{ id: 1, vector: { v: [1, 2, 3, 4] } }] }, { wait: true });
    const w = await t.store.getCollection('w');
    expect(w.warnings).toEqual([{ message: "HNSW inline storage requires quantization: it is ignored for vector 'v'" }]);
    expect(w.indexed_vectors_count).toBe(0);
    expect(w.points_count).toBe(1);

    expect(await t.store.getOptimizations('w', 'queued, idle_segments')).toEqual({
      summary: { queued_optimizations: 0, queued_segments: 0, queued_points: 0, idle_segments: 1 },
      running: [],
      queued: [],
      idle_segments: [{ uuid: expect.stringMatching(/^[0-9a-f-]{36}$/), points_count: 1 }],
    });
  });

  it('memory placement is echoed; pinned dense or payload storage is refused', async () => {
    await t.store.deleteCollection('mem');
    await t.store.createCollection('mem', { vectors: { size: 4, distance: 'Dot', memory: 'cached' }, payload: { memory: 'cold' } });
    const params = (await t.store.getCollection('mem')).config.params;
    expect(params.vectors).toMatchObject({ memory: 'cached' });
    expect(params.payload).toEqual({ memory: 'cold' });
    const err = await qdrantError(t.store.createCollection('mem2', { vectors: { size: 4, distance: 'Dot', memory: 'pinned' } }));
    expect(err.status).toBe(422);
    expect(err.message).toBe('Validation error in JSON body: [vectors.memory: `pinned` is not supported for dense vector storage]');
  });
});
