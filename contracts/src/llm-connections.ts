import { z } from 'zod';
import { requestContract, streamContract } from './catalog.ts';

/**
 * The proxy worker's connection registry, as the chat platform uses it. One registry serves both
 * faces: the LLM proxy's providers (LLMPROXY_CONFIG) and Open WebUI's connections
 * (OLLAMA_BASE_URLS, OPENAI_API_BASE_URLS + OPENAI_API_KEYS, OLLAMA_API_CONFIGS /
 * OPENAI_API_CONFIGS). The chat worker never opens an upstream connection itself: it lists models
 * and runs completions through these two subjects.
 */

/** A model as Open WebUI's `GET /api/models` lists it (arena models are added by the chat worker). */
export const ConnectionModel = z
  .object({
    id: z.string(),
    name: z.string(),
    object: z.literal('model'),
    created: z.number(),
    owned_by: z.enum(['ollama', 'openai']),
    /** Open WebUI: `local` for Ollama, `external` for OpenAI-style, unless the connection config says otherwise. */
    connection_type: z.string(),
    /** Index of the connection in its *_BASE_URLS list (Open WebUI's urlIdx); absent for LLMPROXY providers. */
    urlIdx: z.number().int().optional(),
    tags: z.array(z.object({ name: z.string() })),
    /** The upstream's own listing entry (Ollama /api/tags item or OpenAI /models item). */
    ollama: z.record(z.string(), z.unknown()).optional(),
    openai: z.record(z.string(), z.unknown()).optional(),
  })
  .passthrough();
export type ConnectionModel = z.infer<typeof ConnectionModel>;

export const ConnectionModelsRequest = z.object({
  /** Skip the registry's cache of upstream model lists. */
  refresh: z.boolean().default(false),
});
export const ConnectionModelsReply = z.object({ data: z.array(ConnectionModel) });

export const UpstreamChatRequest = z.object({
  /** A model id exactly as `llm.connections.models` lists it (prefix_id included). */
  model: z.string(),
  /**
   * An OpenAI chat-completions body (messages, tools, tool_choice, temperature, max_tokens, stop,
   * …). The worker sets `model` to the upstream's own id and `stream` from below; for Ollama
   * connections it is translated to /api/chat.
   */
  body: z.record(z.string(), z.unknown()),
  stream: z.boolean(),
  /**
   * Streamed: write each chunk as Open WebUI's SSE event for it (`data: {…}\n\n`, Python's
   * separators, `model` defaulting to the request's), the bytes the chat face sends its client, so
   * the chunk is parsed and serialised once on its way. Honoured when the meta says `sse: true`
   * (a worker that predates it sends JSON chunks, and the requester converts them itself).
   */
  sse: z.boolean().optional(),
});
export type UpstreamChatRequest = z.infer<typeof UpstreamChatRequest>;

/** First frame, once the upstream answered 2xx. */
export const UpstreamChatMeta = z.object({
  /** The upstream's own model id. */
  model: z.string(),
  owned_by: z.enum(['ollama', 'openai']),
  /** The chunks that follow are SSE events (the request's `sse`), not JSON. */
  sse: z.boolean().optional(),
});

/**
 * Chunks: streamed — one UTF-8 JSON OpenAI `chat.completion.chunk` per frame (or its SSE event, `sse`), normalised: reasoning
 * (`reasoning_content`, `reasoning`, Ollama's `thinking`, or `<think>`-style tags in the content)
 * always arrives as `delta.reasoning_content`, never inside `content`; tool-call arguments are
 * strings; the last chunk carries `finish_reason` and, when known, `usage`. Not streamed — one
 * frame with the whole `chat.completion` object, normalised the same way
 * (`message.reasoning_content`). Upstream errors: an error frame (before or after meta) with the
 * upstream's HTTP status and message, details `{ type, code }` when the upstream gave them.
 */
export const UpstreamChatEnd = z.object({
  finish_reason: z.string().nullable(),
  usage: z.record(z.string(), z.unknown()).nullable(),
});

/**
 * One configured connection as an admin may see it: never its key or its configured headers (they
 * may carry credentials), only whether a key is set.
 */
export const ConnectionInfo = z.object({
  /** Position in its *_BASE_URLS list (the key of its entry in *_API_CONFIGS). */
  idx: z.number().int(),
  /** Empty when the list entry was not an http(s) URL (such a connection lists nothing). */
  url: z.string(),
  enable: z.boolean(),
  prefix_id: z.string().nullable(),
  model_ids: z.array(z.string()),
  tags: z.array(z.object({ name: z.string() })),
  connection_type: z.string(),
  /** OpenAI connections: `bearer` or `none`. */
  auth_type: z.string().optional(),
  key_set: z.boolean(),
});
export type ConnectionInfo = z.infer<typeof ConnectionInfo>;
export const ConnectionsConfigReply = z.object({
  ollama: z.object({ enabled: z.boolean(), connections: z.array(ConnectionInfo) }),
  openai: z.object({ enabled: z.boolean(), connections: z.array(ConnectionInfo) }),
});
export type ConnectionsConfigReply = z.infer<typeof ConnectionsConfigReply>;

/**
 * Open WebUI 0.10.2's `POST /openai/config/update` form (routers/openai.py OpenAIConfigForm). Keys
 * are index-aligned with the URLs; an empty key keeps the key stored for the same URL (the GET
 * withholds keys, so a client saving what it read sends "" for each).
 */
export const OpenAIConnectionsForm = z.object({
  ENABLE_OPENAI_API: z.boolean().nullable().optional(),
  OPENAI_API_BASE_URLS: z.array(z.string()),
  OPENAI_API_KEYS: z.array(z.string()),
  OPENAI_API_CONFIGS: z.record(z.string(), z.unknown()),
});
export type OpenAIConnectionsForm = z.infer<typeof OpenAIConnectionsForm>;
/** Open WebUI 0.10.2's `POST /ollama/config/update` form (routers/ollama.py OllamaConfigForm). */
export const OllamaConnectionsForm = z.object({
  ENABLE_OLLAMA_API: z.boolean().nullable().optional(),
  OLLAMA_BASE_URLS: z.array(z.string()),
  OLLAMA_API_CONFIGS: z.record(z.string(), z.unknown()),
});
export type OllamaConnectionsForm = z.infer<typeof OllamaConnectionsForm>;

/** Replace one API's connections (the other stays as it is). */
export const ConnectionsUpdateRequest = z.object({
  openai: OpenAIConnectionsForm.optional(),
  ollama: OllamaConnectionsForm.optional(),
  /** Who (for the config bucket's record): `user <id>`. */
  by: z.string(),
});
/** The connections as they run after the update (secrets left out) and the `connections` group's new revision. */
export const ConnectionsUpdateReply = ConnectionsConfigReply.extend({ revision: z.number().int() });

export const llmConnectionContracts = {
  models: requestContract('llm.connections.models', 1, ConnectionModelsRequest, ConnectionModelsReply),
  /** The connections as configured (the chat face's admin Connections view), secrets left out. */
  config: requestContract('llm.connections.config', 1, z.object({}), ConnectionsConfigReply),
  chat: streamContract('llm.connections.chat', 1, UpstreamChatRequest, UpstreamChatMeta, UpstreamChatEnd),
  /**
   * Store new connections in the config bucket (group `connections`, the only place they live) and
   * answer once this replica runs them; every other proxy worker applies the revision from its watch.
   * A config that would not load → 400 with every problem named.
   */
  update: requestContract('llm.connections.update', 1, ConnectionsUpdateRequest, ConnectionsUpdateReply),
} as const;
