/**
 * Distances (reference §1.8). pgvector orders by a distance (smaller is nearer); Qdrant reports a
 * score per distance:
 *   Cosine    `1 - (a <=> b)` on vectors normalised at insert  (larger is better)
 *   Dot       `-(a <#> b)`                                      (larger is better)
 *   Euclid    `a <-> b`                                         (smaller is better)
 *   Manhattan `a <+> b`                                         (smaller is better)
 * so ordering by the pgvector distance ascending is always "best first".
 */
import type { QdrantDistance } from '@gatehouse/contracts';

/** pgvector operator per distance; fixed SQL text, never user input. */
export const DISTANCE_OPERATOR: Record<QdrantDistance, string> = {
  Cosine: '<=>',
  Dot: '<#>',
  Euclid: '<->',
  Manhattan: '<+>',
};

/** HNSW operator class per distance (LAYOUT.md). */
export const DISTANCE_OPCLASS: Record<QdrantDistance, string> = {
  Cosine: 'vector_cosine_ops',
  Dot: 'vector_ip_ops',
  Euclid: 'vector_l2_ops',
  Manhattan: 'vector_l1_ops',
};

export function scoreOf(distance: QdrantDistance, d: number): number {
  switch (distance) {
    case 'Cosine':
      return 1 - d;
    case 'Dot':
      return d === 0 ? 0 : -d;
    case 'Euclid':
    case 'Manhattan':
      return d;
  }
}

/**
 * `score_threshold` is strict: `score > t` for Cosine and Dot, `score < t` for Euclid and
 * Manhattan (Qdrant's `check_threshold`).
 */
export function passesThreshold(distance: QdrantDistance, score: number, threshold: number | undefined): boolean {
  if (threshold === undefined) return true;
  // Qdrant compares in f32: a threshold equal to a printed score leaves that score out.
  const s = Math.fround(score);
  const t = Math.fround(threshold);
  return distance === 'Cosine' || distance === 'Dot' ? s > t : s < t;
}

/** The same threshold as a bound on the pgvector distance: `d < bound`. */
export function distanceBound(distance: QdrantDistance, threshold: number): number {
  switch (distance) {
    case 'Cosine':
      return 1 - threshold;
    case 'Dot':
      return -threshold;
    case 'Euclid':
    case 'Manhattan':
      return threshold;
  }
}

/**
 * A score as Qdrant prints it: the f32 value in its shortest decimal form (serde writes f32 that
 * way), so `4.358899` rather than the double expansion `4.358899116516113` of the same f32.
 */
export function f32(score: number): number {
  const f = Math.fround(score);
  if (!Number.isFinite(f) || f === 0) return f;
  for (let p = 1; p < 10; p++) {
    const s = Number(f.toPrecision(p));
    if (Math.fround(s) === f) return s;
  }
  return f;
}
