/**
 * `recommend` (reference: Qdrant's RecoQuery): positives and negatives, as ids or vectors.
 *
 * - `average_vector` (default): one nearest search with `avg(pos) + (avg(pos) - avg(neg))`
 *   (`avg(pos)` alone without negatives), averaged over the raw values (stored ones for ids),
 *   preprocessed afterwards like any query vector.
 * - `best_score`: per point, the best similarity to a positive and to a negative; if the positive
 *   one is strictly larger the score is `scaled_fast_sigmoid(max_pos)`, else
 *   `-scaled_fast_sigmoid(max_neg)` — so every point nearer a positive ranks above every point
 *   nearer a negative.
 * - `sum_scores`: Σ sim(positives) − Σ sim(negatives).
 * Similarities are Qdrant's raw ones (examples.ts); custom scores are not postprocessed.
 */
import type postgres from 'postgres';
import type { Fragment } from '../collections/catalog.ts';
import { QdrantError } from '../errors.ts';
import { scaledSigmoidSql, similaritySql, type Example, type Target } from './examples.ts';
import type { SparseValue } from '../vectors/vectors.ts';

export type Strategy = 'average_vector' | 'best_score' | 'sum_scores';

/** The `average_vector` query vector from raw example values (400 without positives, as Qdrant). */
export function averageQuery(positives: number[][], negatives: number[][]): number[] {
  if (positives.length === 0) {
    throw new QdrantError(400, 'Wrong input: Positive vectors should not be empty with `average` strategy');
  }
  const avg = (vs: number[][]) => vs[0]!.map((_, i) => vs.reduce((s, v) => s + (v[i] ?? 0), 0) / vs.length);
  const pos = avg(positives);
  if (negatives.length === 0) return pos;
  const neg = avg(negatives);
  return pos.map((p, i) => p + p - neg[i]!);
}

/**
 * The same for sparse examples (Qdrant's combine_aggregate): per dimension of the union, the
 * mean over the vectors (absent dimensions count as 0), then 2·pos − neg.
 */
export function averageSparse(positives: SparseValue[], negatives: SparseValue[]): SparseValue {
  if (positives.length === 0) {
    throw new QdrantError(400, 'Wrong input: Positive vectors should not be empty with `average` strategy');
  }
  const avg = (vs: SparseValue[]) => {
    const m = new Map<number, number>();
    for (const v of vs) v.indices.forEach((idx, k) => m.set(idx, (m.get(idx) ?? 0) + (v.values[k] ?? 0)));
    for (const [idx, x] of m) m.set(idx, x / vs.length);
    return m;
  };
  const pos = avg(positives);
  const merged = new Map<number, number>();
  if (negatives.length === 0) for (const [i, x] of pos) merged.set(i, x);
  else {
    const neg = avg(negatives);
    for (const i of new Set([...pos.keys(), ...neg.keys()])) merged.set(i, 2 * (pos.get(i) ?? 0) - (neg.get(i) ?? 0));
  }
  const indices = [...merged.keys()].sort((a, b) => a - b);
  return { indices, values: indices.map((i) => merged.get(i)!) };
}

export function bestScoreSql(db: postgres.Sql, target: Target, positives: Example[], negatives: Example[]): Fragment {
  const best = (es: Example[]) => (es.length === 1 ? similaritySql(db, target, es[0]!) : db`greatest(${list(db, es.map((e) => similaritySql(db, target, e)))})`);
  if (positives.length === 0 && negatives.length === 0) return db`0`;
  if (negatives.length === 0) return scaledSigmoidSql(db, best(positives));
  if (positives.length === 0) return db`(-${scaledSigmoidSql(db, best(negatives))})`;
  const p = best(positives);
  const n = best(negatives);
  return db`(case when ${p} > ${n} then ${scaledSigmoidSql(db, p)} else -${scaledSigmoidSql(db, n)} end)`;
}

export function sumScoresSql(db: postgres.Sql, target: Target, positives: Example[], negatives: Example[]): Fragment {
  const terms = [
    ...positives.map((e) => db`+ ${similaritySql(db, target, e)}`),
    ...negatives.map((e) => db`- ${similaritySql(db, target, e)}`),
  ];
  return db`(${terms.reduce((acc, t) => db`${acc} ${t}`, db`0`)})`;
}

export function list(db: postgres.Sql, parts: Fragment[]): Fragment {
  return parts.slice(1).reduce((acc, p) => db`${acc}, ${p}`, parts[0]!);
}
