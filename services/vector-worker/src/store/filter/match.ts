/**
 * `match` conditions, as Qdrant's checker has them:
 *
 * - `match.value` / `match.any` on keys without `[n]`: `payload @> {"a":{"b":v}} or payload @>
 *   {"a":{"b":[v]}}` — exactly Qdrant's semantics, and usable by the `jsonb_path_ops` GIN index.
 *   (Difference: jsonb compares numbers numerically, so stored `1.0` matches `value: 1`; Qdrant
 *   compares `as_i64()` and would not.)
 * - `match.any: []` matches nothing (Qdrant's test_match_any_empty.py); `must_not` of it matches all.
 * - `match.except`: true when some value/element is not null and not in the list; a value of the
 *   other type (number vs string list, bool, object, nested array) counts as "not in the list".
 *   A missing key, `null` or `[]` → false (Qdrant: `check_empty` is false, `(Null, _) => false`).
 * - `match.text` without a text index: case-sensitive substring (`""` matches any string). With
 *   a text index (`ctx.textIndex(key)`): the tokens of one string, made as the index's parameters
 *   say (`textTokenizing`, text-index.ts: tokenizer, lowercase, ascii folding, length limits, stop words,
 *   Snowball stemming), must include every query token made the same way; a query with no tokens
 *   matches nothing. `text_any`: no index → any whitespace-separated query word is a substring;
 *   index → any token shared. `phrase`: no index → substring; index → the query tokens appear
 *   consecutively. With the `prefix` tokenizer a query token matches the tokens it begins.
 * - `match.prefix`: a string value starting with it.
 */
import { stringifyExactJson } from '@gatehouse/common';
import type { Compiler, Fragment, Scope } from './filter-sql.ts';
import type { PathItem } from './key-path.ts';
import { textTokenizing } from './text-index.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
// biome-ignore lint/correctness/noPrecisionLoss: Qdrant's i64 bound as a JSON client sends it; the double it rounds to is what we compare with.
const I64_MAX = 9223372036854775807;

/** An i64 as parsed: a safe-range number, or a `bigint` (an integer literal beyond 2^53). */
function isI64(x: unknown): x is number | bigint {
  if (typeof x === 'bigint') return x >= -9223372036854775808n && x <= 9223372036854775807n;
  return typeof x === 'number' && Number.isInteger(x) && Math.abs(x) <= I64_MAX;
}
/** Above this many `any` values, compile to one list parameter instead of per-value containment. */
const CONTAINMENT_ANY_MAX = 64;

export function matchCondition(c: Compiler, m: unknown, path: string, rawKey: string, items: readonly PathItem[], scope: Scope): Fragment {
  const sql = c.sql;
  const untagged = () => c.bad(path, 'data did not match any variant of untagged enum Match');
  if (!isObj(m)) throw untagged();
  const containable = items.every((it) => !('index' in it));

  if ('value' in m) {
    const v = m.value;
    const ok =
      typeof v === 'string' ||
      typeof v === 'boolean' ||
      isI64(v);
    if (!ok) throw untagged();
    if (containable) return containsAny(c, scope, items, [v]);
    return c.anyElement(scope, items, (e) => sql`${e} = ${stringifyExactJson(v)}::text::jsonb`);
  }
  const str = (k: string): string => {
    const t = m[k];
    if (typeof t !== 'string') throw untagged();
    return t;
  };
  const indexed = c.ctx.textIndexed?.(rawKey) ?? false;
  const asText = (e: Fragment) => sql`(${e} #>> '{}')`;
  const onStrings = (pred: (s: Fragment) => Fragment) =>
    c.anyElement(scope, items, (e) => sql`(case when jsonb_typeof(${e}) = 'string' then ${pred(asText(e))} else false end)`);
  const tp = textTokenizing(c.ctx.textIndex?.(rawKey));
  // ascii_folding: accents dropped (NFD, then the combining marks removed), a few letters without a decomposition mapped.
  const fold = (x: Fragment) =>
    tp.fold ? sql`translate(regexp_replace(normalize(${x}, NFD), ${'[\u0300-\u036f]'}::text, '', 'g'), ${'øØđĐłŁ'}::text, ${'oOdDlL'}::text)` : x;
  // Tokens as the key's text index makes them: split, lower-cased, cut to the length limits, stop words dropped.
  const tokens = (s: Fragment) =>
    sql`(select coalesce(array_agg(${tp.stem ? sql`coalesce((ts_lexize(${tp.stem}::text::regdictionary, t))[1], t)` : sql`t`}), '{}') from unnest(regexp_split_to_array(${fold(tp.lowercase ? sql`lower(${s})` : s)}, ${tp.split}::text)) as tk(t)
      where t <> '' and char_length(t) between ${tp.min}::int and ${tp.max}::int and not (t = any(${tp.stopwords}::text[]))${tp.stopDictionaries.reduce((acc, d) => sql`${acc} and ts_lexize(${d}::text::regdictionary, t) <> '{}'::text[]`, sql``)})`;
  // With the prefix tokenizer a query token matches any token it begins.
  const hasToken = (doc: Fragment, q: Fragment) =>
    tp.prefix ? sql`exists (select 1 from unnest(${doc}) as dt(t) where starts_with(dt.t, ${q}))` : sql`${q} = any(${doc})`;

  if ('prefix' in m) {
    // Qdrant ≥1.19 `match: {prefix}`: a string value that starts with it ("" matches any string).
    const t = str('prefix');
    return onStrings((s) => sql`starts_with(${s}, ${t}::text)`);
  }
  if ('text' in m || 'phrase' in m) {
    const isPhrase = !('text' in m);
    const t = str(isPhrase ? 'phrase' : 'text');
    if (!indexed) return onStrings((s) => sql`(strpos(${s}, ${t}::text) > 0)`);
    const q = tokens(sql`${t}::text`);
    if (!isPhrase) {
      if (tp.prefix) return onStrings((s) => sql`(cardinality(${q}) > 0 and not exists (select 1 from unnest(${q}) as qt(t) where not ${hasToken(tokens(s), sql`qt.t`)}))`);
      return onStrings((s) => sql`(cardinality(${q}) > 0 and ${tokens(s)} @> ${q})`);
    }
    return onStrings(
      (s) =>
        sql`(cardinality(${q}) > 0 and strpos(' ' || array_to_string(${tokens(s)}, ' ') || ' ', ' ' || array_to_string(${q}, ' ') || ' ') > 0)`,
    );
  }
  if ('text_any' in m) {
    const t = str('text_any');
    if (!indexed) {
      const words = t.split(/\s+/u).filter((w) => w.length > 0);
      if (words.length === 0) return sql`false`;
      return onStrings((s) => sql`exists (select 1 from unnest(${words}::text[]) as w(t) where strpos(${s}, w.t) > 0)`);
    }
    const q = tokens(sql`${t}::text`);
    if (tp.prefix) return onStrings((s) => sql`exists (select 1 from unnest(${q}) as qt(t) where ${hasToken(tokens(s), sql`qt.t`)})`);
    return onStrings((s) => sql`(${tokens(s)} && ${q})`);
  }
  if ('any' in m || 'except' in m) {
    const isExcept = !('any' in m);
    const list = m[isExcept ? 'except' : 'any'];
    if (!Array.isArray(list)) throw untagged();
    const allStrings = list.every((x) => typeof x === 'string');
    const allInts = list.every(isI64);
    if (!allStrings && !allInts) throw untagged();
    const json = stringifyExactJson(list);
    if (!isExcept) {
      if (list.length === 0) return sql`false`;
      if (containable && list.length <= CONTAINMENT_ANY_MAX) return containsAny(c, scope, items, list);
      return c.anyElement(scope, items, (e) => sql`(${json}::text::jsonb @> jsonb_build_array(${e}))`);
    }
    // `[]` deserializes as a string list in Qdrant (AnyVariants::Strings)
    const listType = allStrings ? 'string' : 'number';
    return c.anyElement(
      scope,
      items,
      (e) =>
        sql`(case jsonb_typeof(${e}) when 'null' then false when ${listType}::text then not (${json}::text::jsonb @> jsonb_build_array(${e})) else true end)`,
    );
  }
  throw untagged();
}

/** Index-friendly `@>` for "some value (or element of an array value) equals one of `values`". */
function containsAny(c: Compiler, scope: Scope, items: readonly PathItem[], values: readonly unknown[]): Fragment {
  const sql = c.sql;
  const wrap = (leaf: unknown): unknown => {
    let acc = leaf;
    for (let i = items.length - 1; i >= 1; i--) {
      const it = items[i]!;
      acc = 'key' in it ? { [it.key]: acc } : [acc];
    }
    const first = items[0]!;
    return { [(first as { key: string }).key]: acc };
  };
  const parts: Fragment[] = [];
  for (const v of values) {
    parts.push(sql`${scope.doc} @> ${stringifyExactJson(wrap(v))}::text::jsonb`);
    parts.push(sql`${scope.doc} @> ${stringifyExactJson(wrap([v]))}::text::jsonb`);
  }
  return c.join(parts, 'or');
}
