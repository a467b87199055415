/**
 * Vector search: the kNN core (used by query.ts) and the deprecated `/points/search` (+ batch).
 *
 * A filtered search first asks Postgres's planner how many points the filter keeps (its estimate
 * from the payload statistics, EXPLAIN: no heap pass), as Qdrant's query planner asks its payload
 * index. Few enough (`exactBelow`) are scored exactly: all of them, so the answer is the true top
 * k, which the HNSW graph cannot promise when the filter keeps a region far from the query. Above
 * that, and without a filter, the search walks the HNSW index with pgvector's iterative scan in
 * `strict_order`, `hnsw.ef_search` = max(40, limit + offset, params.hnsw_ef) (at most 1000) and a
 * raised `hnsw.max_scan_tuples`; the candidates are re-ordered by exact distance and id in an outer
 * query. A pool made with `knnSessionPool` starts every connection with the default settings,
 * so a search at the default ef_search is one statement; other pools (and other ef values) set
 * them in a transaction. If the index walk still yields fewer than limit + offset rows (scan
 * budget used up), or more than 1000 are asked for, or `params.exact` is set, or the vector has
 * no HNSW index, the search is exact (an ordered scan of the filtered rows). Scores and
 * ordering: scoring.ts.
 */
import type postgres from 'postgres';
import { stringifyExactJson } from '@gatehouse/common';
import type {
  QdrantScoredPoint,
  QdrantSearchParams,
  QdrantSearchRequest,
  QdrantWithPayload,
} from '@gatehouse/contracts';
import { tableOf, vectorParamsOf, type CollectionMeta, type DenseVector, type Fragment } from '../collections/catalog.ts';
import { vectorHnsw } from '../collections/collections.ts';
import { join } from '../common.ts';
import { QdrantError } from '../errors.ts';
import { formatPointId, idOrder, type ParsedPointId } from '../points/ids.ts';
import { clampLimit } from '../points/reads.ts';
import { recordColumns, selectPayload, type PointRow } from '../points/records.ts';
import { DISTANCE_OPERATOR, distanceBound, f32, passesThreshold, scoreOf } from './scoring.ts';
import { nearestRows, resolveQueryVector } from '../vectors/kinds.ts';
import { castType, notExistingVector, vectorOutput, vectorText, vectorSelection, wantsVectors, type VectorSelection } from '../vectors/vectors.ts';
import { filterWhere, pidIn } from '../filter/where.ts';

/** pgvector's `hnsw.ef_search` maximum; asking for more neighbours than this is searched exactly. */
const MAX_EF_SEARCH = 1000;
/** pgvector's default `hnsw.ef_search`, the store's default too. */
const DEFAULT_EF_SEARCH = 40;
const DEFAULT_MAX_SCAN_TUPLES = 100_000;

/**
 * A filter that keeps at most `exactBelow` points (by the planner's estimate) is searched exactly,
 * Qdrant's rule with its knob: `hnsw_config.full_scan_threshold`, in KB of vectors (1 KB = 256
 * float32 values; default 10,000), below which Qdrant's planner scores the filtered points
 * instead of walking the graph. Here the threshold is EXACT_FACTOR times Qdrant's, as pgvector's
 * graph has no payload-aware links: a filtered walk misses neighbours outside the query's region
 * (recall 0.72 at ef 40 on the benchmark's 10 % filter), while exact scoring of the default's
 * 20,000 points of 384 dimensions costs about what that walk costs. The cost of exact scoring
 * grows with the vector bytes, hence a threshold in bytes, not points.
 */
const EXACT_FACTOR = 3;

export function exactBelow(meta: CollectionMeta, vector: DenseVector): number {
  const own = vectorParamsOf(meta.config)[vector.name]?.hnsw_config as { full_scan_threshold?: number } | undefined;
  const kb = own?.full_scan_threshold ?? meta.config.hnsw_config?.full_scan_threshold ?? 10_000;
  return Math.floor((EXACT_FACTOR * kb * 1024) / (vector.size * 4));
}

/** The planner's estimate of the rows `query` returns (EXPLAIN: no execution, no heap pass). */
export async function estimatedRows(sql: postgres.Sql, query: Fragment): Promise<number> {
  const [row] = await sql<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }[]>`explain (format json) ${query}`;
  return Number(row?.['QUERY PLAN']?.[0]?.Plan?.['Plan Rows'] ?? Infinity);
}

/**
 * Planner estimates of filtered searches, by table, filter and excluded ids. An estimate follows
 * the table's statistics (ANALYZE) and its size, neither of which moves between one query and the
 * next, while asking for it is a round trip per search (a third of a filtered search's statements):
 * one is kept for ESTIMATE_TTL_MS. Filters whose text is long (big id lists) are not kept.
 */
const ESTIMATE_TTL_MS = 10_000;
const ESTIMATE_KEY_MAX = 4096;
const ESTIMATES_MAX = 2000;
const estimates = new Map<string, { rows: number; at: number }>();

async function filteredEstimate(sql: postgres.Sql, key: string | undefined, query: () => Fragment): Promise<number> {
  const now = performance.now();
  const hit = key === undefined ? undefined : estimates.get(key);
  if (hit && now - hit.at < ESTIMATE_TTL_MS) return hit.rows;
  const rows = await estimatedRows(sql, query());
  if (key !== undefined) {
    if (estimates.size >= ESTIMATES_MAX) estimates.clear();
    estimates.set(key, { rows, at: now });
  }
  return rows;
}

function estimateKey(schema: string, meta: CollectionMeta, k: KnnRequest): string | undefined {
  const key = `${schema}.${meta.table}.${k.vector.column}\u0000${stringifyExactJson(k.filter)}\u0000${JSON.stringify(k.exclude)}`;
  return key.length <= ESTIMATE_KEY_MAX ? key : undefined;
}

/** The session settings of `knnSessionPool`: a default search needs no transaction to set them. */
export const KNN_SESSION: Record<string, string> = {
  'hnsw.ef_search': String(DEFAULT_EF_SEARCH),
  'hnsw.iterative_scan': 'strict_order',
  'hnsw.max_scan_tuples': String(DEFAULT_MAX_SCAN_TUPLES),
};
const sessionPools = new WeakSet<postgres.Sql>();

/**
 * Marks a pool whose connections all start with `KNN_SESSION` (postgres.js `connection` option,
 * sent at start-up; the extension adopts the values when it loads). Nothing in the store changes
 * these settings outside a transaction, so they hold for every statement on the pool.
 */
export function knnSessionPool<T extends postgres.Sql>(sql: T): T {
  const set = (sql.options as { connection?: Record<string, unknown> }).connection ?? {};
  if (Object.entries(KNN_SESSION).every(([k, v]) => String(set[k]) === v)) sessionPools.add(sql);
  return sql;
}

export type KnnRequest = {
  vector: DenseVector;
  /** Checked query vector (normalised for Cosine). */
  query: number[];
  filter: unknown;
  /** Points never returned (the point a query-by-id starts from). */
  exclude: ParsedPointId[];
  limit: number;
  offset: number;
  scoreThreshold?: number;
  withPayload: QdrantWithPayload;
  sel: VectorSelection;
  params?: QdrantSearchParams;
  /** Only these points (rescoring prefetch candidates); searched exactly. */
  restrict?: readonly ParsedPointId[];
};

export type ScoredRow = PointRow & { distance: number };

export function toScoredPoint(meta: CollectionMeta, row: PointRow, score: number, wp: QdrantWithPayload, sel: VectorSelection): QdrantScoredPoint {
  const point: QdrantScoredPoint = { id: formatPointId(row), version: Number(row.version), score: f32(score) };
  const payload = selectPayload(row.payload ?? {}, wp);
  if (payload !== undefined) point.payload = payload;
  if (wantsVectors(sel)) point.vector = vectorOutput(meta, sel, row);
  return point;
}

/** The rows of a kNN search with their Qdrant scores, best first, after offset and threshold. */
export async function knnRows(
  sql: postgres.Sql,
  schema: string,
  meta: CollectionMeta,
  k: KnnRequest,
): Promise<{ row: ScoredRow; score: number }[]> {
  const need = clampLimit(k.limit + k.offset);
  const col = k.vector.column;
  const op = sql.unsafe(DISTANCE_OPERATOR[k.vector.distance]);
  const table = tableOf(sql, schema, meta);
  const cols = recordColumns(sql, meta, k.withPayload, k.sel);
  const text = vectorText(k.query, k.vector);
  const cast = sql.unsafe(castType(k.vector));
  const distance = (db: postgres.Sql | postgres.TransactionSql) => db`${db(col)} ${op} ${text}::${cast}`;
  const conds = (db: postgres.Sql | postgres.TransactionSql): Fragment[] => {
    const c: Fragment[] = [db`${db(col)} is not null`, filterWhere(db, meta, k.filter)];
    if (k.exclude.length) c.push(db`not ${pidIn(db, k.exclude)}`);
    if (k.restrict) c.push(pidIn(db, k.restrict));
    return c;
  };

  let rows: ScoredRow[] | null = null;
  const hnsw = vectorHnsw(meta, k.vector);
  let useIndex = hnsw !== null && !k.params?.exact && !k.restrict && need <= MAX_EF_SEARCH;
  if (useIndex && k.filter != null) {
    const estimate = await filteredEstimate(sql, estimateKey(schema, meta, k), () => sql`select 1 from ${table} where ${join(sql, conds(sql), 'and')}`);
    useIndex = estimate > exactBelow(meta, k.vector);
  }
  if (useIndex) {
    const ef = Math.min(MAX_EF_SEARCH, Math.max(DEFAULT_EF_SEARCH, need, k.params?.hnsw_ef ?? 0));
    // Enough budget for filters that keep a few percent of the points (pgvector's default is 20,000).
    const maxScan = Math.min(1_000_000, Math.max(DEFAULT_MAX_SCAN_TUPLES, ef * 1000));
    const candidates = (db: postgres.Sql | postgres.TransactionSql) => db<ScoredRow[]>`
        with candidates as materialized (
          select ${cols}, ${distance(db)} as distance
          from ${table}
          where ${join(db, conds(db), 'and')}
          order by distance
          limit ${ef}
        )
        select * from candidates order by distance, ${idOrder(db as unknown as postgres.Sql)} limit ${need}`;
    const found = ef === DEFAULT_EF_SEARCH && sessionPools.has(sql)
      ? await candidates(sql)
      : ((await sql.begin(async (tx) => {
          await tx`
            select set_config('hnsw.iterative_scan', 'strict_order', true),
                   set_config('hnsw.ef_search', ${String(ef)}, true),
                   set_config('hnsw.max_scan_tuples', ${String(maxScan)}, true)`;
          return candidates(tx);
        })) as ScoredRow[]);
    if (found.length >= need) rows = found;
  }
  if (!rows) {
    const where = conds(sql);
    // Exact: `+ 0` keeps the planner off the HNSW index.
    if (k.scoreThreshold !== undefined) {
      where.push(sql`${distance(sql)} <= ${distanceBound(k.vector.distance, k.scoreThreshold)}`);
    }
    rows = await sql<ScoredRow[]>`
      select ${cols}, ${distance(sql)} as distance
      from ${table}
      where ${join(sql, where, 'and')}
      order by (${distance(sql)}) + 0, ${idOrder(sql)}
      limit ${need}`;
  }
  const out: { row: ScoredRow; score: number }[] = [];
  for (const row of rows.slice(k.offset)) {
    const score = scoreOf(k.vector.distance, Number(row.distance));
    if (!passesThreshold(k.vector.distance, score, k.scoreThreshold)) continue;
    out.push({ row, score });
  }
  return out.slice(0, k.limit);
}

export function denseVectorNamed(meta: CollectionMeta, name: string): DenseVector {
  const d = meta.dense.get(name);
  if (d) return d;
  // Nearest queries on sparse vectors go through kinds.ts; the custom-scored kinds do not yet.
  if (meta.sparse.has(name)) throw new QdrantError(400, `Bad request: Only nearest queries on sparse vector \`${name}\` are supported by this store`);
  throw notExistingVector(name);
}

// ------------------------------------------------------------------------------------------------
// Deprecated search

export async function search(sql: postgres.Sql, schema: string, meta: CollectionMeta, req: QdrantSearchRequest): Promise<QdrantScoredPoint[]> {
  const named = !Array.isArray(req.vector);
  const name = named ? (req.vector as { name: string }).name : '';
  const raw = named ? (req.vector as { vector: unknown }).vector : req.vector;
  const qv = await resolveQueryVector(sql, schema, meta, name, raw, req.params);
  const sel = vectorSelection(meta, req.with_vector);
  const found = await nearestRows(sql, schema, meta, qv, {
    filter: req.filter,
    exclude: [],
    limit: req.limit,
    offset: req.offset ?? 0,
    scoreThreshold: req.score_threshold,
    withPayload: req.with_payload,
    sel,
    params: req.params,
  });
  return found.map(({ row, score }) => toScoredPoint(meta, row, score, req.with_payload, sel));
}
