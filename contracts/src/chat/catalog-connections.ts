import { z } from 'zod';
import { catalog, GET } from './catalog-kit.ts';

/**
 * A connection's entry in `*_API_CONFIGS`, keyed by its index: the settings Open WebUI keeps there
 * (enable, prefix_id, model_ids, tags, connection_type, auth_type) plus `key_set`. Never the key
 * itself nor configured headers: where Open WebUI would show the key, this says whether one is set.
 */
const ConnectionConfigEntry = z
  .object({
    enable: z.boolean(),
    prefix_id: z.string().nullable(),
    model_ids: z.array(z.string()),
    tags: z.array(z.object({ name: z.string() })),
    connection_type: z.string(),
    key_set: z.boolean(),
  })
  .passthrough();

/** Open WebUI's `GET /openai/config`; `OPENAI_API_KEYS` keeps its length, every entry withheld (""). */
export const OpenAIConnectionsConfig = z.object({
  ENABLE_OPENAI_API: z.boolean(),
  OPENAI_API_BASE_URLS: z.array(z.string()),
  OPENAI_API_KEYS: z.array(z.literal('')),
  OPENAI_API_CONFIGS: z.record(z.string(), ConnectionConfigEntry.extend({ auth_type: z.string() })),
});
/** Open WebUI's `GET /ollama/config`. */
export const OllamaConnectionsConfig = z.object({
  ENABLE_OLLAMA_API: z.boolean(),
  OLLAMA_BASE_URLS: z.array(z.string()),
  OLLAMA_API_CONFIGS: z.record(z.string(), ConnectionConfigEntry),
});

/**
 * The admin's read-only view of the model connections (Open WebUI's admin Settings → Connections
 * reads these two): answered by the chat worker from the proxy worker's registry
 * (`llm.connections.config`). No POST: connections are set by the environment here.
 */
export const CONNECTIONS_OPS = catalog({
  'connections.openai.config': { subject: 'chat.connections.openai.config', routes: [GET('/openai/config')], reply: OpenAIConnectionsConfig, auth: 'admin', events: [] },
  'connections.ollama.config': { subject: 'chat.connections.ollama.config', routes: [GET('/ollama/config')], reply: OllamaConnectionsConfig, auth: 'admin', events: [] },
});
