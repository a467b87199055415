/**
 * The `turbo4` datatype (Qdrant 1.19): 4 bits per dimension. Each vector is scaled by its largest
 * magnitude and every value is rounded to one of 16 evenly spaced levels in [-max, max]; the
 * store keeps the dequantized values (LAYOUT.md), so a vector is quantized exactly once, at
 * ingest, and reads, rewrites of other vectors and searches never drift. Qdrant's own encoding
 * differs (a rotation before the 4-bit codes); what the API shows is the same kind of thing:
 * dequantized floats close to the input (cosine > 0.9 for random vectors, norm within a few %).
 */
const LEVELS = 16;

export function turbo4(v: readonly number[]): number[] {
  let max = 0;
  for (const x of v) max = Math.max(max, Math.abs(x));
  if (max === 0 || !Number.isFinite(max)) return [...v];
  const step = (2 * max) / (LEVELS - 1);
  return v.map((x) => {
    const code = Math.min(LEVELS - 1, Math.max(0, Math.round((x + max) / step)));
    return Math.fround(code * step - max);
  });
}
