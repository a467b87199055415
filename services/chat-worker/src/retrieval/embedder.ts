import { LEXICAL_HASH_DIMENSION, LEXICAL_HASH_MODEL, embedLexical } from '@gatehouse/common';

/**
 * Turns chunk texts and queries into vectors. The model name is stored with every chunk
 * (file_chunk.embedding_model): a search compares only vectors of the same model.
 */
export interface Embedder {
  readonly model: string;
  /** Known up front for the offline default; for an endpoint, learnt from its first answer (0 until then). */
  readonly dimension: number;
  embed(texts: string[]): Promise<number[][]>;
}

/** The offline default (services/common/src/embedding): no model, no network. */
export const lexicalEmbedder: Embedder = {
  model: LEXICAL_HASH_MODEL,
  dimension: LEXICAL_HASH_DIMENSION,
  embed: async (texts) => texts.map(embedLexical),
};

/**
 * Open WebUI's embedding settings (names as its variables and config keys). Values may be the
 * stored settings (typed) or raw environment strings: both spell them the same way.
 */
export interface EmbeddingSettings {
  RAG_EMBEDDING_ENGINE?: string;
  RAG_EMBEDDING_MODEL?: string;
  RAG_EMBEDDING_BATCH_SIZE?: number | string;
  RAG_OPENAI_API_BASE_URL?: string;
  RAG_OPENAI_API_KEY?: string;
  RAG_OLLAMA_BASE_URL?: string;
  RAG_OLLAMA_API_KEY?: string;
}

/** An embeddings endpoint failed or answered something unusable; the message never holds the key. */
export class EmbeddingError extends Error {
  override name = 'EmbeddingError';
}

/** Open WebUI's default model per engine when RAG_EMBEDDING_MODEL is empty. */
const DEFAULT_MODEL: Record<string, string> = { openai: 'text-embedding-3-small', ollama: 'nomic-embed-text' };
const TIMEOUT_MS = 60_000;

/**
 * The embedder the settings ask for: RAG_EMBEDDING_ENGINE '' → the offline lexical-hash-v1;
 * 'openai' → `POST {RAG_OPENAI_API_BASE_URL}/embeddings` {model, input:[…]} with a Bearer
 * RAG_OPENAI_API_KEY; 'ollama' → `POST {RAG_OLLAMA_BASE_URL}/api/embed` {model, input:[…]}.
 * Texts go RAG_EMBEDDING_BATCH_SIZE at a time, as Open WebUI's generate_embeddings batches them.
 * Pass the stored settings (`await ctx.settings()`) so an admin's change applies to the next call.
 */
export function createEmbedder(s: EmbeddingSettings = {}): Embedder {
  const engine = (s.RAG_EMBEDDING_ENGINE ?? '').trim();
  if (engine === '') return lexicalEmbedder;
  if (engine !== 'openai' && engine !== 'ollama') throw new EmbeddingError(`unknown RAG_EMBEDDING_ENGINE '${engine}' (expected '', 'openai' or 'ollama')`);
  const model = (s.RAG_EMBEDDING_MODEL ?? '').trim() || DEFAULT_MODEL[engine]!;
  const batch = Math.max(1, Math.floor(Number(s.RAG_EMBEDDING_BATCH_SIZE ?? 1)) || 1);
  const base = ((engine === 'openai' ? s.RAG_OPENAI_API_BASE_URL : s.RAG_OLLAMA_BASE_URL) ?? '').replace(/\/+$/, '');
  const key = (engine === 'openai' ? s.RAG_OPENAI_API_KEY : s.RAG_OLLAMA_API_KEY) ?? '';
  if (!base) throw new EmbeddingError(`RAG_EMBEDDING_ENGINE is '${engine}' but its base URL is empty`);
  const url = engine === 'openai' ? `${base}/embeddings` : `${base}/api/embed`;
  const embedder = {
    model,
    dimension: 0,
    async embed(texts: string[]): Promise<number[][]> {
      const out: number[][] = [];
      for (let i = 0; i < texts.length; i += batch) {
        const part = texts.slice(i, i + batch);
        const vectors = await postEmbeddings(url, key, model, part, engine);
        out.push(...vectors);
      }
      if (out.length) embedder.dimension = out[0]!.length;
      return out;
    },
  };
  return embedder;
}

async function postEmbeddings(url: string, key: string, model: string, input: string[], engine: 'openai' | 'ollama'): Promise<number[][]> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ model, input }), signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    throw new EmbeddingError(`could not reach the embeddings endpoint ${url}: ${(err as Error).message}`);
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) throw new EmbeddingError(`the embeddings endpoint ${url} answered HTTP ${res.status}: ${text.slice(0, 200)}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new EmbeddingError(`the embeddings endpoint ${url} answered something that is not JSON`);
  }
  const vectors = engine === 'openai' ? openAiVectors(body) : (body as { embeddings?: unknown }).embeddings;
  if (!Array.isArray(vectors) || vectors.length !== input.length || !vectors.every(isVector)) {
    throw new EmbeddingError(`the embeddings endpoint ${url} did not answer ${input.length} embedding(s)`);
  }
  const dim = (vectors[0] as number[]).length;
  if (vectors.some((v: number[]) => v.length !== dim)) throw new EmbeddingError(`the embeddings endpoint ${url} answered embeddings of differing lengths`);
  return vectors as number[][];
}

/** OpenAI's `{data:[{index, embedding}]}`, put back in input order by `index`. */
function openAiVectors(body: unknown): unknown {
  const data = (body as { data?: { index?: number; embedding?: unknown }[] } | null)?.data;
  if (!Array.isArray(data)) return undefined;
  const out: unknown[] = new Array(data.length);
  data.forEach((d, i) => {
    out[typeof d?.index === 'number' ? d.index : i] = d?.embedding;
  });
  return out;
}

const isVector = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number' && Number.isFinite(x));
