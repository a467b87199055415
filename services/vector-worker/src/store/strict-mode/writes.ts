/**
 * Strict mode for point writes (batch sizes, vector and payload limits, collection size, the
 * write rate cost) and payload index creation.
 */
import type { QdrantBatch, QdrantPointInsertOperations, QdrantPointStruct, QdrantUpdateOperation } from '@gatehouse/contracts';
import { vectorParamsOf, type CollectionMeta, type Db } from '../collections/catalog.ts';
import { QdrantError } from '../errors.ts';
import { filterWhere } from '../filter/where.ts';
import { activeStrictMode, checkLimit, strictError, type StrictModeConfig } from './config.ts';
import { leaves } from '../filter/filter-walk.ts';
import { checkFilter, unindexedKey } from './index-needs.ts';
import { consume } from './rate-limit.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One point write as strict mode sees it (`writeCheckOf` builds it from an operation). */
export type WriteCheck =
  | { kind: 'upsert'; points: number; vectors: Record<string, unknown>[] }
  | { kind: 'update_vectors'; points: number; vectors: Record<string, unknown>[] }
  | { kind: 'set_payload'; filter?: unknown; ids?: number }
  | { kind: 'selector'; filter?: unknown; ids?: number };

/**
 * Strict-mode checks of one point write, then its write-rate cost (Qdrant's: the points it
 * touches, at least 1; for a filter, Qdrant's cardinality estimate: the matching points when the
 * filter is served by indexes, else half the collection).
 */
export async function checkWrite(db: Db, schema: string, meta: CollectionMeta, w: WriteCheck, timeout?: number): Promise<void> {
  const c = activeStrictMode(meta);
  if (!c) return;
  checkLimit(timeout, c.max_timeout, 'timeout');
  let cost = 1;
  if (w.kind === 'upsert' || w.kind === 'update_vectors') {
    checkLimit(w.points, c.upsert_max_batchsize, w.kind === 'upsert' ? 'upsert limit' : 'update limit');
    await checkCollectionSize(db, schema, meta, c);
    checkVectorLimits(c, w.vectors);
    cost = Math.max(1, w.points);
  } else {
    if (w.kind === 'set_payload') await checkCollectionSize(db, schema, meta, { max_collection_payload_size_bytes: c.max_collection_payload_size_bytes });
    if (w.filter !== undefined) {
      checkFilter(meta, c, w.filter, true);
      if (c.write_rate_limit !== undefined) cost = Math.max(1, await estimateMatches(db, schema, meta, w.filter));
    } else cost = Math.max(1, w.ids ?? 1);
  }
  if (c.write_rate_limit !== undefined) await consume(db, schema, meta, 'write', c.write_rate_limit, cost);
}

async function estimateMatches(db: Db, schema: string, meta: CollectionMeta, filter: unknown): Promise<number> {
  const [row] = await db<{ n: string }[]>`select count(*)::text as n from ${db(schema)}.${db(meta.table)}`;
  const total = Number(row!.n);
  // Without an index Qdrant cannot count and assumes half; an indexed filter is counted exactly.
  if (unindexedKey(meta, leaves(filter)) !== null || leaves(filter).length === 0) return Math.floor(total / 2);
  const [m] = await db<{ n: string }[]>`select count(*)::text as n from ${db(schema)}.${db(meta.table)} where ${filterWhere(db, meta, filter)}`;
  return Number(m!.n);
}

/** Bytes per element of a dense vector's datatype. */
const ELEMENT_BYTES: Record<string, number> = { float32: 4, float16: 2, uint8: 1 };

/** Rust's `{}` of an f32: the shortest decimal that reads back as the same f32. */
function f32Display(x: number): string {
  const f = Math.fround(x);
  for (let p = 1; p <= 9; p++) {
    const s = Number(f.toPrecision(p));
    if (Math.fround(s) === f) return String(s);
  }
  return String(f);
}

async function checkCollectionSize(db: Db, schema: string, meta: CollectionMeta, c: StrictModeConfig): Promise<void> {
  const vec = c.max_collection_vector_size_bytes;
  const pay = c.max_collection_payload_size_bytes;
  const pts = c.max_points_count;
  if (vec === undefined && pay === undefined && pts === undefined) return;
  const cols = [...meta.dense.values()];
  const counts = cols.reduce((acc, d) => db`${acc}, count(${db(d.column)})::text as ${db(`n_${d.column}`)}`, db``);
  const [row] = await db<Record<string, string>[]>`
    select count(*)::text as points, coalesce(sum(pg_column_size(payload)), 0)::text as payload ${counts}
    from ${db(schema)}.${db(meta.table)}`;
  const params = vectorParamsOf(meta.config);
  if (vec !== undefined) {
    const bytes = cols.reduce((s, d) => s + Number(row![`n_${d.column}`]) * d.size * (ELEMENT_BYTES[params[d.name]?.datatype ?? 'float32'] ?? 4), 0);
    if (bytes >= vec) throw new QdrantError(400, `Bad request: Max vector storage size limit of ${f32Display(vec / (1024 * 1024))}MB reached!`);
  }
  if (pay !== undefined && Number(row!.payload) >= pay) {
    throw new QdrantError(400, `Bad request: Max payload storage size limit of ${f32Display(pay / (1024 * 1024))}MB reached!`);
  }
  if (pts !== undefined && Number(row!.points) >= pts) throw new QdrantError(400, `Bad request: Max points count limit of ${pts} reached!`);
}

/** `multivector_config.<name>.max_vectors` and `sparse_config.<name>.max_length`. */
function checkVectorLimits(c: StrictModeConfig, structs: Record<string, unknown>[]): void {
  const multi = Object.entries(c.multivector_config ?? {}).filter(([, v]) => typeof v?.max_vectors === 'number');
  const sparse = Object.entries(c.sparse_config ?? {}).filter(([, v]) => typeof v?.max_length === 'number');
  if (multi.length === 0 && sparse.length === 0) return;
  for (const s of structs) {
    for (const [name, cfg] of multi) {
      const v = s[name];
      const max = cfg.max_vectors as number;
      if (Array.isArray(v) && Array.isArray(v[0]) && v.length > max) {
        throw new QdrantError(400, `Bad request: Multivector '${name}' has a limit of ${max} vectors, but ${v.length} were provided!`);
      }
    }
    for (const [name, cfg] of sparse) {
      const v = s[name];
      const max = cfg.max_length as number;
      if (isObj(v) && Array.isArray(v.indices)) {
        const n = v.indices.length;
        if (n > max || (Array.isArray(v.values) && v.values.length > max)) {
          throw new QdrantError(400, `Bad request: Sparse vector '${name}' has a limit of ${max} indices, but ${n} were provided!`);
        }
      }
    }
  }
}

/** `max_payload_index_count`: a new index beyond the limit is refused. */
export function checkIndexCreate(meta: CollectionMeta): void {
  const c = activeStrictMode(meta);
  if (!c || c.max_payload_index_count === undefined) return;
  if (meta.payloadIndexes.size >= c.max_payload_index_count) {
    throw strictError(
      `Collection already has the maximum number of payload indices (${c.max_payload_index_count})`,
      'Please delete an existing index before creating a new one.',
    );
  }
}

/** A dense / multi vector or a named map of vectors, as a map by name (`""`: the unnamed vector). */
function vectorMap(v: unknown): Record<string, unknown> {
  return isObj(v) ? v : { '': v };
}

/** Per point vector maps of an upsert's `{points}` or `{batch}` form. */
function upsertVectors(req: QdrantPointInsertOperations): Record<string, unknown>[] {
  if ('points' in req) return (req.points as QdrantPointStruct[]).map((p) => vectorMap(p.vector));
  const { ids, vectors } = (req as { batch: QdrantBatch }).batch;
  if (Array.isArray(vectors)) return vectors.map((v) => ({ '': v }));
  return ids.map((_, i) => Object.fromEntries(Object.entries(vectors).map(([name, list]) => [name, list[i]])));
}

/** The strict-mode view of one point operation (a route's body or one of a batch). */
export function writeCheckOf(op: QdrantUpdateOperation): WriteCheck {
  if ('upsert' in op) {
    const vectors = upsertVectors(op.upsert);
    return { kind: 'upsert', points: vectors.length, vectors };
  }
  if ('update_vectors' in op) {
    const pts = op.update_vectors.points;
    return { kind: 'update_vectors', points: pts.length, vectors: pts.map((p) => vectorMap(p.vector)) };
  }
  const sel = ('delete' in op ? op.delete
    : 'set_payload' in op ? op.set_payload
      : 'overwrite_payload' in op ? op.overwrite_payload
        : 'delete_payload' in op ? op.delete_payload
          : 'clear_payload' in op ? op.clear_payload
            : op.delete_vectors) as { points?: unknown[]; filter?: unknown };
  const kind = 'set_payload' in op || 'overwrite_payload' in op ? 'set_payload' : 'selector';
  return { kind, filter: sel.points === undefined ? sel.filter : undefined, ids: sel.points?.length };
}
