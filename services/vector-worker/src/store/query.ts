/**
 * `POST …/points/query` (universal query API).
 *
 * Supported `query` forms: a dense vector, `{nearest: vector}`, a point id or `{nearest: id}`
 * (nearest to that point's vector; the point itself is left out, as Qdrant does for every id
 * referenced by a query), `{order_by}` (indexed numeric/datetime key; score = the value),
 * `{sample: "random"}`, and with prefetches `{fusion: "rrf"}` / `{rrf: {k?, weights?}}`
 * (Qdrant's RRF: Σ weight-adjusted 1 / (position + k), k = 2). No `query` lists points in id
 * order like scroll (score 0).
 *
 * Prefetch: each prefetch runs on its own (root and outer filters apply to it too, as in Qdrant);
 * the outer query then either fuses the lists (rrf) or rescores their union exactly with its
 * vector. Query vectors of every kind (dense, multivector, sparse): kinds.ts. Not supported (400 Bad request): recommend, discover,
 * context, formula, mmr, dbsf, relevance_feedback, lookup_from, order_by/sample over prefetches.
 */
import type postgres from 'postgres';
import type { QdrantQueryInterface, QdrantQueryRequest, QdrantScoredPoint } from '@gatehouse/contracts';
import { tableOf, type CollectionMeta, type DenseVector } from './catalog.ts';
import { QdrantError, wrongInput } from './errors.ts';
import { parsePointId, pidOf, type ParsedPointId } from './ids.ts';
import { clampLimit, walk, type OrderBy } from './reads.ts';
import { recordColumns, type PointRow } from './records.ts';
import { nearestRows, resolveQueryVector, type QueryVector } from './kinds.ts';
import { toScoredPoint } from './search.ts';
import { vectorSelection, type VectorSelection } from './vectors.ts';
import { filterWhere, pidIn } from './where.ts';

const badRequest = (msg: string) => new QdrantError(400, `Bad request: ${msg}`);
const unsupported = (what: string) => badRequest(`${what} is not supported by this store`);

/** Qdrant's default RRF constant (`DEFAULT_RRF_K`). */
const DEFAULT_RRF_K = 2;

/** One level of a query: the request itself or one of its prefetches. */
type Stage = Pick<QdrantQueryRequest, 'prefetch' | 'query' | 'using' | 'filter' | 'params' | 'score_threshold' | 'limit' | 'lookup_from'>;

type ParsedQuery =
  | { kind: 'vector'; input: unknown }
  | { kind: 'order_by'; orderBy: OrderBy }
  | { kind: 'sample' }
  | { kind: 'rrf'; k: number; weights?: number[] };

type Ctx = { sql: postgres.Sql; schema: string; meta: CollectionMeta };

/** A ranked point: `pid` (the table key) and its score, best first. */
type Ranked = { pid: string; score: number };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseQuery(q: QdrantQueryInterface, stage: Stage): ParsedQuery {
  if (!isObject(q) || 'indices' in q) return { kind: 'vector', input: q };
  if ('nearest' in q) {
    if (q.mmr !== undefined) throw unsupported('MMR (`mmr`)');
    return { kind: 'vector', input: q.nearest };
  }
  if ('order_by' in q) {
    if (stage.score_threshold !== undefined) throw badRequest("Can't use score_threshold with an order_by query.");
    const o = q.order_by as string | { key: string; direction?: 'asc' | 'desc'; start_from?: unknown };
    return {
      kind: 'order_by',
      orderBy: typeof o === 'string' ? { key: o, direction: 'asc' } : { key: o.key, direction: o.direction ?? 'asc', start_from: o.start_from },
    };
  }
  if ('sample' in q) {
    if (q.sample !== 'random') throw badRequest(`Unknown sample type ${JSON.stringify(q.sample)}`);
    return { kind: 'sample' };
  }
  if ('fusion' in q) {
    if (q.fusion === 'rrf') return { kind: 'rrf', k: DEFAULT_RRF_K };
    if (q.fusion === 'dbsf') throw unsupported('Fusion `dbsf`');
    throw badRequest(`Unknown fusion ${JSON.stringify(q.fusion)}`);
  }
  if ('rrf' in q) {
    const r = (q.rrf ?? {}) as { k?: unknown; weights?: unknown };
    const k = typeof r.k === 'number' && Number.isInteger(r.k) && r.k >= 0 ? r.k : DEFAULT_RRF_K;
    const weights = Array.isArray(r.weights) ? r.weights.map(Number) : undefined;
    return { kind: 'rrf', k, weights };
  }
  throw unsupported(`Query type \`${Object.keys(q)[0] ?? 'unknown'}\``);
}

function prefetchesOf(stage: Stage): Stage[] {
  if (stage.prefetch === undefined) return [];
  return (Array.isArray(stage.prefetch) ? stage.prefetch : [stage.prefetch]) as Stage[];
}

const isPointIdInput = (v: unknown): v is number | string => typeof v === 'number' || typeof v === 'string';

/** Every point id a query tree references; Qdrant leaves them all out of the results. */
function referencedIds(stage: Stage): ParsedPointId[] {
  const out: ParsedPointId[] = [];
  const visit = (s: Stage) => {
    if (s.query !== undefined) {
      const q = s.query;
      const input = isObject(q) && 'nearest' in q ? q.nearest : q;
      if (isPointIdInput(input)) out.push(parsePointId(input));
    }
    prefetchesOf(s).forEach(visit);
  };
  visit(stage);
  return out;
}

/** `a AND b` of two Qdrant filters (absent ones drop out). */
function andFilters(a: unknown, b: unknown): unknown {
  if (a === undefined || a === null) return b;
  if (b === undefined || b === null) return a;
  return { must: [a, b] };
}

/** The stage's query vector of any kind (kinds.ts) on its `using` vector. */
function queryVector(ctx: Ctx, stage: Stage, input: unknown): Promise<QueryVector> {
  return resolveQueryVector(ctx.sql, ctx.schema, ctx.meta, stage.using ?? '', input, stage.params);
}

const pidOfRow = (row: PointRow) => (row.id_num ?? row.id_uuid) as string;
const parsedOfPid = (pid: string): ParsedPointId => (/^[0-9]+$/.test(pid) ? { num: pid } : { uuid: pid });
const NO_VECTORS: VectorSelection = { all: false, names: [] };

/** Qdrant's RRF over ranked lists (ties keep first-seen order). */
function rrf(lists: Ranked[][], k: number, weights?: number[]): Ranked[] {
  if (weights && weights.length !== lists.length) {
    throw new QdrantError(
      422,
      `Validation error in JSON body: [Number of weights in RRF should match number of pre-fetches: got ${weights.length}, expected ${lists.length}]`,
    );
  }
  const scores = new Map<string, number>();
  lists.forEach((list, i) => {
    const w = weights?.[i] ?? 1;
    list.forEach((r, pos) => {
      const s = w <= 0 ? 0 : 1 / ((pos + 1) / w + k - 1);
      scores.set(r.pid, (scores.get(r.pid) ?? 0) + s);
    });
  });
  return [...scores.entries()].map(([pid, score]) => ({ pid, score })).sort((a, b) => b.score - a.score);
}

/** Run one level of a query tree; `take` best-first results. */
/** The stage's nearest points to `input` (only among `restrict` when given), as ranked pids. */
async function nearest(ctx: Ctx, stage: Stage, input: unknown, filter: unknown, take: number, restrict?: ParsedPointId[]): Promise<Ranked[]> {
  const qv = await queryVector(ctx, stage, input);
  const found = await nearestRows(ctx.sql, ctx.schema, ctx.meta, qv, {
    filter,
    exclude: [],
    limit: take,
    offset: 0,
    scoreThreshold: stage.score_threshold,
    withPayload: false,
    sel: NO_VECTORS,
    params: stage.params,
    ...(restrict ? { restrict } : {}),
  });
  return found.map(({ row, score }) => ({ pid: pidOfRow(row), score }));
}

async function runStage(ctx: Ctx, stage: Stage, inherited: unknown, take: number): Promise<Ranked[]> {
  if (stage.lookup_from !== undefined) throw unsupported('lookup_from');
  const filter = andFilters(inherited, stage.filter);
  const subs = prefetchesOf(stage);
  if (stage.query === undefined) {
    if (subs.length) throw badRequest("A query is needed to merge the prefetches. Can't have prefetches without defining a query.");
    if (stage.score_threshold !== undefined) {
      throw badRequest("A query is needed to use the score_threshold. Can't have score_threshold without defining a query.");
    }
    const rows = await walk(ctx.sql, ctx.schema, ctx.meta, { filter, limit: take, withPayload: false, sel: NO_VECTORS });
    return rows.map((r) => ({ pid: pidOfRow(r), score: 0 }));
  }
  const parsed = parseQuery(stage.query, stage);
  if (subs.length === 0) {
    switch (parsed.kind) {
      case 'rrf':
        throw badRequest('A fusion query needs prefetches to fuse');
      case 'order_by': {
        const rows = await walk(ctx.sql, ctx.schema, ctx.meta, { filter, limit: take, withPayload: false, sel: NO_VECTORS, orderBy: parsed.orderBy });
        return rows.map((r) => ({ pid: pidOfRow(r), score: Number(r.order_value ?? 0) }));
      }
      case 'sample': {
        const { sql, schema, meta } = ctx;
        const rows = await sql<PointRow[]>`
          select id_num, id_uuid from ${tableOf(sql, schema, meta)}
          where ${filterWhere(sql, meta, filter)} order by random() limit ${take}`;
        return rows.map((r) => ({ pid: pidOfRow(r), score: 0 }));
      }
      case 'vector': {
        return nearest(ctx, stage, parsed.input, filter, take);
      }
    }
  }
  const lists: Ranked[][] = [];
  for (const sub of subs) lists.push(await runStage(ctx, sub, filter, clampLimit(sub.limit ?? 10)));
  switch (parsed.kind) {
    case 'rrf': {
      const fused = rrf(lists, parsed.k, parsed.weights);
      const t = stage.score_threshold;
      return (t === undefined ? fused : fused.filter((r) => r.score > t)).slice(0, take);
    }
    case 'vector': {
      const candidates = [...new Set(lists.flat().map((r) => r.pid))];
      if (candidates.length === 0) return [];
      return nearest(ctx, stage, parsed.input, filter, take, candidates.map(parsedOfPid));
    }
    default:
      throw unsupported(`\`${parsed.kind}\` over prefetches`);
  }
}

export async function query(
  sql: postgres.Sql,
  schema: string,
  meta: CollectionMeta,
  req: QdrantQueryRequest,
): Promise<{ points: QdrantScoredPoint[] }> {
  const ctx: Ctx = { sql, schema, meta };
  const limit = clampLimit(req.limit ?? 10);
  const offset = clampLimit(req.offset ?? 0);
  const sel = vectorSelection(meta, req.with_vector);
  const referenced = referencedIds(req);
  // Referenced points never come back (Qdrant edits the root filter the same way).
  const filter = referenced.length ? andFilters(req.filter, { must_not: [{ has_id: referenced.map(pidOf).map(wireId) }] }) : req.filter;
  const root: Stage = { ...req, filter: undefined, limit: undefined };
  const ranked = (await runStage(ctx, root, filter, clampLimit(offset + limit))).slice(offset, offset + limit);
  if (ranked.length === 0) return { points: [] };
  // One read for payloads and vectors of the final page.
  const rows = await sql<PointRow[]>`
    select ${recordColumns(sql, meta, req.with_payload, sel)} from ${tableOf(sql, schema, meta)}
    where ${pidIn(sql, ranked.map((r) => parsedOfPid(r.pid)))}`;
  const byPid = new Map(rows.map((r) => [pidOfRow(r), r]));
  const points: QdrantScoredPoint[] = [];
  for (const r of ranked) {
    const row = byPid.get(r.pid);
    if (row) points.push(toScoredPoint(meta, row, r.score, req.with_payload, sel));
  }
  return { points };
}

/** A pid back to an id a filter's `has_id` takes (exact: a bigint above 2^53). */
function wireId(pid: string): number | bigint | string {
  if (!/^[0-9]+$/.test(pid)) return pid;
  return Number(pid) <= Number.MAX_SAFE_INTEGER ? Number(pid) : BigInt(pid);
}
