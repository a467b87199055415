/**
 * Example inputs of the query API (`nearest`, `recommend`, `discover`, `context`,
 * `relevance_feedback`): a raw vector or a point id whose vector is read from this collection or
 * from `lookup_from`'s — and the one scoring primitive the custom-scored queries are built on:
 * `similaritySql`, Qdrant's raw similarity (larger is better) between a point's vector and a
 * prepared example, as SQL over the point table.
 *
 * Everything vector-kind specific lives here (`prepareExample`, `readExample`, `similaritySql`,
 * `similarityOf`), so the query kinds in recommend.ts / discover.ts need no change when another
 * vector kind learns these four.
 */
import type postgres from 'postgres';
import { loadCollection, tableOf, type CollectionMeta, type DenseVector, type Fragment } from '../collections/catalog.ts';
import { QdrantError, wrongInput } from '../errors.ts';
import { parsePointId, pidOf, type ParsedPointId } from '../points/ids.ts';
import { denseVectorNamed } from '../search/search.ts';
import { maxSimExpression } from '../vectors/multivector.ts';
import {
  castType,
  checkDimension,
  notExistingVector,
  parseVectorText,
  prepareDense,
  prepareMulti,
  prepareSparse,
  vectorText,
  type SparseValue,
} from '../vectors/vectors.ts';
import { pidIn, pointNotFound } from '../filter/where.ts';

export type Ctx = { sql: postgres.Sql; schema: string; meta: CollectionMeta };

/** A sparse vector a query scores against: the point's `sparse` jsonb and its inverted index. */
export type SparseTarget = { sparse: true; name: string; schema: string; table: string; side: string };

/** The vector a query scores against (the stage's `using`): dense (or multi), or sparse. */
export type Target = DenseVector | SparseTarget;

export const isSparseTarget = (t: Target): t is SparseTarget => (t as SparseTarget).sparse === true;

/**
 * An example ready to score with: checked against the target and preprocessed (Cosine: unit
 * length); `multi` holds the rows when the target is a multivector (then `values` is empty).
 */
export type Example = { values: number[]; multi?: number[][]; sparse?: SparseValue };

/** Qdrant's `LookupLocation`. */
export type LookupFrom = { collection: string; vector?: string | null };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
export const isPointIdInput = (v: unknown): v is number | string => typeof v === 'number' || typeof v === 'string';

/** The vector `using` names in this collection (400 for an unknown name). */
export function targetOf(ctx: Ctx, using: string | undefined): Target {
  const name = using ?? '';
  if (ctx.meta.sparse.has(name)) {
    return { sparse: true, name, schema: ctx.schema, table: ctx.meta.table, side: `points_${ctx.meta.id}_sparse` };
  }
  return denseVectorNamed(ctx.meta, name);
}

/** A raw input checked against the target and preprocessed (wrong kinds: Qdrant's conversion errors). */
export function prepareExample(target: Target, raw: unknown): Example {
  if (isSparseTarget(target)) return { values: [], sparse: prepareSparse(raw) };
  if (target.multi) return { values: [], multi: prepareMulti(target, raw) };
  return { values: prepareDense(target, raw) };
}

/** The raw values of a dense example before preprocessing (for `average_vector`), dimension-checked. */
export function rawValues(target: DenseVector, raw: unknown): number[] {
  if (isObject(raw)) throw wrongInput('Conversion between sparse and regular vectors failed');
  checkDimension(target, raw as number[]);
  return raw as number[];
}

/** Whether the point holds the target vector (only such points are scored). */
export function hasTargetSql(db: postgres.Sql, target: Target): Fragment {
  return isSparseTarget(target) ? db`sparse ? ${target.name}` : db`${db(target.column)} is not null`;
}

/**
 * Where ids of a stage are looked up: this collection and `using`, or `lookup_from`'s collection
 * (404 if missing, checked even when no id is used, as Qdrant does) and its `vector` (default:
 * `using`).
 */
export type Source = { meta: CollectionMeta; vector: string; other: boolean };

/** A collection named by `lookup_from` / `with_lookup`: Qdrant words its absence differently. */
export async function loadOtherCollection(ctx: Ctx, name: string): Promise<CollectionMeta> {
  return loadCollection(ctx.sql, ctx.schema, name).catch((err: unknown) => {
    throw err instanceof QdrantError && err.status === 404 ? new QdrantError(404, `Not found: Collection ${name} not found`) : err;
  });
}

export async function sourceOf(ctx: Ctx, using: string | undefined, lookup: unknown): Promise<Source> {
  if (lookup === undefined || lookup === null) return { meta: ctx.meta, vector: using ?? '', other: false };
  const l = lookup as LookupFrom;
  const meta = l.collection === ctx.meta.name ? ctx.meta : await loadOtherCollection(ctx, l.collection);
  return { meta, vector: l.vector ?? using ?? '', other: meta.id !== ctx.meta.id };
}

/**
 * The stored vectors of `ids` in the source: pid → raw value (null when the point lacks that
 * vector). A missing point is Qdrant's 404 `No point with id … found`; an unknown vector name in
 * the source is 400, but only once a point was found (Qdrant reads the points first).
 */
export async function readExamples(ctx: Ctx, source: Source, ids: readonly ParsedPointId[]): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  if (ids.length === 0) return out;
  const { sql, schema } = ctx;
  const vector = source.meta.dense.get(source.vector);
  const sparse = source.meta.sparse.has(source.vector);
  const value = vector ? sql`${sql(vector.column)}::text` : sparse ? sql`(sparse -> ${source.vector})::text` : sql`null::text`;
  const rows = await sql<{ pid: string; v: string | null }[]>`
    select pid, ${value} as v from ${tableOf(sql, schema, source.meta)} where ${pidIn(sql, ids)}`;
  const found = new Map(rows.map((r) => [r.pid, r.v]));
  for (const id of ids) if (!found.has(pidOf(id))) throw pointNotFound(id);
  if (!vector && !sparse) throw notExistingVector(source.vector);
  for (const [pid, v] of found) out.set(pid, v === null ? null : sparse ? (JSON.parse(v) as SparseValue) : parseVectorText(v));
  return out;
}

/** Qdrant's error for an example id whose point lacks the vector (nearest, discover, context, feedback). */
export const vectorNotFound = (name: string) => new QdrantError(404, `Not found: Vector with name ${JSON.stringify(name)} for point not found`);

/**
 * Resolves example inputs of one stage: ids through `readExamples` (call `load` once with every
 * id first), raw vectors as they are. `null` = the point has no such vector.
 */
export class Resolver {
  private stored = new Map<string, unknown>();
  constructor(
    private readonly ctx: Ctx,
    readonly source: Source,
  ) {}

  async load(inputs: readonly unknown[]): Promise<void> {
    const ids = inputs.filter(isPointIdInput).map((i) => parsePointId(i));
    this.stored = await readExamples(this.ctx, this.source, ids);
  }

  /** The raw value of an input (`null` when an id's point lacks the vector). */
  raw(input: unknown): unknown {
    if (!isPointIdInput(input)) return input;
    return this.stored.get(pidOf(parsePointId(input))) ?? null;
  }

  /** The raw value, or Qdrant's 404 when an id's point lacks the vector. */
  required(input: unknown): unknown {
    const v = this.raw(input);
    if (v === null) throw vectorNotFound(this.source.vector);
    return v;
  }
}

/** Ids a list of example inputs references. */
export function idsOf(inputs: readonly unknown[]): ParsedPointId[] {
  return inputs.filter(isPointIdInput).map((i) => parsePointId(i));
}

/**
 * Qdrant's raw similarity of the point's `target` vector to `e`, larger is better: Dot and Cosine
 * (unit vectors) the dot product, Euclid the negated squared distance, Manhattan the negated
 * distance — the values Qdrant's custom scorers combine, before any distance postprocessing.
 */
export function similaritySql(db: postgres.Sql, target: Target, e: Example): Fragment {
  // Sparse: the dot product over shared dimensions, read from the inverted index (sparse.ts) for
  // the outer row — 0 when none is shared, as Qdrant's sparse scorer.
  if (isSparseTarget(target)) {
    const q = e.sparse ?? { indices: [], values: [] };
    return db`coalesce((
      select sum(s.value::float8 * q.w) from ${db(target.schema)}.${db(target.side)} s
      join unnest(${q.indices}::bigint[], ${q.values}::float8[]) as q(idx, w) on s.idx = q.idx
      where s.name = ${target.name} and s.pid = ${db(target.schema)}.${db(target.table)}.pid), 0)`;
  }
  // A multivector's raw similarity is its MaxSim sum (multivector.ts).
  if (target.multi) return maxSimExpression(db, target, e.multi ?? []);
  const col = db(target.column);
  const v = db`${vectorText(e.values, target)}::${db.unsafe(castType(target))}`;
  switch (target.distance) {
    case 'Dot':
    case 'Cosine':
      return db`(-(${col} <#> ${v}))`;
    case 'Euclid':
      return db`(-power(${col} <-> ${v}, 2))`;
    case 'Manhattan':
      return db`(-(${col} <+> ${v}))`;
  }
}

/** The same similarity in JavaScript, between two prepared values (MMR's pairwise matrix). */
export function similarityOf(target: DenseVector, a: readonly number[], b: readonly number[]): number {
  let s = 0;
  switch (target.distance) {
    case 'Dot':
    case 'Cosine':
      for (let i = 0; i < a.length; i++) s += a[i]! * (b[i] ?? 0);
      return s;
    case 'Euclid':
      for (let i = 0; i < a.length; i++) s += (a[i]! - (b[i] ?? 0)) ** 2;
      return -s;
    case 'Manhattan':
      for (let i = 0; i < a.length; i++) s += Math.abs(a[i]! - (b[i] ?? 0));
      return -s;
  }
}

/** Qdrant's `fast_sigmoid` and `scaled_fast_sigmoid` as SQL. */
export const fastSigmoidSql = (db: postgres.Sql, x: Fragment): Fragment => db`(${x} / (1 + abs(${x})))`;
export const scaledSigmoidSql = (db: postgres.Sql, x: Fragment): Fragment => db`(0.5 * (${fastSigmoidSql(db, x)} + 1))`;
