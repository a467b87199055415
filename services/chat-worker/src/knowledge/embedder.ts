import { LEXICAL_HASH_DIMENSION, LEXICAL_HASH_MODEL, embedLexical } from '@gatehouse/common';

/**
 * Turns chunk texts and queries into vectors. The model name is stored with every chunk
 * (file_chunk.embedding_model): a search compares only vectors of the same model.
 */
export interface Embedder {
  readonly model: string;
  readonly dimension: number;
  embed(texts: string[]): Promise<number[][]>;
}

/** The offline default (services/common/src/embedding): no model, no network. */
export const lexicalEmbedder: Embedder = {
  model: LEXICAL_HASH_MODEL,
  dimension: LEXICAL_HASH_DIMENSION,
  embed: async (texts) => texts.map(embedLexical),
};

/** The embedder the settings ask for (RAG_EMBEDDING_ENGINE…); the offline default until engines land. */
export function createEmbedder(_env: NodeJS.ProcessEnv = process.env): Embedder {
  return lexicalEmbedder;
}
