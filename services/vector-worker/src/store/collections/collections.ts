/**
 * Collection routes: list, create, get (CollectionInfo), exists, update (PATCH), delete, and
 * payload index create/delete. A collection is a catalog row plus its point table
 * `points_<id>` (LAYOUT.md) and operation sequence `points_<id>_ops`.
 */
import type postgres from 'postgres';
import {
  QdrantCreateCollection,
  QdrantCreateFieldIndex,
  QdrantUpdateCollection,
  qdrantCollectionNameError,
  type QdrantCollectionInfo,
  type QdrantHnswConfig,
  type QdrantOptimizersConfig,
  type QdrantPayloadIndexInfo,
  type QdrantPayloadSchemaType,
  type QdrantUpdateResult,
  type QdrantVectorParams,
  type QdrantVectorParamsOutput,
} from '@gatehouse/contracts';
import {
  INTERNAL_CONFIG_KEYS,
  loadCollection,
  tableOf,
  vectorParamsOf,
  type CollectionMeta,
  type DenseVector,
  type Fragment,
  type StoredConfig,
} from './catalog.ts';
import { assertNotAnAlias } from './aliases.ts';
import { nextOperationId, parseBody, plain, updateResult, type WriteOptions } from '../common.ts';
import { notFoundCollection, QdrantError, validationError, wrongInput } from '../errors.ts';
import { toJsonPathText } from '../points/json-path.ts';
import { DISTANCE_OPCLASS } from '../search/scoring.ts';
import { createSparseIndex, dropSparseIndex } from '../vectors/sparse.ts';
import { notExistingVector } from '../vectors/vectors.ts';
import { collectionWarnings, countsAsIndexed } from './collection-info.ts';
import { resetBuckets } from '../strict-mode/rate-limit.ts';
import { checkIndexCreate, mergeStrictMode } from '../strict-mode/strict-mode.ts';

/** PATCH `metadata`: keys merge into the stored ones; a key set to `null` is removed. */
function mergeMetadata(current: Record<string, unknown> | undefined, diff: Record<string, unknown>): Record<string, unknown> {
  const out = { ...(current ?? {}) };
  for (const [k, v] of Object.entries(diff)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** pgvector limits: `vector` columns up to 16,000 dimensions, HNSW indexes up to 2,000. */
export const MAX_VECTOR_DIMENSIONS = 16_000;
export const MAX_HNSW_DIMENSIONS = 2_000;

/** Defaults of Qdrant's config.yaml (reference §1.6). */
const DEFAULT_HNSW: QdrantHnswConfig = {
  m: 16,
  ef_construct: 100,
  full_scan_threshold: 10_000,
  max_indexing_threads: 0,
  on_disk: false,
};
const DEFAULT_OPTIMIZER: QdrantOptimizersConfig = {
  deleted_threshold: 0.2,
  vacuum_min_vector_number: 1000,
  default_segment_number: 0,
  max_segment_size: null,
  memmap_threshold: null,
  indexing_threshold: 10_000,
  flush_interval_sec: 5,
  max_optimization_threads: null,
};
const DEFAULT_WAL = { wal_capacity_mb: 32, wal_segments_ahead: 0 };

/** Drop absent (undefined) members so they do not override defaults. */
function defined<T extends object>(v: T | undefined): Partial<T> {
  return v ? (plain(v) as Partial<T>) : {};
}

function checkName(name: string): void {
  const err = qdrantCollectionNameError(name);
  if (err) throw new QdrantError(422, `Validation error in path parameters: [name: ${err}]`);
}

export function vectorParamsOutput(p: QdrantVectorParams): QdrantVectorParamsOutput {
  if (p.size > MAX_VECTOR_DIMENSIONS) {
    throw wrongInput(`Vector size ${p.size} is larger than the ${MAX_VECTOR_DIMENSIONS} dimensions this store supports`);
  }
  return plain({
    size: p.size,
    distance: p.distance,
    hnsw_config: p.hnsw_config,
    quantization_config: p.quantization_config,
    on_disk: p.on_disk,
    datatype: p.datatype,
    multivector_config: p.multivector_config,
    memory: p.memory,
  });
}

/** Sparse vectors are stored as f32 (or f16/u8) values; the 4-bit turbo4 type is dense-only. */
export function checkSparseParams(name: string, p: { index?: unknown }): void {
  const datatype = (p.index as { datatype?: unknown } | null | undefined)?.datatype;
  if (datatype === 'turbo4') throw wrongInput(`sparse vectors do not support the turbo4 datatype (sparse vector \`${name}\`)`);
}

function isSingleVectorParams(v: unknown): v is QdrantVectorParams {
  return typeof v === 'object' && v !== null && typeof (v as { size?: unknown }).size === 'number';
}

function buildConfig(req: QdrantCreateCollection): StoredConfig {
  let vectors: StoredConfig['params']['vectors'];
  let named: boolean;
  const columns: Record<string, string> = {};
  if (req.vectors === undefined) {
    vectors = {};
    named = true;
  } else if (isSingleVectorParams(req.vectors)) {
    vectors = vectorParamsOutput(req.vectors);
    named = false;
    columns[''] = 'v0';
  } else {
    const out: Record<string, QdrantVectorParamsOutput> = {};
    // Qdrant prints named vectors sorted (BTreeMap); columns follow the request's order.
    Object.keys(req.vectors).forEach((name, i) => (columns[name] = `v${i}`));
    for (const name of Object.keys(req.vectors).sort()) out[name] = vectorParamsOutput(req.vectors[name]!);
    vectors = out;
    named = true;
  }
  for (const [sname, sp] of Object.entries(req.sparse_vectors ?? {})) {
    if (sname === '') throw validationError(['sparse_vectors: Sparse vector name cannot be empty']);
    if (Object.hasOwn(columns, sname)) {
      throw validationError([`Dense and sparse vector names must be unique - duplicate found with '${sname}'`]);
    }
    checkSparseParams(sname, sp);
  }
  const sparse = req.sparse_vectors
    ? Object.fromEntries(Object.keys(req.sparse_vectors).sort().map((k) => [k, plain(req.sparse_vectors![k]!)]))
    : undefined;
  return plain({
    params: {
      vectors,
      shard_number: req.shard_number ?? 1,
      sharding_method: req.sharding_method,
      replication_factor: req.replication_factor ?? 1,
      write_consistency_factor: req.write_consistency_factor ?? 1,
      on_disk_payload: req.on_disk_payload ?? true,
      sparse_vectors: sparse,
      payload: req.payload,
    },
    hnsw_config: { ...DEFAULT_HNSW, ...defined(req.hnsw_config) } as QdrantHnswConfig,
    optimizer_config: { ...DEFAULT_OPTIMIZER, ...defined(req.optimizers_config) } as QdrantOptimizersConfig,
    wal_config: { ...DEFAULT_WAL, ...defined(req.wal_config) },
    // Qdrant also reads `quantization` (a serde alias), as its own tests send it.
    quantization_config: req.quantization_config ?? (req as { quantization?: unknown }).quantization ?? null,
    strict_mode_config: req.strict_mode_config === undefined ? undefined : mergeStrictMode({}, req.strict_mode_config),
    metadata: req.metadata,
    columns,
    named,
  });
}

/**
 * A validated integer as SQL text. DDL takes no parameters: the only non-identifier values in DDL
 * are these integers (vector size, HNSW m / ef_construction), checked here.
 */
function int(db: postgres.TransactionSql, n: number): postgres.PendingQuery<postgres.Row[]> {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`not an integer: ${n}`);
  return db.unsafe(String(n));
}

/** pgvector HNSW parameters from Qdrant's: m in 2..100, ef_construction in 4..1000 and ≥ 2m. */
function hnswParams(h: QdrantHnswConfig): { m: number; ef: number } | null {
  if (h.m === 0) return null; // Qdrant: m = 0 disables the graph
  const m = Math.min(100, Math.max(2, h.m));
  const ef = Math.min(1000, Math.max(4, 2 * m, h.ef_construct));
  return { m, ef };
}

/** The HNSW index parameters of a vector, or null when it has no index (searches are exact). */
export function vectorHnsw(meta: CollectionMeta, d: DenseVector): { m: number; ef: number } | null {
  // Above 2,000 dimensions pgvector has no HNSW index; multivectors are scored exactly (multivector.ts).
  if (d.size > MAX_HNSW_DIMENSIONS || d.multi) return null;
  const own = vectorParamsOf(meta.config)[d.name]?.hnsw_config as Partial<QdrantHnswConfig> | undefined;
  return hnswParams({ ...meta.config.hnsw_config, ...own });
}

/** The column type of a dense vector: `vector(n)` / `halfvec(n)`, an array of them for multivectors. */
export function columnType(tx: postgres.TransactionSql, d: DenseVector): postgres.PendingQuery<postgres.Row[]> {
  const type = tx.unsafe(d.datatype === 'float16' ? 'halfvec' : 'vector');
  return tx`${type}(${int(tx, d.size)}) ${d.multi ? tx`[]` : tx``}`;
}

/** The HNSW index of a dense vector column, when it has one (vectorHnsw). */
export async function createVectorIndex(tx: postgres.TransactionSql, table: Fragment, meta: CollectionMeta, d: DenseVector): Promise<void> {
  const hnsw = vectorHnsw(meta, d);
  if (!hnsw) return;
  await tx`
    create index on ${table} using hnsw (${tx(d.column)} ${tx.unsafe(opclassOf(d))})
    with (m = ${int(tx, hnsw.m)}, ef_construction = ${int(tx, hnsw.ef)})`;
}

export async function createPointTable(tx: postgres.TransactionSql, schema: string, meta: CollectionMeta): Promise<void> {
  const table = tableOf(tx, schema, meta);
  const vectorColumns = [...meta.dense.values()].map((d) => tx`${tx(d.column)} ${columnType(tx, d)}`);
  const extra = vectorColumns.reduce((acc, c) => tx`${acc}, ${c}`, tx``);
  await tx`
    create table ${table} (
      id_num numeric(20, 0),
      id_uuid uuid,
      pid text generated always as (coalesce(id_num::text, id_uuid::text)) stored primary key,
      payload jsonb not null default '{}'::jsonb,
      version bigint not null,
      sparse jsonb
      ${extra},
      check ((id_num is null) <> (id_uuid is null))
    )`;
  // Scroll and id-ordered queries walk this index.
  await tx`create index on ${table} ((id_uuid is not null), id_num, id_uuid)`;
  await tx`create index on ${table} using gin (payload jsonb_path_ops)`;
  for (const d of meta.dense.values()) await createVectorIndex(tx, table, meta, d);
  await tx`create sequence ${tx(schema)}.${tx(meta.sequence)} minvalue 0 start 0`;
  await createSparseIndex(tx, schema, meta);
}

/** pgvector's operator class for a vector's distance (`halfvec_…` for float16 columns). */
function opclassOf(d: DenseVector): string {
  const op = DISTANCE_OPCLASS[d.distance];
  return d.datatype === 'float16' ? op.replace(/^vector_/, 'halfvec_') : op;
}

export async function listCollections(sql: postgres.Sql, schema: string): Promise<{ collections: { name: string }[] }> {
  const rows = await sql<{ name: string }[]>`select name from ${sql(schema)}.collections order by name`;
  return { collections: rows.map((r) => ({ name: r.name })) };
}

export async function createCollection(sql: postgres.Sql, schema: string, name: string, body: unknown): Promise<true> {
  checkName(name);
  const req = parseBody(QdrantCreateCollection, body);
  const config = buildConfig(req);
  try {
    await sql.begin(async (tx) => {
      await assertNotAnAlias(tx, schema, name);
      const [row] = await tx<{ id: number }[]>`
        insert into ${tx(schema)}.collections (name, config) values (${name}, ${tx.json(config as never)})
        returning id`;
      const meta = await loadCollection(tx, schema, name);
      if (meta.id !== row!.id) throw new Error('catalog row mismatch');
      await createPointTable(tx, schema, meta);
    });
  } catch (err) {
    if ((err as { code?: string }).code === '23505') {
      throw new QdrantError(409, `Wrong input: Collection \`${name}\` already exists!`);
    }
    throw err;
  }
  return true;
}

export async function collectionExists(sql: postgres.Sql, schema: string, name: string): Promise<{ exists: boolean }> {
  const [row] = await sql`select 1 from ${sql(schema)}.collections where name = ${name}`;
  return { exists: row !== undefined };
}

function sortKeys<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]!]));
}

function dataTypeOf(schema: unknown): QdrantPayloadSchemaType {
  return (typeof schema === 'string' ? schema : (schema as { type: QdrantPayloadSchemaType }).type) as QdrantPayloadSchemaType;
}

export async function getCollection(sql: postgres.Sql, schema: string, name: string): Promise<QdrantCollectionInfo> {
  const meta = await loadCollection(sql, schema, name);
  const table = tableOf(sql, schema, meta);
  const [counts] = await sql<{ n: string }[]>`select count(*)::text as n from ${table}`;
  let indexed = 0;
  for (const d of meta.dense.values()) {
    if (!vectorHnsw(meta, d)) continue;
    const [c] = await sql<{ n: string }[]>`select count(${sql(d.column)})::text as n from ${table}`;
    if (countsAsIndexed(meta, d, Number(c!.n))) indexed += Number(c!.n);
  }
  const payload_schema: Record<string, QdrantPayloadIndexInfo> = {};
  for (const [field, fieldSchema] of meta.payloadIndexes) {
    const path = `${toJsonPathText(field)} ? (@ != null)`;
    const [c] = await sql<{ n: string }[]>`
      select count(*)::text as n from ${table} where jsonb_path_exists(payload, ${path}::jsonpath)`;
    payload_schema[field] = {
      data_type: dataTypeOf(fieldSchema),
      ...(typeof fieldSchema === 'object' ? { params: fieldSchema as Record<string, unknown> } : {}),
      points: Number(c!.n),
    };
  }
  const config = { ...meta.config } as Partial<StoredConfig>;
  for (const k of INTERNAL_CONFIG_KEYS) delete config[k];
  // jsonb does not keep key order; Qdrant prints named vectors sorted (BTreeMap).
  config.params = { ...meta.config.params };
  if (meta.config.named) config.params.vectors = sortKeys(meta.config.params.vectors as Record<string, QdrantVectorParamsOutput>);
  if (config.params.sparse_vectors) config.params.sparse_vectors = sortKeys(config.params.sparse_vectors);
  const warnings = collectionWarnings(meta);
  return {
    status: 'green',
    optimizer_status: 'ok',
    ...(warnings.length ? { warnings } : {}),
    indexed_vectors_count: indexed,
    points_count: Number(counts!.n),
    segments_count: 1,
    config: config as QdrantCollectionInfo['config'],
    payload_schema,
    update_queue: { length: 0 },
  };
}

export async function updateCollection(sql: postgres.Sql, schema: string, name: string, body: unknown): Promise<true> {
  const req = parseBody(QdrantUpdateCollection, body);
  await sql.begin(async (tx) => {
    const [row] = await tx<{ config: StoredConfig }[]>`
      select config from ${tx(schema)}.collections where name = ${name} for update`;
    if (!row) throw notFoundCollection(name);
    const config = row.config;
    if (req.vectors) {
      const params = vectorParamsOf(config);
      for (const [vname, diff] of Object.entries(req.vectors)) {
        const p = params[vname];
        if (!p) throw notExistingVector(vname);
        const d = plain(diff);
        if (d.hnsw_config) p.hnsw_config = { ...(p.hnsw_config ?? {}), ...d.hnsw_config };
        // `"Disabled"` removes the vector's own quantization (QuantizationConfigDiff::Disabled).
        if (d.quantization_config === 'Disabled') delete p.quantization_config;
        else if (d.quantization_config !== undefined) p.quantization_config = d.quantization_config;
        if (d.on_disk !== undefined) p.on_disk = d.on_disk;
        if (d.memory !== undefined) p.memory = d.memory;
      }
    }
    if (req.sparse_vectors) {
      const sparse = config.params.sparse_vectors ?? {};
      for (const [sname, diff] of Object.entries(req.sparse_vectors)) {
        if (!sparse[sname]) throw notExistingVector(sname);
        sparse[sname] = { ...sparse[sname], ...plain(diff) };
      }
    }
    if (req.params) Object.assign(config.params, plain(req.params));
    if (req.hnsw_config) Object.assign(config.hnsw_config, plain(req.hnsw_config));
    if (req.optimizers_config) Object.assign(config.optimizer_config, plain(req.optimizers_config));
    if (req.quantization_config !== undefined) {
      config.quantization_config = req.quantization_config === 'Disabled' ? null : req.quantization_config;
    }
    if (req.strict_mode_config !== undefined) {
      config.strict_mode_config = mergeStrictMode(config.strict_mode_config, req.strict_mode_config);
    }
    if (req.metadata) config.metadata = mergeMetadata(config.metadata, req.metadata);
    const [updated] = await tx<{ id: number }[]>`
      update ${tx(schema)}.collections set config = ${tx.json(config as never)} where name = ${name} returning id`;
    // Qdrant rebuilds its rate limiters whenever strict mode is set: the buckets start full.
    if (req.strict_mode_config !== undefined) await resetBuckets(tx, schema, updated!.id);
  });
  return true;
}

/** `true` when it existed, `false` otherwise (Qdrant answers 200 either way). */
export async function deleteCollection(sql: postgres.Sql, schema: string, name: string): Promise<boolean> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ id: number }[]>`
      delete from ${tx(schema)}.collections where name = ${name} returning id`;
    if (!row) return false;
    await dropSparseIndex(tx, schema, row.id);
    await tx`drop table if exists ${tx(schema)}.${tx(`points_${row.id}`)}`;
    await tx`drop sequence if exists ${tx(schema)}.${tx(`points_${row.id}_ops`)}`;
    return true;
  });
}

export async function createFieldIndex(
  sql: postgres.Sql,
  schema: string,
  name: string,
  body: unknown,
  opts: WriteOptions,
): Promise<QdrantUpdateResult> {
  const req = parseBody(QdrantCreateFieldIndex, body);
  toJsonPathText(req.field_name); // rejects a malformed key path
  if (req.field_schema === undefined) {
    throw wrongInput("Can't auto-detect field type, please specify `field_schema` in the request");
  }
  const fieldSchema = plain(req.field_schema);
  const ip = fieldSchema as { type?: unknown; lookup?: unknown; range?: unknown };
  if (ip.type === 'integer' && ip.lookup === false && ip.range === false) {
    throw new QdrantError(422, "Validation error in JSON body: [field_schema: Validation error: the 'lookup' and 'range' capabilities can't be both disabled]");
  }
  return sql.begin(async (tx) => {
    const meta = await loadCollection(tx, schema, name, true);
    checkIndexCreate(meta);
    const op = await nextOperationId(tx, schema, meta);
    await tx`
      insert into ${tx(schema)}.payload_indexes (collection_id, field, schema)
      values (${meta.id}, ${req.field_name}, ${tx.json(fieldSchema as never)})
      on conflict (collection_id, field) do update set schema = excluded.schema`;
    return updateResult(op, opts);
  });
}

export async function deleteFieldIndex(
  sql: postgres.Sql,
  schema: string,
  name: string,
  field: string,
  opts: WriteOptions,
): Promise<QdrantUpdateResult> {
  return sql.begin(async (tx) => {
    const meta = await loadCollection(tx, schema, name, true);
    const op = await nextOperationId(tx, schema, meta);
    await tx`delete from ${tx(schema)}.payload_indexes where collection_id = ${meta.id} and field = ${field}`;
    return updateResult(op, opts);
  });
}
