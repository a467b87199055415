/**
 * Conditions on how many values a key reaches and whether they are empty or null:
 *
 * - `values_count`: per value, `null` counts 0, an array its length, anything else 1; a missing
 *   key counts 0 (so `lt: 1` matches points without the key).
 * - `is_empty: {key}`: every value reached is `null` or `[]` (true when the key is missing;
 *   `[null]` is not empty). `is_null: {key}`: some value reached is exactly `null`; an array
 *   containing null (`[null]`) is not null, a missing key is not null. A FieldCondition may also
 *   carry `is_empty: bool` / `is_null: bool` (Qdrant ≥1.15): per value, an array is "null" when it
 *   contains a null element; a missing key is empty and not null.
 */
import type { Compiler, Fragment, Scope } from './filter-sql.ts';
import type { PathItem } from './key-path.ts';

/** `{is_empty: {key}}`: every value is null or []; vacuously true when the key is missing. */
export function isEmptyCondition(c: Compiler, items: readonly PathItem[], scope: Scope): Fragment {
  const sql = c.sql;
  return sql`not ${c.anyValue(scope, items, (v) => sql`not (jsonb_typeof(${v}) = 'null' or ${v} = '[]'::jsonb)`)}`;
}

/** `{is_null: {key}}`: some value reached is exactly null. */
export function isNullCondition(c: Compiler, items: readonly PathItem[], scope: Scope): Fragment {
  const sql = c.sql;
  return c.anyValue(scope, items, (v) => sql`jsonb_typeof(${v}) = 'null'`);
}

export type CountBounds = { lt?: number; gt?: number; lte?: number; gte?: number };

/** A FieldCondition's `values_count`. */
export function valuesCount(c: Compiler, vc: CountBounds, items: readonly PathItem[], scope: Scope): Fragment {
  const sql = c.sql;
  const count = (v: Fragment) =>
    sql`(case jsonb_typeof(${v}) when 'null' then 0 when 'array' then jsonb_array_length(${v}) else 1 end)`;
  const ok = (n: Fragment) => {
    const ps: Fragment[] = [];
    if (vc.lt !== undefined) ps.push(sql`${n} < ${vc.lt}::bigint`);
    if (vc.gt !== undefined) ps.push(sql`${n} > ${vc.gt}::bigint`);
    if (vc.lte !== undefined) ps.push(sql`${n} <= ${vc.lte}::bigint`);
    if (vc.gte !== undefined) ps.push(sql`${n} >= ${vc.gte}::bigint`);
    return c.join(ps, 'and');
  };
  const zeroOk =
    (vc.lt === undefined || 0 < vc.lt) &&
    (vc.gt === undefined || 0 > vc.gt) &&
    (vc.lte === undefined || 0 <= vc.lte) &&
    (vc.gte === undefined || 0 >= vc.gte);
  const some = c.anyValue(scope, items, (v) => ok(count(v)));
  return zeroOk ? sql`(${some} or ${c.noValues(scope, items)})` : some;
}

/** A FieldCondition's `is_empty: bool` (a missing key is empty). */
export function fieldIsEmpty(c: Compiler, isEmpty: boolean, items: readonly PathItem[], scope: Scope): Fragment {
  const sql = c.sql;
  const some = c.anyValue(scope, items, (v) =>
    isEmpty
      ? sql`(jsonb_typeof(${v}) = 'null' or ${v} = '[]'::jsonb)`
      : sql`not (jsonb_typeof(${v}) = 'null' or ${v} = '[]'::jsonb)`,
  );
  return isEmpty ? sql`(${some} or ${c.noValues(scope, items)})` : some;
}

/** A FieldCondition's `is_null: bool`: per value, an array is "null" when it contains a null (a missing key is not null). */
export function fieldIsNull(c: Compiler, isNull: boolean, items: readonly PathItem[], scope: Scope): Fragment {
  const sql = c.sql;
  const nullish = (v: Fragment) =>
    sql`(jsonb_typeof(${v}) = 'null' or (jsonb_typeof(${v}) = 'array' and ${v} @> '[null]'::jsonb))`;
  const some = c.anyValue(scope, items, (v) => (isNull ? nullish(v) : sql`not ${nullish(v)}`));
  return isNull ? some : sql`(${some} or ${c.noValues(scope, items)})`;
}
