/**
 * Ports of Qdrant's basic openapi tests (tests/openapi/test_basic_retrieve_api.py, test_count.py,
 * test_delete_points.py, test_uuid_ops.py, test_payload_operations.py, test_optional_vectors.py,
 * test_vector_dimension_validation.py) against the store.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { basicCollectionSetup, openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
beforeAll(async () => {
  t = await openTestStore('points');
});
afterAll(async () => {
  await t.close();
});

describe('basic retrieve api', () => {
  beforeAll(async () => {
    await basicCollectionSetup(t.store, 'basic');
  });

  it('get point, retrieve, points_count, search and filtered search, scroll', async () => {
    const s = t.store;
    expect(await s.getPoint('basic', '2')).toEqual({
      id: 2,
      payload: { city: ['Berlin', 'London'], price: 11 },
      vector: [0.19, 0.81, 0.75, 0.11],
    });
    expect(await s.retrievePoints('basic', { ids: [1, 2] })).toEqual([
      { id: 1, payload: { city: 'Berlin', price: 10 } },
      { id: 2, payload: { city: ['Berlin', 'London'], price: 11 } },
    ]);
    expect((await s.getCollection('basic')).points_count).toBe(10);
    expect(await s.searchPoints('basic', { vector: [0.2, 0.1, 0.9, 0.7], limit: 3 })).toHaveLength(3);
    const london = await s.searchPoints('basic', {
      filter: { should: [{ key: 'city', match: { value: 'London' } }] },
      vector: [0.2, 0.1, 0.9, 0.7],
      limit: 3,
    });
    expect(london.map((p) => p.id).sort()).toEqual([2, 4]);
    const page = await s.scrollPoints('basic', { offset: 2, limit: 2, with_vector: true });
    expect(page.points.map((p) => p.id)).toEqual([2, 3]);
    expect(page.points[0]!.vector).toEqual([0.19, 0.81, 0.75, 0.11]);
    expect(page.next_page_offset).toBe(4);
  });

  it('retrieve: missing ids absent, request order, with_vectors alias, payload off', async () => {
    const recs = await t.store.retrievePoints('basic', { ids: [3, 100, 1, 3], with_payload: false, with_vectors: true });
    expect(recs).toEqual([
      { id: 3, vector: [0.36, 0.55, 0.47, 0.94] },
      { id: 1, vector: [0.05, 0.61, 0.76, 0.74] },
    ]);
  });

  it('sparse-only points show their sparse vector (sorted by index) and no dense one', async () => {
    expect(await t.store.getPoint('basic', '9')).toEqual({
      id: 9,
      payload: {},
      vector: { 'sparse-text': { indices: [12, 66], values: [0.5, 0.5] } },
    });
  });

  it('GET of a missing or malformed id', async () => {
    let err = await qdrantError(t.store.getPoint('basic', '404'));
    expect(err.status).toBe(404);
    expect(err.message).toBe('Not found: Point with id 404 does not exists!');
    err = await qdrantError(t.store.getPoint('basic', 'nope'));
    expect(err.status).toBe(400);
    expect(err.message).toBe('Wrong input: Can not recognize "nope" as point id');
  });

  it('scroll pages through every point with next_page_offset', async () => {
    const seen: unknown[] = [];
    let offset: unknown ;
    for (;;) {
      const page = await t.store.scrollPoints('basic', { limit: 3, offset, with_payload: false });
      seen.push(...page.points.map((p) => p.id));
      expect(page.points.every((p) => p.payload === undefined && p.vector === undefined)).toBe(true);
      if (page.next_page_offset === null) break;
      offset = page.next_page_offset;
    }
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const all = await t.store.scrollPoints('basic', { limit: 100 });
    expect(all.next_page_offset).toBeNull();
    expect(all.points[0]).toEqual({ id: 1, payload: { city: 'Berlin', price: 10 } });
  });

  it('exclude payload keys in search results', async () => {
    const res = await t.store.searchPoints('basic', {
      vector: [0.2, 0.1, 0.9, 0.7],
      limit: 5,
      filter: { should: [{ key: 'city', match: { value: 'London' } }] },
      with_payload: { exclude: ['city'] },
    });
    expect(res.length).toBeGreaterThan(0);
    for (const p of res) {
      expect(p.payload).toBeDefined();
      expect(p.payload).not.toHaveProperty('city');
      expect(p.payload).toHaveProperty('price');
    }
  });

  it('batch search: per-search results, empty batch', async () => {
    const res = await t.store.searchBatch('basic', {
      searches: [
        { vector: [0.2, 0.1, 0.9, 0.7], limit: 3 },
        { filter: { should: [{ key: 'city', match: { value: 'London' } }] }, vector: [0.2, 0.1, 0.9, 0.7], limit: 3 },
      ],
    });
    expect(res.map((r) => r.length)).toEqual([3, 2]);
    expect(await t.store.searchBatch('basic', { searches: [] })).toEqual([]);
  });

  it('is_empty / is_null conditions in search', async () => {
    const empty = await t.store.searchPoints('basic', {
      vector: [0.2, 0.1, 0.9, 0.7],
      limit: 5,
      filter: { should: [{ is_empty: { key: 'city' } }] },
      with_payload: true,
    });
    expect(empty.map((p) => p.id).sort()).toEqual([5, 6, 7, 8]);
    const isNull = await t.store.searchPoints('basic', {
      vector: [0.2, 0.1, 0.9, 0.7],
      limit: 5,
      filter: { should: [{ is_null: { key: 'city' } }] },
    });
    expect(isNull.map((p) => p.id)).toEqual([7]);
  });

  it('ScoredPoint always has version; payload/vector only when asked', async () => {
    const [p] = await t.store.searchPoints('basic', { vector: [0.2, 0.1, 0.9, 0.7], limit: 1 });
    expect(Object.keys(p!).sort()).toEqual(['id', 'score', 'version']);
    expect(typeof p!.version).toBe('number');
  });

  it('count with a should filter (test_count)', async () => {
    expect(
      await t.store.countPoints('basic', {
        filter: { should: [{ key: 'city', match: { value: 'London' } }, { key: 'city', match: { value: 'Berlin' } }] },
      }),
    ).toEqual({ count: 4 });
    expect(await t.store.countPoints('basic', { exact: false })).toEqual({ count: 10 });
    expect(await t.store.countPoints('basic', undefined)).toEqual({ count: 10 });
  });

  it('match any (test_filter)', async () => {
    const res = await t.store.scrollPoints('basic', {
      filter: { must: [{ key: 'city', match: { any: ['London', 'Moscow'] } }] },
    });
    expect(res.points.map((p) => p.id)).toEqual([2, 3, 4]);
  });

  it('nested payload key and the with_vectors alias (test_query_nested, test_with_vectors_alias)', async () => {
    await t.store.upsertPoints(
      'basic',
      {
        points: [
          {
            id: 8,
            vector: [0.15, 0.31, 0.76, 0.74],
            payload: { database_id: { type: 'keyword', value: '8594ff5d-265f-4785-a9f5-b3b4b9665506' } },
          },
        ],
      },
      { wait: true },
    );
    const res = await t.store.scrollPoints('basic', {
      offset: null,
      limit: 10,
      with_vector: true,
      filter: { must: [{ key: 'database_id.value', match: { value: '8594ff5d-265f-4785-a9f5-b3b4b9665506' } }] },
    });
    expect(res.points).toHaveLength(1);
    for (const keyword of ['with_vector', 'with_vectors']) {
      const r = await t.store.scrollPoints('basic', {
        [keyword]: true,
        filter: { must: [{ key: 'database_id.type', match: { value: 'keyword' } }] },
        limit: 1,
      });
      expect(r.points[0]!.vector).toEqual([0.15, 0.31, 0.76, 0.74]);
    }
  });
});

describe('writes', () => {
  beforeEach(async () => {
    await basicCollectionSetup(t.store, 'w');
  });

  it('UpdateResult: completed with wait, acknowledged without, increasing operation ids, versions', async () => {
    const a = await t.store.upsertPoints('w', { points: [{ id: 1, vector: [1, 0, 0, 0] }] }, { wait: true });
    const b = await t.store.upsertPoints('w', { points: [{ id: 2, vector: [1, 0, 0, 0] }] });
    expect(a.status).toBe('completed');
    expect(b.status).toBe('acknowledged');
    expect(b.operation_id!).toBeGreaterThan(a.operation_id!);
    const [p1] = await t.store.queryPoints('w', { query: [1, 0, 0, 0], limit: 1, filter: { must: [{ has_id: [1] }] } }).then((r) => r.points);
    expect(p1!.version).toBe(a.operation_id);
  });

  it('upsert replaces the whole point (payload too)', async () => {
    await t.store.upsertPoints('w', { points: [{ id: 1, vector: [1, 1, 1, 1] }] });
    expect(await t.store.getPoint('w', '1')).toEqual({ id: 1, payload: {}, vector: [1, 1, 1, 1] });
  });

  it('upsert batch form; the last write of a repeated id wins', async () => {
    await t.store.upsertPoints('w', {
      batch: { ids: [20, 21, 20], vectors: [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], payloads: [{ a: 1 }, null, { a: 3 }] },
    });
    expect(await t.store.getPoint('w', '20')).toEqual({ id: 20, payload: { a: 3 }, vector: [0, 0, 1, 0] });
    expect(await t.store.getPoint('w', '21')).toEqual({ id: 21, payload: {}, vector: [0, 1, 0, 0] });
  });

  it('delete by has_id filter and by ids (test_delete_points)', async () => {
    await t.store.deletePoints('w', { filter: { must: [{ has_id: [5] }] } }, { wait: true });
    expect((await t.store.getCollection('w')).points_count).toBe(9);
    await t.store.deletePoints('w', { points: [1, 2, 3, 4] }, { wait: true });
    expect((await t.store.getCollection('w')).points_count).toBe(5);
    // Deleting ids that do not exist is fine.
    await t.store.deletePoints('w', { points: [1, 999] });
    expect((await t.store.getCollection('w')).points_count).toBe(5);
  });

  it('uuid ids: dashless accepted, dashed lowercase returned, numbers before uuids (test_uuid_ops)', async () => {
    await t.store.upsertPoints('w', {
      points: [
        { id: 'b524a3c4-c568-4383-8019-c9ca08243d6a', vector: [0.15, 0.21, 0.96, 0.04], payload: { city: 'Berlin' } },
        { id: '1D675313D3DD46468B988052364872DA', vector: [0.19, 0.81, 0.75, 0.11], payload: { city: ['Berlin', 'London'] } },
      ],
    });
    expect((await t.store.getPoint('w', 'b524a3c4-c568-4383-8019-c9ca08243d6a')).id).toBe('b524a3c4-c568-4383-8019-c9ca08243d6a');
    expect((await t.store.getPoint('w', '1d675313d3dd46468b988052364872da')).id).toBe('1d675313-d3dd-4646-8b98-8052364872da');
    const all = await t.store.scrollPoints('w', { limit: 100, with_payload: false });
    expect(all.points.map((p) => p.id)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
      '1d675313-d3dd-4646-8b98-8052364872da',
      'b524a3c4-c568-4383-8019-c9ca08243d6a',
    ]);
    const page = await t.store.scrollPoints('w', { offset: 10, limit: 2, with_payload: false });
    expect(page.points.map((p) => p.id)).toEqual([10, '1d675313-d3dd-4646-8b98-8052364872da']);
    expect(page.next_page_offset).toBe('b524a3c4-c568-4383-8019-c9ca08243d6a');
    const err = await qdrantError(t.store.upsertPoints('w', { points: [{ id: 'not-a-uuid', vector: [1, 2, 3, 4] }] }));
    expect(err.status).toBe(400);
    expect(err.message).toBe(
      'Format error in JSON body: points[0].id: value not-a-uuid is not a valid point ID, valid values are either an unsigned integer or a UUID',
    );
  });

  it('payload operations: set, clear, delete keys, overwrite, set by filter, nested key (test_payload_operations)', async () => {
    const s = t.store;
    const payloadOf = async (id: number) => (await s.getPoint('w', String(id))).payload!;
    await s.setPayload('w', { payload: { test_payload: 'keyword' }, points: [6] }, { wait: true });
    expect(await payloadOf(6)).toEqual({ test_payload: 'keyword' });

    await s.clearPayload('w', { filter: { must: [{ has_id: [6] }] } }, { wait: true });
    expect(await payloadOf(6)).toEqual({});

    await s.setPayload('w', { payload: { test_payload: 'keyword' }, points: [6] });
    await s.deletePayload('w', { keys: ['test_payload'], points: [6] });
    expect(await payloadOf(6)).toEqual({});

    await s.overwritePayload('w', { payload: { key1: 'aaa', key2: 'bbb' }, points: [6] });
    expect(await payloadOf(6)).toEqual({ key1: 'aaa', key2: 'bbb' });
    await s.setPayload('w', { payload: { key1: 'ccc' }, points: [6] });
    expect(await payloadOf(6)).toEqual({ key1: 'ccc', key2: 'bbb' });
    await s.overwritePayload('w', { payload: { key2: 'eee' }, points: [6] });
    expect(await payloadOf(6)).toEqual({ key2: 'eee' });

    await s.setPayload('w', { payload: { key4: 'aaa' }, points: [1, 2, 3] });
    const byKey4 = await s.scrollPoints('w', { filter: { must: [{ key: 'key4', match: { value: 'aaa' } }] } });
    expect(byKey4.points).toHaveLength(3);
    await s.setPayload('w', { payload: { key5: 'bbb' }, filter: { must: [{ key: 'key4', match: { value: 'aaa' } }] } });
    const byKey5 = await s.scrollPoints('w', { filter: { must: [{ key: 'key5', match: { value: 'bbb' } }] } });
    expect(byKey5.points).toHaveLength(3);

    await s.setPayload('w', { payload: { key6: 'xxx' }, points: [1], key: null });
    expect(Object.keys(await payloadOf(1))).toHaveLength(5);

    await s.setPayload('w', {
      payload: { key6: { subkey: 'xxx', arraykey: [{ a1: { a1k: 'xxx' } }, { a2: { a2k: 'xxx' } }], subkey2: { subkey3: 'xxx' } } },
      points: [1],
    });
    await s.setPayload('w', { payload: { subkey: 'yyy' }, points: [1], key: 'key6' });
    await s.setPayload('w', { payload: { subkey3: 'yyy' }, points: [1], key: 'key6.subkey2' });
    await s.setPayload('w', { payload: { a1k: 'yyy' }, points: [1], key: 'key6.arraykey[0].a1' });
    await s.setPayload('w', { payload: { a2k: 'yyy' }, points: [1], key: 'key6.arraykey[].a2' });
    await s.setPayload('w', { payload: { key: 'xxx' }, points: [1], key: 'key6.subkey7' });
    const p1 = (await payloadOf(1)) as { key6: Record<string, any> };
    expect(Object.keys(p1)).toHaveLength(5);
    expect(p1.key6.subkey).toBe('yyy');
    expect(p1.key6.subkey2.subkey3).toBe('yyy');
    expect(p1.key6.arraykey[0].a1.a1k).toBe('yyy');
    expect(p1.key6.arraykey[1].a2.a2k).toBe('yyy');
    expect(p1.key6.subkey7.key).toBe('xxx');

    // Idempotence on a point without payload.
    for (let i = 0; i < 2; i++) {
      await s.setPayload('w', { payload: { key: 'xxx' }, points: [9], key: 'key' }, { wait: true });
      expect(await payloadOf(9)).toEqual({ key: { key: 'xxx' } });
    }

    await s.deletePayload('w', { keys: ['key5'], filter: { must: [{ key: 'key5', match: { value: 'bbb' } }] } });
    expect((await s.scrollPoints('w', { filter: { must: [{ key: 'key5', match: { value: 'bbb' } }] } })).points).toHaveLength(0);

    // Nested delete keys.
    await s.deletePayload('w', { keys: ['key6.subkey2', 'key6.arraykey[].a2'], points: [1] });
    const after = (await payloadOf(1)) as { key6: Record<string, any> };
    expect(after.key6.subkey2).toBeUndefined();
    expect(after.key6.arraykey).toEqual([{ a1: { a1k: 'yyy' } }, {}]);
  });

  it('set payload merges top-level keys only (test_payload_index_overwrite)', async () => {
    await t.store.overwritePayload('w', { payload: { a: { x: 1 }, nested: { a: { x: 1 }, b: 1 } }, points: [1] });
    await t.store.setPayload('w', { payload: { a: { y: 1 } }, points: [1] });
    await t.store.setPayload('w', { payload: { a: { y: 1 } }, points: [1], key: 'nested' });
    expect((await t.store.getPoint('w', '1')).payload).toEqual({ a: { y: 1 }, nested: { a: { y: 1 }, b: 1 } });
  });

  it('payload updates of missing ids are 404; a body without points or filter is 400', async () => {
    let err = await qdrantError(t.store.setPayload('w', { payload: { a: 1 }, points: [1, 777] }));
    expect(err.status).toBe(404);
    expect(err.message).toBe('Not found: No point with id 777 found');
    expect((await t.store.getPoint('w', '1')).payload).toEqual({ city: 'Berlin', price: 10 });
    err = await qdrantError(t.store.setPayload('w', { payload: { a: 1 } }));
    expect(err.status).toBe(400);
    expect(err.message).toBe('Format error in JSON body: Either list of point ids or filter must be provided');
  });

  it('dimension and vector-name errors (test_vector_dimension_validation)', async () => {
    for (const wait of [true, false]) {
      const err = await qdrantError(t.store.upsertPoints('w', { points: [{ id: 1, vector: [0.1, 0.2, 0.3] }] }, { wait }));
      expect(err.status).toBe(400);
      expect(err.message).toBe('Wrong input: Vector dimension error: expected dim: 4, got 3');
    }
    let err = await qdrantError(
      t.store.upsertPoints('w', { batch: { ids: [10, 11], vectors: [[0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3]] } }),
    );
    expect(err.message).toBe('Wrong input: Vector dimension error: expected dim: 4, got 3');
    // Nothing of the failed batch was written.
    expect((await t.store.getPoint('w', '10')).vector).toEqual({ 'sparse-text': { indices: [1, 2, 3], values: [0.1, 0.2, 0.3] } });

    err = await qdrantError(t.store.upsertPoints('w', { points: [{ id: 102, vector: { name: [0.1, 0.2, 0.3, 0.4] } }] }));
    expect(err.status).toBe(400);
    expect(err.message).toBe('Wrong input: Not existing vector name error: name');
    expect(await t.store.countPoints('w', { filter: { must: [{ has_id: [102] }] } })).toEqual({ count: 0 });

    err = await qdrantError(t.store.queryPoints('w', { query: [1, 2, 3] }));
    expect(err.message).toBe('Wrong input: Vector dimension error: expected dim: 4, got 3');
  });
});

describe('named and optional vectors (test_optional_vectors)', () => {
  beforeEach(async () => {
    const s = t.store;
    await s.deleteCollection('mv');
    await s.createCollection('mv', {
      vectors: { image: { size: 4, distance: 'Dot' }, text: { size: 8, distance: 'Cosine' } },
      sparse_vectors: { 'sparse-image': {}, 'sparse-text': {} },
    });
    const pts = [
      [1, [0.05, 0.61, 0.76, 0.74]],
      [2, [0.19, 0.81, 0.75, 0.11]],
      [3, [0.36, 0.55, 0.47, 0.94]],
      [4, [0.18, 0.01, 0.85, 0.8]],
    ] as const;
    await s.upsertPoints('mv', {
      points: pts.map(([id, v]) => ({ id, vector: { image: v, text: [...v, ...v] }, payload: { n: id } })),
    });
  });

  it('Cosine vectors are normalised at insert; Dot are not', async () => {
    const p = await t.store.getPoint('mv', '1');
    const v = p.vector as Record<string, number[]>;
    expect(v.image).toEqual([0.05, 0.61, 0.76, 0.74]);
    const norm = Math.sqrt(v.text!.reduce((s, x) => s + x * x, 0));
    expect(norm).toBeCloseTo(1, 5);
  });

  it('delete vectors, retrieve selected vector names', async () => {
    await t.store.deleteVectors('mv', { points: [1, 3], vector: ['text'] }, { wait: true });
    const recs = await t.store.retrievePoints('mv', { ids: [1, 2, 3, 4], with_vectors: ['text', 'image'], with_payload: true });
    const byId = new Map(recs.map((r) => [r.id, r.vector as Record<string, unknown>]));
    expect(byId.get(1)).toHaveProperty('image');
    expect(byId.get(1)).not.toHaveProperty('text');
    expect(byId.get(2)).toHaveProperty('text');
    expect(byId.get(3)).not.toHaveProperty('text');
    const only = await t.store.retrievePoints('mv', { ids: [2], with_vector: ['image'] });
    expect(Object.keys(only[0]!.vector!)).toEqual(['image']);
    const err = await qdrantError(t.store.retrievePoints('mv', { ids: [2], with_vector: ['nope'] }));
    expect(err.message).toBe('Wrong input: Not existing vector name error: nope');
  });

  it('search on a named vector skips points without it', async () => {
    await t.store.deleteVectors('mv', { points: [2, 3], vector: ['text'] });
    const res = await t.store.searchPoints('mv', {
      vector: { name: 'text', vector: [0, 0, 1, 1, 0, 0, 1, 1] },
      limit: 10,
      with_payload: true,
      with_vector: ['text'],
    });
    expect(res.map((p) => p.id).sort()).toEqual([1, 4]);
  });

  it('upsert with partial vectors: missing ones stay empty', async () => {
    await t.store.upsertPoints('mv', {
      points: [
        { id: 101, vector: { text: [0.05, 0.61, 0.76, 0.74, 0.05, 0.61, 0.76, 0.74] }, payload: { city: 'Berlin' } },
        { id: 102, vector: { image: [0.19, 0.81, 0.75, 0.11] } },
        { id: 103, vector: {}, payload: { city: ['Berlin', 'Moscow'] } },
      ],
    });
    expect(Object.keys((await t.store.getPoint('mv', '101')).vector!)).toEqual(['text']);
    expect(Object.keys((await t.store.getPoint('mv', '102')).vector!)).toEqual(['image']);
    expect((await t.store.getPoint('mv', '103')).vector).toEqual({});
  });

  it('update vectors: merges per name, same point twice in one request, unknown point 404', async () => {
    const s = t.store;
    await s.upsertPoints('mv', { points: [{ id: 1000, vector: {}, payload: { city: 'Berlin' } }] });
    await s.updateVectors('mv', { points: [{ id: 1000, vector: { image: [0.19, 0.28, 0.37, 0.46] } }] }, { wait: true });
    let p = await s.getPoint('mv', '1000');
    expect(p.vector).toEqual({ image: [0.19, 0.28, 0.37, 0.46] });
    expect(p.payload).toEqual({ city: 'Berlin' });

    await s.updateVectors('mv', {
      points: [
        { id: 1000, vector: { image: [0.3, 0.6, 0.4, 0.4] } },
        { id: 1000, vector: { image: [0.7, 0.5, 0.0, 0.5], 'sparse-text': { indices: [3, 1], values: [0.3, 0.1] } } },
      ],
    });
    p = await s.getPoint('mv', '1000');
    expect(p.vector).toEqual({ image: [0.7, 0.5, 0, 0.5], 'sparse-text': { indices: [1, 3], values: [0.1, 0.3] } });

    const err = await qdrantError(
      s.updateVectors('mv', {
        points: [
          { id: 1, vector: { text: [0.05, 0.61, 0.76, 0.74, 0.05, 0.61, 0.76, 0.74] } },
          { id: 424242424242, vector: { image: [0.19, 0.81, 0.75, 0.11] } },
        ],
      }),
    );
    expect(err.status).toBe(404);
    expect(err.message).toBe('Not found: No point with id 424242424242 found');

    await s.deleteVectors('mv', { points: [1000], vector: ['sparse-text', 'image'] });
    expect((await s.getPoint('mv', '1000')).vector).toEqual({});
  });

  it('batch operations: one UpdateResult each, applied in order, all or nothing', async () => {
    const s = t.store;
    const res = await s.batchUpdate(
      'mv',
      {
        operations: [
          { upsert: { points: [{ id: 50, vector: { image: [1, 0, 0, 0] }, payload: { a: 1 } }] } },
          { set_payload: { payload: { b: 2 }, points: [50] } },
          { overwrite_payload: { payload: { c: 3 }, points: [1] } },
          { delete_payload: { keys: ['c'], points: [1] } },
          { update_vectors: { points: [{ id: 50, vector: { image: [0, 1, 0, 0] } }] } },
          { delete_vectors: { points: [50], vector: ['text'] } },
          { clear_payload: { points: [2] } },
          { delete: { points: [3] } },
        ],
      },
      { wait: true },
    );
    expect(res).toHaveLength(8);
    expect(res.every((r) => r.status === 'completed')).toBe(true);
    const ids = res.map((r) => r.operation_id!);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(await s.getPoint('mv', '50')).toEqual({ id: 50, payload: { a: 1, b: 2 }, vector: { image: [0, 1, 0, 0] } });
    expect((await s.getPoint('mv', '1')).payload).toEqual({});
    expect((await s.getPoint('mv', '2')).payload).toEqual({});
    expect(await s.retrievePoints('mv', { ids: [3] })).toEqual([]);

    const err = await qdrantError(
      s.batchUpdate('mv', {
        operations: [{ delete: { points: [4] } }, { set_payload: { payload: { x: 1 }, points: [9999] } }],
      }),
    );
    expect(err.status).toBe(404);
    expect(await s.retrievePoints('mv', { ids: [4] })).toHaveLength(1);
  });

  it('concurrent overlapping upserts all succeed (pid order, deadlock retry)', async () => {
    const ids = Array.from({ length: 200 }, (_, i) => i + 1000);
    const shuffled = (seed: number) => [...ids].sort((a, b) => ((a * 7919 + seed) % 211) - ((b * 7919 + seed) % 211));
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, k) =>
        t.store.upsertPoints('mv', { points: shuffled(k).map((id) => ({ id, vector: { image: [k, 1, 2, 3] }, payload: { k } })) }),
      ),
    );
    expect(new Set(results.map((r) => r.operation_id)).size).toBe(6);
    expect(await t.store.countPoints('mv', { filter: { must: [{ key: 'k', range: { gte: 0 } }] } })).toEqual({ count: 200 });
  });

  it('values Postgres cannot store are 400 Wrong input', async () => {
    const err = await qdrantError(t.store.upsertPoints('mv', { points: [{ id: 1, vector: { image: [1e39, 0, 0, 0] } }] }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/^Wrong input: /);
  });

  it('update_filter on upsert: existing points that do not match stay as they are', async () => {
    await t.store.upsertPoints('mv', {
      points: [
        { id: 1, vector: { image: [9, 9, 9, 9] }, payload: { n: 100 } },
        { id: 2, vector: { image: [9, 9, 9, 9] }, payload: { n: 200 } },
        { id: 60, vector: { image: [9, 9, 9, 9] }, payload: { n: 600 } },
      ],
      update_filter: { must: [{ key: 'n', match: { value: 1 } }] },
    });
    expect((await t.store.getPoint('mv', '1')).payload).toEqual({ n: 100 });
    expect((await t.store.getPoint('mv', '2')).payload).toEqual({ n: 2 });
    expect((await t.store.getPoint('mv', '60')).payload).toEqual({ n: 600 });
  });
});

describe('writes of a batch (binary COPY) and of a few points (JSON) store the same', () => {
  // 300 points × (16 + 16 + 2 × 4) values (updates: 300 × 16–20): above COPY_MIN_VALUES, so the batches go by COPY;
  // the same points 5 at a time stay below it and go as JSON.
  const config = {
    vectors: {
      a: { size: 16, distance: 'Euclid' },
      h: { size: 16, distance: 'Euclid', datatype: 'float16' },
      m: { size: 4, distance: 'Dot', multivector_config: { comparator: 'max_sim' } },
    },
    sparse_vectors: { s: {} },
  };
  let seed = 11;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 20 - 10;
  const v = (n: number) => Array.from({ length: n }, () => rnd());
  const idOf = (i: number) => (i % 3 === 0 ? `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` : i);
  const points = Array.from({ length: 300 }, (_, i) => ({
    id: idOf(i),
    vector: i % 7 === 0 ? { a: v(16) } : { a: v(16), h: v(16), m: [v(4), v(4)], s: { indices: [i + 2, 1], values: [0.5, -1] } },
    payload: i % 5 === 0 ? undefined : { i, tag: `t${i % 4}`, nested: { x: [i, null] } },
  }));
  // An id given twice: the later one wins.
  points.push({ id: 1, vector: { a: v(16) }, payload: { i: 1, tag: 'again', nested: { x: [] } } });

  it('upsert and update_vectors: every point, vector and payload equal', async () => {
    const s = t.store;
    await s.createCollection('copy_big', config);
    await s.createCollection('copy_small', config);
    await s.upsertPoints('copy_big', { points }, { wait: true });
    for (let i = 0; i < points.length; i += 5) await s.upsertPoints('copy_small', { points: points.slice(i, i + 5) }, { wait: true });
    const updates = points.slice(0, 300).map((p, i) => ({ id: p.id, vector: i % 2 ? { a: v(16) } : { h: v(16), m: [v(4)] } }));
    await s.updateVectors('copy_big', { points: updates }, { wait: true });
    for (let i = 0; i < updates.length; i += 5) await s.updateVectors('copy_small', { points: updates.slice(i, i + 5) }, { wait: true });
    // With update_filter (its SQL names the point table's columns unqualified): only matching points change.
    const filtered = points.slice(0, 300).map((p) => ({ id: p.id, vector: { a: v(16) } }));
    const tagged = { must: [{ key: 'tag', match: { value: 't1' } }] };
    await s.updateVectors('copy_big', { points: filtered, update_filter: tagged }, { wait: true });
    for (let i = 0; i < filtered.length; i += 5) await s.updateVectors('copy_small', { points: filtered.slice(i, i + 5), update_filter: tagged }, { wait: true });

    const all = async (c: string) =>
      (await s.scrollPoints(c, { limit: 1000, with_payload: true, with_vector: true })).points.map((p) => ({ ...p, version: undefined }));
    const big = await all('copy_big');
    expect(big).toHaveLength(300);
    expect(big).toEqual(await all('copy_small'));
    // Spot checks against the input: float32 of each number (Euclid keeps vectors as sent; the
    // reply prints float32s in their shortest form).
    const one = big.find((p) => p.id === 1)!;
    expect(one.payload).toEqual({ i: 1, tag: 'again', nested: { x: [] } });
    expect(updates[1]!.id).toBe(1); // the update of id 1 sets `a`
    expect((one.vector as Record<string, number[]>).a!.map(Math.fround)).toEqual(updates[1]!.vector.a!.map(Math.fround));
    const p4 = big.find((p) => p.id === 4)!;
    expect((p4.vector as Record<string, unknown>).s).toEqual({ indices: [1, 6], values: [-1, 0.5] });
    expect((p4.vector as unknown as Record<string, number[][]>).m!.map((r) => r.map(Math.fround))).toEqual(updates[4]!.vector.m!.map((r) => r.map(Math.fround)));
    expect(big.find((p) => p.id === 5)!.payload).toEqual({});
    const t1 = big.find((p) => (p.payload as { tag?: string }).tag === 't1')!;
    const t1In = filtered.find((f) => f.id === t1.id)!;
    expect((t1.vector as Record<string, number[]>).a!.map(Math.fround)).toEqual(t1In.vector.a.map(Math.fround));
  });
});
