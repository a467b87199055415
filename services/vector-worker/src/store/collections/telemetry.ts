/**
 * The worker's part of Qdrant's `GET /telemetry` (CollectionsTelemetry at a `details_level`, the
 * shapes of Qdrant's OpenAPI) and `GET /collections/{c}/cluster`. The store is one node with one
 * shard per collection: shard 0, local, `Active`, on peer PEER_ID. The edge adds what only it
 * knows (request statistics, app info) and renders `/metrics` from the same data.
 */
import { appliedOperations } from './collection-info.ts';
import type postgres from 'postgres';
import type { QdrantCollectionClusterInfo, VectorCollectionsTelemetry } from '@gatehouse/contracts';
import { isUndefinedTable, loadCollection, tableOf, type CollectionMeta } from './catalog.ts';
import { QdrantError } from '../errors.ts';
import { getCollection } from './collections.ts';
import { join } from '../common.ts';

/** This node's peer id in cluster answers (a single node; Qdrant picks a random u64). */
export const PEER_ID = 1;

/** Points holding each dense vector, by vector name (sparse vectors: points holding the name); one scan. */
async function vectorCounts(sql: postgres.Sql, schema: string, meta: CollectionMeta): Promise<Record<string, number>> {
  const names = [...meta.dense.keys(), ...meta.sparse];
  if (names.length === 0) return {};
  const counts = [
    ...[...meta.dense.values()].map((d, i) => sql`count(${sql(d.column)})::text as ${sql(`n${i}`)}`),
    ...[...meta.sparse].map((name, i) => sql`(count(*) filter (where sparse ? ${name}))::text as ${sql(`n${meta.dense.size + i}`)}`),
  ];
  const [row] = await sql<Record<string, string>[]>`select ${join(sql, counts)} from ${tableOf(sql, schema, meta)}`;
  return Object.fromEntries(names.map((name, i) => [name, Number(row![`n${i}`])]));
}

const noStats = () => ({ count: 0 });

function segment(info: Awaited<ReturnType<typeof getCollection>>, byName: Record<string, number>, vectorsTotal: number) {
  const params = info.config.params;
  const dense = (params.vectors && typeof (params.vectors as { size?: unknown }).size === 'number'
    ? { '': params.vectors }
    : params.vectors) as Record<string, { size: number; distance: string }>;
  return {
    info: {
      uuid: '00000000-0000-0000-0000-000000000000',
      segment_type: 'indexed',
      num_vectors: vectorsTotal,
      num_points: info.points_count,
      num_indexed_vectors: info.indexed_vectors_count,
      num_deleted_vectors: 0,
      vectors_size_bytes: 0,
      payloads_size_bytes: 0,
      ram_usage_bytes: 0,
      disk_usage_bytes: 0,
      is_appendable: true,
      index_schema: info.payload_schema,
      vector_data: Object.fromEntries(
        Object.entries(byName).map(([name, n]) => [name, { num_vectors: n, num_indexed_vectors: n, num_deleted_vectors: 0 }]),
      ),
    },
    config: {
      vector_data: Object.fromEntries(
        Object.entries(dense).map(([name, p]) => [
          name,
          { size: p.size, distance: p.distance, storage_type: 'Memory', index: { type: 'hnsw', options: info.config.hnsw_config } },
        ]),
      ),
      payload_storage_type: { type: 'mmap' },
    },
    vector_index_searches: [],
    payload_field_indices: Object.entries(info.payload_schema).map(([field, s]) => ({
      field_name: field,
      index_type: s.data_type,
      points_values_count: s.points,
      points_count: s.points,
    })),
  };
}

async function collectionTelemetry(sql: postgres.Sql, schema: string, name: string, level: number): Promise<Record<string, unknown> | null> {
  let info: Awaited<ReturnType<typeof getCollection>>;
  let meta: CollectionMeta;
  try {
    meta = await loadCollection(sql, schema, name);
    info = await getCollection(sql, schema, name);
  } catch (err) {
    // Deleted while we were listing: left out, as Qdrant's listing would not have it.
    if ((err instanceof QdrantError && err.status === 404) || isUndefinedTable(err)) return null;
    throw err;
  }
  const byName = await vectorCounts(sql, schema, meta);
  const vectors = Object.values(byName).reduce((a, b) => a + b, 0);
  if (level === 1) return { vectors, optimizers_status: 'ok', params: info.config.params };
  const { strict_mode_config, metadata, ...config } = info.config;
  const out: Record<string, unknown> = {
    id: name,
    init_time_ms: 0,
    config: { ...config, ...(strict_mode_config ? { strict_mode_config } : {}), ...(metadata ? { metadata } : {}) },
  };
  if (level < 3) return out;
  const local: Record<string, unknown> = {
    variant_name: 'local',
    status: 'green',
    total_optimized_points: 0,
    vectors_size_bytes: 0,
    payloads_size_bytes: 0,
    num_points: info.points_count,
    num_vectors: vectors,
    num_vectors_by_name: byName,
    optimizations: { status: 'ok', optimizations: noStats() },
    async_scorer: false,
    update_queue: { length: 0, op_num: await appliedOperations(sql, schema, meta) },
  };
  if (level >= 4) {
    local.segments = [segment(info, byName, vectors)];
    local.indexed_only_excluded_vectors = {};
  }
  out.shards = [
    {
      id: 0,
      key: null,
      local,
      remote: [],
      replicate_states: { [String(PEER_ID)]: 'Active' },
      partial_snapshot: { ongoing_create_snapshot_requests: 0, is_recovering: false, recovery_timestamp: 0 },
    },
  ];
  out.transfers = [];
  out.resharding = [];
  return out;
}

/**
 * Qdrant's CollectionsTelemetry: level 0 only the count; 1 an aggregate per collection; 2 id and
 * config; 3 and up the shard, with its segment from 4 on. `snapshotCounts` gives the snapshots
 * kept per collection (snapshots.ts).
 */
export async function collectionsTelemetry(
  sql: postgres.Sql,
  schema: string,
  level: number,
  snapshotCounts: (collection: string) => Promise<number>,
): Promise<VectorCollectionsTelemetry> {
  const rows = await sql<{ name: string }[]>`select name from ${sql(schema)}.collections order by name`;
  if (level <= 0) return { number_of_collections: rows.length };
  const collections: unknown[] = [];
  const snapshots: unknown[] = [];
  for (const { name } of rows) {
    const c = await collectionTelemetry(sql, schema, name, level);
    if (!c) continue;
    collections.push(c);
    snapshots.push({ id: name, running_snapshots: 0, running_snapshot_recovery: 0, total_snapshot_creations: await snapshotCounts(name) });
  }
  return { number_of_collections: rows.length, collections, snapshots };
}

/** `GET /collections/{c}/cluster` of a single node: one local shard. */
export async function collectionClusterInfo(sql: postgres.Sql, schema: string, name: string): Promise<QdrantCollectionClusterInfo> {
  const meta = await loadCollection(sql, schema, name);
  const [r] = await sql<{ n: string }[]>`select count(*)::text as n from ${tableOf(sql, schema, meta)}`;
  return {
    peer_id: PEER_ID,
    shard_count: 1,
    local_shards: [{ shard_id: 0, points_count: Number(r!.n), state: 'Active' }],
    remote_shards: [],
    shard_transfers: [],
  };
}
