import type { Sql } from 'postgres';
import { z } from 'zod';

/**
 * Platform settings, one row per key in the `config` table (Open WebUI 0.10 keeps config per key
 * in its database; the environment only seeds keys that are not stored yet, so an admin's change
 * survives restarts). Names are Open WebUI's AdminConfig names.
 */
export const ChatSettings = z.object({
  SHOW_ADMIN_DETAILS: z.boolean().default(true),
  ADMIN_EMAIL: z.string().nullable().default(null),
  WEBUI_URL: z.string().default(''),
  ENABLE_SIGNUP: z.boolean().default(true),
  ENABLE_API_KEYS: z.boolean().default(false),
  ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: z.boolean().default(false),
  API_KEYS_ALLOWED_ENDPOINTS: z.string().default(''),
  DEFAULT_USER_ROLE: z.enum(['pending', 'user', 'admin']).default('pending'),
  DEFAULT_GROUP_ID: z.string().default(''),
  JWT_EXPIRES_IN: z.string().default('4w'),
  ENABLE_COMMUNITY_SHARING: z.boolean().default(false),
  ENABLE_MESSAGE_RATING: z.boolean().default(true),
  ENABLE_FOLDERS: z.boolean().default(true),
  FOLDER_MAX_FILE_COUNT: z.number().nullable().default(null),
  AUTOMATION_MAX_COUNT: z.number().nullable().default(null),
  AUTOMATION_MIN_INTERVAL: z.number().nullable().default(null),
  ENABLE_AUTOMATIONS: z.boolean().default(true),
  ENABLE_CHANNELS: z.boolean().default(false),
  ENABLE_CALENDAR: z.boolean().default(true),
  ENABLE_MEMORIES: z.boolean().default(true),
  ENABLE_MEMORY_SYSTEM_CONTEXT: z.boolean().default(true),
  ENABLE_NOTES: z.boolean().default(true),
  ENABLE_USER_WEBHOOKS: z.boolean().default(false),
  ENABLE_USER_STATUS: z.boolean().default(true),
  PENDING_USER_OVERLAY_TITLE: z.string().nullable().default(null),
  PENDING_USER_OVERLAY_CONTENT: z.string().nullable().default(null),
  RESPONSE_WATERMARK: z.string().nullable().default(null),
  // Automatic context compaction (0.10.0; GET/POST /api/v1/chats/config).
  ENABLE_CONTEXT_COMPACTION: z.boolean().default(false),
  CONTEXT_COMPACTION_TOKEN_THRESHOLD: z.number().int().positive().default(80000),
  CONTEXT_COMPACTION_PROMPT_TEMPLATE: z.string().default(''),
  // The model that writes summaries (Open WebUI's task model; empty = the chat's own model).
  TASK_MODEL: z.string().default(''),
  TASK_MODEL_EXTERNAL: z.string().default(''),
  // Retrieval (Open WebUI's RAG settings; GET /api/v1/retrieval/config, /config/update, /embedding/update).
  // Chunking: TEXT_SPLITTER '' or 'character' = recursive character splitter, 'token' = tiktoken tokens.
  CHUNK_SIZE: z.number().int().positive().default(1000),
  CHUNK_OVERLAP: z.number().int().min(0).default(100),
  TEXT_SPLITTER: z.enum(['', 'character', 'token']).default(''),
  TIKTOKEN_ENCODING_NAME: z.enum(['cl100k_base', 'o200k_base', 'p50k_base', 'r50k_base', 'gpt2']).default('cl100k_base'),
  // Embeddings: engine '' = the offline lexical-hash-v1 (no model, no network), 'openai' or 'ollama' = that endpoint.
  RAG_EMBEDDING_ENGINE: z.enum(['', 'openai', 'ollama']).default(''),
  RAG_EMBEDDING_MODEL: z.string().default(''),
  RAG_EMBEDDING_BATCH_SIZE: z.number().int().positive().default(1),
  RAG_OPENAI_API_BASE_URL: z.string().default('https://api.openai.com/v1'),
  RAG_OPENAI_API_KEY: z.string().default(''),
  RAG_OLLAMA_BASE_URL: z.string().default('http://localhost:11434'),
  RAG_OLLAMA_API_KEY: z.string().default(''),
  // Search: hybrid = full text + vectors fused by reciprocal rank in one SQL statement (knowledge/search.ts).
  ENABLE_RAG_HYBRID_SEARCH: z.boolean().default(false),
  RAG_TOP_K: z.number().int().positive().default(3),
  RAG_TOP_K_RERANKER: z.number().int().positive().default(3),
  RAG_RELEVANCE_THRESHOLD: z.number().default(0),
  RAG_HYBRID_BM25_WEIGHT: z.number().min(0).max(1).default(0.5),
  // Reranking through an external endpoint (Open WebUI's ExternalReranker wire format; knowledge/rerank.ts).
  RAG_RERANKING_ENGINE: z.enum(['', 'external']).default(''),
  RAG_RERANKING_MODEL: z.string().default(''),
  RAG_EXTERNAL_RERANKER_URL: z.string().default(''),
  RAG_EXTERNAL_RERANKER_API_KEY: z.string().default(''),
  RAG_EXTERNAL_RERANKER_TIMEOUT: z.string().default(''),
  // Empty = Open WebUI's default RAG template (the chat's retrieval fills it in).
  RAG_TEMPLATE: z.string().default(''),
});
export type ChatSettings = z.infer<typeof ChatSettings>;
export type SettingKey = keyof ChatSettings;

/** Settings the environment may seed (same names as Open WebUI's variables). */
const ENV_SEEDS: SettingKey[] = [
  'SHOW_ADMIN_DETAILS', 'ADMIN_EMAIL', 'WEBUI_URL', 'ENABLE_SIGNUP', 'ENABLE_API_KEYS', 'DEFAULT_USER_ROLE',
  'JWT_EXPIRES_IN', 'ENABLE_FOLDERS', 'ENABLE_MEMORIES', 'ENABLE_MEMORY_SYSTEM_CONTEXT', 'ENABLE_NOTES', 'ENABLE_CHANNELS',
  'ENABLE_CONTEXT_COMPACTION', 'CONTEXT_COMPACTION_TOKEN_THRESHOLD', 'CONTEXT_COMPACTION_PROMPT_TEMPLATE', 'TASK_MODEL', 'TASK_MODEL_EXTERNAL',
  // Retrieval (Open WebUI's variable names).
  'CHUNK_SIZE', 'CHUNK_OVERLAP', 'TEXT_SPLITTER', 'TIKTOKEN_ENCODING_NAME', 'RAG_EMBEDDING_ENGINE', 'RAG_EMBEDDING_MODEL',
  'RAG_EMBEDDING_BATCH_SIZE', 'RAG_OPENAI_API_BASE_URL', 'RAG_OPENAI_API_KEY', 'RAG_OLLAMA_BASE_URL', 'RAG_OLLAMA_API_KEY',
  'ENABLE_RAG_HYBRID_SEARCH', 'RAG_TOP_K', 'RAG_TOP_K_RERANKER', 'RAG_RELEVANCE_THRESHOLD', 'RAG_HYBRID_BM25_WEIGHT',
  'RAG_RERANKING_ENGINE', 'RAG_RERANKING_MODEL', 'RAG_EXTERNAL_RERANKER_URL', 'RAG_EXTERNAL_RERANKER_API_KEY',
  'RAG_EXTERNAL_RERANKER_TIMEOUT', 'RAG_TEMPLATE',
];

/** Environment value → the setting's type ("true"/"false" for booleans, as Open WebUI reads them). */
function fromEnv(key: SettingKey, raw: string): unknown {
  const def = ChatSettings.shape[key].parse(undefined);
  if (typeof def === 'boolean') return raw.trim().toLowerCase() === 'true';
  if (typeof def === 'number') return Number(raw);
  return raw;
}

/** Insert the environment's values for keys not stored yet (existing rows win). */
export async function seedSettings(sql: Sql, env: NodeJS.ProcessEnv, now: number): Promise<SettingKey[]> {
  const seeded: SettingKey[] = [];
  for (const key of ENV_SEEDS) {
    const raw = env[key];
    if (raw === undefined) continue;
    const value = ChatSettings.shape[key].parse(fromEnv(key, raw));
    const rows = await sql`insert into config (key, value, updated_at) values (${key}, ${sql.json(value as never)}, ${now})
      on conflict (key) do nothing returning key`;
    if (rows.length) seeded.push(key);
  }
  return seeded;
}

export async function loadSettings(sql: Sql): Promise<ChatSettings> {
  const rows = await sql<{ key: string; value: unknown }[]>`select key, value from config`;
  const stored: Record<string, unknown> = {};
  for (const r of rows) if (r.key in ChatSettings.shape) stored[r.key] = r.value;
  // A stored value of the wrong type (hand-edited row) falls back to the default, not a crash.
  const out = {} as Record<string, unknown>;
  for (const key of Object.keys(ChatSettings.shape) as SettingKey[]) {
    const r = ChatSettings.shape[key].safeParse(stored[key]);
    out[key] = r.success ? r.data : ChatSettings.shape[key].parse(undefined);
  }
  return out as ChatSettings;
}

/**
 * Store some settings (inside the caller's transaction, next to its config.updated event). The
 * NOTIFY is delivered at commit: every replica's SettingsCache drops its copy then.
 */
export async function saveSettings(sql: Sql, values: Partial<ChatSettings>, now: number): Promise<void> {
  await sql`select pg_notify(current_schema() || '_config', '')`;
  for (const [key, value] of Object.entries(values)) {
    if (!(key in ChatSettings.shape) || value === undefined) continue;
    // sql.json(null) binds SQL NULL, not JSON null: a cleared setting (ADMIN_EMAIL…) is stored as 'null'.
    await sql`insert into config (key, value, updated_at) values (${key}, ${value === null ? sql`'null'::jsonb` : sql.json(value as never)}, ${now})
      on conflict (key) do update set value = excluded.value, updated_at = excluded.updated_at`;
  }
}

/**
 * Settings as every request reads them, without a query per request: cached, dropped when any
 * replica saves (NOTIFY at commit) or the listening connection (re)connects, and at most
 * `maxAgeMs` old even if a notification were lost.
 */
export class SettingsCache {
  private cached: Promise<ChatSettings> | undefined;
  private loadedAt = 0;

  constructor(
    private readonly sql: Sql,
    private readonly channel: string,
    private readonly maxAgeMs = 5000,
  ) {}

  async start(): Promise<void> {
    const drop = () => {
      this.cached = undefined;
    };
    await this.sql.listen(this.channel, drop, drop);
  }

  get(): Promise<ChatSettings> {
    if (!this.cached || Date.now() - this.loadedAt > this.maxAgeMs) {
      const p = loadSettings(this.sql);
      this.cached = p;
      this.loadedAt = Date.now();
      p.catch(() => {
        if (this.cached === p) this.cached = undefined;
      });
    }
    return this.cached;
  }
}
