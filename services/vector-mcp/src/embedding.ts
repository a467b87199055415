/**
 * Embedding providers. The MCP tools only need `embed`, the vector name the collection stores the
 * vectors under, and (for creating a collection) the dimension.
 */
export interface Embedder {
  /** One vector per text, in order. */
  embed(texts: string[]): Promise<number[][]>;
  /**
   * Vector length. Known up front for the local model; a remote endpoint's is learnt from its first
   * answer (undefined until then).
   */
  readonly dimension: number | undefined;
  /** Name of the named vector in the collection, e.g. `lexical-hash-v1` or `fast-all-minilm-l6-v2`. */
  readonly vectorName: string;
  /** Human-readable description for the start-up log line. */
  readonly description: string;
}

/**
 * The vector name mcp-server-qdrant derives from a fastembed model: `fast-` + the last path segment of
 * the model name, lowercased (`sentence-transformers/all-MiniLM-L6-v2` → `fast-all-minilm-l6-v2`).
 * Used for remote models so that a collection written by mcp-server-qdrant with the same model can be
 * shared.
 */
export function fastembedStyleVectorName(modelName: string): string {
  const last = modelName.split('/').at(-1) ?? modelName;
  return `fast-${last.toLowerCase()}`;
}

/** Cosine similarity of two equal-length vectors (0 when either is all zeros). */
export function cosine(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) throw new Error(`vector lengths differ: ${a.length} vs ${b.length}`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  if (na === 0 || nb === 0) return 0;
  return dot / Math.sqrt(na * nb);
}
