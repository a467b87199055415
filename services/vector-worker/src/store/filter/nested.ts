/**
 * `nested: {key, filter}`: `key` gets `[]` appended (unless it ends with `[]`); true when SOME
 * object element satisfies the whole inner filter on its own (Qdrant's semantics; a `must` of two
 * conditions cannot be satisfied by two different elements). Inner keys are relative to the
 * element. Inside `nested`, `has_id` and `has_vector` are false (Qdrant does not support them
 * there; a vector name is still validated).
 */
import type { Compiler, Fragment, Scope } from './filter-sql.ts';
import { strictJsonPath } from './key-path.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function nestedCondition(c: Compiler, n: unknown, path: string, scope: Scope): Fragment {
  const sql = c.sql;
  if (!isObj(n)) throw c.bad(path, 'invalid type: expected an object with `key` and `filter`');
  if (!('key' in n)) throw c.bad(path, 'missing field `key`');
  if (!('filter' in n)) throw c.bad(path, 'missing field `filter`');
  const items = c.keyPath(n.key, `${path}.key`);
  const arrayItems = items[items.length - 1] !== undefined && 'wildcard' in items[items.length - 1]! ? items : [...items, { wildcard: true as const }];
  const a = c.alias('n');
  const elem = sql`${sql(a)}.o`;
  const inner = c.filter(n.filter, `${path}.filter`, { doc: elem, nested: true, depth: scope.depth + 1 });
  return sql`exists (select 1 from jsonb_path_query(${scope.doc}, ${strictJsonPath(arrayItems)}::text::jsonpath, '{}'::jsonb, true) as ${sql(a)}(o) where jsonb_typeof(${elem}) = 'object' and ${inner})`;
}
