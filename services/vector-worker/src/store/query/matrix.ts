/**
 * The distance matrix (`POST …/points/search/matrix/pairs` and `…/offsets`): `sample` points
 * (filtered, holding the vector `using`) are picked at random, and for each of them the `limit`
 * nearest other points of the sample are listed with their scores. Sampled points are in id order;
 * each point's neighbours are best first, ties by id. `using` may name a dense or a sparse vector
 * (dot product over shared indices; no IDF). Scores are computed here in f32 arithmetic,
 * as Qdrant does, so they match Qdrant's to the last digit for small vectors (pgvector's float8
 * sums round differently).
 */
import type { QdrantMatrixOffsets, QdrantMatrixPairs, QdrantSearchMatrixRequest } from '@gatehouse/contracts';
import { tableOf, type CollectionMeta, type Db, type DenseVector } from '../collections/catalog.ts';
import { QdrantError } from '../errors.ts';
import { formatPointId, idOrder, type PointId } from '../points/ids.ts';
import { notExistingVector } from '../vectors/vectors.ts';
import { filterWhere } from '../filter/where.ts';
import type postgres from 'postgres';

/** The sample's pairs are scored here, sample² of them: 2,000 points is 4·10⁶ pairs, about a second. */
const MAX_SAMPLE = 2_000;

/**
 * The score as Qdrant prints it: an f32, written with the fewest digits that read back as that
 * f32 (Rust's `Display` of f32), so `1.4063001` and not `1.406300067901611`.
 */
export function f32(x: number): number {
  const f = Math.fround(x);
  if (!Number.isFinite(f) || f === 0) return f;
  for (let p = 1; p <= 9; p++) {
    const s = Number(f.toPrecision(p));
    if (Math.fround(s) === f) return s;
  }
  return f;
}

type Pair = { a: number; b: number; score: number };
type Matrix = { ids: PointId[]; pairs: Pair[] };

/** Score of two stored vectors in f32 arithmetic, accumulated in order as Qdrant's scalar path does (Cosine vectors are stored normalised, so it is their dot product). */
function score(distance: DenseVector['distance'], a: Float32Array, b: Float32Array): number {
  const f = Math.fround;
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    if (distance === 'Dot' || distance === 'Cosine') s = f(s + f(a[i]! * b[i]!));
    else if (distance === 'Euclid') s = f(s + f(f(a[i]! - b[i]!) ** 2));
    else s = f(s + f(Math.abs(f(a[i]! - b[i]!))));
  }
  return distance === 'Euclid' ? f(Math.sqrt(s)) : s;
}

type Sparse = { indices: number[]; values: number[] };

/** Sparse dot product in f32, over the shared indices in index order (Qdrant's sparse score). */
function sparseScore(a: Map<number, number>, b: Sparse): number {
  const f = Math.fround;
  let s = 0;
  for (let i = 0; i < b.indices.length; i++) {
    const x = a.get(b.indices[i]!);
    if (x !== undefined) s = f(s + f(x * f(b.values[i]!)));
  }
  return s;
}

async function matrix(db: Db, schema: string, meta: CollectionMeta, req: QdrantSearchMatrixRequest): Promise<Matrix> {
  const name = req.using ?? '';
  const d = meta.dense.get(name);
  const sparse = !d && meta.sparse.has(name);
  if (!d && !sparse) throw notExistingVector(name);
  if (req.sample > MAX_SAMPLE) throw new QdrantError(400, `Bad request: sample must be at most ${MAX_SAMPLE}`);
  const value = d ? db`${db(d.column)}::text` : db`(sparse -> ${name})::text`;
  const present = d ? db`${db(d.column)} is not null` : db`sparse ? ${name}`;
  const rows = await db<{ id_num: string | null; id_uuid: string | null; v: string }[]>`
    select id_num, id_uuid, v from (
      select id_num, id_uuid, ${value} as v from ${tableOf(db, schema, meta)}
      where ${present} and ${filterWhere(db, meta, req.filter)}
      order by random() limit ${req.sample}
    ) s order by ${idOrder(db as postgres.Sql)}`;
  let scoreOf: (a: number, b: number) => number;
  let better: (x: number, y: number) => boolean;
  if (d) {
    const vectors = rows.map((r) => {
      const v = JSON.parse(r.v) as unknown[];
      // A multivector column prints as a list of lists: MaxSim pairs are not computed here.
      if (v.some((x) => typeof x !== 'number')) throw new QdrantError(400, 'Bad request: the distance matrix of multivectors is not supported by this store');
      return Float32Array.from(v as number[]);
    });
    scoreOf = (a, b) => score(d.distance, vectors[a]!, vectors[b]!);
    better = (x, y) => (d.distance === 'Euclid' || d.distance === 'Manhattan' ? x < y : x > y);
  } else {
    const vectors = rows.map((r) => JSON.parse(r.v) as Sparse);
    const maps = vectors.map((v) => new Map(v.indices.map((i, k) => [i, Math.fround(v.values[k]!)])));
    scoreOf = (a, b) => sparseScore(maps[a]!, vectors[b]!);
    better = (x, y) => x > y;
  }
  const pairs: Pair[] = [];
  for (let a = 0; a < rows.length; a++) {
    const scored: Pair[] = [];
    for (let b = 0; b < rows.length; b++) if (b !== a) scored.push({ a, b, score: scoreOf(a, b) });
    // Best first; equal scores in id order (the sample is in id order, and the sort is stable).
    scored.sort((p, q) => (better(p.score, q.score) ? -1 : better(q.score, p.score) ? 1 : 0));
    pairs.push(...scored.slice(0, req.limit).map((p) => ({ ...p, score: f32(p.score) })));
  }
  return { ids: rows.map(formatPointId), pairs };
}

export async function matrixPairs(db: Db, schema: string, meta: CollectionMeta, req: QdrantSearchMatrixRequest): Promise<QdrantMatrixPairs> {
  const m = await matrix(db, schema, meta, req);
  return { pairs: m.pairs.map((p) => ({ a: m.ids[p.a]!, b: m.ids[p.b]!, score: p.score })) };
}

export async function matrixOffsets(db: Db, schema: string, meta: CollectionMeta, req: QdrantSearchMatrixRequest): Promise<QdrantMatrixOffsets> {
  const m = await matrix(db, schema, meta, req);
  return { offsets_row: m.pairs.map((p) => p.a), offsets_col: m.pairs.map((p) => p.b), scores: m.pairs.map((p) => p.score), ids: m.ids };
}
