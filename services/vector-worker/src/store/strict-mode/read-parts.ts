/**
 * How each read describes itself to strict mode (`ReadParts`: limit, filters, search params,
 * vector searches, group_by, formulas) and its read rate cost.
 */
import type { QdrantSearchParams } from '@gatehouse/contracts';
import { conditionCount } from '../filter/filter-walk.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One nearest-neighbour search inside a request, for the full-scan check. */
export type VectorSearch = { using: string; filter?: unknown };

/** What strict mode needs to know about a read. Absent parts are not checked. */
export type ReadParts = {
  /** Points the request may return (`limit`, `limit × group_size` for groups). */
  limit?: number;
  /** Every filter the request applies (its own and its prefetches'). */
  filters?: unknown[];
  /** Search parameters (hnsw_ef, exact, quantization.oversampling) of the request and prefetches. */
  params?: (QdrantSearchParams | undefined)[];
  /** `exact` of a count (Qdrant refuses an exact count when exact search is disabled). */
  exact?: boolean;
  /** Vector searches that would run without a rescoring step above them. */
  searches?: VectorSearch[];
  /** `group_by` key of a groups request. */
  groupBy?: string;
  /** Formula expressions (`query.formula`) of the request and its prefetches. */
  formulas?: unknown[];
  /** Requests in a batch. */
  batch?: number;
  timeout?: number;
  /** Read rate cost (readCost); absent means 1. */
  cost?: number;
};

/** `POST …/points/scroll` (cost: 1 + filter conditions). */
export function scrollParts(req: { limit?: number; filter?: unknown }): ReadParts {
  return { limit: req.limit, filters: [req.filter], cost: 1 + conditionCount(req.filter) };
}

/** `POST …/points/count` (an exact count is refused when exact search is disabled). */
export function countParts(req: { filter?: unknown; exact?: boolean }): ReadParts {
  return { filters: [req.filter], exact: req.exact, cost: 1 + conditionCount(req.filter) };
}

/** The deprecated `POST …/points/search`. */
export function searchParts(req: { limit: number; filter?: unknown; params?: QdrantSearchParams }): ReadParts {
  return { limit: req.limit, filters: [req.filter], params: [req.params], cost: 1 + conditionCount(req.filter) };
}

/** A Query API request (`query`, `recommend`, `discover`, prefetch, formula…), limit 10 by default. */
export function queryRequestParts(req: object, lookup?: (id: unknown, using: string) => number): ReadParts {
  const r = req as Record<string, unknown>;
  return { limit: typeof r.limit === 'number' ? r.limit : 10, ...queryParts(r), cost: queryCost(r, lookup) };
}

/** `POST …/facet` (the body as sent: only a `limit` given is checked, as in Qdrant). */
export function facetParts(body: unknown): ReadParts {
  const b = isObj(body) ? body : {};
  return {
    limit: typeof b.limit === 'number' ? b.limit : undefined,
    filters: [b.filter],
    exact: b.exact === true,
    cost: 1 + conditionCount(b.filter),
  };
}

/** `POST …/points/search/matrix/{pairs,offsets}` (as sent): the limit counted is `sample × limit`. */
export function matrixParts(body: unknown): ReadParts {
  const b = isObj(body) ? body : {};
  const sample = typeof b.sample === 'number' ? b.sample : undefined;
  const limit = typeof b.limit === 'number' ? b.limit : undefined;
  const counted = sample !== undefined && limit !== undefined ? sample * limit : (sample ?? limit);
  return { limit: counted, filters: [b.filter], cost: (sample ?? 10) + conditionCount(b.filter) };
}

/** `POST …/points/query/groups`: the limit counted is `limit × group_size` (default 10 × 3). */
export function groupsRequestParts(req: object, lookup?: (id: unknown, using: string) => number): ReadParts {
  const r = req as Record<string, unknown>;
  const limit = (typeof r.limit === 'number' ? r.limit : 10) * (typeof r.group_size === 'number' ? r.group_size : 3);
  return { ...queryRequestParts(req, lookup), limit, groupBy: typeof r.group_by === 'string' ? r.group_by : undefined };
}

// ------------------------------------------------------------------------------------------------
// Read costs (Qdrant's operation_rate_cost): 1 per similarity comparison a query makes against a
// point (a multivector counts its vectors), 1 per filter condition, 1 per point id looked up.

/** Similarity comparisons of one query vector: its sub-vectors for a multivector, else 1. */
function vectorCost(v: unknown): number {
  return Array.isArray(v) && Array.isArray(v[0]) ? v.length : 1;
}

const isPointId = (v: unknown) => typeof v === 'number' || typeof v === 'string';

/**
 * Cost of one Query API request (recursing into prefetches). `lookup` gives the number of
 * sub-vectors of a point's vector (for queries by id), when the caller knows it; else 1.
 */
export function queryCost(req: Record<string, unknown>, lookup?: (id: unknown, using: string) => number, depth = 0): number {
  if (depth > 16) return 0;
  const using = typeof req.using === 'string' ? req.using : '';
  let cost = 0;
  for (const p of asArray(req.prefetch)) if (isObj(p)) cost += queryCost(p, lookup, depth + 1);
  cost += conditionCount(req.filter);
  const q = req.query;
  const inputs: unknown[] = [];
  if (q === undefined || q === null) {
    if (asArray(req.prefetch).length === 0) cost += 1; // a scroll
    return cost;
  }
  if (isObj(q) && !('indices' in q)) {
    if ('nearest' in q) inputs.push(q.nearest);
    else if (isObj(q.recommend)) inputs.push(...asArray(q.recommend.positive), ...asArray(q.recommend.negative));
    else if (isObj(q.discover)) {
      inputs.push(q.discover.target);
      for (const pair of asArray(q.discover.context)) if (isObj(pair)) inputs.push(pair.positive, pair.negative);
    } else if ('context' in q) for (const pair of asArray(q.context)) if (isObj(pair)) inputs.push(pair.positive, pair.negative);
    else if (isObj(q.relevance_feedback)) inputs.push(q.relevance_feedback.target);
    else return cost + 1; // fusion, order_by, formula, sample: no vector comparisons
  } else inputs.push(q);
  const ids = inputs.filter(isPointId);
  for (const v of inputs) cost += isPointId(v) ? (lookup ? lookup(v, using) : 1) : vectorCost(v);
  // Looking the ids up costs one each, and excluding them from the result is one more condition.
  if (ids.length > 0) cost += ids.length + 1;
  return cost;
}

function asArray(v: unknown): unknown[] {
  return v === undefined || v === null ? [] : Array.isArray(v) ? v : [v];
}

/** The strict-mode parts of one Query API request (and its prefetches). */
export function queryParts(req: Record<string, unknown>, depth = 0): Required<Pick<ReadParts, 'filters' | 'params' | 'searches' | 'formulas'>> {
  const out = { filters: [] as unknown[], params: [] as (QdrantSearchParams | undefined)[], searches: [] as VectorSearch[], formulas: [] as unknown[] };
  if (depth > 16) return out;
  const prefetches = asArray(req.prefetch).filter(isObj);
  if (req.filter !== undefined) out.filters.push(req.filter);
  out.params.push(req.params as QdrantSearchParams | undefined);
  const q = req.query;
  const vectorQuery =
    q !== undefined && q !== null && !(isObj(q) && ['fusion', 'rrf', 'order_by', 'formula', 'sample'].some((k) => k in q));
  // A vector query over prefetched candidates only rescores them: no full scan (Qdrant's rule).
  if (vectorQuery && (prefetches.length === 0 || depth > 0)) {
    out.searches.push({ using: typeof req.using === 'string' ? req.using : '', filter: req.filter });
  }
  if (isObj(q) && 'formula' in q) out.formulas.push(q.formula);
  for (const p of prefetches) {
    const inner = queryParts(p, depth + 1);
    out.filters.push(...inner.filters);
    out.params.push(...inner.params);
    out.searches.push(...inner.searches);
    out.formulas.push(...inner.formulas);
  }
  return out;
}
