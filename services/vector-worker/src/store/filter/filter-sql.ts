/**
 * Qdrant `Filter` → a boolean SQL expression over one point table (LAYOUT.md): `payload jsonb`,
 * `id_num`, `id_uuid` and the vector columns. The result is a postgres.js fragment to splice into
 * `where ${…}`; it is never NULL, so it can be negated and combined freely.
 *
 * Semantics follow Qdrant's own checker (`lib/segment/src/payload_storage/query_checker.rs`,
 * `condition_checker.rs`, `json_path/`), not only filtering.md:
 *
 * Keys. Qdrant's JSON path grammar: `a.b`, `"quoted key".c` (quotes allow `.`, spaces, `[`…; a key
 * containing `"` or `\` cannot be written), `arr[]` (every element), `arr[3]` (one element).
 * Traversal is strict: `.key` reads only objects, `[]`/`[n]` only arrays, so `a.b` does NOT look
 * inside an array `a` (write `a[].b`). The values reached are then checked with "any value, and
 * if a value is an array, any of its elements" (one level: `[["x"]]` does not match "x").
 * Postgres lax-mode JSONPath does not give this (it unwraps arrays at every step and wraps scalars
 * for `[*]`), so keys compile to a strict-mode JSONPath whose every step is guarded
 * (`strict $ ? (@.type() == "object" && exists(@."k"))."k" ? (@.type() == "array")[*] …`), with
 * each key as a quoted JSONPath string literal; the JSONPath text is a bind parameter and user
 * values are never put into SQL or JSONPath text (they are bind parameters or JSONPath variables).
 * An invalid key is a 400 `Format error in JSON body: Invalid json path: '<key>'`.
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
 *   say (`textTokenizing` below: tokenizer, lowercase, ascii folding, length limits, stop words,
 *   Snowball stemming), must include every query token made the same way; a query with no tokens
 *   matches nothing. `text_any`: no index → any whitespace-separated query word is a substring;
 *   index → any token shared. `phrase`: no index → substring; index → the query tokens appear
 *   consecutively. With the `prefix` tokenizer a query token matches the tokens it begins.
 * - `match.prefix`: a string value starting with it. `slice`: see `slice()` below.
 * - `range` with number bounds compares numbers only (numeric, exact). If every given bound is a
 *   string it is a datetime range: bounds and stored strings are parsed like Qdrant's
 *   `DateTimeWrapper` (RFC 3339 with `T`/`t`/space, `Z` or ±hh[:mm] offsets, or naive
 *   `YYYY-MM-DD[ HH:MM[:SS[.f]]]` taken as UTC); stored strings that do not parse never match;
 *   a bound that does not parse is a 400. Mixed number/string bounds are a 400.
 * - `values_count`: per value, `null` counts 0, an array its length, anything else 1; a missing
 *   key counts 0 (so `lt: 1` matches points without the key).
 * - `is_empty: {key}`: every value reached is `null` or `[]` (true when the key is missing;
 *   `[null]` is not empty). `is_null: {key}`: some value reached is exactly `null`; an array
 *   containing null (`[null]`) is not null, a missing key is not null. A FieldCondition may also
 *   carry `is_empty: bool` / `is_null: bool` (Qdrant ≥1.15): per value, an array is "null" when it
 *   contains a null element; a missing key is empty and not null.
 * - Several sub-conditions in one FieldCondition (`match` + `range`…) are OR-ed, as in Qdrant;
 *   `values_count`, then `is_empty`, then `is_null` take precedence over the rest when present.
 * - `has_id`: ids parsed by ids.ts (400 on a bad id); mixed numeric/UUID lists work; `[]` → false.
 * - `has_vector: name`: the vector column is not null; unknown name → 400
 *   `Wrong input: Not existing vector name error: <name>`. `""` is the unnamed vector.
 * - `nested: {key, filter}`: `key` gets `[]` appended (unless it ends with `[]`); true when SOME
 *   object element satisfies the whole inner filter on its own (Qdrant's semantics; a `must` of two
 *   conditions cannot be satisfied by two different elements). Inner keys are relative to the
 *   element. Inside `nested`, `has_id` and `has_vector` are false (Qdrant does not support them
 *   there; a vector name is still validated).
 * - `should: []` and `min_should` with no conditions are true (Qdrant's index-based path drops them);
 *   `min_should` counts satisfied conditions (`min_count: 0` → true). `must: []`, `must_not: []` → true.
 * - `geo_radius` (haversine, mean Earth radius 6371008.8 m, `distance < radius`) and
 *   `geo_bounding_box` (strict inequalities, antimeridian crossing when top_left.lon >
 *   bottom_right.lon) and `geo_polygon` (planar even-odd test on lon/lat like geo's
 *   `Polygon::contains`, holes from `interiors`; rings need ≥4 points and must be closed, else 400;
 *   a point exactly on an edge may differ from Qdrant, which excludes the boundary) on
 *   `{lon, lat}` objects.
 * - A FieldCondition with only `key` → 422 `Validation error in JSON body: [<path>: At least one
 *   field condition must be specified]` (all such conditions are reported together, after any 400).
 *   Wrong shapes/types are 400 `Format error in JSON body: <path>: <what>`.
 */
import type postgres from 'postgres';
import { QdrantError, formatError, validationError, wrongInput } from './errors.ts';
import { idIn, parsePointId, type ParsedPointId } from './ids.ts';
import { stringifyExactJson } from '@gatehouse/common';

export type Fragment = postgres.PendingQuery<postgres.Row[]>;

export interface FilterContext {
  /** Vector name → column, e.g. `{ "": "v0" }` or `{ image: "v0", text: "v1" }`. */
  vectorColumns: Record<string, string>;
  /** Sparse vector names: `has_vector` on one checks the row's `sparse` map (LAYOUT.md). */
  sparseVectors?: readonly string[];
  /** True when the payload key has a full-text index (changes `text`/`text_any`/`phrase`). */
  textIndexed?: (key: string) => boolean;
  /** The key's text index parameters (`tokenizer`, `lowercase`, token lengths, `stopwords`), if it has one. */
  textIndex?: (key: string) => Record<string, unknown> | undefined;
  /** Table alias to qualify `payload`, `id_num`, `id_uuid` and vector columns with. */
  alias?: string;
  /** Where the filter sits in the request body, for error messages (default `filter`). */
  path?: string;
}

// ---------------------------------------------------------------------------------------------
// Key paths (Qdrant's json_path grammar)

export type PathItem = { key: string } | { index: number } | { wildcard: true };

const RAW_CHAR = /[\p{Alphabetic}\p{N}_-]/u;

/** Parse a Qdrant payload key (`a.b[].c`, `"x.y"[0]`); null when it is not a valid path. */
export function parseKeyPath(key: string): PathItem[] | null {
  const items: PathItem[] = [];
  const chars = [...key];
  let i = 0;
  const readKey = (): string | null => {
    if (chars[i] === '"') {
      let j = i + 1;
      let out = '';
      while (j < chars.length && chars[j] !== '"') {
        if (chars[j] === '\\') return null;
        out += chars[j];
        j++;
      }
      if (j >= chars.length) return null;
      i = j + 1;
      return out;
    }
    let out = '';
    while (i < chars.length && RAW_CHAR.test(chars[i]!)) out += chars[i++];
    return out.length > 0 ? out : null;
  };
  const first = readKey();
  if (first === null) return null;
  items.push({ key: first });
  while (i < chars.length) {
    const c = chars[i];
    if (c === '.') {
      i++;
      const k = readKey();
      if (k === null) return null;
      items.push({ key: k });
    } else if (c === '[') {
      if (chars[i + 1] === ']') {
        items.push({ wildcard: true });
        i += 2;
        continue;
      }
      let j = i + 1;
      let digits = '';
      while (j < chars.length && /[0-9]/.test(chars[j]!)) digits += chars[j++];
      if (digits === '' || chars[j] !== ']') return null;
      const n = Number(digits);
      if (!Number.isSafeInteger(n)) return null;
      items.push({ index: n });
      i = j + 1;
    } else {
      return null;
    }
  }
  return items;
}

function jsonPathString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (cp < 0x20 || cp === 0x7f) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Strict-mode JSONPath reaching exactly the values Qdrant's `value_get` reaches. */
export function strictJsonPath(items: readonly PathItem[]): string {
  let p = 'strict $';
  for (const it of items) {
    if ('key' in it) {
      const k = jsonPathString(it.key);
      p += ` ? (@.type() == "object" && exists(@.${k})).${k}`;
    } else if ('index' in it) {
      p += ` ? (@.type() == "array" && @.size() > ${it.index})[${it.index}]`;
    } else {
      p += ' ? (@.type() == "array")[*]';
    }
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// Datetimes (Qdrant's DateTimeWrapper::from_str)

/** Groups: 1 date, 2 HH:MM, 3 :SS, 4 .fraction, 5 offset. */
const DT_RE_SRC = '^(\\d{4}-\\d{2}-\\d{2})(?:[Tt ](\\d{2}:\\d{2})(?:(:\\d{2})(\\.\\d+)?([Zz]|[+-]\\d{2}(?::?\\d{2})?)?)?)?$';
const DT_RE = new RegExp(DT_RE_SRC);

/** Normalise a datetime string to `YYYY-MM-DDTHH:MM:SS[.ffffff]+HH:MM`, or null if invalid. */
export function normalizeDatetime(s: string): string | null {
  const m = DT_RE.exec(s);
  if (!m) return null;
  const [, date, hm, sec, frac, tz] = m;
  const [y, mo, d] = date!.split('-').map(Number) as [number, number, number];
  const [h, mi] = (hm ?? '00:00').split(':').map(Number) as [number, number];
  const se = sec ? Number(sec.slice(1)) : 0;
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || se > 59) return null;
  const dim = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (d > dim || y < 1) return null;
  let off = '+00:00';
  if (tz && tz !== 'Z' && tz !== 'z') {
    const digits = tz.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = digits.length > 2 ? Number(digits.slice(2)) : 0;
    if (oh > 23 || om > 59) return null;
    off = `${tz[0]}${digits.slice(0, 2)}:${digits.length > 2 ? digits.slice(2) : '00'}`;
  }
  return `${date}T${hm ?? '00:00'}${sec ?? ':00'}${frac ? frac.slice(0, 7) : ''}${off}`;
}

// ---------------------------------------------------------------------------------------------
// Compiler

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const I64_MAX = 9223372036854775807;

/** An i64 as parsed: a safe-range number, or a `bigint` (an integer literal beyond 2^53). */
function isI64(x: unknown): x is number | bigint {
  if (typeof x === 'bigint') return x >= -9223372036854775808n && x <= 9223372036854775807n;
  return typeof x === 'number' && Number.isInteger(x) && Math.abs(x) <= I64_MAX;
}
const MAX_DEPTH = 64;
/** Above this many `any` values, compile to one list parameter instead of per-value containment. */
const CONTAINMENT_ANY_MAX = 64;
const EARTH_RADIUS_M = 6371008.8;

interface Scope {
  /** jsonb document the keys are relative to: the payload column, or a nested element. */
  doc: Fragment;
  nested: boolean;
  depth: number;
}

type Fc = Record<string, unknown> & { key: string };

class Compiler {
  private readonly validation: string[] = [];
  private n = 0;

  constructor(
    private readonly sql: postgres.Sql,
    private readonly ctx: FilterContext,
  ) {}

  run(filter: unknown): Fragment {
    const sql = this.sql;
    const doc = this.ctx.alias === undefined ? sql`payload` : sql`${sql(this.ctx.alias)}.payload`;
    const out =
      filter === null || filter === undefined
        ? sql`true`
        : this.filter(filter, this.ctx.path ?? 'filter', { doc, nested: false, depth: 0 });
    if (this.validation.length > 0) throw validationError(this.validation);
    return out;
  }

  // --- helpers ---------------------------------------------------------------------------------

  private bad(path: string, msg: string): QdrantError {
    return formatError(`${path}: ${msg}`);
  }

  private alias(prefix: string): string {
    this.n += 1;
    return `${prefix}${this.n}`;
  }

  private join(parts: Fragment[], op: 'and' | 'or'): Fragment {
    const sql = this.sql;
    if (parts.length === 0) return op === 'and' ? sql`true` : sql`false`;
    if (parts.length === 1) return parts[0]!;
    const glue = op === 'and' ? sql` and ` : sql` or `;
    let acc = sql`${parts[0]!}`;
    for (const p of parts.slice(1)) acc = sql`${acc}${glue}${p}`;
    return sql`(${acc})`;
  }

  private list(v: unknown): unknown[] | null {
    if (v === null || v === undefined) return null;
    return Array.isArray(v) ? v : [v];
  }

  private keyPath(key: unknown, path: string): PathItem[] {
    if (typeof key !== 'string') throw this.bad(path, 'invalid type: expected a string key');
    const items = parseKeyPath(key);
    if (items === null) throw formatError(`Invalid json path: '${key}'`);
    return items;
  }

  /** FROM item listing the values a key reaches, as `<alias>(v)`. */
  private valuesFrom(scope: Scope, items: readonly PathItem[], l: string): Fragment {
    const sql = this.sql;
    return sql`jsonb_path_query(${scope.doc}, ${strictJsonPath(items)}::text::jsonpath, '{}'::jsonb, true) as ${sql(l)}(v)`;
  }

  /** Some value reached by the key satisfies `pred(v)`. */
  private anyValue(scope: Scope, items: readonly PathItem[], pred: (v: Fragment) => Fragment): Fragment {
    const sql = this.sql;
    const l = this.alias('l');
    return sql`exists (select 1 from ${this.valuesFrom(scope, items, l)} where ${pred(sql`${sql(l)}.v`)})`;
  }

  private noValues(scope: Scope, items: readonly PathItem[]): Fragment {
    const sql = this.sql;
    const l = this.alias('l');
    return sql`not exists (select 1 from ${this.valuesFrom(scope, items, l)})`;
  }

  /** Some value, or some element of an array value (one level), satisfies `pred(e)`. */
  private anyElement(scope: Scope, items: readonly PathItem[], pred: (e: Fragment) => Fragment): Fragment {
    const sql = this.sql;
    const l = this.alias('l');
    const f = this.alias('f');
    const v = sql`${sql(l)}.v`;
    const e = sql`${sql(f)}.e`;
    return sql`exists (select 1 from ${this.valuesFrom(scope, items, l)} cross join lateral jsonb_array_elements(case when jsonb_typeof(${v}) = 'array' then ${v} else jsonb_build_array(${v}) end) as ${sql(f)}(e) where ${pred(e)})`;
  }

  // --- filter / conditions ---------------------------------------------------------------------

  private filter(f: unknown, path: string, scope: Scope): Fragment {
    if (scope.depth > MAX_DEPTH) throw this.bad(path, 'filter nesting is too deep');
    if (!isObj(f)) throw this.bad(path, 'invalid type: expected a filter object');
    for (const k of Object.keys(f)) {
      if (!['must', 'should', 'must_not', 'min_should'].includes(k)) {
        throw this.bad(path, `unknown field \`${k}\`, expected one of \`should\`, \`min_should\`, \`must\`, \`must_not\``);
      }
    }
    const sql = this.sql;
    const parts: Fragment[] = [];
    const inner = { ...scope, depth: scope.depth + 1 };
    const conds = (name: string) => {
      const v = f[name];
      const arr = this.list(v);
      if (arr === null) return null;
      const p = Array.isArray(v) ? (i: number) => `${path}.${name}[${i}]` : () => `${path}.${name}`;
      return arr.map((c, i) => this.condition(c, p(i), inner));
    };

    const should = conds('should');
    if (should !== null && should.length > 0) parts.push(this.join(should, 'or'));

    const ms = f.min_should;
    if (ms !== null && ms !== undefined) {
      if (!isObj(ms)) throw this.bad(`${path}.min_should`, 'invalid type: expected an object');
      const mc = ms.min_count;
      if (typeof mc !== 'number' || !Number.isInteger(mc) || mc < 0) {
        throw this.bad(`${path}.min_should.min_count`, `invalid value: ${stringifyExactJson(mc)}, expected usize`);
      }
      if (!Array.isArray(ms.conditions)) throw this.bad(`${path}.min_should.conditions`, 'invalid type: expected a sequence');
      for (const k of Object.keys(ms)) {
        if (k !== 'conditions' && k !== 'min_count') throw this.bad(`${path}.min_should`, `unknown field \`${k}\``);
      }
      const cs = ms.conditions.map((c, i) => this.condition(c, `${path}.min_should.conditions[${i}]`, inner));
      if (cs.length > 0 && mc > 0) {
        if (mc > cs.length) parts.push(sql`false`);
        else {
          let sum = sql`(case when ${cs[0]!} then 1 else 0 end)`;
          for (const c of cs.slice(1)) sum = sql`${sum} + (case when ${c} then 1 else 0 end)`;
          parts.push(sql`((${sum}) >= ${mc}::int)`);
        }
      }
    }

    const must = conds('must');
    if (must !== null) parts.push(...must);

    const mustNot = conds('must_not');
    if (mustNot !== null) for (const c of mustNot) parts.push(sql`not ${c}`);

    return this.join(parts, 'and');
  }

  private condition(c: unknown, path: string, scope: Scope): Fragment {
    const sql = this.sql;
    if (!isObj(c)) throw this.bad(path, 'data did not match any variant of untagged enum Condition');
    if ('key' in c) return this.fieldCondition(c as Fc, path, scope);
    if ('is_empty' in c) {
      const items = this.keyPath(this.payloadField(c.is_empty, `${path}.is_empty`), `${path}.is_empty.key`);
      // every value is null or []; vacuously true when the key is missing
      return sql`not ${this.anyValue(scope, items, (v) => sql`not (jsonb_typeof(${v}) = 'null' or ${v} = '[]'::jsonb)`)}`;
    }
    if ('is_null' in c) {
      const items = this.keyPath(this.payloadField(c.is_null, `${path}.is_null`), `${path}.is_null.key`);
      return this.anyValue(scope, items, (v) => sql`jsonb_typeof(${v}) = 'null'`);
    }
    if ('has_id' in c) {
      if (!Array.isArray(c.has_id)) throw this.bad(`${path}.has_id`, 'invalid type: expected a sequence of point ids');
      const ids: ParsedPointId[] = c.has_id.map((v) => parsePointId(v));
      if (scope.nested) return sql`false`;
      return idIn(sql, ids, this.ctx.alias);
    }
    if ('has_vector' in c) {
      const name = c.has_vector;
      if (typeof name !== 'string') throw this.bad(`${path}.has_vector`, 'invalid type: expected a string');
      const col = Object.prototype.hasOwnProperty.call(this.ctx.vectorColumns, name) ? this.ctx.vectorColumns[name] : undefined;
      const sparse = this.ctx.sparseVectors?.includes(name) ?? false;
      if (col === undefined && !sparse) throw wrongInput(`Not existing vector name error: ${name}`);
      if (scope.nested) return sql`false`;
      if (col === undefined) {
        const ref = this.ctx.alias === undefined ? sql`sparse` : sql`${sql(this.ctx.alias)}.sparse`;
        return sql`coalesce(${ref} ? ${name}, false)`;
      }
      return this.ctx.alias === undefined ? sql`(${sql(col)} is not null)` : sql`(${sql(this.ctx.alias)}.${sql(col)} is not null)`;
    }
    if ('nested' in c) return this.nested(c.nested, `${path}.nested`, scope);
    if ('slice' in c) return this.slice(c.slice, `${path}.slice`, scope);
    return this.filter(c, path, scope);
  }

  /**
   * `slice: {total, index}`: one of `total` disjoint slices of the id space that together cover
   * every point, stable across queries. Membership is Postgres's 64-bit hash of the id's text modulo
   * `total`, not Qdrant's SipHash of the id bytes: the same guarantees, not the same slices.
   */
  private slice(v: unknown, path: string, scope: Scope): Fragment {
    const sql = this.sql;
    if (!isObj(v)) throw this.bad(path, 'invalid type: expected a map');
    const u32 = (k: 'total' | 'index') => {
      const n = v[k];
      if (n === undefined) throw this.bad(path, `missing field \`${k}\``);
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 0xffffffff) {
        throw this.bad(`${path}.${k}`, `invalid value: ${stringifyExactJson(n)}, expected u32`);
      }
      return n;
    };
    const total = u32('total');
    const index = u32('index');
    // `total` is a NonZeroU32 in Qdrant: 0 fails deserialisation (400).
    if (total === 0) throw this.bad(`${path}.total`, 'invalid value: integer `0`, expected a nonzero u32');
    if (index >= total) {
      this.validation.push(`${path}.index: value ${index} invalid, must be less than total (${total})`);
      return sql`false`;
    }
    if (scope.nested) return sql`false`;
    const pid = this.ctx.alias === undefined ? sql`pid` : sql`${sql(this.ctx.alias)}.pid`;
    return sql`((hashtextextended(${pid}, 0) & ${'9223372036854775807'}::bigint) % ${total}::bigint = ${index}::bigint)`;
  }

  private payloadField(v: unknown, path: string): unknown {
    if (!isObj(v) || !('key' in v)) throw this.bad(path, 'missing field `key`');
    return v.key;
  }

  private nested(n: unknown, path: string, scope: Scope): Fragment {
    const sql = this.sql;
    if (!isObj(n)) throw this.bad(path, 'invalid type: expected an object with `key` and `filter`');
    if (!('key' in n)) throw this.bad(path, 'missing field `key`');
    if (!('filter' in n)) throw this.bad(path, 'missing field `filter`');
    const items = this.keyPath(n.key, `${path}.key`);
    const arrayItems = items[items.length - 1] !== undefined && 'wildcard' in items[items.length - 1]! ? items : [...items, { wildcard: true as const }];
    const a = this.alias('n');
    const elem = sql`${sql(a)}.o`;
    const inner = this.filter(n.filter, `${path}.filter`, { doc: elem, nested: true, depth: scope.depth + 1 });
    return sql`exists (select 1 from jsonb_path_query(${scope.doc}, ${strictJsonPath(arrayItems)}::text::jsonpath, '{}'::jsonb, true) as ${sql(a)}(o) where jsonb_typeof(${elem}) = 'object' and ${inner})`;
  }

  // --- field conditions ------------------------------------------------------------------------

  private fieldCondition(c: Fc, path: string, scope: Scope): Fragment {
    const sql = this.sql;
    const rawKey = c.key;
    const items = this.keyPath(rawKey, `${path}.key`);
    const present = (k: string) => c[k] !== undefined && c[k] !== null;

    // Parse everything first (400s win over the 422 below, as serde runs before validator).
    const vc = present('values_count') ? this.countBounds(c.values_count, `${path}.values_count`) : null;
    const isEmpty = present('is_empty') ? this.bool(c.is_empty, `${path}.is_empty`) : null;
    const isNull = present('is_null') ? this.bool(c.is_null, `${path}.is_null`) : null;
    const alts: Fragment[] = [];
    if (present('match')) alts.push(this.match(c.match, `${path}.match`, rawKey, items, scope));
    if (present('range')) alts.push(this.range(c.range, `${path}.range`, items, scope));
    if (present('geo_radius')) alts.push(this.geoRadius(c.geo_radius, `${path}.geo_radius`, items, scope));
    if (present('geo_bounding_box')) alts.push(this.geoBox(c.geo_bounding_box, `${path}.geo_bounding_box`, items, scope));
    if (present('geo_polygon')) alts.push(this.geoPolygon(c.geo_polygon, `${path}.geo_polygon`, items, scope));

    if (vc === null && isEmpty === null && isNull === null && alts.length === 0) {
      this.validation.push(`${path}: At least one field condition must be specified`);
      return sql`false`;
    }

    if (vc !== null) {
      const count = (v: Fragment) =>
        sql`(case jsonb_typeof(${v}) when 'null' then 0 when 'array' then jsonb_array_length(${v}) else 1 end)`;
      const ok = (n: Fragment) => {
        const ps: Fragment[] = [];
        if (vc.lt !== undefined) ps.push(sql`${n} < ${vc.lt}::bigint`);
        if (vc.gt !== undefined) ps.push(sql`${n} > ${vc.gt}::bigint`);
        if (vc.lte !== undefined) ps.push(sql`${n} <= ${vc.lte}::bigint`);
        if (vc.gte !== undefined) ps.push(sql`${n} >= ${vc.gte}::bigint`);
        return this.join(ps, 'and');
      };
      const zeroOk =
        (vc.lt === undefined || 0 < vc.lt) &&
        (vc.gt === undefined || 0 > vc.gt) &&
        (vc.lte === undefined || 0 <= vc.lte) &&
        (vc.gte === undefined || 0 >= vc.gte);
      const some = this.anyValue(scope, items, (v) => ok(count(v)));
      return zeroOk ? sql`(${some} or ${this.noValues(scope, items)})` : some;
    }
    if (isEmpty !== null) {
      const some = this.anyValue(scope, items, (v) =>
        isEmpty
          ? sql`(jsonb_typeof(${v}) = 'null' or ${v} = '[]'::jsonb)`
          : sql`not (jsonb_typeof(${v}) = 'null' or ${v} = '[]'::jsonb)`,
      );
      return isEmpty ? sql`(${some} or ${this.noValues(scope, items)})` : some;
    }
    if (isNull !== null) {
      const nullish = (v: Fragment) =>
        sql`(jsonb_typeof(${v}) = 'null' or (jsonb_typeof(${v}) = 'array' and ${v} @> '[null]'::jsonb))`;
      const some = this.anyValue(scope, items, (v) => (isNull ? nullish(v) : sql`not ${nullish(v)}`));
      return isNull ? some : sql`(${some} or ${this.noValues(scope, items)})`;
    }
    return this.join(alts, 'or');
  }

  private bool(v: unknown, path: string): boolean {
    if (typeof v !== 'boolean') throw this.bad(path, `invalid type: ${stringifyExactJson(v)}, expected a boolean`);
    return v;
  }

  private countBounds(v: unknown, path: string): { lt?: number; gt?: number; lte?: number; gte?: number } {
    if (!isObj(v)) throw this.bad(path, 'invalid type: expected an object');
    const out: { lt?: number; gt?: number; lte?: number; gte?: number } = {};
    for (const k of ['lt', 'gt', 'lte', 'gte'] as const) {
      const b = v[k];
      if (b === undefined || b === null) continue;
      if (typeof b !== 'number' || !Number.isSafeInteger(b) || b < 0) {
        throw this.bad(`${path}.${k}`, `invalid value: ${stringifyExactJson(b)}, expected usize`);
      }
      out[k] = b;
    }
    return out;
  }

  // --- match -----------------------------------------------------------------------------------

  private match(m: unknown, path: string, rawKey: string, items: readonly PathItem[], scope: Scope): Fragment {
    const sql = this.sql;
    const untagged = () => this.bad(path, 'data did not match any variant of untagged enum Match');
    if (!isObj(m)) throw untagged();
    const containable = items.every((it) => !('index' in it));

    if ('value' in m) {
      const v = m.value;
      const ok =
        typeof v === 'string' ||
        typeof v === 'boolean' ||
        isI64(v);
      if (!ok) throw untagged();
      if (containable) return this.containsAny(scope, items, [v]);
      return this.anyElement(scope, items, (e) => sql`${e} = ${stringifyExactJson(v)}::text::jsonb`);
    }
    const str = (k: string): string => {
      const t = m[k];
      if (typeof t !== 'string') throw untagged();
      return t;
    };
    const indexed = this.ctx.textIndexed?.(rawKey) ?? false;
    const asText = (e: Fragment) => sql`(${e} #>> '{}')`;
    const onStrings = (pred: (s: Fragment) => Fragment) =>
      this.anyElement(scope, items, (e) => sql`(case when jsonb_typeof(${e}) = 'string' then ${pred(asText(e))} else false end)`);
    const tp = textTokenizing(this.ctx.textIndex?.(rawKey));
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
        if (containable && list.length <= CONTAINMENT_ANY_MAX) return this.containsAny(scope, items, list);
        return this.anyElement(scope, items, (e) => sql`(${json}::text::jsonb @> jsonb_build_array(${e}))`);
      }
      // `[]` deserializes as a string list in Qdrant (AnyVariants::Strings)
      const listType = allStrings ? 'string' : 'number';
      return this.anyElement(
        scope,
        items,
        (e) =>
          sql`(case jsonb_typeof(${e}) when 'null' then false when ${listType}::text then not (${json}::text::jsonb @> jsonb_build_array(${e})) else true end)`,
      );
    }
    throw untagged();
  }

  /** Index-friendly `@>` for "some value (or element of an array value) equals one of `values`". */
  private containsAny(scope: Scope, items: readonly PathItem[], values: readonly unknown[]): Fragment {
    const sql = this.sql;
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
    return this.join(parts, 'or');
  }

  // --- range -----------------------------------------------------------------------------------

  private range(r: unknown, path: string, items: readonly PathItem[], scope: Scope): Fragment {
    const sql = this.sql;
    const untagged = (detail?: string) =>
      this.bad(path, `data did not match any variant of untagged enum RangeInterface${detail ? ` (${detail})` : ''}`);
    if (!isObj(r)) throw untagged();
    const ops = { lt: '<', gt: '>', lte: '<=', gte: '>=' } as const;
    const given = (Object.keys(ops) as (keyof typeof ops)[])
      .map((k) => [k, r[k]] as const)
      .filter(([, v]) => v !== undefined && v !== null);
    // A bigint is an integer literal beyond 2^53: compared exactly as numeric, like the others.
    const numeric = given.every(([, v]) => (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'bigint');
    const strings = given.length > 0 && given.every(([, v]) => typeof v === 'string');
    const cmp = (lhs: Fragment, op: string, rhs: Fragment) =>
      op === '<' ? sql`${lhs} < ${rhs}` : op === '>' ? sql`${lhs} > ${rhs}` : op === '<=' ? sql`${lhs} <= ${rhs}` : sql`${lhs} >= ${rhs}`;

    if (numeric) {
      return this.anyElement(scope, items, (e) => {
        const n = sql`(${e})::numeric`;
        const conds = given.map(([k, v]) => cmp(n, ops[k], sql`${String(v)}::numeric`));
        return sql`(case when jsonb_typeof(${e}) = 'number' then ${this.join(conds, 'and')} else false end)`;
      });
    }
    if (strings) {
      const bounds = given.map(([k, v]) => {
        const norm = normalizeDatetime(v as string);
        if (norm === null) {
          throw untagged(`'${v as string}' does not match accepted datetime format (RFC3339). Example: 2014-01-01T00:00:00Z`);
        }
        return [k, norm] as const;
      });
      return this.anyElement(scope, items, (e) => {
        const ts = this.storedTimestamp(sql`(${e} #>> '{}')`);
        const conds = bounds.map(([k, v]) => cmp(ts, ops[k], sql`${v}::text::timestamptz`));
        return sql`(case when jsonb_typeof(${e}) = 'string' then coalesce(${this.join(conds, 'and')}, false) else false end)`;
      });
    }
    throw untagged();
  }

  /**
   * timestamptz of a stored string, or NULL when Qdrant would not parse it. Never raises: the
   * string is matched against the accepted shapes, rebuilt as `…T…+hh:mm` and validated by
   * JSONPath `.datetime()` in silent mode (which rejects e.g. Feb 30) before the cast.
   */
  private storedTimestamp(s: Fragment): Fragment {
    const sql = this.sql;
    return sql`(select case when m is null then null else (jsonb_path_query_first(jsonb_build_array(
        m[1] || 'T' || coalesce(m[2], '00:00') || coalesce(m[3], ':00') || coalesce(substr(m[4], 1, 7), '') ||
        case when m[5] is null or upper(m[5]) = 'Z' then '+00:00'
             when length(m[5]) = 3 then m[5] || ':00'
             when length(m[5]) = 5 then substr(m[5], 1, 3) || ':' || substr(m[5], 4, 2)
             else m[5] end),
      'strict $[0].datetime()', '{}'::jsonb, true) #>> '{}')::timestamptz end
      from regexp_match(${s}, ${DT_RE_SRC}::text) as m)`;
  }

  // --- geo -------------------------------------------------------------------------------------

  private geoPoint(v: unknown, path: string): { lon: number; lat: number } {
    if (!isObj(v) || typeof v.lon !== 'number' || typeof v.lat !== 'number') {
      throw this.bad(path, 'invalid type: expected a geo point {"lon": number, "lat": number}');
    }
    if (v.lon < -180 || v.lon > 180 || v.lat < -90 || v.lat > 90) {
      throw this.bad(path, `Wrong format of GeoPoint payload: expected \`lat\` = ${v.lat} within [-90;90] and \`lon\` = ${v.lon} within [-180;180]`);
    }
    return { lon: v.lon, lat: v.lat };
  }

  /** Guarded lon/lat of a stored element: only `{lon: number, lat: number}` objects qualify. */
  private onGeo(e: Fragment, pred: (lon: Fragment, lat: Fragment) => Fragment): Fragment {
    const sql = this.sql;
    return sql`(case when jsonb_typeof(${e}) = 'object' and jsonb_typeof(${e} -> 'lon') = 'number' and jsonb_typeof(${e} -> 'lat') = 'number'
      then ${pred(sql`((${e} ->> 'lon')::float8)`, sql`((${e} ->> 'lat')::float8)`)} else false end)`;
  }

  private geoRadius(g: unknown, path: string, items: readonly PathItem[], scope: Scope): Fragment {
    const sql = this.sql;
    if (!isObj(g)) throw this.bad(path, 'invalid type: expected an object');
    const c = this.geoPoint(g.center, `${path}.center`);
    const r = g.radius;
    if (typeof r !== 'number' || !Number.isFinite(r)) throw this.bad(`${path}.radius`, 'invalid type: expected a number');
    return this.anyElement(scope, items, (e) =>
      this.onGeo(e, (lon, lat) => {
        const lat1 = sql`radians(${c.lat}::float8)`;
        const lat2 = sql`radians(${lat})`;
        const a = sql`(power(sin((${lat2} - ${lat1}) / 2), 2) + cos(${lat1}) * cos(${lat2}) * power(sin((radians(${lon}) - radians(${c.lon}::float8)) / 2), 2))`;
        return sql`(2 * ${EARTH_RADIUS_M}::float8 * asin(least(1::float8, sqrt(${a}))) < ${r}::float8)`;
      }),
    );
  }

  private ring(v: unknown, path: string): { lons: number[]; lats: number[] } {
    if (!isObj(v) || !Array.isArray(v.points)) throw this.bad(path, 'invalid type: expected {"points": [geo points]}');
    const pts = v.points.map((p, i) => this.geoPoint(p, `${path}.points[${i}]`));
    if (pts.length <= 3) throw this.bad(path, `polygon invalid, the size must be at least 4, got ${pts.length}`);
    const a = pts[0]!;
    const b = pts[pts.length - 1]!;
    if (Math.abs(a.lat - b.lat) > Number.EPSILON || Math.abs(a.lon - b.lon) > Number.EPSILON) {
      throw this.bad(path, 'polygon invalid, the first and the last points should be the same to form a closed line');
    }
    return { lons: pts.map((p) => p.lon), lats: pts.map((p) => p.lat) };
  }

  /** Even-odd ray casting of (lon, lat) against a closed ring; the division only runs on a crossing edge. */
  private inRing(lon: Fragment, lat: Fragment, r: { lons: number[]; lats: number[] }): Fragment {
    const sql = this.sql;
    const lo = sql`${r.lons}::float8[]`;
    const la = sql`${r.lats}::float8[]`;
    return sql`((select count(*) from generate_series(1, ${r.lons.length - 1}::int) as g(i)
      where case when ((${la})[g.i] > ${lat}) <> ((${la})[g.i + 1] > ${lat})
        then ${lon} < ((${lo})[g.i + 1] - (${lo})[g.i]) * (${lat} - (${la})[g.i]) / ((${la})[g.i + 1] - (${la})[g.i]) + (${lo})[g.i]
        else false end) % 2 = 1)`;
  }

  private geoPolygon(g: unknown, path: string, items: readonly PathItem[], scope: Scope): Fragment {
    const sql = this.sql;
    if (!isObj(g)) throw this.bad(path, 'invalid type: expected an object');
    const exterior = this.ring(g.exterior, `${path}.exterior`);
    const holes = g.interiors === undefined || g.interiors === null ? [] : g.interiors;
    if (!Array.isArray(holes)) throw this.bad(`${path}.interiors`, 'invalid type: expected a sequence');
    const interiors = holes.map((h, i) => this.ring(h, `${path}.interiors[${i}]`));
    return this.anyElement(scope, items, (e) =>
      this.onGeo(e, (lon, lat) =>
        this.join([this.inRing(lon, lat, exterior), ...interiors.map((r) => sql`not ${this.inRing(lon, lat, r)}`)], 'and'),
      ),
    );
  }

  private geoBox(g: unknown, path: string, items: readonly PathItem[], scope: Scope): Fragment {
    const sql = this.sql;
    if (!isObj(g)) throw this.bad(path, 'invalid type: expected an object');
    const tl = this.geoPoint(g.top_left, `${path}.top_left`);
    const br = this.geoPoint(g.bottom_right, `${path}.bottom_right`);
    return this.anyElement(scope, items, (e) =>
      this.onGeo(e, (lon, lat) => {
        const lonOk =
          tl.lon > br.lon
            ? sql`(${lon} > ${tl.lon}::float8 or ${lon} < ${br.lon}::float8)`
            : sql`(${tl.lon}::float8 < ${lon} and ${lon} < ${br.lon}::float8)`;
        return sql`(${lonOk} and ${br.lat}::float8 < ${lat} and ${lat} < ${tl.lat}::float8)`;
      }),
    );
  }
}

/**
 * Compile a Qdrant filter (already JSON-parsed) into a boolean SQL fragment; `null`/`undefined`
 * → `true`. Throws `QdrantError` 400 (format) or 422 (validation) with Qdrant's wording.
 */
export function compileFilter(sql: postgres.Sql, filter: unknown, ctx: FilterContext): Fragment {
  return new Compiler(sql, ctx).run(filter);
}

// ---------------------------------------------------------------------------------------------
// Full-text index parameters (Qdrant's TextIndexParams)

/**
 * How a text index tokenizes: `word` / `multilingual` split on non-alphanumerics, `whitespace` on
 * white space, `prefix` like `word` with a query token matching every token it begins; `lowercase`
 * (default true); tokens shorter than `min_token_len` or longer than `max_token_len` dropped;
 * `stopwords` (`"english"`, or `{languages, custom}`; custom words case-sensitive when `lowercase`
 * is false) dropped from both sides; `stemmer: {type: "snowball", language}` stems what is
 * left with Postgres's Snowball dictionary of that language; `ascii_folding` folds accents away.
 */
export function textTokenizing(params: Record<string, unknown> | undefined): {
  split: string;
  lowercase: boolean;
  min: number;
  max: number;
  stopwords: string[];
  prefix: boolean;
  /** The Postgres Snowball dictionary of `stemmer` (`pg_catalog.english_stem`), if any. */
  stem?: string;
  /** `ascii_folding`: accented letters folded to ASCII. */
  fold: boolean;
  /** Postgres Snowball dictionaries whose stop word list applies (a stop word lexizes to `{}`). */
  stopDictionaries: string[];
} {
  const p = params ?? {};
  const lowercase = p.lowercase !== false;
  const tokenizer = typeof p.tokenizer === 'string' ? p.tokenizer : 'word';
  const num = (v: unknown, d: number) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : d);
  const stop = new Set<string>();
  const dictionaries = new Set<string>();
  const addLanguage = (l: unknown) => {
    if (typeof l !== 'string') return;
    const lang = l.toLowerCase();
    if (lang === 'english') for (const w of ENGLISH_STOPWORDS) stop.add(w);
    else if (STOPWORD_DICTIONARIES.has(lang)) dictionaries.add(`pg_catalog.${lang}_stem`);
  };
  const sw = p.stopwords;
  if (typeof sw === 'string') addLanguage(sw);
  else if (typeof sw === 'object' && sw !== null) {
    const o = sw as { languages?: unknown; custom?: unknown };
    if (Array.isArray(o.languages)) o.languages.forEach(addLanguage);
    // Custom stop words are compared as given unless the index lower-cases (Qdrant issue 8724).
    if (Array.isArray(o.custom)) for (const w of o.custom) if (typeof w === 'string') stop.add(lowercase ? w.toLowerCase() : w);
  }
  // Qdrant's Snowball stemmer, by Postgres's own Snowball dictionaries (the same algorithms, for
  // every language Qdrant offers). A stop word of the dictionary's list comes back empty: kept as is.
  const st = p.stemmer as { type?: unknown; language?: unknown } | undefined;
  const lang = typeof st?.language === 'string' ? st.language.toLowerCase() : undefined;
  const stem = st?.type === 'snowball' && lang && SNOWBALL_LANGUAGES.has(lang) ? `pg_catalog.${lang}_stem` : undefined;
  return {
    split: tokenizer === 'whitespace' ? '\\s+' : '[^[:alnum:]]+',
    lowercase,
    min: num(p.min_token_len, 0),
    max: num(p.max_token_len, 2 ** 31 - 1),
    stopwords: [...stop],
    prefix: tokenizer === 'prefix',
    fold: p.ascii_folding === true,
    stopDictionaries: [...dictionaries],
    ...(stem ? { stem } : {}),
  };
}

/** Snowball's English stop word list, as Qdrant ships it. */
export const ENGLISH_STOPWORDS = `i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
it its itself they them their theirs themselves what which who whom this that these those am is are was were be been being have has had having
do does did doing would should could ought i'm you're he's she's it's we're they're i've you've we've they've i'd you'd he'd she'd we'd they'd
i'll you'll he'll she'll we'll they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't wouldn't shan't shouldn't
can't cannot couldn't mustn't let's that's who's what's here's there's when's where's why's how's a an the and but if or because as until while
of at by for with about against between into through during before after above below to from up down in out on off over under again further
then once here there when where why how all any both each few more most other some such no nor not only own same so than too very`.split(/\s+/);

/**
 * Stop word languages of Qdrant's that Postgres's Snowball dictionaries carry a list for (the
 * Snowball project's lists); Qdrant's other languages (arabic, chinese, greek, …) are ignored.
 */
const STOPWORD_DICTIONARIES = new Set('danish dutch finnish french german hungarian italian nepali norwegian portuguese russian spanish swedish turkish'.split(' '));

/** Qdrant's SnowballLanguage values; each has a `<language>_stem` dictionary in Postgres. */
const SNOWBALL_LANGUAGES = new Set(
  'arabic armenian danish dutch english finnish french german greek hungarian italian norwegian portuguese romanian russian spanish swedish tamil turkish'.split(' '),
);
