import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicCollectionSetup, openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
beforeAll(async () => {
  t = await openTestStore('telem');
  await basicCollectionSetup(t.store, 'tc');
});
afterAll(async () => {
  await t.close();
});

describe('telemetry (test_service.py) and cluster info', () => {
  it('level 0: only the count', async () => {
    expect(await t.store.telemetry(0)).toEqual({ number_of_collections: 1 });
  });

  it('level 1: an aggregate per collection, and snapshot counts', async () => {
    const r = await t.store.telemetry(1);
    expect(r.collections).toEqual([{ vectors: 10, optimizers_status: 'ok', params: (await t.store.getCollection('tc')).config.params }]);
    expect(r.snapshots).toEqual([{ id: 'tc', running_snapshots: 0, running_snapshot_recovery: 0, total_snapshot_creations: 0 }]);
  });

  it('level 2 and 3: id, config, then the single local shard', async () => {
    const l2 = (await t.store.telemetry(2)).collections![0] as Record<string, unknown>;
    expect(Object.keys(l2).sort()).toEqual(['config', 'id', 'init_time_ms']);
    const l3 = (await t.store.telemetry(3)).collections![0] as { shards: { local: Record<string, unknown>; replicate_states: unknown }[] };
    expect(l3.shards[0]!.replicate_states).toEqual({ 1: 'Active' });
    expect(l3.shards[0]!.local).toMatchObject({ num_points: 10, num_vectors: 10, num_vectors_by_name: { '': 8, 'sparse-text': 2 } });
    expect(l3.shards[0]!.local.segments).toBeUndefined();
    const l4 = (await t.store.telemetry(4)).collections![0] as { shards: { local: { segments: { info: { num_points: number } }[] } }[] };
    expect(l4.shards[0]!.local.segments[0]!.info.num_points).toBe(10);
  });

  it('GET /collections/{c}/cluster: one local active shard', async () => {
    expect(await t.store.clusterInfo('tc')).toEqual({
      peer_id: 1,
      shard_count: 1,
      local_shards: [{ shard_id: 0, points_count: 10, state: 'Active' }],
      remote_shards: [],
      shard_transfers: [],
    });
    expect((await qdrantError(t.store.clusterInfo('nope'))).status).toBe(404);
  });
});
