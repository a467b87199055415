/**
 * Vector search: the kNN core (used by query.ts) and the deprecated `/points/search` (+ batch).
 *
 * kNN runs on the HNSW index with pgvector's iterative scan, so a filter does not cut the result
 * short: in one transaction `hnsw.iterative_scan = relaxed_order`, `hnsw.ef_search` =
 * max(40, limit + offset, params.hnsw_ef) (at most 1000) and a raised `hnsw.max_scan_tuples`;
 * the candidates are then re-ordered by exact distance in an outer query, as pgvector's README
 * recommends for relaxed order. If the index walk still yields fewer than limit + offset rows
 * (very selective filter, scan budget used up), or more than 1000 are asked for, or
 * `params.exact` is set, or the vector has no HNSW index, the search is exact (a full ordered
 * scan of the filtered rows). Scores and ordering: scoring.ts.
 */
import type postgres from 'postgres';
import type {
  QdrantScoredPoint,
  QdrantSearchParams,
  QdrantSearchRequest,
  QdrantWithPayload,
} from '@gatehouse/contracts';
import { tableOf, type CollectionMeta, type DenseVector, type Fragment } from './catalog.ts';
import { vectorHnsw } from './collections.ts';
import { join } from './common.ts';
import { QdrantError } from './errors.ts';
import { formatPointId, idOrder, type ParsedPointId } from './ids.ts';
import { clampLimit } from './reads.ts';
import { recordColumns, selectPayload, type PointRow } from './records.ts';
import { DISTANCE_OPERATOR, distanceBound, f32, passesThreshold, scoreOf } from './scoring.ts';
import { nearestRows, resolveQueryVector } from './kinds.ts';
import { castType, notExistingVector, vectorOutput, vectorSelection, wantsVectors, type VectorSelection } from './vectors.ts';
import { filterWhere, pidIn } from './where.ts';

/** pgvector's `hnsw.ef_search` maximum; asking for more neighbours than this is searched exactly. */
const MAX_EF_SEARCH = 1000;

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
  const text = `[${k.query.join(',')}]`;
  const cast = sql.unsafe(castType(k.vector));
  const distance = (db: postgres.Sql | postgres.TransactionSql) => db`${db(col)} ${op} ${text}::${cast}`;
  const conds = (db: postgres.Sql | postgres.TransactionSql): Fragment[] => {
    const c: Fragment[] = [db`${db(col)} is not null`, filterWhere(db, meta, k.filter)];
    if (k.exclude.length) c.push(db`not ${pidIn(db, k.exclude)}`);
    if (k.restrict) c.push(pidIn(db, k.restrict));
    return c;
  };

  let rows: ScoredRow[] | null = null;
  const indexed = vectorHnsw(meta, k.vector) !== null;
  if (indexed && !k.params?.exact && !k.restrict && need <= MAX_EF_SEARCH) {
    const ef = Math.min(MAX_EF_SEARCH, Math.max(40, need, k.params?.hnsw_ef ?? 0));
    // Enough budget for filters that keep a few percent of the points; default is 20,000.
    const maxScan = Math.min(1_000_000, Math.max(100_000, ef * 1000));
    const found = (await sql.begin(async (tx) => {
      await tx`
        select set_config('hnsw.iterative_scan', 'relaxed_order', true),
               set_config('hnsw.ef_search', ${String(ef)}, true),
               set_config('hnsw.max_scan_tuples', ${String(maxScan)}, true)`;
      return tx<ScoredRow[]>`
        with candidates as materialized (
          select ${cols}, ${distance(tx)} as distance
          from ${table}
          where ${join(tx, conds(tx), 'and')}
          order by distance
          limit ${ef}
        )
        select * from candidates order by distance, ${idOrder(tx as unknown as postgres.Sql)} limit ${need}`;
    })) as ScoredRow[];
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
