import { describeFetchError } from './openai-embedder.ts';

export const VECTORDB_TIMEOUT_MS = 30_000;

/** Any failed call to the vector store. `status` is the HTTP status, or undefined when there was no answer. */
export class VectorStoreError extends Error {
  override name = 'VectorStoreError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The store answered 401 or 403: it does not accept the configured key. */
export class VectorStoreAuthError extends VectorStoreError {
  override name = 'VectorStoreAuthError';
}

export interface StoredPoint {
  id: string;
  vector: Record<string, number[]>;
  payload: { document: string; metadata: Record<string, unknown> | null };
}

export interface ScoredPoint {
  id: string | number;
  score: number;
  payload?: Record<string, unknown> | null;
}

/**
 * The few Qdrant REST calls mcp-server-qdrant makes, over plain fetch, each with the `api-key` header.
 * Shapes follow Qdrant 1.x: `{result, status, time}` on success, `{status: {error}}` or a plain-text
 * body on failure.
 */
export class VectorStoreClient {
  readonly #baseUrl: string;
  readonly #apiKey: string;
  readonly #timeoutMs: number;

  constructor(options: { baseUrl: string; apiKey: string; timeoutMs?: number }) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#timeoutMs = options.timeoutMs ?? VECTORDB_TIMEOUT_MS;
  }

  /** `GET /collections/{c}/exists` → `{exists}`. */
  async collectionExists(collection: string): Promise<boolean> {
    const result = await this.#call('GET', `/collections/${enc(collection)}/exists`);
    const exists = (result as { exists?: unknown } | null)?.exists;
    if (typeof exists !== 'boolean') throw new VectorStoreError('the vector store sent an exists answer without a boolean "exists"');
    return exists;
  }

  /**
   * `PUT /collections/{c}` with one named Cosine vector. A 409 (someone created it between our exists
   * check and now) counts as success.
   */
  async createCollection(collection: string, vectorName: string, size: number): Promise<void> {
    try {
      await this.#call('PUT', `/collections/${enc(collection)}`, {
        vectors: { [vectorName]: { size, distance: 'Cosine' } },
      });
    } catch (err) {
      if (err instanceof VectorStoreError && err.status === 409) return;
      throw err;
    }
  }

  /** `PUT /collections/{c}/points?wait=true`. */
  async upsert(collection: string, points: StoredPoint[]): Promise<void> {
    await this.#call('PUT', `/collections/${enc(collection)}/points?wait=true`, { points });
  }

  /** `POST /collections/{c}/points/query` with a raw vector on a named vector. */
  async query(collection: string, vector: number[], using: string, limit: number): Promise<ScoredPoint[]> {
    const result = await this.#call('POST', `/collections/${enc(collection)}/points/query`, {
      query: vector,
      using,
      limit,
      with_payload: true,
    });
    const points = (result as { points?: unknown } | null)?.points;
    if (!Array.isArray(points)) throw new VectorStoreError('the vector store sent a query answer without "points"');
    return points as ScoredPoint[];
  }

  async #call(method: string, path: string, body?: unknown): Promise<unknown> {
    const url = `${this.#baseUrl}${path}`;
    const headers: Record<string, string> = { 'api-key': this.#apiKey };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw new VectorStoreError(`could not reach the vector store at ${this.#baseUrl}: ${describeFetchError(err)}`);
    }
    const text = await response.text().catch(() => '');

    if (response.status === 401 || response.status === 403) {
      const why = response.status === 401 ? 'refused the API key' : 'accepted the API key but denied this operation';
      throw new VectorStoreAuthError(
        `the vector store at ${this.#baseUrl} ${why} (HTTP ${response.status}${detail(text)}); check VECTORDB_API_KEY`,
        response.status,
      );
    }
    if (!response.ok) {
      throw new VectorStoreError(
        `the vector store answered ${method} ${path} with HTTP ${response.status}${detail(text)}`,
        response.status,
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new VectorStoreError(`the vector store answered ${method} ${path} with a body that is not JSON`);
    }
    return (parsed as { result?: unknown } | null)?.result;
  }
}

const enc = encodeURIComponent;

/** The server's reason: Qdrant's `{status: {error}}`, or a short plain-text body. */
function detail(text: string): string {
  let reason = text.trim();
  try {
    const status = (JSON.parse(text) as { status?: { error?: unknown } } | null)?.status;
    if (typeof status?.error === 'string') reason = status.error;
  } catch {
    // plain text, e.g. Qdrant's 401 "Invalid API key or JWT"
  }
  reason = reason.replace(/\s+/g, ' ').slice(0, 300);
  return reason ? `: ${reason}` : '';
}
