import { embedLexical, LEXICAL_HASH_DIMENSION, LEXICAL_HASH_MODEL } from '@gatehouse/common';
import type { Embedder } from './embedding.ts';

/**
 * The offline default embedder: `lexical-hash-v1` from @gatehouse/common (shared with the chat
 * worker's memories, so both sides compute identical vectors). It matches words and word parts,
 * not meaning; the README reports how well it does on a labelled set.
 */
export class LexicalHashEmbedder implements Embedder {
  readonly dimension = LEXICAL_HASH_DIMENSION;
  readonly vectorName = LEXICAL_HASH_MODEL;
  readonly description = `${LEXICAL_HASH_MODEL} (offline lexical feature hashing, ${LEXICAL_HASH_DIMENSION} dims)`;

  embed(texts: string[]): Promise<number[][]> {
    return Promise.resolve(texts.map((t) => embedLexical(t)));
  }
}
