/**
 * Point ids (Qdrant `ExtendedPointId`): an unsigned 64-bit integer or a UUID.
 *
 * Storage (LAYOUT.md): exactly one of `id_num numeric(20,0)` / `id_uuid uuid` is non-null, and
 * `pid = coalesce(id_num::text, id_uuid::text)` is the primary key. Order: every numeric id before
 * every UUID (Rust enum order NumId < Uuid), numbers numerically, UUIDs byte-wise (Postgres `uuid`
 * ordering is memcmp of the 16 bytes, the same as Rust's derived `Ord` on `Uuid`).
 *
 * Exactness: the vector face and the bus parse JSON with common/src/exact-json.ts, so an integer
 * literal beyond 2^53 arrives here as a `bigint` (e.g. 424242424242424242, 18446744073709551615),
 * and the ids this module hands back are a `bigint` whenever a double cannot hold them; the bus
 * and the face's reply serializer write a `bigint` as its exact digits (a JSON number, as Qdrant
 * prints u64 ids). The gRPC port decodes uint64 as decimal strings (qdrant-proto.ts), so it is
 * exact too. A `number` here is therefore always exact (at most 2^53 - 1, or a double literal such
 * as `1e3`).
 *
 * Limit: JSON parsing turns `1.0` into `1`, so `1.0` is accepted where Qdrant (serde) rejects it.
 */
import type postgres from 'postgres';
import { QdrantError } from '../errors.ts';

/** Wire form: JSON number (a `bigint` beyond 2^53, written as exact digits) or UUID string. */
export type PointId = number | bigint | string;

/** Parsed form: `num` is the canonical decimal text of the u64, `uuid` lowercase hyphenated. */
export type ParsedPointId = { num: string } | { uuid: string };

export const U64_MAX = 18446744073709551615n;

const HEX32 = /^[0-9a-fA-F]{32}$/;
const HYPHENATED = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * Parse a UUID the way the Rust `uuid` crate's `Uuid::parse_str` does: 32 hex digits (simple),
 * 8-4-4-4-12 hyphenated, hyphenated wrapped in `{…}` (braced), or hyphenated with the `urn:uuid:`
 * prefix (lowercase, as the crate matches it byte-wise); hex digits in any case.
 * Returns the canonical lowercase hyphenated form, or null.
 */
export function parseUuid(s: string): string | null {
  let body: string;
  if (s.length === 32) {
    if (!HEX32.test(s)) return null;
    const h = s.toLowerCase();
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  } else if (s.length === 36) body = s;
  else if (s.length === 38 && s.startsWith('{') && s.endsWith('}')) body = s.slice(1, -1);
  else if (s.length === 45 && s.startsWith('urn:uuid:')) body = s.slice(9);
  else return null;
  return HYPHENATED.test(body) ? body.toLowerCase() : null;
}

function describe(v: unknown): string {
  if (typeof v === 'string') return v; // serde prints the raw string, unquoted
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (v === undefined) return 'undefined';
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

export function invalidPointId(v: unknown): QdrantError {
  return new QdrantError(
    400,
    `Format error in JSON body: value ${describe(v)} is not a valid point ID, valid values are either an unsigned integer or a UUID`,
  );
}

/** Parse a point id from a JSON body (see the module comment for the > 2^53 limit). */
export function parsePointId(v: unknown): ParsedPointId {
  if (typeof v === 'number') {
    if (Number.isInteger(v) && v >= 0) {
      const b = BigInt(v); // exact decimal value of the double
      if (b <= U64_MAX) return { num: b.toString() };
    }
    throw invalidPointId(v);
  }
  if (typeof v === 'bigint') {
    if (v >= 0n && v <= U64_MAX) return { num: v.toString() };
    throw invalidPointId(v);
  }
  if (typeof v === 'string') {
    const u = parseUuid(v);
    if (u !== null) return { uuid: u };
  }
  throw invalidPointId(v);
}

/**
 * Parse the `{id}` of `/points/{id}` like Qdrant's `ExtendedPointId::from_str`: Rust `u64`
 * parsing first (ASCII digits, optional leading `+`, no overflow), then UUID.
 */
export function parsePathPointId(s: string): ParsedPointId {
  if (/^\+?[0-9]+$/.test(s)) {
    const b = BigInt(s.startsWith('+') ? s.slice(1) : s);
    if (b <= U64_MAX) return { num: b.toString() };
  }
  const u = parseUuid(s);
  if (u !== null) return { uuid: u };
  throw new QdrantError(400, `Wrong input: Can not recognize "${s}" as point id`);
}

/** The u64 of `num` (canonical decimal) as a wire number: a `bigint` when a double cannot hold it. */
function wireNum(num: string): number | bigint {
  const n = Number(num);
  return Number.isSafeInteger(n) ? n : BigInt(num);
}

/** Row → wire id: numeric ids exact (see `wireNum`), UUIDs lowercase hyphenated. */
export function formatPointId(row: { id_num: string | null; id_uuid: string | null }): PointId {
  if (row.id_num !== null && row.id_num !== undefined) return wireNum(row.id_num);
  if (row.id_uuid !== null && row.id_uuid !== undefined) return row.id_uuid.toLowerCase();
  throw new Error('point row has neither id_num nor id_uuid');
}

/** Parsed id → wire id. */
export function toWireId(id: ParsedPointId): PointId {
  return 'num' in id ? wireNum(id.num) : id.uuid;
}

/** Parsed id → the value of the `pid` column (`coalesce(id_num::text, id_uuid::text)`). */
export function pidOf(id: ParsedPointId): string {
  return 'num' in id ? id.num : id.uuid;
}

/** Columns for an insert: `{ id_num, id_uuid }` with exactly one non-null. */
export function idColumns(id: ParsedPointId): { id_num: string | null; id_uuid: string | null } {
  return 'num' in id ? { id_num: id.num, id_uuid: null } : { id_num: null, id_uuid: id.uuid };
}

/**
 * Qdrant's id order as SQL `order by` text: all numeric ids first, then UUIDs. Do not select an
 * output column aliased `id_num`/`id_uuid` with another type (e.g. `id_num::text as id_num`) in the
 * same query: `order by` resolves names to output columns first and would sort the text.
 */
export const ID_ORDER = '(id_uuid is not null), id_num, id_uuid';

/** `ID_ORDER` as a postgres.js fragment, for `order by ${idOrder(sql)}`. */
export function idOrder(sql: postgres.Sql): postgres.PendingQuery<postgres.Row[]> {
  return sql.unsafe(ID_ORDER);
}

function asParsed(id: PointId | ParsedPointId): ParsedPointId {
  return typeof id === 'object' ? id : parsePointId(id);
}

/** `id_num` / `id_uuid`, qualified with a table alias when one is given. */
function idCols(sql: postgres.Sql, alias?: string) {
  return alias === undefined
    ? { num: sql`id_num`, uuid: sql`id_uuid` }
    : { num: sql`${sql(alias)}.id_num`, uuid: sql`${sql(alias)}.id_uuid` };
}

/**
 * Boolean fragment "row id >= `id`" in `ID_ORDER` (scroll `offset` is inclusive).
 * Numeric offset: every UUID row, or `id_num >= n`. UUID offset: `id_uuid >= u` (numeric rows are
 * all before any UUID, and their `id_uuid` is null). Never NULL, so it is safe under `not`.
 */
export function idAtOrAfter(
  sql: postgres.Sql,
  id: PointId | ParsedPointId,
  alias?: string,
): postgres.PendingQuery<postgres.Row[]> {
  const p = asParsed(id);
  const c = idCols(sql, alias);
  if ('num' in p) return sql`(${c.uuid} is not null or coalesce(${c.num} >= ${p.num}::numeric, false))`;
  return sql`coalesce(${c.uuid} >= ${p.uuid}::uuid, false)`;
}

/**
 * Boolean fragment "row id is one of `ids`" (numeric and UUID ids may be mixed). Empty → false.
 * Never NULL (a numeric row has a NULL `id_uuid`), so it is safe under `not` (must_not).
 */
export function idIn(
  sql: postgres.Sql,
  ids: readonly ParsedPointId[],
  alias?: string,
): postgres.PendingQuery<postgres.Row[]> {
  const nums = [...new Set(ids.flatMap((i) => ('num' in i ? [i.num] : [])))];
  const uuids = [...new Set(ids.flatMap((i) => ('uuid' in i ? [i.uuid] : [])))];
  const c = idCols(sql, alias);
  if (nums.length === 0 && uuids.length === 0) return sql`false`;
  if (uuids.length === 0) return sql`coalesce(${c.num} = any(${nums}::numeric[]), false)`;
  if (nums.length === 0) return sql`coalesce(${c.uuid} = any(${uuids}::uuid[]), false)`;
  return sql`coalesce(${c.num} = any(${nums}::numeric[]) or ${c.uuid} = any(${uuids}::uuid[]), false)`;
}
