/**
 * Qdrant's strict mode (`strict_mode_config`, checked only while `enabled` is true): request
 * limits, unindexed filtering, search parameters, collection size limits and the read / write
 * rate limits (rate-limit.ts). Every check runs before the operation touches data, with Qdrant's
 * wording: limits are 400 `Bad request: <what>. Help: <how>`, rate limits 429.
 *
 * One entry point per kind of request, so operations added later only describe themselves:
 * - reads: `checkRead(db, schema, meta, parts)` here (limit, filters, search params, full scans,
 *   group_by, formula, batch size, timeout, rate cost); read-parts.ts builds the parts of each
 *   read (`queryParts` for a Query API request: recommend, discover, prefetch… included) and its
 *   cost; index-needs.ts says which payload index a filter needs.
 * - writes (writes.ts): `checkWrite(db, schema, meta, write)` for point operations,
 *   `checkIndexCreate` for payload indexes; config.ts: `checkTimeout` for any request with
 *   `?timeout=`, and the configuration itself.
 */
import type { QdrantSearchParams } from '@gatehouse/contracts';
import { vectorParamsOf, type CollectionMeta, type Db } from '../collections/catalog.ts';
import { leaves } from '../filter/filter-walk.ts';
import { activeStrictMode, checkLimit, strictError, type StrictModeConfig } from './config.ts';
import { capabilities, checkFilter, conditionNeeds, SCHEMA_OF, type Capability } from './index-needs.ts';
import type { ReadParts, VectorSearch } from './read-parts.ts';
import { consume } from './rate-limit.ts';

// The one entry point of the store's operations: the read checks below, and the rest re-exported.
export { activeStrictMode, checkTimeout, mergeStrictMode, strictError, type StrictModeConfig } from './config.ts';
export { checkFilter } from './index-needs.ts';
export * from './read-parts.ts';
export * from './writes.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

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
