/**
 * Maximal marginal relevance selection (Qdrant's mmr.rs), independent of the vector kind: from
 * candidates with their relevance to the query, take the most relevant first, then repeatedly the
 * one with the best λ·relevance − (1−λ)·max similarity to those already taken. Returns candidate
 * indexes in selection order (at most `take`).
 */
export function mmrSelect(relevance: readonly number[], similarity: (i: number, j: number) => number, take: number, lambda: number): number[] {
  const n = relevance.length;
  if (n === 0) return [];
  const maxSim = relevance.map(() => -Infinity);
  const remaining = new Set(relevance.map((_, i) => i));
  const selected: number[] = [];
  let first = 0;
  for (const i of remaining) if (relevance[i]! > relevance[first]!) first = i;
  // Bounded: each round moves one candidate from `remaining` to `selected`.
  for (let next: number | undefined = first; next !== undefined && selected.length < take; ) {
    selected.push(next);
    remaining.delete(next);
    for (const i of remaining) maxSim[i] = Math.max(maxSim[i]!, similarity(i, next));
    next = undefined;
    let best = -Infinity;
    for (const i of remaining) {
      const s = lambda * relevance[i]! - (1 - lambda) * maxSim[i]!;
      if (next === undefined || s > best) {
        best = s;
        next = i;
      }
    }
  }
  return selected;
}
