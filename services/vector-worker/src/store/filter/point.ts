/**
 * Conditions on the point rather than its payload.
 *
 * - `has_id`: ids parsed by ids.ts (400 on a bad id); mixed numeric/UUID lists work; `[]` → false.
 * - `has_vector: name`: the vector column is not null; unknown name → 400
 *   `Wrong input: Not existing vector name error: <name>`. `""` is the unnamed vector.
 * - `slice: {total, index}`: see `sliceCondition`.
 * Inside `nested` each is false (the element has no id or vectors of its own).
 */
import { stringifyExactJson } from '@gatehouse/common';
import { wrongInput } from '../errors.ts';
import { idIn, parsePointId, type ParsedPointId } from '../points/ids.ts';
import type { Compiler, Fragment, Scope } from './filter-sql.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function hasIdCondition(c: Compiler, ids: unknown, path: string, scope: Scope): Fragment {
  const sql = c.sql;
  if (!Array.isArray(ids)) throw c.bad(`${path}.has_id`, 'invalid type: expected a sequence of point ids');
  const parsed: ParsedPointId[] = ids.map((v) => parsePointId(v));
  if (scope.nested) return sql`false`;
  return idIn(sql, parsed, c.ctx.alias);
}

export function hasVectorCondition(c: Compiler, name: unknown, path: string, scope: Scope): Fragment {
  const sql = c.sql;
  if (typeof name !== 'string') throw c.bad(`${path}.has_vector`, 'invalid type: expected a string');
  const col = Object.hasOwn(c.ctx.vectorColumns, name) ? c.ctx.vectorColumns[name] : undefined;
  const sparse = c.ctx.sparseVectors?.includes(name) ?? false;
  if (col === undefined && !sparse) throw wrongInput(`Not existing vector name error: ${name}`);
  if (scope.nested) return sql`false`;
  if (col === undefined) {
    const ref = c.ctx.alias === undefined ? sql`sparse` : sql`${sql(c.ctx.alias)}.sparse`;
    return sql`coalesce(${ref} ? ${name}, false)`;
  }
  return c.ctx.alias === undefined ? sql`(${sql(col)} is not null)` : sql`(${sql(c.ctx.alias)}.${sql(col)} is not null)`;
}

/**
 * `slice: {total, index}`: one of `total` disjoint slices of the id space that together cover
 * every point, stable across queries. Membership is Postgres's 64-bit hash of the id's text modulo
 * `total`, not Qdrant's SipHash of the id bytes: the same guarantees, not the same slices.
 */
export function sliceCondition(c: Compiler, v: unknown, path: string, scope: Scope): Fragment {
  const sql = c.sql;
  if (!isObj(v)) throw c.bad(path, 'invalid type: expected a map');
  const u32 = (k: 'total' | 'index') => {
    const n = v[k];
    if (n === undefined) throw c.bad(path, `missing field \`${k}\``);
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 0xffffffff) {
      throw c.bad(`${path}.${k}`, `invalid value: ${stringifyExactJson(n)}, expected u32`);
    }
    return n;
  };
  const total = u32('total');
  const index = u32('index');
  // `total` is a NonZeroU32 in Qdrant: 0 fails deserialisation (400).
  if (total === 0) throw c.bad(`${path}.total`, 'invalid value: integer `0`, expected a nonzero u32');
  if (index >= total) {
    c.validation.push(`${path}.index: value ${index} invalid, must be less than total (${total})`);
    return sql`false`;
  }
  if (scope.nested) return sql`false`;
  const pid = c.ctx.alias === undefined ? sql`pid` : sql`${sql(c.ctx.alias)}.pid`;
  return sql`((hashtextextended(${pid}, 0) & ${'9223372036854775807'}::bigint) % ${total}::bigint = ${index}::bigint)`;
}
