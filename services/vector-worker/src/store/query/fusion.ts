/**
 * Fusion of prefetch results (Qdrant's score_fusion.rs and rrf):
 * - RRF: Σ over the lists of 1 / ((position + 1) / w + k − 1) (position from 0, weight w,
 *   default 1; a weight ≤ 0 adds nothing), k = 2 by default.
 * - DBSF: each list's scores normalised to (s − (μ − 3σ)) / 6σ with the sample standard
 *   deviation (a single point: 0.5; σ = 0: 0.5), then summed per point.
 * Equal fused scores keep the order in which the points were first seen.
 */
import { QdrantError } from '../errors.ts';
import type { Ranked } from './scored.ts';

/** Qdrant's default RRF constant (`DEFAULT_RRF_K`). */
export const DEFAULT_RRF_K = 2;

export function rrf(lists: Ranked[][], k: number, weights?: number[]): Ranked[] {
  if (weights && weights.length !== lists.length) {
    throw new QdrantError(
      422,
      `Validation error in JSON body: [Number of weights in RRF should match number of pre-fetches: got ${weights.length}, expected ${lists.length}]`,
    );
  }
  const scores = new Map<string, number>();
  lists.forEach((list, i) => {
    const w = weights?.[i] ?? 1;
    list.forEach((r, pos) => {
      const s = w <= 0 ? 0 : 1 / ((pos + 1) / w + k - 1);
      scores.set(r.pid, (scores.get(r.pid) ?? 0) + s);
    });
  });
  return sortFused(scores);
}

function distrNorm(list: Ranked[]): Ranked[] {
  if (list.length < 2) return list.map((r) => ({ ...r, score: 0.5 }));
  const mean = list.reduce((s, r) => s + r.score, 0) / list.length;
  const variance = list.reduce((s, r) => s + (r.score - mean) ** 2, 0) / (list.length - 1);
  const std = Math.sqrt(variance);
  const min = mean - 3 * std;
  const max = mean + 3 * std;
  if (min === max) return list.map((r) => ({ ...r, score: 0.5 }));
  return list.map((r) => ({ ...r, score: (r.score - min) / (max - min) }));
}

export function dbsf(lists: Ranked[][]): Ranked[] {
  const scores = new Map<string, number>();
  for (const list of lists) for (const r of distrNorm(list)) scores.set(r.pid, (scores.get(r.pid) ?? 0) + r.score);
  return sortFused(scores);
}

function sortFused(scores: Map<string, number>): Ranked[] {
  return [...scores.entries()].map(([pid, score]) => ({ pid, score })).sort((a, b) => b.score - a.score);
}
