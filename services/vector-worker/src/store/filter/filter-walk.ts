/**
 * Read-only walks over a Qdrant filter (the JSON as sent) for strict mode and rate costs: leaf
 * conditions with their full key (nested keys prefixed `outer[].`), condition counts and sizes.
 * They never throw on a malformed filter: compiling it (filter-sql.ts) reports that.
 */

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const asList = (v: unknown): unknown[] => (v === undefined || v === null ? [] : Array.isArray(v) ? v : [v]);

/** A leaf condition and the key it targets (`undefined` for has_id / has_vector). */
export type Leaf = { key?: string; condition: Record<string, unknown> };

/** Filters nest at most this deep; deeper input is not walked (and is refused when compiled). */
const MAX_DEPTH = 64;

function conditionsOf(filter: Record<string, unknown>): unknown[] {
  const ms = filter.min_should;
  return [
    ...asList(filter.must),
    ...asList(filter.should),
    ...asList(filter.must_not),
    ...(isObj(ms) ? asList(ms.conditions) : []),
  ];
}

/** Every leaf condition of `filter`, nested ones keyed by their full path. */
export function leaves(filter: unknown, prefix = '', depth = 0): Leaf[] {
  if (!isObj(filter) || depth > MAX_DEPTH) return [];
  const out: Leaf[] = [];
  for (const c of conditionsOf(filter)) {
    if (!isObj(c)) continue;
    if ('must' in c || 'should' in c || 'must_not' in c || 'min_should' in c) {
      out.push(...leaves(c, prefix, depth + 1));
    } else if (isObj(c.nested) && typeof c.nested.key === 'string') {
      out.push(...leaves(c.nested.filter, `${prefix}${c.nested.key}[].`, depth + 1));
    } else if (isObj(c.is_empty) && typeof c.is_empty.key === 'string') {
      out.push({ key: prefix + c.is_empty.key, condition: c });
    } else if (isObj(c.is_null) && typeof c.is_null.key === 'string') {
      out.push({ key: prefix + c.is_null.key, condition: c });
    } else if (typeof c.key === 'string') {
      out.push({ key: prefix + c.key, condition: c });
    } else {
      out.push({ condition: c });
    }
  }
  return out;
}

/** Qdrant's `Filter::total_conditions_count`: leaf conditions, nested filters counted through. */
export function conditionCount(filter: unknown): number {
  return leaves(filter).length;
}

/** Qdrant's `max_condition_input_size`: the largest list a single condition carries. */
export function maxConditionSize(filter: unknown): number {
  let max = 0;
  for (const { condition: c } of leaves(filter)) {
    let size = 1;
    const m = c.match;
    if (isObj(m)) {
      if (Array.isArray(m.any)) size = m.any.length;
      else if (Array.isArray(m.except)) size = m.except.length;
    }
    if (Array.isArray(c.has_id)) size = c.has_id.length;
    const poly = c.geo_polygon;
    if (isObj(poly) && isObj(poly.exterior) && Array.isArray(poly.exterior.points)) size = poly.exterior.points.length;
    max = Math.max(max, size);
  }
  return max;
}
