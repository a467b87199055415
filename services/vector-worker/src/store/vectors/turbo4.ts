/**
 * The `turbo4` datatype (Qdrant 1.19): 4 bits per dimension. Each vector is scaled by its largest
 * magnitude and every value rounded to one of 15 evenly spaced levels −7…7 × max/7 (zero is a
 * level, so an outlier-dominated vector keeps its direction; the 16th code is unused). The store
 * keeps the dequantized values (LAYOUT.md), so a vector is quantized exactly once, at ingest, and
 * reads, rewrites of other vectors and searches never drift. Qdrant's own encoding differs (a
 * rotation before the 4-bit codes); what the API shows is the same kind of thing: dequantized
 * floats close to the input (cosine > 0.9 for random vectors, norm within a few %).
 */
const HALF_LEVELS = 7;

export function turbo4(v: readonly number[]): number[] {
  let max = 0;
  for (const x of v) max = Math.max(max, Math.abs(x));
  if (max === 0 || !Number.isFinite(max)) return [...v];
  const step = max / HALF_LEVELS;
  return v.map((x) => Math.fround(Math.max(-HALF_LEVELS, Math.min(HALF_LEVELS, Math.round(x / step))) * step));
}
