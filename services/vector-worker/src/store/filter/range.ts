/**
 * `range` with number bounds compares numbers only (numeric, exact). If every given bound is a
 * string it is a datetime range: bounds and stored strings are parsed like Qdrant's
 * `DateTimeWrapper` (RFC 3339 with `T`/`t`/space, `Z` or ±hh[:mm] offsets, or naive
 * `YYYY-MM-DD[ HH:MM[:SS[.f]]]` taken as UTC); stored strings that do not parse never match;
 * a bound that does not parse is a 400. Mixed number/string bounds are a 400.
 */
import type { Compiler, Fragment, Scope } from './filter-sql.ts';
import type { PathItem } from './key-path.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

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

export function rangeCondition(c: Compiler, r: unknown, path: string, items: readonly PathItem[], scope: Scope): Fragment {
  const sql = c.sql;
  const untagged = (detail?: string) =>
    c.bad(path, `data did not match any variant of untagged enum RangeInterface${detail ? ` (${detail})` : ''}`);
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
    return c.anyElement(scope, items, (e) => {
      const n = sql`(${e})::numeric`;
      const conds = given.map(([k, v]) => cmp(n, ops[k], sql`${String(v)}::numeric`));
      return sql`(case when jsonb_typeof(${e}) = 'number' then ${c.join(conds, 'and')} else false end)`;
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
    return c.anyElement(scope, items, (e) => {
      const ts = storedTimestamp(c, sql`(${e} #>> '{}')`);
      const conds = bounds.map(([k, v]) => cmp(ts, ops[k], sql`${v}::text::timestamptz`));
      return sql`(case when jsonb_typeof(${e}) = 'string' then coalesce(${c.join(conds, 'and')}, false) else false end)`;
    });
  }
  throw untagged();
}

/**
 * timestamptz of a stored string, or NULL when Qdrant would not parse it. Never raises: the
 * string is matched against the accepted shapes, rebuilt as `…T…+hh:mm` and validated by
 * JSONPath `.datetime()` in silent mode (which rejects e.g. Feb 30) before the cast.
 */
function storedTimestamp(c: Compiler, s: Fragment): Fragment {
  const sql = c.sql;
  return sql`(select case when m is null then null else (jsonb_path_query_first(jsonb_build_array(
      m[1] || 'T' || coalesce(m[2], '00:00') || coalesce(m[3], ':00') || coalesce(substr(m[4], 1, 7), '') ||
      case when m[5] is null or upper(m[5]) = 'Z' then '+00:00'
           when length(m[5]) = 3 then m[5] || ':00'
           when length(m[5]) = 5 then substr(m[5], 1, 3) || ':' || substr(m[5], 4, 2)
           else m[5] end),
    'strict $[0].datetime()', '{}'::jsonb, true) #>> '{}')::timestamptz end
    from regexp_match(${s}, ${DT_RE_SRC}::text) as m)`;
}
