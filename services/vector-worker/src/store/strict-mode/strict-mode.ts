/**
 * Qdrant's strict mode (`strict_mode_config`, checked only while `enabled` is true): request
 * limits, unindexed filtering, search parameters, collection size limits and the read / write
 * rate limits (rate-limit.ts). Every check runs before the operation touches data, with Qdrant's
 * wording: limits are 400 `Bad request: <what>. Help: <how>`, rate limits 429.
 *
 * One entry point per kind of request, so operations added later only describe themselves:
 * - reads: `checkRead(db, schema, meta, parts)` (limit, filters, search params, full scans,
 *   group_by, formula, batch size, timeout, rate cost); `checkQuery` / `queryParts` build the
 *   parts of a Query API request (recommend, discover, prefetch… included), `readCost` the cost.
 * - writes: `checkWrite(db, schema, meta, write)` for point operations, `checkIndexCreate` for
 *   payload indexes, `checkTimeout` for any request with `?timeout=`.
 */
import type { QdrantBatch, QdrantPointInsertOperations, QdrantPointStruct, QdrantSearchParams, QdrantUpdateOperation } from '@gatehouse/contracts';
import { vectorParamsOf, type CollectionMeta, type Db } from './catalog.ts';
import { QdrantError } from './errors.ts';
import { conditionCount, leaves, maxConditionSize, type Leaf } from './filter-walk.ts';
import { consume } from './rate-limit.ts';
import { filterWhere } from './where.ts';

/** Qdrant's StrictModeConfig (all optional; only `enabled: true` turns the checks on). */
export type StrictModeConfig = {
  enabled?: boolean;
  max_query_limit?: number;
  max_timeout?: number;
  unindexed_filtering_retrieve?: boolean;
  unindexed_filtering_update?: boolean;
  search_max_hnsw_ef?: number;
  search_allow_exact?: boolean;
  search_max_oversampling?: number;
  upsert_max_batchsize?: number;
  search_max_batchsize?: number;
  max_collection_vector_size_bytes?: number;
  max_collection_payload_size_bytes?: number;
  max_points_count?: number;
  read_rate_limit?: number;
  write_rate_limit?: number;
  filter_max_conditions?: number;
  condition_max_size?: number;
  max_payload_index_count?: number;
  multivector_config?: Record<string, { max_vectors?: number | null }>;
  sparse_config?: Record<string, { max_length?: number | null }>;
};

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * PATCH semantics: the diff's keys replace the stored ones, `null` leaves a key as it was (Qdrant
 * cannot unset a limit this way), nested maps (`multivector_config`, `sparse_config`) merge by name.
 */
export function mergeStrictMode(current: unknown, diff: unknown): StrictModeConfig {
  const out: Record<string, unknown> = isObj(current) ? { ...current } : {};
  if (!isObj(diff)) return out as StrictModeConfig;
  for (const [k, v] of Object.entries(diff)) {
    if (v === null || v === undefined) continue;
    if ((k === 'multivector_config' || k === 'sparse_config') && isObj(v)) {
      const merged: Record<string, unknown> = isObj(out[k]) ? { ...(out[k] as object) } : {};
      for (const [name, cfg] of Object.entries(v)) {
        if (isObj(cfg)) merged[name] = { ...(isObj(merged[name]) ? merged[name] : {}), ...dropNulls(cfg) };
      }
      out[k] = merged;
    } else out[k] = v;
  }
  return out as StrictModeConfig;
}

function dropNulls(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined));
}

/** The collection's strict mode when enabled, else null (every check passes). */
export function activeStrictMode(meta: CollectionMeta): StrictModeConfig | null {
  const c = meta.config.strict_mode_config as StrictModeConfig | undefined;
  return c?.enabled === true ? c : null;
}

/** `CollectionError::strict_mode(error, solution)` → 400 `Bad request: <error>. Help: <solution>`. */
export const strictError = (error: string, help: string) => new QdrantError(400, `Bad request: ${error}. Help: ${help}`);

/** Qdrant's `check_limit_opt`. */
export function checkLimit(value: number | undefined, limit: number | undefined, name: string): void {
  if (value === undefined || limit === undefined || limit === null) return;
  if (value > limit) throw strictError(`Limit exceeded ${value} > ${limit} for "${name}"`, `Reduce the "${name}" parameter to or below ${limit}.`);
}

/** `?timeout=` against `max_timeout` (any operation that takes one). */
export function checkTimeout(meta: CollectionMeta, timeout: number | undefined): void {
  const c = activeStrictMode(meta);
  if (c) checkLimit(timeout, c.max_timeout, 'timeout');
}

// ------------------------------------------------------------------------------------------------
// Payload indexes and what they can serve (Qdrant's problems/unindexed_field.rs)

type Capability =
  | 'int_match'
  | 'int_range'
  | 'keyword_match'
  | 'keyword_prefix'
  | 'float_range'
  | 'text'
  | 'text_phrase'
  | 'bool_match'
  | 'uuid_match'
  | 'uuid_range'
  | 'datetime_range'
  | 'geo';

const ALL: Capability[] = [
  'int_match',
  'int_range',
  'keyword_match',
  'keyword_prefix',
  'float_range',
  'text',
  'text_phrase',
  'bool_match',
  'uuid_match',
  'uuid_range',
  'datetime_range',
  'geo',
];

/** The index type named in an error ("keyword", "integer", …) for a capability. */
const SCHEMA_OF: Record<Capability, string> = {
  int_match: 'integer',
  int_range: 'integer',
  keyword_match: 'keyword',
  keyword_prefix: 'keyword',
  float_range: 'float',
  text: 'text',
  text_phrase: 'text',
  bool_match: 'bool',
  uuid_match: 'uuid',
  uuid_range: 'uuid',
  datetime_range: 'datetime',
  geo: 'geo',
};

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

function capabilities(schema: unknown): Set<Capability> {
  const type = typeof schema === 'string' ? schema : isObj(schema) ? schema.type : undefined;
  const p = isObj(schema) ? schema : {};
  switch (type) {
    case 'keyword':
      return new Set<Capability>(p.prefix === true ? ['keyword_match', 'keyword_prefix'] : ['keyword_match']);
    case 'integer': {
      const s = new Set<Capability>();
      if (p.lookup !== false) s.add('int_match');
      if (p.range !== false) s.add('int_range');
      return s;
    }
    case 'uuid':
      return new Set<Capability>(['uuid_match', 'uuid_range']);
    case 'bool':
      return new Set<Capability>(['bool_match']);
    case 'float':
      return new Set<Capability>(['float_range']);
    case 'geo':
      return new Set<Capability>(['geo']);
    case 'text':
      return new Set<Capability>(p.phrase_matching === true ? ['text', 'text_phrase'] : ['text']);
    case 'datetime':
      return new Set<Capability>(['datetime_range']);
    default:
      return new Set();
  }
}

function matchValueNeeds(v: unknown): Capability[] {
  if (typeof v === 'string') return UUID.test(v) ? ['uuid_match', 'keyword_match'] : ['keyword_match'];
  if (typeof v === 'number') return ['int_match'];
  if (typeof v === 'boolean') return ['bool_match'];
  return [];
}

function anyNeeds(list: unknown): Capability[] {
  // An empty any / except is a no-op and needs no index.
  if (!Array.isArray(list) || list.length === 0) return [];
  if (list.every((x) => typeof x === 'number')) return ['int_match'];
  return list.every((x) => typeof x === 'string' && UUID.test(x)) ? ['uuid_match', 'keyword_match'] : ['keyword_match'];
}

function isDatetime(r: Record<string, unknown>): boolean {
  return ['lt', 'gt', 'lte', 'gte'].some((k) => typeof r[k] === 'string');
}

/** Index capabilities any of which can serve this condition (empty: no index needed). */
function conditionNeeds(c: Record<string, unknown>): Capability[] {
  if ('is_empty' in c || 'is_null' in c) return ALL;
  const needs: Capability[] = [];
  const m = c.match;
  if (isObj(m)) {
    if ('value' in m) needs.push(...matchValueNeeds(m.value));
    else if ('text' in m || 'text_any' in m) needs.push('text');
    else if ('phrase' in m) needs.push('text_phrase');
    else if ('prefix' in m) needs.push('keyword_prefix');
    else if ('any' in m) needs.push(...anyNeeds(m.any));
    else if ('except' in m) needs.push(...anyNeeds(m.except));
  }
  if (isObj(c.range)) needs.push(...(isDatetime(c.range) ? (['datetime_range'] as const) : (['float_range', 'int_range'] as const)));
  if (c.geo_bounding_box !== undefined || c.geo_radius !== undefined || c.geo_polygon !== undefined) needs.push('geo');
  if (c.values_count !== undefined) needs.push(...ALL);
  return needs;
}

/** Qdrant's `one_unindexed_key`: the first key whose condition no index of the collection serves. */
function unindexedKey(meta: CollectionMeta, found: Leaf[]): { key: string; schemas: string[] } | null {
  for (const { key, condition } of found) {
    if (key === undefined) continue;
    const needs = conditionNeeds(condition);
    if (needs.length === 0) continue;
    const has = capabilities(meta.payloadIndexes.get(key));
    if (needs.some((n) => has.has(n))) continue;
    return { key, schemas: [...new Set(needs.map((n) => SCHEMA_OF[n]))].sort() };
  }
  return null;
}

/** Unindexed-key and size checks of one filter (`update`: a filtered write, else a read). */
export function checkFilter(meta: CollectionMeta, c: StrictModeConfig, filter: unknown, update: boolean): void {
  if (filter === undefined || filter === null) return;
  const allowUnindexed = update ? c.unindexed_filtering_update : c.unindexed_filtering_retrieve;
  if (allowUnindexed === false) {
    const miss = unindexedKey(meta, leaves(filter));
    if (miss) {
      throw strictError(
        `Index required but not found for "${miss.key}" of one of the following types: [${miss.schemas.join(', ')}]`,
        'Create an index for this key or use a different filter.',
      );
    }
  }
  if (c.filter_max_conditions !== undefined) {
    const n = conditionCount(filter);
    if (n > c.filter_max_conditions) {
      throw strictError(`Filter condition limit reached (${n} > ${c.filter_max_conditions})`, 'Reduce the amount of conditions of your filter.');
    }
  }
  if (c.condition_max_size !== undefined) {
    const n = maxConditionSize(filter);
    if (n > c.condition_max_size) throw strictError(`Condition size limit reached (${n} > ${c.condition_max_size})`, 'Reduce the size of your condition.');
  }
}

// ------------------------------------------------------------------------------------------------
// Reads

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

function checkParams(c: StrictModeConfig, params: QdrantSearchParams | undefined): void {
  if (!params) return;
  const quantization = params.quantization as { oversampling?: number } | undefined;
  checkLimit(quantization?.oversampling ?? undefined, c.search_max_oversampling, 'oversampling');
  checkLimit(params.hnsw_ef ?? undefined, c.search_max_hnsw_ef, 'hnsw_ef');
  if (params.exact === true && c.search_allow_exact === false) throw strictError('Exact search disabled!', 'Set exact=false.');
}

function hnswM(meta: CollectionMeta, using: string): { m: number; payloadM: number } {
  const own = (vectorParamsOf(meta.config)[using]?.hnsw_config ?? {}) as { m?: number; payload_m?: number };
  const coll = meta.config.hnsw_config as { m: number; payload_m?: number };
  const m = own.m ?? coll.m;
  return { m, payloadM: own.payload_m ?? coll.payload_m ?? m };
}

/** Qdrant's `check_fullscan`: with exact search disabled, a vector without HNSW needs a tenant filter. */
function checkFullScan(meta: CollectionMeta, c: StrictModeConfig, s: VectorSearch): void {
  if (c.search_allow_exact !== false) return;
  if (meta.sparse.has(s.using) || !meta.dense.has(s.using)) return; // sparse vectors are always indexed
  const { m, payloadM } = hnswM(meta, s.using);
  if (m > 0) return;
  const label = s.using === '' ? '' : ` on '${s.using}'`;
  const tenant = leaves(s.filter).some((l) => {
    const schema = l.key === undefined ? undefined : meta.payloadIndexes.get(l.key);
    return isObj(schema) && schema.is_tenant === true;
  });
  if (!tenant) {
    throw strictError(
      `Request is forbidden${label} because global vector indexing is disabled (hnsw_config.m = 0)`,
      'Use tenant-specific filter, enable global vector indexing or enable strict mode `search_allow_exact` option',
    );
  }
  if (payloadM === 0) {
    throw strictError(
      `Request is forbidden${label} because vector indexing is disabled (hnsw_config.m = 0 and hnsw_config.payload_m = 0)`,
      'Enable vector indexing, use a prefetch query with indexed vectors or enable strict mode `search_allow_exact` option',
    );
  }
}

/** Qdrant's `check_grouping_field`: group_by needs an index that supports `match`. */
function checkGroupBy(meta: CollectionMeta, c: StrictModeConfig, key: string): void {
  if (c.unindexed_filtering_retrieve !== false) return;
  const schema = meta.payloadIndexes.get(key);
  if (schema === undefined) throw strictError(`Index required but not found for "${key}"`, 'Create an index supporting `match` for this key.');
  const type = typeof schema === 'string' ? schema : (schema as { type: string }).type;
  const caps = capabilities(schema);
  if (!['keyword_match', 'int_match', 'bool_match', 'uuid_match'].some((k) => caps.has(k as Capability))) {
    const kind = type.charAt(0).toUpperCase() + type.slice(1);
    throw strictError(`Index of type "${kind}" found for "${key}"`, 'Create an index supporting `match` for this key.');
  }
}

/** Payload keys a formula expression reads (`"price"`, `{"geo_distance": {"to": "loc"}}`, …). */
function formulaKeys(expr: unknown, out: { key: string; needs: Capability[] }[], depth = 0): void {
  if (depth > 64) return;
  if (typeof expr === 'string') {
    if (!expr.startsWith('$')) out.push({ key: expr, needs: ['int_match', 'int_range', 'float_range'] });
    return;
  }
  if (Array.isArray(expr)) {
    for (const e of expr) formulaKeys(e, out, depth + 1);
    return;
  }
  if (!isObj(expr)) return;
  if (isObj(expr.geo_distance) && typeof expr.geo_distance.to === 'string') {
    out.push({ key: expr.geo_distance.to, needs: ['geo'] });
    return;
  }
  if (typeof expr.datetime_key === 'string') {
    out.push({ key: expr.datetime_key, needs: ['datetime_range'] });
    return;
  }
  if (typeof expr.key === 'string' || 'must' in expr || 'should' in expr || 'must_not' in expr || 'has_id' in expr || 'nested' in expr) {
    // A condition inside a formula: checked like a filter condition.
    for (const l of leaves({ must: [expr] })) {
      if (l.key !== undefined) out.push({ key: l.key, needs: conditionNeeds(l.condition) });
    }
    return;
  }
  for (const [k, v] of Object.entries(expr)) if (k !== 'datetime') formulaKeys(v, out, depth + 1);
}

function checkFormula(meta: CollectionMeta, c: StrictModeConfig, formula: unknown): void {
  if (c.unindexed_filtering_retrieve !== false) return;
  const keys: { key: string; needs: Capability[] }[] = [];
  formulaKeys(formula, keys);
  for (const { key, needs } of keys) {
    if (needs.length === 0) continue;
    const has = capabilities(meta.payloadIndexes.get(key));
    if (needs.some((n) => has.has(n))) continue;
    const schemas = [...new Set(needs.map((n) => SCHEMA_OF[n]))].sort();
    throw strictError(
      `Index required but not found for "${key}" of one of the following types: [${schemas.join(', ')}]`,
      'Create an index for this key or use a different formula expression.',
    );
  }
}

function checkReadParts(meta: CollectionMeta, c: StrictModeConfig, parts: ReadParts): void {
  checkLimit(parts.timeout, c.max_timeout, 'timeout');
  for (const f of parts.formulas ?? []) checkFormula(meta, c, f);
  if (parts.groupBy !== undefined) checkGroupBy(meta, c, parts.groupBy);
  for (const s of parts.searches ?? []) checkFullScan(meta, c, s);
  checkLimit(parts.limit, c.max_query_limit, 'limit');
  for (const f of parts.filters ?? []) checkFilter(meta, c, f, false);
  if (parts.exact === true && c.search_allow_exact === false) throw strictError('Exact search disabled!', 'Set exact=false.');
  for (const p of parts.params ?? []) checkParams(c, p);
}

/**
 * Every strict-mode check of a read (a list: a batch, whose size is checked and whose costs add
 * up), then its rate cost. Call it with the collection loaded and before any data is read; it
 * throws Qdrant's error or returns.
 */
export async function checkRead(
  db: Db,
  schema: string,
  meta: CollectionMeta,
  parts: ReadParts | ReadParts[],
  timeout?: number,
): Promise<void> {
  const c = activeStrictMode(meta);
  if (!c) return;
  checkLimit(timeout, c.max_timeout, 'timeout');
  const list = Array.isArray(parts) ? parts : [parts];
  if (Array.isArray(parts)) checkLimit(parts.length, c.search_max_batchsize, 'search batch size');
  for (const p of list) checkReadParts(meta, c, p);
  if (c.read_rate_limit === undefined) return;
  const cost = list.reduce((sum, p) => sum + Math.max(1, p.cost ?? 1), 0);
  await consume(db, schema, meta, 'read', c.read_rate_limit, cost);
}

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

// ------------------------------------------------------------------------------------------------
// Writes

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
