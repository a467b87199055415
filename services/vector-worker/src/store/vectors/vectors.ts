/**
 * Vector input checks (names, dimensions, kinds), Cosine normalisation, the text form pgvector
 * parses (vector-wire.ts), and the `vector` field of records (reference §1.6, §1.8).
 */
import type {
  QdrantSparseVector,
  QdrantVectorOutput,
  QdrantVectorStruct,
  QdrantWithVector,
} from '@gatehouse/contracts';
import type { CollectionMeta, DenseVector } from '../collections/catalog.ts';
import { wrongInput } from '../errors.ts';
import { bm25, isDocument } from './bm25.ts';
import { turbo4 } from './turbo4.ts';
import { vectorLiteral } from './vector-wire.ts';

export type SparseValue = { indices: number[]; values: number[] };

/** A point's vectors after checks: dense values (or multivectors) by column, sparse by name. */
export type PreparedVectors = {
  dense: Map<string, number[] | number[][]>;
  sparse: Map<string, SparseValue>;
};

const isSparse = (v: unknown): v is QdrantSparseVector =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && 'indices' in v && 'values' in v;
const isMulti = (v: unknown): v is number[][] => Array.isArray(v) && v.length > 0 && Array.isArray(v[0]);

export const notExistingVector = (name: string) => wrongInput(`Not existing vector name error: ${name}`);

export function checkDimension(vector: DenseVector, value: readonly number[]): void {
  if (value.length !== vector.size) {
    throw wrongInput(`Vector dimension error: expected dim: ${vector.size}, got ${value.length}`);
  }
}

/** Qdrant's Cosine preprocessing: scale to unit length (a zero vector stays as it is). */
export function normalize(v: readonly number[]): number[] {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm < 1.1920929e-7) return [...v];
  return v.map((x) => x / norm);
}

/**
 * One stored dense vector after the datatype's conversion, as Qdrant keeps it: Cosine vectors
 * are normalised first; uint8 truncates to an integer and saturates to 0..255 (Rust's `as u8`);
 * turbo4 keeps a 4-bit code per dimension (turbo4.ts) and we store its dequantized value, so the
 * vector is quantized once, at ingest. float16 rounding happens in the `halfvec` column.
 */
function convert(vector: DenseVector, dense: readonly number[]): number[] {
  const v = vector.distance === 'Cosine' && vector.datatype !== 'uint8' ? normalize(dense) : [...dense];
  if (vector.datatype === 'uint8') return v.map((x) => (Number.isNaN(x) ? 0 : Math.min(255, Math.max(0, Math.trunc(x)))));
  // Normalised again after quantizing, so a stored Cosine vector stays unit length and
  // re-ingesting it (snapshot recovery) reproduces it: the 4-bit grid scales with the vector.
  if (vector.datatype === 'turbo4') return vector.distance === 'Cosine' ? normalize(turbo4(v)).map(Math.fround) : turbo4(v);
  return v;
}

/** A checked dense vector to query with (normalised for Cosine; no datatype conversion). */
export function prepareDense(vector: DenseVector, value: unknown): number[] {
  return checkedDense(vector, value, true);
}

function checkedDense(vector: DenseVector, value: unknown, query: boolean): number[] {
  if (isDocument(value)) throw wrongInput(`Inference of dense vectors is not supported by this store (only qdrant/bm25 into sparse vectors)`);
  if (isSparse(value)) throw wrongInput('Conversion between sparse and regular vectors failed');
  if (isMulti(value)) throw wrongInput('Conversion between multi and regular vectors failed');
  const dense = value as number[];
  checkDimension(vector, dense);
  if (query) return vector.distance === 'Cosine' ? normalize(dense) : [...dense];
  return convert(vector, dense);
}

/**
 * A checked multivector (every row of the vector's size), each row prepared as a query vector,
 * or (`stored`) converted to the datatype as it is kept.
 */
export function prepareMulti(vector: DenseVector, value: unknown, stored = false): number[][] {
  if (isSparse(value)) throw wrongInput('Conversion between sparse and regular vectors failed');
  if (!Array.isArray(value) || value.length === 0) throw wrongInput('Multi-vector must not be empty');
  // A plain vector is a multivector of one row (Qdrant's legacy upsert and search forms).
  const rows = isMulti(value) ? value : [value as number[]];
  return rows.map((r) => checkedDense(vector, r, !stored));
}

/** A stored vector of either shape for the column `vector`. */
export function prepareColumn(vector: DenseVector, value: unknown): number[] | number[][] {
  return vector.multi ? prepareMulti(vector, value, true) : checkedDense(vector, value, false);
}

/** Sparse vectors are kept sorted by index, as Qdrant stores them; a BM25 document becomes one. */
export function prepareSparse(value: unknown, query = false): SparseValue {
  if (isDocument(value)) return bm25(value, query);
  if (!isSparse(value)) throw wrongInput('Conversion between sparse and regular vectors failed');
  const pairs = value.indices.map((i, k) => [i, value.values[k] ?? 0] as const).sort((a, b) => a[0] - b[0]);
  return { indices: pairs.map((p) => p[0]), values: pairs.map((p) => p[1]) };
}

/** Check a `VectorStruct` against the collection's vectors. */
export function prepareVectorStruct(meta: CollectionMeta, struct: QdrantVectorStruct): PreparedVectors {
  const out: PreparedVectors = { dense: new Map(), sparse: new Map() };
  if (Array.isArray(struct)) {
    const unnamed = meta.dense.get('');
    if (!unnamed) throw notExistingVector('');
    out.dense.set(unnamed.column, prepareColumn(unnamed, struct));
    return out;
  }
  for (const [name, value] of Object.entries(struct)) {
    const dense = meta.dense.get(name);
    if (dense) out.dense.set(dense.column, prepareColumn(dense, value));
    else if (meta.sparse.has(name)) out.sparse.set(name, prepareSparse(value));
    else throw notExistingVector(name);
  }
  return out;
}

/**
 * pgvector's text input form for column `d` (a multivector as a Postgres array literal of
 * vectors), with exact hexadecimal elements (vector-wire.ts).
 */
export function vectorText(v: readonly number[] | readonly number[][], d?: DenseVector): string {
  return vectorLiteral(v, d?.datatype === 'float16');
}

/** The Postgres type a vector's values are cast to: `vector`/`halfvec`, an array of them for multivectors. */
export function castType(d: DenseVector): string {
  const base = d.datatype === 'float16' ? 'halfvec' : 'vector';
  return d.multi ? `${base}[]` : base;
}

/** A column's text (`[1,2]`, or `{"[1,2]","[3,4]"}` for a multivector) back to numbers. */
export function parseVectorText(text: string): number[] | number[][] {
  if (text.startsWith('{')) return JSON.parse(`[${text.slice(1, -1).replace(/"/g, '')}]`) as number[][];
  return JSON.parse(text) as number[];
}

/** Which vector names a read returns: all, none, or a checked list. */
export type VectorSelection = { all: boolean; names: string[] };

export function vectorSelection(meta: CollectionMeta, with_vector: QdrantWithVector): VectorSelection {
  if (with_vector === true) return { all: true, names: [] };
  if (with_vector === false) return { all: false, names: [] };
  for (const name of with_vector) {
    if (!meta.dense.has(name) && !meta.sparse.has(name)) throw notExistingVector(name);
  }
  return { all: false, names: [...new Set(with_vector)] };
}

export function wantsVectors(sel: VectorSelection): boolean {
  return sel.all || sel.names.length > 0;
}

/** Dense columns a read must select for `sel`. */
export function selectedColumns(meta: CollectionMeta, sel: VectorSelection): DenseVector[] {
  return [...meta.dense.values()].filter((d) => sel.all || sel.names.includes(d.name));
}

/**
 * The `vector` field of a record: a plain array for an unnamed-vector collection whose point has
 * only that vector; otherwise a map of the present vectors (sparse ones included).
 * `row[column]` holds pgvector's text (`[1,2,3]`) or null; `row.sparse` the sparse map.
 */
export function vectorOutput(
  meta: CollectionMeta,
  sel: VectorSelection,
  row: Record<string, unknown>,
): QdrantVectorOutput {
  const named: Record<string, number[] | QdrantSparseVector> = {};
  for (const d of selectedColumns(meta, sel)) {
    const text = row[d.column];
    if (typeof text === 'string') named[d.name] = parseVectorText(text) as number[];
  }
  const sparse = (row.sparse ?? null) as Record<string, SparseValue> | null;
  if (sparse) {
    for (const [name, value] of Object.entries(sparse)) {
      if (sel.all || sel.names.includes(name)) named[name] = value;
    }
  }
  const keys = Object.keys(named);
  if (!meta.config.named && keys.length === 1 && keys[0] === '') return named[''] as number[];
  return named;
}
