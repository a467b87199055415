import type { EmbeddingConfig } from './config.ts';
import type { Embedder } from './embedding.ts';
import { LexicalHashEmbedder } from './lexical-hash-embedder.ts';
import { OpenAiEmbedder } from './openai-embedder.ts';

export function createEmbedder(config: EmbeddingConfig): Embedder {
  if (config.provider === 'local') {
    const embedder = new LexicalHashEmbedder();
    if (!config.vectorName) return embedder;
    // Same vectors under another name: Object.create keeps the prototype's embed().
    return Object.assign(Object.create(embedder) as LexicalHashEmbedder, { vectorName: config.vectorName });
  }
  return new OpenAiEmbedder({
    baseUrl: config.baseUrl,
    model: config.model,
    ...(config.apiKey ? { apiKey: config.apiKey } : {}),
    ...(config.vectorName ? { vectorName: config.vectorName } : {}),
  });
}
