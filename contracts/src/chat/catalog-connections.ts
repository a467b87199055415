import { z } from 'zod';
import { OllamaConnectionsForm, OpenAIConnectionsForm } from '../llm-connections.ts';
import { catalog, GET, POST } from './catalog-kit.ts';

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
 * `GET /api/v1/configs/status` (Gatehouse's own, admin): every setting group of the config bucket
 * with its current revision, and every live replica with the revision of each group it runs
 * (`in_step`: all of them current). Digests, never values.
 */
export const ConfigStatus = z.object({
  groups: z.record(z.string(), z.object({ revision: z.number().int(), digest: z.string(), at: z.string(), by: z.string() })),
  replicas: z.array(
    z.object({
      instance: z.string(),
      service: z.string(),
      host: z.string(),
      pid: z.number().int(),
      started_at: z.string(),
      heartbeat_at: z.string(),
      applied: z.record(z.string(), z.object({ revision: z.number().int(), digest: z.string(), at: z.string() })),
      in_step: z.boolean(),
    }),
  ),
});

/**
 * The admin's view of the model connections (Open WebUI's admin Settings → Connections reads and
 * saves these): answered by the chat worker from the proxy worker's registry
 * (`llm.connections.config`); an update is stored by the proxy worker in the config bucket
 * (`llm.connections.update`, group `connections`) and applied by every proxy worker live. The
 * environment only seeds them (Open WebUI's PersistentConfig). Updates answer the GET's shape:
 * keys withheld.
 */
export const CONNECTIONS_OPS = catalog({
  'connections.openai.config': { subject: 'chat.connections.openai.config', routes: [GET('/openai/config')], reply: OpenAIConnectionsConfig, auth: 'admin', events: [] },
  'connections.ollama.config': { subject: 'chat.connections.ollama.config', routes: [GET('/ollama/config')], reply: OllamaConnectionsConfig, auth: 'admin', events: [] },
  'configs.status': { subject: 'chat.configs.status', routes: [GET('/api/v1/configs/status')], reply: ConfigStatus, auth: 'admin', events: [] },
  'connections.openai.update': {
    subject: 'chat.connections.openai.update',
    routes: [POST('/openai/config/update')],
    body: OpenAIConnectionsForm,
    reply: OpenAIConnectionsConfig,
    auth: 'admin',
    events: ['config.connections.updated'],
  },
  'connections.ollama.update': {
    subject: 'chat.connections.ollama.update',
    routes: [POST('/ollama/config/update')],
    body: OllamaConnectionsForm,
    reply: OllamaConnectionsConfig,
    auth: 'admin',
    events: ['config.connections.updated'],
  },
});
