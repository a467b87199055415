/**
 * Vector kinds behind one interface: what a query vector is (`resolveQueryVector`: dense,
 * multivector or sparse, from raw input or from a stored point) and the nearest points to it
 * (`nearestRows`: among a filter, optionally only among given candidates). query.ts and the
 * deprecated search call these for every kind; recommend / discover / context can score
 * candidates of any kind the same way (`restrict`).
 *
 * - dense: search.ts `knnRows` (HNSW or exact, pgvector distance operators);
 * - multi: multivector.ts (exact MaxSim);
 * - sparse: sparse.ts (inverted index, dot product, IDF).
 */
import type postgres from 'postgres';
import type { QdrantSearchParams } from '@gatehouse/contracts';
import { tableOf, type CollectionMeta, type Db, type DenseVector, type Fragment } from '../collections/catalog.ts';
import { QdrantError, wrongInput } from '../errors.ts';
import { parsePointId, pidOf, type ParsedPointId } from '../points/ids.ts';
import { multiRows } from './multivector.ts';
import type { PointRow } from '../points/records.ts';
import { knnRows, type KnnRequest } from '../search/search.ts';
import { idfParams, sparseRows, type IdfParams } from './sparse.ts';
import { notExistingVector, parseVectorText, prepareDense, prepareMulti, prepareSparse, type SparseValue } from './vectors.ts';
import { filterWhere, pidIn } from '../filter/where.ts';

export type QueryVector =
  | { kind: 'dense'; vector: DenseVector; query: number[] }
  | { kind: 'multi'; vector: DenseVector; query: number[][] }
  | { kind: 'sparse'; name: string; query: SparseValue; idf: IdfParams };

/** Everything of a nearest search but the query vector. */
export type NearestOptions = Omit<KnnRequest, 'vector' | 'query'>;
export type ScoredRowOf = { row: PointRow; score: number };

/** Filter, excluded ids and candidate restriction as WHERE conditions on the point table. */
export function candidateConds(db: Db, meta: CollectionMeta, o: NearestOptions): Fragment[] {
  const c: Fragment[] = [filterWhere(db, meta, o.filter)];
  if (o.exclude.length) c.push(db`not ${pidIn(db, o.exclude)}`);
  if (o.restrict) c.push(pidIn(db, o.restrict));
  return c;
}

/** Which kind of vector `name` is (`undefined` for an unknown name). */
export function vectorKindOf(meta: CollectionMeta, name: string): QueryVector['kind'] | undefined {
  const d = meta.dense.get(name);
  if (d) return d.multi ? 'multi' : 'dense';
  return meta.sparse.has(name) ? 'sparse' : undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isPointIdInput = (v: unknown): v is number | string => typeof v === 'number' || typeof v === 'string';

const vectorNotFound = (name: string) => new QdrantError(404, `Not found: Vector with name ${JSON.stringify(name)} for point not found`);

/** The stored vector `using` of a point (404 when the point or that vector is missing). */
async function storedVector(db: Db, schema: string, meta: CollectionMeta, using: string, id: ParsedPointId): Promise<unknown> {
  const dense = meta.dense.get(using);
  const table = tableOf(db, schema, meta);
  if (dense) {
    const [row] = await db<{ v: string | null }[]>`select ${db(dense.column)}::text as v from ${table} where pid = ${pidOf(id)}`;
    if (!row) throw new QdrantError(404, `Not found: No point with id ${pidOf(id)} found`);
    if (row.v === null) throw vectorNotFound(using);
    return parseVectorText(row.v);
  }
  const [row] = await db<{ v: SparseValue | null }[]>`select sparse -> ${using} as v from ${table} where pid = ${pidOf(id)}`;
  if (!row) throw new QdrantError(404, `Not found: No point with id ${pidOf(id)} found`);
  if (row.v === null) throw vectorNotFound(using);
  return row.v;
}

/**
 * The query vector for input `input` on vector `using`: a raw vector of the vector's kind (a
 * dense vector counts as a one-row multivector), or a point id (that point's stored vector).
 */
export async function resolveQueryVector(
  db: Db,
  schema: string,
  meta: CollectionMeta,
  using: string,
  input: unknown,
  params?: QdrantSearchParams,
): Promise<QueryVector> {
  if (!meta.dense.has(using) && !meta.sparse.has(using)) throw notExistingVector(using);
  const raw = isPointIdInput(input) ? await storedVector(db, schema, meta, using, parsePointId(input)) : input;
  const dense = meta.dense.get(using);
  if (dense) {
    if ((params as { idf?: unknown } | undefined)?.idf != null) idfParams(meta, using, params);
    if (dense.multi) return { kind: 'multi', vector: dense, query: prepareMulti(dense, raw) };
    return { kind: 'dense', vector: dense, query: prepareDense(dense, raw) };
  }
  if (!isObject(raw)) throw wrongInput('Conversion between sparse and regular vectors failed');
  return { kind: 'sparse', name: using, query: prepareSparse(raw, true), idf: idfParams(meta, using, params) };
}

/** The nearest points to `qv`, best first, with Qdrant's scores (after offset and threshold). */
export async function nearestRows(
  sql: postgres.Sql,
  schema: string,
  meta: CollectionMeta,
  qv: QueryVector,
  o: NearestOptions,
): Promise<ScoredRowOf[]> {
  switch (qv.kind) {
    case 'dense':
      return knnRows(sql, schema, meta, { ...o, vector: qv.vector, query: qv.query });
    case 'multi':
      return multiRows(sql, schema, meta, qv.vector, qv.query, o);
    case 'sparse':
      return sparseRows(sql, schema, meta, qv.name, qv.query, qv.idf, o);
  }
}

/** The stored value of `qv`'s vector in a row read with that vector selected. */
export function storedOf(qv: QueryVector, row: PointRow): number[] | number[][] | SparseValue {
  if (qv.kind === 'sparse') return ((row.sparse ?? {}) as Record<string, SparseValue>)[qv.name] ?? { indices: [], values: [] };
  return parseVectorText(row[qv.vector.column] as string);
}

/**
 * Qdrant's raw similarity (larger is closer) of two values of `qv`'s kind, in JavaScript (MMR
 * compares candidates with each other): sparse dot product over shared indices (both sorted),
 * MaxSim of multivectors, the dense similarity otherwise.
 */
export function kindSimilarity(qv: QueryVector, a: unknown, b: unknown): number {
  if (qv.kind === 'sparse') {
    const x = a as SparseValue;
    const y = b as SparseValue;
    let s = 0;
    for (let i = 0, j = 0; i < x.indices.length && j < y.indices.length; ) {
      if (x.indices[i] === y.indices[j]) s += x.values[i++]! * y.values[j++]!;
      else if (x.indices[i]! < y.indices[j]!) i++;
      else j++;
    }
    return s;
  }
  const dense = (p: readonly number[], q: readonly number[]) => {
    let s = 0;
    switch (qv.vector.distance) {
      case 'Dot':
      case 'Cosine':
        for (let i = 0; i < p.length; i++) s += p[i]! * (q[i] ?? 0);
        return s;
      case 'Euclid':
        for (let i = 0; i < p.length; i++) s += (p[i]! - (q[i] ?? 0)) ** 2;
        return -s;
      case 'Manhattan':
        for (let i = 0; i < p.length; i++) s += Math.abs(p[i]! - (q[i] ?? 0));
        return -s;
    }
  };
  if (qv.kind === 'dense') return dense(a as number[], b as number[]);
  let sum = 0;
  for (const row of a as number[][]) sum += Math.max(...(b as number[][]).map((r) => dense(row, r)));
  return sum;
}
