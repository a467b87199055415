/**
 * Qdrant `Filter` → a boolean SQL expression over one point table (LAYOUT.md): `payload jsonb`,
 * `id_num`, `id_uuid` and the vector columns. The result is a postgres.js fragment to splice into
 * `where ${…}`; it is never NULL, so it can be negated and combined freely.
 *
 * Semantics follow Qdrant's own checker (`lib/segment/src/payload_storage/query_checker.rs`,
 * `condition_checker.rs`, `json_path/`), not only filtering.md:
 *
 * Keys follow Qdrant's JSON path grammar with strict traversal (key-path.ts): the values a key
 * reaches are then checked with "any value, and if a value is an array, any of its elements" (one
 * level: `[["x"]]` does not match "x"). The JSONPath text is a bind parameter and user values are
 * never put into SQL or JSONPath text (they are bind parameters or JSONPath variables). An
 * invalid key is a 400 `Format error in JSON body: Invalid json path: '<key>'`.
 *
 * Here: the boolean structure and the dispatch to one file per condition kind — match.ts,
 * range.ts, geo.ts, nested.ts, presence.ts (`is_empty`, `is_null`, `values_count`), point.ts
 * (`has_id`, `has_vector`, `slice`), each saying its own semantics.
 *
 * - Several sub-conditions in one FieldCondition (`match` + `range`…) are OR-ed, as in Qdrant;
 *   `values_count`, then `is_empty`, then `is_null` take precedence over the rest when present.
 * - `should: []` and `min_should` with no conditions are true (Qdrant's index-based path drops them);
 *   `min_should` counts satisfied conditions (`min_count: 0` → true). `must: []`, `must_not: []` → true.
 * - A FieldCondition with only `key` → 422 `Validation error in JSON body: [<path>: At least one
 *   field condition must be specified]` (all such conditions are reported together, after any 400).
 *   Wrong shapes/types are 400 `Format error in JSON body: <path>: <what>`.
 */
import type postgres from 'postgres';
import { stringifyExactJson } from '@gatehouse/common';
import { type QdrantError, formatError, validationError } from '../errors.ts';
import { geoBox, geoPolygon, geoRadius } from './geo.ts';
import { parseKeyPath, strictJsonPath, type PathItem } from './key-path.ts';
import { matchCondition } from './match.ts';
import { nestedCondition } from './nested.ts';
import { hasIdCondition, hasVectorCondition, sliceCondition } from './point.ts';
import { fieldIsEmpty, fieldIsNull, isEmptyCondition, isNullCondition, valuesCount, type CountBounds } from './presence.ts';
import { rangeCondition } from './range.ts';

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

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const MAX_DEPTH = 64;

/** Where a condition sits: the document its keys are relative to. */
export interface Scope {
  /** jsonb document the keys are relative to: the payload column, or a nested element. */
  doc: Fragment;
  nested: boolean;
  depth: number;
}

type Fc = Record<string, unknown> & { key: string };

/**
 * One filter's compilation: the boolean structure and the helpers every condition kind uses (the
 * kinds are functions of their own files taking the compiler). Validation messages (422) are
 * collected and reported together once the whole filter is read, after any 400.
 */
export class Compiler {
  readonly validation: string[] = [];
  private n = 0;

  constructor(
    readonly sql: postgres.Sql,
    readonly ctx: FilterContext,
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

  bad(path: string, msg: string): QdrantError {
    return formatError(`${path}: ${msg}`);
  }

  alias(prefix: string): string {
    this.n += 1;
    return `${prefix}${this.n}`;
  }

  join(parts: Fragment[], op: 'and' | 'or'): Fragment {
    const sql = this.sql;
    if (parts.length === 0) return op === 'and' ? sql`true` : sql`false`;
    if (parts.length === 1) return parts[0]!;
    const glue = op === 'and' ? sql` and ` : sql` or `;
    let acc = sql`${parts[0]!}`;
    for (const p of parts.slice(1)) acc = sql`${acc}${glue}${p}`;
    return sql`(${acc})`;
  }

  list(v: unknown): unknown[] | null {
    if (v === null || v === undefined) return null;
    return Array.isArray(v) ? v : [v];
  }

  keyPath(key: unknown, path: string): PathItem[] {
    if (typeof key !== 'string') throw this.bad(path, 'invalid type: expected a string key');
    const items = parseKeyPath(key);
    if (items === null) throw formatError(`Invalid json path: '${key}'`);
    return items;
  }

  /** FROM item listing the values a key reaches, as `<alias>(v)`. */
  valuesFrom(scope: Scope, items: readonly PathItem[], l: string): Fragment {
    const sql = this.sql;
    return sql`jsonb_path_query(${scope.doc}, ${strictJsonPath(items)}::text::jsonpath, '{}'::jsonb, true) as ${sql(l)}(v)`;
  }

  /** Some value reached by the key satisfies `pred(v)`. */
  anyValue(scope: Scope, items: readonly PathItem[], pred: (v: Fragment) => Fragment): Fragment {
    const sql = this.sql;
    const l = this.alias('l');
    return sql`exists (select 1 from ${this.valuesFrom(scope, items, l)} where ${pred(sql`${sql(l)}.v`)})`;
  }

  noValues(scope: Scope, items: readonly PathItem[]): Fragment {
    const sql = this.sql;
    const l = this.alias('l');
    return sql`not exists (select 1 from ${this.valuesFrom(scope, items, l)})`;
  }

  /** Some value, or some element of an array value (one level), satisfies `pred(e)`. */
  anyElement(scope: Scope, items: readonly PathItem[], pred: (e: Fragment) => Fragment): Fragment {
    const sql = this.sql;
    const l = this.alias('l');
    const f = this.alias('f');
    const v = sql`${sql(l)}.v`;
    const e = sql`${sql(f)}.e`;
    return sql`exists (select 1 from ${this.valuesFrom(scope, items, l)} cross join lateral jsonb_array_elements(case when jsonb_typeof(${v}) = 'array' then ${v} else jsonb_build_array(${v}) end) as ${sql(f)}(e) where ${pred(e)})`;
  }

  // --- filter / conditions ---------------------------------------------------------------------

  filter(f: unknown, path: string, scope: Scope): Fragment {
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

  condition(c: unknown, path: string, scope: Scope): Fragment {
    if (!isObj(c)) throw this.bad(path, 'data did not match any variant of untagged enum Condition');
    if ('key' in c) return this.fieldCondition(c as Fc, path, scope);
    if ('is_empty' in c) return isEmptyCondition(this, this.keyPath(this.payloadField(c.is_empty, `${path}.is_empty`), `${path}.is_empty.key`), scope);
    if ('is_null' in c) return isNullCondition(this, this.keyPath(this.payloadField(c.is_null, `${path}.is_null`), `${path}.is_null.key`), scope);
    if ('has_id' in c) return hasIdCondition(this, c.has_id, path, scope);
    if ('has_vector' in c) return hasVectorCondition(this, c.has_vector, path, scope);
    if ('nested' in c) return nestedCondition(this, c.nested, `${path}.nested`, scope);
    if ('slice' in c) return sliceCondition(this, c.slice, `${path}.slice`, scope);
    return this.filter(c, path, scope);
  }

  payloadField(v: unknown, path: string): unknown {
    if (!isObj(v) || !('key' in v)) throw this.bad(path, 'missing field `key`');
    return v.key;
  }

  // --- field conditions ------------------------------------------------------------------------

  fieldCondition(c: Fc, path: string, scope: Scope): Fragment {
    const sql = this.sql;
    const rawKey = c.key;
    const items = this.keyPath(rawKey, `${path}.key`);
    const present = (k: string) => c[k] !== undefined && c[k] !== null;

    // Parse everything first (400s win over the 422 below, as serde runs before validator).
    const vc = present('values_count') ? this.countBounds(c.values_count, `${path}.values_count`) : null;
    const isEmpty = present('is_empty') ? this.bool(c.is_empty, `${path}.is_empty`) : null;
    const isNull = present('is_null') ? this.bool(c.is_null, `${path}.is_null`) : null;
    const alts: Fragment[] = [];
    if (present('match')) alts.push(matchCondition(this, c.match, `${path}.match`, rawKey, items, scope));
    if (present('range')) alts.push(rangeCondition(this, c.range, `${path}.range`, items, scope));
    if (present('geo_radius')) alts.push(geoRadius(this, c.geo_radius, `${path}.geo_radius`, items, scope));
    if (present('geo_bounding_box')) alts.push(geoBox(this, c.geo_bounding_box, `${path}.geo_bounding_box`, items, scope));
    if (present('geo_polygon')) alts.push(geoPolygon(this, c.geo_polygon, `${path}.geo_polygon`, items, scope));

    if (vc === null && isEmpty === null && isNull === null && alts.length === 0) {
      this.validation.push(`${path}: At least one field condition must be specified`);
      return sql`false`;
    }

    if (vc !== null) return valuesCount(this, vc, items, scope);
    if (isEmpty !== null) return fieldIsEmpty(this, isEmpty, items, scope);
    if (isNull !== null) return fieldIsNull(this, isNull, items, scope);
    return this.join(alts, 'or');
  }

  bool(v: unknown, path: string): boolean {
    if (typeof v !== 'boolean') throw this.bad(path, `invalid type: ${stringifyExactJson(v)}, expected a boolean`);
    return v;
  }

  countBounds(v: unknown, path: string): CountBounds {
    if (!isObj(v)) throw this.bad(path, 'invalid type: expected an object');
    const out: CountBounds = {};
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




}

/**
 * Compile a Qdrant filter (already JSON-parsed) into a boolean SQL fragment; `null`/`undefined`
 * → `true`. Throws `QdrantError` 400 (format) or 422 (validation) with Qdrant's wording.
 */
export function compileFilter(sql: postgres.Sql, filter: unknown, ctx: FilterContext): Fragment {
  return new Compiler(sql, ctx).run(filter);
}
