import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicCollectionSetup, openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
beforeAll(async () => {
  t = await openTestStore('coll');
});
afterAll(async () => {
  await t.close();
});

describe('collections', () => {
  it('create, exists, get, list, delete (test_collection_exists)', async () => {
    const { store } = t;
    expect(await store.collectionExists('c1')).toEqual({ exists: false });
    expect(await store.createCollection('c1', { vectors: { size: 4, distance: 'Dot' } })).toBe(true);
    expect(await store.collectionExists('c1')).toEqual({ exists: true });
    expect((await store.listCollections()).collections).toContainEqual({ name: 'c1' });

    const err = await qdrantError(store.createCollection('c1', { vectors: { size: 4, distance: 'Dot' } }));
    expect(err.status).toBe(409);
    expect(err.message).toBe('Wrong input: Collection `c1` already exists!');

    expect(await store.deleteCollection('c1')).toBe(true);
    expect(await store.deleteCollection('c1')).toBe(false);
    expect(await store.collectionExists('c1')).toEqual({ exists: false });
  });

  it('CollectionInfo for the basic setup: defaults, points_count 10 with the sparse-only points', async () => {
    await basicCollectionSetup(t.store, 'basic');
    const info = await t.store.getCollection('basic');
    expect(info).toEqual({
      status: 'green',
      optimizer_status: 'ok',
      // 8 × 16 bytes are far below the default indexing_threshold (10,000 KB): none counts as indexed.
      indexed_vectors_count: 0,
      points_count: 10,
      segments_count: 1,
      config: {
        params: {
          vectors: { size: 4, distance: 'Dot', on_disk: false },
          shard_number: 1,
          replication_factor: 1,
          write_consistency_factor: 1,
          on_disk_payload: true,
          sparse_vectors: { 'sparse-text': {} },
        },
        hnsw_config: { m: 16, ef_construct: 100, full_scan_threshold: 10000, max_indexing_threads: 0, on_disk: false },
        optimizer_config: {
          deleted_threshold: 0.2,
          vacuum_min_vector_number: 1000,
          default_segment_number: 0,
          max_segment_size: null,
          memmap_threshold: null,
          indexing_threshold: 10000,
          flush_interval_sec: 5,
          max_optimization_threads: null,
        },
        wal_config: { wal_capacity_mb: 32, wal_segments_ahead: 0 },
        quantization_config: null,
      },
      payload_schema: {},
      update_queue: { length: 0 },
    });
  });

  it('payload indexes show in payload_schema with point counts, and can be deleted', async () => {
    const r = await t.store.createFieldIndex('basic', { field_name: 'city', field_schema: 'keyword' }, { wait: true });
    expect(r.status).toBe('completed');
    expect(typeof r.operation_id).toBe('number');
    await t.store.createFieldIndex('basic', { field_name: 'price', field_schema: { type: 'float' } });
    const info = await t.store.getCollection('basic');
    // city: 1, 2, 3, 4 (7 is null, 8 and 10 are []); price: 1, 2, 3, 4.
    expect(info.payload_schema).toEqual({
      city: { data_type: 'keyword', points: 4 },
      price: { data_type: 'float', params: { type: 'float' }, points: 4 },
    });
    const d = await t.store.deleteFieldIndex('basic', 'city');
    expect(d.status).toBe('acknowledged');
    expect(Object.keys((await t.store.getCollection('basic')).payload_schema)).toEqual(['price']);
  });

  it('named vectors: sorted params, per-vector columns', async () => {
    await t.store.createCollection('named', {
      vectors: { text: { size: 8, distance: 'Cosine' }, image: { size: 4, distance: 'Dot', on_disk: true } },
    });
    const info = await t.store.getCollection('named');
    expect(info.config.params.vectors).toEqual({
      image: { size: 4, distance: 'Dot', on_disk: true },
      text: { size: 8, distance: 'Cosine' },
    });
    expect(Object.keys(info.config.params.vectors)).toEqual(['image', 'text']);
  });

  it('PATCH stores hnsw/optimizer/params changes', async () => {
    expect(
      await t.store.updateCollection('named', {
        optimizers_config: { indexing_threshold: 5 },
        hnsw_config: { m: 32 },
        params: { replication_factor: 2 },
        vectors: { text: { on_disk: true } },
      }),
    ).toBe(true);
    const info = await t.store.getCollection('named');
    expect(info.config.optimizer_config.indexing_threshold).toBe(5);
    expect(info.config.hnsw_config.m).toBe(32);
    expect(info.config.params.replication_factor).toBe(2);
    expect((info.config.params.vectors as Record<string, { on_disk?: boolean }>).text!.on_disk).toBe(true);
    const err = await qdrantError(t.store.updateCollection('named', { vectors: { nope: { on_disk: true } } }));
    expect(err.message).toBe('Wrong input: Not existing vector name error: nope');
  });

  it('every per-collection operation on a missing collection is 404', async () => {
    const expected = 'Not found: Collection `missing` doesn\'t exist!';
    const calls = [
      () => t.store.getCollection('missing'),
      () => t.store.updateCollection('missing', {}),
      () => t.store.createFieldIndex('missing', { field_name: 'a', field_schema: 'keyword' }),
      () => t.store.upsertPoints('missing', { points: [{ id: 1, vector: [1, 2, 3, 4] }] }),
      () => t.store.retrievePoints('missing', { ids: [1] }),
      () => t.store.getPoint('missing', '1'),
      () => t.store.scrollPoints('missing', {}),
      () => t.store.countPoints('missing', {}),
      () => t.store.queryPoints('missing', {}),
      () => t.store.searchPoints('missing', { vector: [1, 2, 3, 4], limit: 1 }),
      () => t.store.deletePoints('missing', { points: [1] }),
      () => t.store.setPayload('missing', { payload: {}, points: [1] }),
      () => t.store.batchUpdate('missing', { operations: [] }),
    ];
    for (const call of calls) {
      const err = await qdrantError(call());
      expect(err.status).toBe(404);
      expect(err.message).toBe(expected);
    }
  });

  it('bad names are 422, bad bodies 400/422 with Qdrant wording', async () => {
    let err = await qdrantError(t.store.createCollection('a/b', { vectors: { size: 4, distance: 'Dot' } }));
    expect(err.status).toBe(422);
    expect(err.message).toBe('Validation error in path parameters: [name: collection name cannot contain "/" char]');
    err = await qdrantError(t.store.createCollection('x'.repeat(256), { vectors: { size: 4, distance: 'Dot' } }));
    expect(err.status).toBe(422);
    expect(err.message).toContain('Validation error');

    err = await qdrantError(t.store.createCollection('v', { vectors: { size: 4, distance: 'Dot' }, hnsw_config: { ef_construct: 0 } }));
    expect(err.status).toBe(422);
    expect(err.message).toBe('Validation error in JSON body: [hnsw_config.ef_construct: value 0 invalid, must be 4 or larger]');

    err = await qdrantError(t.store.createCollection('v', { vectors: { size: 0, distance: 'Dot' } }));
    expect(err.status).toBe(422);
    expect(err.message).toContain('vectors.size: value 0 invalid');

    err = await qdrantError(t.store.createCollection('v', { vectors: { size: 'four', distance: 'Dot' } }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/^Format error in JSON body: /);

    err = await qdrantError(t.store.createCollection('v', { vectors: { size: 20000, distance: 'Dot' } }));
    expect(err.status).toBe(400);
    expect(await t.store.collectionExists('v')).toEqual({ exists: false });
  });

  it('vectors above 2000 dimensions work without an HNSW index (exact search)', async () => {
    await t.store.createCollection('wide', { vectors: { size: 2500, distance: 'Cosine' } });
    const v = Array.from({ length: 2500 }, (_, i) => (i % 7) - 3);
    await t.store.upsertPoints('wide', { points: [{ id: 1, vector: v }] });
    const res = await t.store.queryPoints('wide', { query: v });
    expect(res.points.map((p) => p.id)).toEqual([1]);
    expect(res.points[0]!.score).toBeCloseTo(1, 5);
    expect((await t.store.getCollection('wide')).indexed_vectors_count).toBe(0);
  });

  it('concurrent creates of one name: exactly one wins, the others get 409', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 4 }, () => t.store.createCollection('race', { vectors: { size: 4, distance: 'Dot' } })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) {
      if (r.status === 'rejected') expect((r.reason as { status: number }).status).toBe(409);
    }
  });
});
