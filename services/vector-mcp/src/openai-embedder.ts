import { fastembedStyleVectorName, type Embedder } from './embedding.ts';

export const EMBEDDING_TIMEOUT_MS = 60_000;

export interface OpenAiEmbedderOptions {
  /** Base URL including the version prefix, e.g. `http://127.0.0.1:11434/v1` (no trailing slash). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  vectorName?: string;
  timeoutMs?: number;
}

export class EmbeddingError extends Error {
  override name = 'EmbeddingError';
}

/**
 * Embeddings from an OpenAI-compatible `POST {base}/embeddings` endpoint (OpenAI, Ollama, vLLM,
 * llama.cpp server, text-embeddings-inference…). The dimension is learnt from the first answer, and
 * every later answer must match it.
 */
export class OpenAiEmbedder implements Embedder {
  readonly vectorName: string;
  readonly description: string;
  #dimension: number | undefined;
  readonly #options: OpenAiEmbedderOptions;

  constructor(options: OpenAiEmbedderOptions) {
    this.#options = options;
    this.vectorName = options.vectorName ?? fastembedStyleVectorName(options.model);
    this.description = `${options.model} via ${options.baseUrl}/embeddings`;
  }

  get dimension(): number | undefined {
    return this.#dimension;
  }

  async embed(texts: string[]): Promise<number[][]> {
    if (texts.length === 0) return [];
    const url = `${this.#options.baseUrl}/embeddings`;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.#options.apiKey) headers.authorization = `Bearer ${this.#options.apiKey}`;

    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: this.#options.model, input: texts }),
        signal: AbortSignal.timeout(this.#options.timeoutMs ?? EMBEDDING_TIMEOUT_MS),
      });
    } catch (err) {
      throw new EmbeddingError(`could not reach the embeddings endpoint ${url}: ${describeFetchError(err)}`);
    }
    const text = await response.text().catch(() => '');
    if (response.status === 401 || response.status === 403) {
      throw new EmbeddingError(
        `the embeddings endpoint ${url} refused the key (HTTP ${response.status}); check EMBEDDING_API_KEY`,
      );
    }
    if (!response.ok) {
      throw new EmbeddingError(`the embeddings endpoint ${url} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
    }

    const vectors = parseEmbeddings(text, texts.length);
    if (!vectors) throw new EmbeddingError(`the embeddings endpoint ${url} sent an answer without ${texts.length} embeddings`);
    const dim = vectors[0]!.length;
    if (dim === 0 || vectors.some((v) => v.length !== dim)) {
      throw new EmbeddingError(`the embeddings endpoint ${url} sent embeddings of differing or zero length`);
    }
    if (this.#dimension === undefined) this.#dimension = dim;
    else if (dim !== this.#dimension) {
      throw new EmbeddingError(
        `the embeddings endpoint ${url} changed dimension from ${this.#dimension} to ${dim}; restart after changing models`,
      );
    }
    return vectors;
  }
}

/** `{data: [{embedding: number[], index}]}`, ordered by `index` when given. Null if malformed. */
function parseEmbeddings(text: string, expected: number): number[][] | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data) || data.length !== expected) return null;
  const out = new Array<number[] | undefined>(expected);
  for (const [position, item] of data.entries()) {
    const { embedding, index } = (item ?? {}) as { embedding?: unknown; index?: unknown };
    if (!Array.isArray(embedding) || !embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) return null;
    const slot = typeof index === 'number' && Number.isInteger(index) ? index : position;
    if (slot < 0 || slot >= expected || out[slot]) return null;
    out[slot] = embedding as number[];
  }
  return out.every((v) => v !== undefined) ? (out as number[][]) : null;
}

export function describeFetchError(err: unknown): string {
  if (err instanceof Error) {
    if (err.name === 'TimeoutError') return 'timed out';
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof Error) return `${cause.message}`;
    return err.message;
  }
  return String(err);
}
