/**
 * Payload indexes and what they can serve (Qdrant's problems/unindexed_field.rs): which index
 * types a filter condition (or a formula's key) needs, and the unindexed-key and size checks of
 * one filter.
 */
import type { CollectionMeta } from '../collections/catalog.ts';
import { conditionCount, leaves, maxConditionSize, type Leaf } from '../filter/filter-walk.ts';
import { strictError, type StrictModeConfig } from './config.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export type Capability =
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
export const SCHEMA_OF: Record<Capability, string> = {
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

export function capabilities(schema: unknown): Set<Capability> {
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
export function conditionNeeds(c: Record<string, unknown>): Capability[] {
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
export function unindexedKey(meta: CollectionMeta, found: Leaf[]): { key: string; schemas: string[] } | null {
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
