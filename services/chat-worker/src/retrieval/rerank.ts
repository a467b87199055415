/**
 * Reranking through an external endpoint, in Open WebUI 0.10.2's wire format
 * (retrieval/models/external.py ExternalReranker): `POST RAG_EXTERNAL_RERANKER_URL` with
 * `Authorization: Bearer RAG_EXTERNAL_RERANKER_API_KEY` and `{model, query, documents, top_n}`;
 * the answer's `results: [{index, relevance_score}]` gives one score per document (Cohere, Jina,
 * vLLM, llama.cpp and text-embeddings-inference rerankers all speak it).
 */
export interface RerankSettings {
  RAG_RERANKING_ENGINE: string;
  RAG_RERANKING_MODEL: string;
  RAG_EXTERNAL_RERANKER_URL: string;
  RAG_EXTERNAL_RERANKER_API_KEY: string;
  /** Seconds, as a string ('' = no limit of its own; we still stop after 60 s so nothing hangs). */
  RAG_EXTERNAL_RERANKER_TIMEOUT: string;
}

/** Scores for `documents` in their order, or null when the reranker failed (the caller keeps its own order). */
export type Reranker = (query: string, documents: string[]) => Promise<number[] | null>;

const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * The reranker the settings ask for, or null. As in Open WebUI, reranking is on only with
 * engine 'external', a URL and a model name (get_rf builds nothing without a model).
 */
export function createReranker(s: RerankSettings, onError: (message: string) => void = () => undefined): Reranker | null {
  if (s.RAG_RERANKING_ENGINE !== 'external' || !s.RAG_EXTERNAL_RERANKER_URL || !s.RAG_RERANKING_MODEL) return null;
  const seconds = Number(s.RAG_EXTERNAL_RERANKER_TIMEOUT);
  const timeoutMs = s.RAG_EXTERNAL_RERANKER_TIMEOUT && seconds > 0 ? Math.min(seconds * 1000, DEFAULT_TIMEOUT_MS) : DEFAULT_TIMEOUT_MS;
  return async (query, documents) => {
    if (!documents.length) return [];
    try {
      const res = await fetch(s.RAG_EXTERNAL_RERANKER_URL, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${s.RAG_EXTERNAL_RERANKER_API_KEY}` },
        body: JSON.stringify({ model: s.RAG_RERANKING_MODEL, query, documents, top_n: documents.length }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) {
        onError(`reranker answered HTTP ${res.status}`);
        return null;
      }
      const body = (await res.json()) as { results?: { index?: unknown; relevance_score?: unknown }[] };
      const scores = new Array<number>(documents.length).fill(Number.NEGATIVE_INFINITY);
      let seen = 0;
      for (const r of body.results ?? []) {
        if (typeof r.index !== 'number' || typeof r.relevance_score !== 'number' || r.index < 0 || r.index >= documents.length) continue;
        scores[r.index] = r.relevance_score;
        seen++;
      }
      if (!seen) {
        onError('reranker answered no results');
        return null;
      }
      return scores;
    } catch (err) {
      onError(`reranker unreachable: ${(err as Error).message}`);
      return null;
    }
  };
}
