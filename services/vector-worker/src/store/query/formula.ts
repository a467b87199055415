/**
 * `{formula, defaults}` rescoring of prefetch results (Qdrant's rescore_formula): every candidate
 * (the union of the prefetches) gets the value of an expression over
 * - `$score` / `$score[i]` — its score in prefetch i (absent: `defaults["$score[i]"]`, else 0),
 * - payload keys — the value at the key (one value, or the only element of an array; absent or
 *   empty: `defaults[key]`; else 400), numbers only,
 * - conditions (any filter condition) — 1 or 0,
 * - constants, `sum`, `mult`, `neg`, `abs`, `div` (`by_zero_default`), `sqrt`, `pow`, `exp`,
 *   `ln`, `log10`, `geo_distance` (haversine metres), `datetime` / `datetime_key` (seconds),
 *   `lin_decay` / `exp_decay` / `gauss_decay` (`x`, `target`, `scale`, `midpoint`).
 * A non-finite result is Qdrant's 400 "The expression … produced a non-finite number". Results are
 * ordered best first, `score_threshold` keeps scores above it. Conditions are evaluated in SQL on
 * the candidates (one read with the payloads); the arithmetic here.
 */
import { tableOf } from '../collections/catalog.ts';
import { QdrantError } from '../errors.ts';
import type { Ctx } from './examples.ts';
import { parseKeyPath, type PathSegment } from '../points/json-path.ts';
import { idOrder } from '../points/ids.ts';
import { parsedOfPid, pidOfRow, type Ranked } from './scored.ts';
import type { PointRow } from '../points/records.ts';
import { filterWhere, pidIn } from '../filter/where.ts';

type Expr =
  | { op: 'const'; value: number }
  | { op: 'score'; index: number }
  | { op: 'payload'; key: string; path: PathSegment[] }
  | { op: 'condition'; index: number }
  | { op: 'geo'; origin: { lat: number; lon: number }; key: string; path: PathSegment[] }
  | { op: 'datetime'; seconds: number }
  | { op: 'datetime_key'; key: string; path: PathSegment[] }
  | { op: 'sum' | 'mult'; args: Expr[] }
  | { op: 'neg' | 'abs' | 'sqrt' | 'exp' | 'ln' | 'log10'; arg: Expr }
  | { op: 'div'; left: Expr; right: Expr; byZero?: number }
  | { op: 'pow'; base: Expr; exponent: Expr }
  | { op: 'decay'; kind: 'lin' | 'exp' | 'gauss'; x: Expr; target?: Expr; lambda: number };

export type ParsedFormula = { root: Expr; conditions: unknown[]; defaults: Record<string, unknown> };

const bad = (msg: string) => new QdrantError(400, `Bad request: ${msg}`);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const UNARY = ['neg', 'abs', 'sqrt', 'exp', 'ln', 'log10'] as const;
const DECAYS = { lin_decay: 'lin', exp_decay: 'exp', gauss_decay: 'gauss' } as const;
/** Nesting guard: a formula is a tree the client wrote; this bounds the recursion. */
const MAX_DEPTH = 64;

function parseVariable(s: string): Expr {
  if (s.startsWith('$')) {
    const m = /^\$score(?:\[(\d+)\])?$/.exec(s);
    if (m) return { op: 'score', index: m[1] === undefined ? 0 : Number(m[1]) };
    if (/^\$score/.test(s)) throw bad(`Invalid reserved variable: ${s}`);
    throw bad(`Invalid reserved word: ${s}`);
  }
  let path: PathSegment[];
  try {
    path = parseKeyPath(s);
  } catch {
    throw bad(`Invalid payload variable: ${s}`);
  }
  return { op: 'payload', key: s, path };
}

function decayLambda(kind: 'lin' | 'exp' | 'gauss', midpoint = 0.5, scale = 1): number {
  if (kind === 'lin') {
    if (!(midpoint >= 0 && midpoint <= 1)) throw bad(`Linear decay midpoint should be in the range [0.0, 1.0], got ${midpoint}.`);
  } else if (!(midpoint > 0 && midpoint < 1)) throw bad(`Decay midpoint should be in the range (0.0, 1.0), got ${midpoint}.`);
  if (!(scale > 0)) throw bad(`Decay scale should be non-zero positive, got ${scale}.`);
  if (kind === 'lin') return (1 - midpoint) / scale;
  if (kind === 'exp') return Math.log(midpoint) / scale;
  return Math.log(midpoint) / scale ** 2;
}

function parseDatetime(s: string): number {
  // A date-time without an offset is UTC in Qdrant; JavaScript would read it as local time.
  const hasTime = /T|\s\d/.test(s);
  const hasOffset = /[zZ]|[+-]\d\d:?\d\d$/.test(s);
  const t = Date.parse(hasTime && !hasOffset ? `${s}Z` : s);
  if (Number.isNaN(t)) throw new QdrantError(400, `Format error in JSON body: invalid datetime: ${s}`);
  return Math.floor(t / 1000);
}

export function parseFormula(q: Record<string, unknown>): ParsedFormula {
  const conditions: unknown[] = [];
  const parse = (e: unknown, depth: number): Expr => {
    if (depth > MAX_DEPTH) throw bad('Formula is nested too deeply');
    if (typeof e === 'number') return { op: 'const', value: e };
    if (typeof e === 'string') return parseVariable(e);
    if (!isObject(e)) throw new QdrantError(400, 'Format error in JSON body: data did not match any variant of untagged enum Expression');
    const sub = (v: unknown) => parse(v, depth + 1);
    if ('sum' in e || 'mult' in e) {
      const op = 'sum' in e ? 'sum' : 'mult';
      const args = e[op];
      if (!Array.isArray(args)) throw new QdrantError(400, `Format error in JSON body: invalid type: expected a sequence`);
      return { op, args: args.map(sub) };
    }
    for (const op of UNARY) if (op in e) return { op, arg: sub(e[op]) };
    if ('div' in e) {
      const d = e.div as { left: unknown; right: unknown; by_zero_default?: number | null };
      return { op: 'div', left: sub(d.left), right: sub(d.right), ...(typeof d.by_zero_default === 'number' ? { byZero: d.by_zero_default } : {}) };
    }
    if ('pow' in e) {
      const p = e.pow as { base: unknown; exponent: unknown };
      return { op: 'pow', base: sub(p.base), exponent: sub(p.exponent) };
    }
    if ('geo_distance' in e) {
      const g = e.geo_distance as { origin: { lat: number; lon: number }; to: string };
      return { op: 'geo', origin: g.origin, key: g.to, path: (parseVariable(g.to) as { path: PathSegment[] }).path };
    }
    if ('datetime' in e) return { op: 'datetime', seconds: parseDatetime(String(e.datetime)) };
    if ('datetime_key' in e) {
      const key = String(e.datetime_key);
      return { op: 'datetime_key', key, path: (parseVariable(key) as { path: PathSegment[] }).path };
    }
    for (const [name, kind] of Object.entries(DECAYS)) {
      if (name in e) {
        const d = e[name] as { x: unknown; target?: unknown; scale?: number | null; midpoint?: number | null };
        return {
          op: 'decay',
          kind,
          x: sub(d.x),
          ...(d.target !== undefined && d.target !== null ? { target: sub(d.target) } : {}),
          lambda: decayLambda(kind, d.midpoint ?? undefined, d.scale ?? undefined),
        };
      }
    }
    // Anything else is a filter condition, worth 1 when the point matches.
    conditions.push(e);
    return { op: 'condition', index: conditions.length - 1 };
  };
  const root = parse(q.formula, 0);
  const defaults = isObject(q.defaults) ? q.defaults : {};
  return { root, conditions, defaults };
}

/** Qdrant's multi-value read: every value at the path, arrays at the end flattened. */
export function valuesAt(payload: unknown, path: PathSegment[]): unknown[] {
  let cur: unknown[] = [payload];
  for (const seg of path) {
    const next: unknown[] = [];
    for (const v of cur) {
      if ('key' in seg) {
        if (isObject(v) && seg.key in v) next.push(v[seg.key]);
      } else if (Array.isArray(v)) {
        if ('all' in seg) next.push(...v);
        else if (seg.index < v.length) next.push(v[seg.index]);
      }
    }
    cur = next;
  }
  // Nulls are no value (Qdrant's value retriever skips them).
  return cur.flatMap((v) => (Array.isArray(v) ? v : [v])).filter((v) => v !== null);
}

const HAVERSINE_EARTH_RADIUS = 6371008.8;

function haversine(a: { lat: number; lon: number }, b: { lat: number; lon: number }): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLon = (b.lon - a.lon) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * HAVERSINE_EARTH_RADIUS * Math.asin(Math.sqrt(h));
}

type Point = { scores: (number | undefined)[]; payload: Record<string, unknown>; conditions: boolean[] };

function evaluate(f: ParsedFormula, p: Point): number {
  const typed = <T>(key: string, path: PathSegment[], expected: string, conv: (v: unknown) => T | string): T => {
    const vs = valuesAt(p.payload, path);
    const value = vs.length === 0 ? f.defaults[key] : vs.length === 1 ? vs[0] : vs;
    const fail = (why: string) => bad(`Expected ${expected} value for ${key} in the payload and/or in the formula defaults. Error: ${why}`);
    if (value === undefined) throw fail('No value found in a payload nor defaults');
    const out = conv(value);
    if (typeof out === 'string' && expected !== 'string') throw fail(out);
    return out as T;
  };
  const finite = (v: number, text: string) => {
    // Rust prints non-finite floats as `inf`, `-inf`, `NaN`.
    text = text.replace(/-?Infinity/g, (m) => (m.startsWith('-') ? '-inf' : 'inf'));
    if (!Number.isFinite(v)) throw bad(`The expression ${text} produced a non-finite number`);
    return v;
  };
  const ev = (e: Expr): number => {
    switch (e.op) {
      case 'const':
        return e.value;
      case 'score': {
        const s = p.scores[e.index];
        if (s !== undefined) return s;
        const d = f.defaults[`$score[${e.index}]`] ?? (e.index === 0 ? f.defaults.$score : undefined);
        return typeof d === 'number' ? d : 0;
      }
      case 'payload':
        return typed(e.key, e.path, 'number', (v) => (typeof v === 'number' ? v : 'Value is not a number'));
      case 'condition':
        return p.conditions[e.index] ? 1 : 0;
      case 'geo': {
        const g = typed(e.key, e.path, 'geo point', (v) =>
          isObject(v) && typeof v.lat === 'number' && typeof v.lon === 'number' ? { lat: v.lat, lon: v.lon } : 'invalid geo point',
        );
        return haversine(e.origin, g);
      }
      case 'datetime':
        return e.seconds;
      case 'datetime_key':
        return typed(e.key, e.path, 'datetime', (v) => {
          if (typeof v !== 'string') return 'value is not a string';
          const t = Date.parse(v);
          return Number.isNaN(t) ? `invalid datetime ${v}` : Math.floor(t / 1000);
        });
      case 'sum':
        return e.args.reduce((acc, a) => acc + ev(a), 0);
      case 'mult': {
        let product = 1;
        for (const a of e.args) {
          const v = ev(a);
          if (v === 0) return 0;
          product *= v;
        }
        return product;
      }
      case 'neg':
        return -ev(e.arg);
      case 'abs':
        return Math.abs(ev(e.arg));
      case 'sqrt': {
        const v = ev(e.arg);
        return finite(Math.sqrt(v), `√${v} = ${Math.sqrt(v)}`);
      }
      case 'exp': {
        const v = ev(e.arg);
        return finite(Math.exp(v), `exp(${v}) = ${Math.exp(v)}`);
      }
      case 'ln': {
        const v = ev(e.arg);
        return finite(Math.log(v), `ln(${v}) = ${Math.log(v)}`);
      }
      case 'log10': {
        const v = ev(e.arg);
        return finite(Math.log10(v), `log10(${v}) = ${Math.log10(v)}`);
      }
      case 'div': {
        const l = ev(e.left);
        if (l === 0) return 0;
        const r = ev(e.right);
        if (r === 0 && e.byZero !== undefined) return e.byZero;
        return finite(l / r, `${l}/${r} = ${l / r}`);
      }
      case 'pow': {
        const b = ev(e.base);
        const x = ev(e.exponent);
        return finite(b ** x, `${b}^${x} = ${b ** x}`);
      }
      case 'decay': {
        const x = ev(e.x);
        const t = e.target ? ev(e.target) : 0;
        if (e.kind === 'lin') return Math.max(0, -e.lambda * Math.abs(x - t) + 1);
        if (e.kind === 'exp') return Math.exp(e.lambda * Math.abs(x - t));
        return Math.exp(e.lambda * (x - t) ** 2);
      }
    }
  };
  return ev(f.root);
}

export async function formulaRescore(
  ctx: Ctx,
  f: ParsedFormula,
  lists: Ranked[][],
  filter: unknown,
  take: number,
  threshold: number | undefined,
): Promise<Ranked[]> {
  const candidates = [...new Set(lists.flat().map((r) => r.pid))];
  if (candidates.length === 0) return [];
  const { sql, schema, meta } = ctx;
  const conds = f.conditions.map((c, i) => sql`(${filterWhere(sql, meta, { must: [c] })}) as ${sql(`c${i}`)}`);
  const extra = conds.reduce((acc, c) => sql`${acc}, ${c}`, sql``);
  const rows = await sql<(PointRow & Record<string, unknown>)[]>`
    select id_num, id_uuid, payload ${extra} from ${tableOf(sql, schema, meta)}
    where ${pidIn(sql, candidates.map(parsedOfPid))} and ${filterWhere(sql, meta, filter)}
    order by ${idOrder(sql)}`;
  const scoreMaps = lists.map((l) => new Map(l.map((r) => [r.pid, r.score])));
  const out: Ranked[] = [];
  for (const row of rows) {
    const pid = pidOfRow(row);
    const score = evaluate(f, {
      scores: scoreMaps.map((m) => m.get(pid)),
      payload: (row.payload ?? {}) as Record<string, unknown>,
      conditions: f.conditions.map((_, i) => row[`c${i}`] === true),
    });
    if (threshold === undefined || Math.fround(score) > Math.fround(threshold)) out.push({ pid, score });
  }
  // Stable: equal scores keep id order.
  return out.sort((a, b) => b.score - a.score).slice(0, take);
}
