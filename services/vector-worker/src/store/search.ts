/**
 * Vector search: the deprecated `/points/search` (+ batch) and `/points/query` (+ batch).
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
  QdrantQueryRequest,
  QdrantScoredPoint,
  QdrantSearchParams,
  QdrantSearchRequest,
  QdrantWithPayload,
} from '@gatehouse/contracts';
import { tableOf, type CollectionMeta, type DenseVector, type Fragment } from './catalog.ts';
import { vectorHnsw } from './collections.ts';
import { join } from './common.ts';
import { QdrantError, wrongInput } from './errors.ts';
import { formatPointId, idOrder, parsePointId, pidOf, type ParsedPointId } from './ids.ts';
import { clampLimit, walk } from './reads.ts';
import { recordColumns, selectPayload, type PointRow } from './records.ts';
import { DISTANCE_OPERATOR, distanceBound, passesThreshold, scoreOf } from './scoring.ts';
import { notExistingVector, prepareDense, vectorOutput, vectorSelection, wantsVectors, type VectorSelection } from './vectors.ts';
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
};

type ScoredRow = PointRow & { distance: number };

function toScoredPoint(meta: CollectionMeta, row: PointRow, score: number, wp: QdrantWithPayload, sel: VectorSelection): QdrantScoredPoint {
  const point: QdrantScoredPoint = { id: formatPointId(row), version: Number(row.version), score };
  const payload = selectPayload(row.payload ?? {}, wp);
  if (payload !== undefined) point.payload = payload;
  if (wantsVectors(sel)) point.vector = vectorOutput(meta, sel, row);
  return point;
}

export async function knn(sql: postgres.Sql, schema: string, meta: CollectionMeta, k: KnnRequest): Promise<QdrantScoredPoint[]> {
  const need = clampLimit(k.limit + k.offset);
  const col = k.vector.column;
  const op = sql.unsafe(DISTANCE_OPERATOR[k.vector.distance]);
  const table = tableOf(sql, schema, meta);
  const cols = recordColumns(sql, meta, k.withPayload, k.sel);
  const text = `[${k.query.join(',')}]`;
  const distance = (db: postgres.Sql | postgres.TransactionSql) => db`${db(col)} ${op} ${text}::vector`;
  const conds = (db: postgres.Sql | postgres.TransactionSql): Fragment[] => {
    const c: Fragment[] = [db`${db(col)} is not null`, filterWhere(db, meta, k.filter)];
    if (k.exclude.length) c.push(db`not ${pidIn(db, k.exclude)}`);
    return c;
  };

  let rows: ScoredRow[] | null = null;
  const indexed = vectorHnsw(meta, k.vector) !== null;
  if (indexed && !k.params?.exact && need <= MAX_EF_SEARCH) {
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
  const out: QdrantScoredPoint[] = [];
  for (const row of rows.slice(k.offset)) {
    const score = scoreOf(k.vector.distance, Number(row.distance));
    if (!passesThreshold(k.vector.distance, score, k.scoreThreshold)) continue;
    out.push(toScoredPoint(meta, row, score, k.withPayload, k.sel));
  }
  return out.slice(0, k.limit);
}

function denseVectorNamed(meta: CollectionMeta, name: string): DenseVector {
  const d = meta.dense.get(name);
  if (d) return d;
  if (meta.sparse.has(name)) throw new QdrantError(400, `Bad request: Search on sparse vector \`${name}\` is not supported by this store`);
  throw notExistingVector(name);
}

// ------------------------------------------------------------------------------------------------
// Deprecated search

export async function search(sql: postgres.Sql, schema: string, meta: CollectionMeta, req: QdrantSearchRequest): Promise<QdrantScoredPoint[]> {
  const named = !Array.isArray(req.vector);
  const name = named ? (req.vector as { name: string }).name : '';
  const raw = named ? (req.vector as { vector: unknown }).vector : req.vector;
  const vector = denseVectorNamed(meta, name);
  return knn(sql, schema, meta, {
    vector,
    query: prepareDense(vector, raw),
    filter: req.filter,
    exclude: [],
    limit: req.limit,
    offset: req.offset ?? 0,
    scoreThreshold: req.score_threshold,
    withPayload: req.with_payload,
    sel: vectorSelection(meta, req.with_vector),
    params: req.params,
  });
}

// ------------------------------------------------------------------------------------------------
// Query

const badRequest = (msg: string) => new QdrantError(400, `Bad request: ${msg}`);

function isPointIdInput(v: unknown): v is number | string {
  return typeof v === 'number' || typeof v === 'string';
}

/** The vector a query-by-id starts from (404 when the point or its vector is missing). */
async function vectorOfPoint(sql: postgres.Sql, schema: string, meta: CollectionMeta, vector: DenseVector, id: ParsedPointId): Promise<number[]> {
  const [row] = await sql<{ v: string | null }[]>`
    select ${sql(vector.column)}::text as v from ${tableOf(sql, schema, meta)} where pid = ${pidOf(id)}`;
  if (!row || row.v === null) throw new QdrantError(404, `Not found: Vector with name ${JSON.stringify(vector.name)} for point not found`);
  return JSON.parse(row.v) as number[];
}

export async function query(sql: postgres.Sql, schema: string, meta: CollectionMeta, req: QdrantQueryRequest): Promise<{ points: QdrantScoredPoint[] }> {
  if (req.prefetch !== undefined && req.query === undefined) {
    throw badRequest("A query is needed to merge the prefetches. Can't have prefetches without defining a query.");
  }
  if (req.score_threshold !== undefined && req.query === undefined) {
    throw badRequest("A query is needed to use the score_threshold. Can't have score_threshold without defining a query.");
  }
  if (req.prefetch !== undefined) throw badRequest('prefetch is not supported by this store');
  if (req.lookup_from !== undefined) throw badRequest('lookup_from is not supported by this store');
  const limit = clampLimit(req.limit ?? 10);
  const offset = clampLimit(req.offset ?? 0);
  const sel = vectorSelection(meta, req.with_vector);
  const q = req.query;

  if (q === undefined) {
    // No query: id order, like scroll.
    const rows = await walk(sql, schema, meta, { filter: req.filter, skip: offset, limit, withPayload: req.with_payload, sel });
    return { points: rows.map((r) => toScoredPoint(meta, r, 0, req.with_payload, sel)) };
  }

  let input: unknown = q;
  if (typeof q === 'object' && q !== null && !Array.isArray(q) && !('indices' in q)) {
    if ('nearest' in q) {
      if ((q as { mmr?: unknown }).mmr !== undefined) throw badRequest('MMR (`mmr`) is not supported by this store');
      input = q.nearest;
    } else if ('order_by' in q) {
      if (req.score_threshold !== undefined) throw badRequest("Can't use score_threshold with an order_by query.");
      const o = q.order_by as string | { key: string; direction?: 'asc' | 'desc'; start_from?: unknown };
      const orderBy = typeof o === 'string' ? { key: o, direction: 'asc' as const } : { key: o.key, direction: o.direction ?? 'asc', start_from: o.start_from };
      const rows = await walk(sql, schema, meta, { filter: req.filter, skip: offset, limit, withPayload: req.with_payload, sel, orderBy });
      return {
        points: rows.map((r) => toScoredPoint(meta, r, Number(r.order_value ?? 0), req.with_payload, sel)),
      };
    } else if ('sample' in q) {
      if (q.sample !== 'random') throw badRequest(`Unknown sample type ${JSON.stringify(q.sample)}`);
      const rows = await sql<PointRow[]>`
        select ${recordColumns(sql, meta, req.with_payload, sel)} from ${tableOf(sql, schema, meta)}
        where ${filterWhere(sql, meta, req.filter)} order by random() limit ${limit}`;
      return { points: rows.map((r) => toScoredPoint(meta, r, 0, req.with_payload, sel)) };
    } else {
      const kind = Object.keys(q)[0] ?? 'unknown';
      throw badRequest(`Query type \`${kind}\` is not supported by this store`);
    }
  }

  if (typeof input === 'object' && input !== null && !Array.isArray(input)) {
    throw badRequest('Sparse vector queries are not supported by this store');
  }
  if (req.using !== undefined && req.using !== '' && meta.sparse.has(req.using)) {
    throw badRequest(`Search on sparse vector \`${req.using}\` is not supported by this store`);
  }
  const vector = denseVectorNamed(meta, req.using ?? '');
  let queryVector: number[];
  const exclude: ParsedPointId[] = [];
  if (isPointIdInput(input)) {
    // Nearest to a stored point; Qdrant leaves that point out of the result.
    const id = parsePointId(input);
    queryVector = prepareDense(vector, await vectorOfPoint(sql, schema, meta, vector, id));
    exclude.push(id);
  } else {
    if (Array.isArray(input) && input.length > 0 && Array.isArray(input[0])) {
      throw wrongInput('Conversion between multi and regular vectors failed');
    }
    queryVector = prepareDense(vector, input);
  }
  const points = await knn(sql, schema, meta, {
    vector,
    query: queryVector,
    filter: req.filter,
    exclude,
    limit,
    offset,
    scoreThreshold: req.score_threshold,
    withPayload: req.with_payload,
    sel,
    params: req.params,
  });
  return { points };
}
