/**
 * `POST …/points/query` (universal query API) and the query tree it runs.
 *
 * A stage (the request or one of its prefetches) has an optional `query`:
 * - a vector query (vector-query.ts): nearest (+ mmr), recommend, discover, context,
 *   relevance_feedback — ids among its examples are read from `lookup_from` or this collection;
 * - `{order_by}` (indexed numeric/datetime key; score = the value), `{sample: "random"}`;
 * - over prefetches only: `{fusion: "rrf" | "dbsf"}`, `{rrf: {k?, weights?}}` (fusion.ts) and
 *   `{formula}` (formula.ts);
 * - none: points in id order like scroll (score 0).
 *
 * Prefetch: each prefetch runs on its own (the outer filters apply to it too, as in Qdrant); the
 * outer query then fuses their lists, or rescores their union (vector queries, order_by, sample,
 * formula). Every point id a query references on this collection is left out of the results
 * (Qdrant edits the root filter the same way); ids looked up in another collection are not.
 */
import type postgres from 'postgres';
import type { QdrantQueryRequest, QdrantScoredPoint } from '@gatehouse/contracts';
import { tableOf, type CollectionMeta } from '../collections/catalog.ts';
import { QdrantError } from '../errors.ts';
import type { Ctx } from './examples.ts';
import { formulaRescore, parseFormula } from './formula.ts';
import { dbsf, DEFAULT_RRF_K, rrf } from './fusion.ts';
import { parsePointId, pidOf, type ParsedPointId } from '../points/ids.ts';
import { clampLimit, walk, type OrderBy } from '../points/reads.ts';
import { recordColumns, type PointRow } from '../points/records.ts';
import { parsedOfPid, pidOfRow, type Ranked } from './scored.ts';
import { toScoredPoint } from '../search/search.ts';
import { vectorSelection, type VectorSelection } from '../vectors/vectors.ts';
import { parseVectorQuery, referencedIds, runVectorQuery, type VectorQuery } from './vector-query.ts';
import { filterWhere, pidIn } from '../filter/where.ts';

const badRequest = (msg: string) => new QdrantError(400, `Bad request: ${msg}`);

/** One level of a query: the request itself or one of its prefetches. */
export type Stage = Pick<QdrantQueryRequest, 'prefetch' | 'query' | 'using' | 'filter' | 'params' | 'score_threshold' | 'limit' | 'lookup_from'>;

type ParsedQuery =
  | { kind: 'vector'; vq: VectorQuery }
  | { kind: 'order_by'; orderBy: OrderBy }
  | { kind: 'sample' }
  | { kind: 'rrf'; k: number; weights?: number[] }
  | { kind: 'dbsf' }
  | { kind: 'formula'; formula: ReturnType<typeof parseFormula> };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseQuery(q: unknown, stage: Stage): ParsedQuery {
  const vq = parseVectorQuery(q);
  if (vq) return { kind: 'vector', vq };
  const o = q as Record<string, unknown>;
  if ('order_by' in o) {
    if (stage.score_threshold !== undefined) throw badRequest("Can't use score_threshold with an order_by query.");
    const ob = o.order_by as string | { key: string; direction?: 'asc' | 'desc' | null; start_from?: unknown };
    return {
      kind: 'order_by',
      orderBy: typeof ob === 'string' ? { key: ob, direction: 'asc' } : { key: ob.key, direction: ob.direction ?? 'asc', start_from: ob.start_from },
    };
  }
  if ('sample' in o) {
    if (o.sample !== 'random') throw new QdrantError(400, `Format error in JSON body: unknown variant \`${String(o.sample)}\`, expected \`random\``);
    return { kind: 'sample' };
  }
  if ('fusion' in o || 'rrf' in o) {
    if (o.fusion === 'dbsf') return { kind: 'dbsf' };
    if (o.fusion === 'rrf') return { kind: 'rrf', k: DEFAULT_RRF_K };
    if ('fusion' in o) throw new QdrantError(400, `Format error in JSON body: unknown variant \`${String(o.fusion)}\`, expected \`rrf\` or \`dbsf\``);
    const r = (o.rrf ?? {}) as { k?: unknown; weights?: unknown };
    const k = typeof r.k === 'number' && Number.isInteger(r.k) && r.k >= 0 ? r.k : DEFAULT_RRF_K;
    const weights = Array.isArray(r.weights) ? r.weights.map(Number) : undefined;
    return { kind: 'rrf', k, ...(weights ? { weights } : {}) };
  }
  if ('formula' in o) return { kind: 'formula', formula: parseFormula(o) };
  throw badRequest(`Unknown query type \`${Object.keys(o)[0] ?? 'unknown'}\``);
}

function prefetchesOf(stage: Stage): Stage[] {
  if (stage.prefetch === undefined || stage.prefetch === null) return [];
  return (Array.isArray(stage.prefetch) ? stage.prefetch : [stage.prefetch]) as Stage[];
}

/** Every point id the tree references on this collection (Qdrant leaves them all out). */
function excludedIds(stage: Stage, meta: CollectionMeta): ParsedPointId[] {
  const out: ParsedPointId[] = [];
  const visit = (s: Stage, depth: number) => {
    // Bounded by the request's own nesting; the depth guard stops a pathological body.
    if (depth > 64) throw badRequest('Prefetches are nested too deeply');
    const lookup = s.lookup_from as { collection?: string } | undefined | null;
    const elsewhere = lookup !== undefined && lookup !== null && lookup.collection !== meta.name;
    if (s.query !== undefined && s.query !== null && !elsewhere) {
      const vq = parseVectorQuery(s.query);
      if (vq) for (const id of referencedIds(vq)) out.push(parsePointId(id));
    }
    for (const p of prefetchesOf(s)) visit(p, depth + 1);
  };
  visit(stage, 0);
  return out;
}

/** `a AND b` of two Qdrant filters (absent ones drop out). */
function andFilters(a: unknown, b: unknown): unknown {
  if (a === undefined || a === null) return b;
  if (b === undefined || b === null) return a;
  return { must: [a, b] };
}

/** The filter `has_id: candidates` (prefetch results an outer stage rescores). */
const onlyIds = (pids: string[]) => ({ must: [{ has_id: pids.map(wireId) }] });

/** The answer's columns, for the statement that ranks it (vector-query.ts `Run.page`). */
type Page = { withPayload: QdrantQueryRequest['with_payload']; sel: VectorSelection };

async function runStage(ctx: Ctx, stage: Stage, inherited: unknown, take: number, page?: Page): Promise<Ranked[]> {
  const filter = andFilters(inherited, stage.filter);
  const subs = prefetchesOf(stage);
  if (stage.query === undefined || stage.query === null) {
    if (subs.length) throw badRequest("A query is needed to merge the prefetches. Can't have prefetches without defining a query.");
    if (stage.score_threshold !== undefined) {
      throw badRequest("A query is needed to use the score_threshold. Can't have score_threshold without defining a query.");
    }
    const rows = await walk(ctx.sql, ctx.schema, ctx.meta, { filter, limit: take, withPayload: false, sel: NO_VECTORS });
    return rows.map((r) => ({ pid: pidOfRow(r), score: 0 }));
  }
  const parsed = parseQuery(stage.query, stage);
  let lists: Ranked[][] | undefined;
  if (subs.length) {
    lists = [];
    for (const sub of subs) lists.push(await runStage(ctx, sub, filter, clampLimit(sub.limit ?? 10)));
  }
  const candidates = lists ? [...new Set(lists.flat().map((r) => r.pid))] : undefined;
  // In f32, as Qdrant compares: a threshold equal to a printed score leaves that point out.
  const threshold = (rs: Ranked[]) =>
    stage.score_threshold === undefined ? rs : rs.filter((r) => Math.fround(r.score) > Math.fround(stage.score_threshold!));
  switch (parsed.kind) {
    case 'rrf':
    case 'dbsf':
      // Checked after the prefetches ran: Qdrant resolves every referenced point first.
      if ((stage.using ?? '') !== '') throw badRequest("Fusion queries cannot be combined with the 'using' field.");
      if (!lists) throw badRequest('A fusion query needs prefetches to fuse');
      return threshold(parsed.kind === 'rrf' ? rrf(lists, parsed.k, parsed.weights) : dbsf(lists)).slice(0, take);
    case 'formula':
      return formulaRescore(ctx, parsed.formula, lists ?? [], filter, take, stage.score_threshold);
    case 'vector':
      if (candidates && candidates.length === 0) return [];
      return runVectorQuery(ctx, stage, parsed.vq, { filter, take, ...(candidates ? { restrict: candidates.map(parsedOfPid) } : page ? { page } : {}) });
    case 'order_by': {
      if (candidates && candidates.length === 0) return [];
      const f = candidates ? andFilters(filter, onlyIds(candidates)) : filter;
      const rows = await walk(ctx.sql, ctx.schema, ctx.meta, { filter: f, limit: take, withPayload: false, sel: NO_VECTORS, orderBy: parsed.orderBy });
      // A point with several values at the key comes once, at its first (best) value.
      const seen = new Set<string>();
      const out: Ranked[] = [];
      for (const r of rows) {
        const pid = pidOfRow(r);
        if (!seen.has(pid)) out.push({ pid, score: Number(r.order_value ?? 0) });
        seen.add(pid);
      }
      return out;
    }
    case 'sample': {
      if (candidates && candidates.length === 0) return [];
      const f = candidates ? andFilters(filter, onlyIds(candidates)) : filter;
      const { sql, schema, meta } = ctx;
      const rows = await sql<PointRow[]>`
        select id_num, id_uuid from ${tableOf(sql, schema, meta)}
        where ${filterWhere(sql, meta, f)} order by random() limit ${take}`;
      return rows.map((r) => ({ pid: pidOfRow(r), score: 0 }));
    }
  }
}

const NO_VECTORS: VectorSelection = { all: false, names: [] };

/** The ranked page of a query request (before payloads and vectors are read). */
export async function rankQuery(ctx: Ctx, req: QdrantQueryRequest, take: number, page?: Page): Promise<Ranked[]> {
  const excluded = excludedIds(req, ctx.meta);
  const filter = excluded.length ? andFilters(req.filter, { must_not: [{ has_id: excluded.map(pidOf).map(wireId) }] }) : req.filter;
  const root: Stage = { ...req, filter: undefined, limit: undefined };
  return runStage(ctx, root, filter, take, page);
}

/**
 * Ranked points → ScoredPoints with the request's payload and vectors: from the rows the ranking
 * read when it read them all (`Page`), else in one read.
 */
export async function scoredPoints(
  ctx: Ctx,
  ranked: Ranked[],
  withPayload: QdrantQueryRequest['with_payload'],
  sel: VectorSelection,
): Promise<QdrantScoredPoint[]> {
  if (ranked.length === 0) return [];
  const { sql, schema, meta } = ctx;
  if (ranked.every((r) => r.row)) return ranked.map((r) => toScoredPoint(meta, r.row!, r.score, withPayload, sel));
  const rows = await sql<PointRow[]>`
    select ${recordColumns(sql, meta, withPayload, sel)} from ${tableOf(sql, schema, meta)}
    where ${pidIn(sql, [...new Set(ranked.map((r) => r.pid))].map(parsedOfPid))}`;
  const byPid = new Map(rows.map((r) => [pidOfRow(r), r]));
  const points: QdrantScoredPoint[] = [];
  for (const r of ranked) {
    const row = byPid.get(r.pid);
    if (row) points.push(toScoredPoint(meta, row, r.score, withPayload, sel));
  }
  return points;
}

export async function query(
  sql: postgres.Sql,
  schema: string,
  meta: CollectionMeta,
  req: QdrantQueryRequest,
): Promise<{ points: QdrantScoredPoint[] }> {
  const ctx: Ctx = { sql, schema, meta };
  const limit = clampLimit(req.limit ?? 10);
  const isSample = isObject(req.query) && 'sample' in req.query && prefetchesOf(req).length === 0;
  // Qdrant ignores the offset of a random sample (its output is not stable anyway).
  const offset = isSample ? 0 : clampLimit(req.offset ?? 0);
  const sel = vectorSelection(meta, req.with_vector);
  // Without prefetches the ranking statement is the answer's: it reads the page's columns too.
  const page = prefetchesOf(req).length === 0 ? { withPayload: req.with_payload, sel } : undefined;
  const ranked = (await rankQuery(ctx, req, clampLimit(offset + limit), page)).slice(offset, offset + limit);
  return { points: await scoredPoints(ctx, ranked, req.with_payload, sel) };
}

/** A pid back to an id a filter's `has_id` takes (exact: a bigint above 2^53). */
export function wireId(pid: string): number | bigint | string {
  if (!/^[0-9]+$/.test(pid)) return pid;
  return Number(pid) <= Number.MAX_SAFE_INTEGER ? Number(pid) : BigInt(pid);
}
