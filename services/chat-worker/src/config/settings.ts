import type { Sql } from 'postgres';
import { z } from 'zod';
import { announceFrom, keepAnnounced, LiveConfig, type ConfigStore, type Logger } from '@gatehouse/common';
import { OAUTH_ENV_SEEDS, OAUTH_SETTINGS } from '../auth/oauth-settings.ts';
import { AUDIO_ENV_SEEDS, AUDIO_SETTINGS } from '../audio/audio-settings.ts';

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
  // The arena (POST /api/v1/evaluations/config); null = as the environment says (models.ops.ts arenaSettings).
  ENABLE_EVALUATION_ARENA_MODELS: z.boolean().nullable().default(null),
  EVALUATION_ARENA_MODELS: z.array(z.record(z.string(), z.unknown())).nullable().default(null),
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
  // Search: hybrid = full text + vectors fused by reciprocal rank in one SQL statement (retrieval/search.ts).
  ENABLE_RAG_HYBRID_SEARCH: z.boolean().default(false),
  RAG_TOP_K: z.number().int().positive().default(3),
  RAG_TOP_K_RERANKER: z.number().int().positive().default(3),
  RAG_RELEVANCE_THRESHOLD: z.number().default(0),
  RAG_HYBRID_BM25_WEIGHT: z.number().min(0).max(1).default(0.5),
  // Reranking through an external endpoint (Open WebUI's ExternalReranker wire format; retrieval/rerank.ts).
  RAG_RERANKING_ENGINE: z.enum(['', 'external']).default(''),
  RAG_RERANKING_MODEL: z.string().default(''),
  RAG_EXTERNAL_RERANKER_URL: z.string().default(''),
  RAG_EXTERNAL_RERANKER_API_KEY: z.string().default(''),
  RAG_EXTERNAL_RERANKER_TIMEOUT: z.string().default(''),
  // Empty = Open WebUI's default RAG template (the chat's retrieval fills it in).
  RAG_TEMPLATE: z.string().default(''),
  // Web search and web fetch (Open WebUI's web settings; retrieval/web-search.ts, web-fetch.ts). The
  // *_API_URL keys are this platform's: where Brave, Tavily and You.com are asked (default their APIs).
  ENABLE_WEB_SEARCH: z.boolean().default(false),
  WEB_SEARCH_ENGINE: z.string().default(''),
  WEB_SEARCH_RESULT_COUNT: z.number().int().positive().default(3),
  WEB_LOADER_TIMEOUT: z.string().default(''),
  // Characters of a fetched page kept (0 = all).
  WEB_FETCH_MAX_CONTENT_LENGTH: z.number().int().min(0).default(0),
  SEARXNG_QUERY_URL: z.string().default(''),
  SEARXNG_LANGUAGE: z.string().default('all'),
  BRAVE_SEARCH_API_KEY: z.string().default(''),
  BRAVE_SEARCH_API_URL: z.string().default(''),
  TAVILY_API_KEY: z.string().default(''),
  TAVILY_API_URL: z.string().default(''),
  YOUCOM_API_KEY: z.string().default(''),
  YOUCOM_API_URL: z.string().default(''),
  // OAuth / OIDC sign-in (Open WebUI's OAuthConfigForm names and defaults; auth/oauth-settings.ts).
  ...OAUTH_SETTINGS,
  // LDAP sign-in (Open WebUI's LDAP_* names and defaults; auth/ldap.ops.ts). LDAP_APP_PASSWORD is never answered.
  ENABLE_LDAP: z.boolean().default(false),
  LDAP_SERVER_LABEL: z.string().default('LDAP Server'),
  LDAP_SERVER_HOST: z.string().default('localhost'),
  LDAP_SERVER_PORT: z.number().int().min(1).max(65535).nullable().default(389),
  LDAP_ATTRIBUTE_FOR_MAIL: z.string().default('mail'),
  LDAP_ATTRIBUTE_FOR_USERNAME: z.string().default('uid'),
  LDAP_APP_DN: z.string().default(''),
  LDAP_APP_PASSWORD: z.string().default(''),
  LDAP_SEARCH_BASE: z.string().default(''),
  LDAP_SEARCH_FILTERS: z.string().default(''),
  LDAP_USE_TLS: z.boolean().default(true),
  LDAP_USE_STARTTLS: z.boolean().default(false),
  LDAP_CA_CERT_FILE: z.string().nullable().default(''),
  LDAP_VALIDATE_CERT: z.boolean().default(true),
  LDAP_CIPHERS: z.string().nullable().default('ALL'),
  ENABLE_LDAP_GROUP_MANAGEMENT: z.boolean().default(false),
  ENABLE_LDAP_GROUP_CREATION: z.boolean().default(false),
  LDAP_ATTRIBUTE_FOR_GROUPS: z.string().default('memberOf'),
  // Read-aloud and transcription (Open WebUI's AUDIO_* names; audio/audio-settings.ts).
  ...AUDIO_SETTINGS,
});
export type ChatSettings = z.infer<typeof ChatSettings>;
export type SettingKey = keyof ChatSettings;

/** Settings the environment may seed (same names as Open WebUI's variables). */
const ENV_SEEDS: SettingKey[] = [
  'SHOW_ADMIN_DETAILS', 'ADMIN_EMAIL', 'WEBUI_URL', 'ENABLE_SIGNUP', 'ENABLE_API_KEYS', 'DEFAULT_USER_ROLE',
  // API key endpoint restrictions (Open WebUI's variables; the edge enforces them, docs/auth.md).
  'ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS', 'API_KEYS_ALLOWED_ENDPOINTS',
  'JWT_EXPIRES_IN', 'ENABLE_FOLDERS', 'ENABLE_MEMORIES', 'ENABLE_MEMORY_SYSTEM_CONTEXT', 'ENABLE_NOTES', 'ENABLE_CHANNELS',
  'ENABLE_CONTEXT_COMPACTION', 'CONTEXT_COMPACTION_TOKEN_THRESHOLD', 'CONTEXT_COMPACTION_PROMPT_TEMPLATE', 'TASK_MODEL', 'TASK_MODEL_EXTERNAL',
  // Retrieval (Open WebUI's variable names).
  'CHUNK_SIZE', 'CHUNK_OVERLAP', 'TEXT_SPLITTER', 'TIKTOKEN_ENCODING_NAME', 'RAG_EMBEDDING_ENGINE', 'RAG_EMBEDDING_MODEL',
  'RAG_EMBEDDING_BATCH_SIZE', 'RAG_OPENAI_API_BASE_URL', 'RAG_OPENAI_API_KEY', 'RAG_OLLAMA_BASE_URL', 'RAG_OLLAMA_API_KEY',
  'ENABLE_RAG_HYBRID_SEARCH', 'RAG_TOP_K', 'RAG_TOP_K_RERANKER', 'RAG_RELEVANCE_THRESHOLD', 'RAG_HYBRID_BM25_WEIGHT',
  'RAG_RERANKING_ENGINE', 'RAG_RERANKING_MODEL', 'RAG_EXTERNAL_RERANKER_URL', 'RAG_EXTERNAL_RERANKER_API_KEY',
  'RAG_EXTERNAL_RERANKER_TIMEOUT', 'RAG_TEMPLATE',
  // Web search (Open WebUI's variable names; YOUCOM_API_KEY also read from YDC_API_KEY, webEnv).
  'ENABLE_WEB_SEARCH', 'WEB_SEARCH_ENGINE', 'WEB_SEARCH_RESULT_COUNT', 'WEB_LOADER_TIMEOUT', 'WEB_FETCH_MAX_CONTENT_LENGTH',
  'SEARXNG_QUERY_URL', 'SEARXNG_LANGUAGE', 'BRAVE_SEARCH_API_KEY', 'BRAVE_SEARCH_API_URL', 'TAVILY_API_KEY', 'TAVILY_API_URL',
  'YOUCOM_API_KEY', 'YOUCOM_API_URL',
  // OAuth / OIDC (Open WebUI's variable names: OAUTH_CLIENT_ID, OPENID_PROVIDER_URL, …).
  ...OAUTH_ENV_SEEDS,
  // LDAP (Open WebUI's variable names).
  'ENABLE_LDAP', 'LDAP_SERVER_LABEL', 'LDAP_SERVER_HOST', 'LDAP_SERVER_PORT', 'LDAP_ATTRIBUTE_FOR_MAIL',
  'LDAP_ATTRIBUTE_FOR_USERNAME', 'LDAP_APP_DN', 'LDAP_APP_PASSWORD', 'LDAP_SEARCH_BASE', 'LDAP_SEARCH_FILTERS',
  'LDAP_USE_TLS', 'LDAP_USE_STARTTLS', 'LDAP_CA_CERT_FILE', 'LDAP_VALIDATE_CERT', 'LDAP_CIPHERS',
  'ENABLE_LDAP_GROUP_MANAGEMENT', 'ENABLE_LDAP_GROUP_CREATION', 'LDAP_ATTRIBUTE_FOR_GROUPS',
  // Audio (Open WebUI's AUDIO_TTS_* / AUDIO_STT_* variables).
  ...AUDIO_ENV_SEEDS,
];

/** Environment value → the setting's type ("true"/"false" for booleans, as Open WebUI reads them). */
function fromEnv(key: SettingKey, raw: string): unknown {
  const def = ChatSettings.shape[key].parse(undefined);
  if (typeof def === 'boolean') return raw.trim().toLowerCase() === 'true';
  if (typeof def === 'number') return Number(raw);
  return raw;
}

/**
 * The environment with You.com's key as 0.10.2 reads it: `YOUCOM_API_KEY`, else the new name
 * `YDC_API_KEY` (the old name wins when both are set).
 */
export function webEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const key = env.YOUCOM_API_KEY ?? env.YDC_API_KEY;
  return key === undefined ? env : { ...env, YOUCOM_API_KEY: key };
}

/** Insert the environment's values for keys not stored yet (existing rows win). */
export async function seedSettings(sql: Sql, env: NodeJS.ProcessEnv, now: number): Promise<SettingKey[]> {
  const seeded: SettingKey[] = [];
  const seeds = webEnv(env);
  for (const key of ENV_SEEDS) {
    const raw = seeds[key];
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
  return parseSettings(stored);
}

/** What an operation wrote that must be announced once it has committed (trackSettingsWrites). */
export interface Saved {
  settings: boolean;
}

/**
 * Store some settings (inside the caller's transaction, next to its config.updated event). The
 * change reaches every replica through the config bucket: `saved` is the operation's own note
 * (OpContext.saved), so the request that called this announces the stored settings after its
 * transaction commits (`trackSettingsWrites`, wrapped around every operation by main.ts), and each
 * replica's LiveSettings applies the announced revision.
 */
export async function saveSettings(sql: Sql, values: Partial<ChatSettings>, now: number, saved: Saved): Promise<void> {
  saved.settings = true;
  for (const [key, value] of Object.entries(values)) {
    if (!(key in ChatSettings.shape) || value === undefined) continue;
    // sql.json(null) binds SQL NULL, not JSON null: a cleared setting (ADMIN_EMAIL…) is stored as 'null'.
    await sql`insert into config (key, value, updated_at) values (${key}, ${value === null ? sql`'null'::jsonb` : sql.json(value as never)}, ${now})
      on conflict (key) do update set value = excluded.value, updated_at = excluded.updated_at`;
  }
}

/**
 * The stored rows as they are (key → value), which is what the bus carries: every code version
 * announces the same thing for the same rows (defaults are filled in by each reader's own
 * parseSettings), so replicas of two versions during a rolling upgrade do not re-announce each
 * other's shape back and forth.
 */
export async function loadStoredSettings(sql: Sql): Promise<Record<string, unknown>> {
  const rows = await sql<{ key: string; value: unknown }[]>`select key, value from config order by key`;
  return Object.fromEntries(rows.map((r) => [r.key, r.value]));
}

/** Settings parsed key by key: a wrong-typed or missing key takes its default, unknown keys are dropped. */
export function parseSettings(raw: unknown): ChatSettings {
  const stored = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  const out = {} as Record<string, unknown>;
  for (const key of Object.keys(ChatSettings.shape) as SettingKey[]) {
    const r = ChatSettings.shape[key].safeParse(stored[key]);
    out[key] = r.success ? r.data : ChatSettings.shape[key].parse(undefined);
  }
  return out as ChatSettings;
}

/**
 * Run one operation; if it saved settings (`saved`, its context's note), `announce` runs after it
 * returned (its transaction has committed by then) and before its answer leaves — so the writer's
 * own replica already runs the change when the client hears back. An announcement that fails is
 * logged by `announce`'s owner; the reconciler (LiveSettings) announces it later.
 * The note travels in the operation's context rather than in an AsyncLocalStorage: one of those
 * turns on Node's promise hooks for the whole process, a cost on every promise of every request.
 */
export async function trackSettingsWrites<T>(saved: Saved, run: () => Promise<T>, announce: () => Promise<unknown>): Promise<T> {
  try {
    return await run();
  } finally {
    if (saved.settings) await announce().catch(() => undefined);
  }
}

/** The config bucket's key for the chat settings (services/common/src/config). */
export const SETTINGS_GROUP = 'chat.settings';

/**
 * Settings as every request reads them, without a query per request: the `chat.settings` group of
 * the config bucket, applied live. Postgres stays the source of truth (Open WebUI's per-key rows);
 * the bus carries each committed state with a revision:
 * - a writer announces after commit (trackSettingsWrites → announce), applying its own revision at once;
 * - at start-up a replica announces what Postgres holds (a no-op when the bus agrees), then follows;
 * - every `reconcileMs` each replica checks that the bus still says what Postgres says (a writer
 *   that died between commit and announcement is corrected), and re-reads the revision (a missed
 *   delivery is caught up).
 */
export class LiveSettings {
  readonly live: LiveConfig<ChatSettings>;
  private store: ConfigStore | undefined;
  private reconciler: { stop(): void } | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly by: string,
    private readonly log: Logger,
    private readonly reconcileMs = 10_000,
  ) {
    this.live = new LiveConfig<ChatSettings>({ group: SETTINGS_GROUP, parse: parseSettings, initial: parseSettings({}), log, recheckMs: reconcileMs });
  }

  async start(store: ConfigStore): Promise<void> {
    this.store = store;
    const rec = await announceFrom(store, SETTINGS_GROUP, () => loadStoredSettings(this.sql), this.by);
    if (rec) this.live.apply(rec);
    await this.live.follow(store);
    this.reconciler = keepAnnounced(store, SETTINGS_GROUP, () => loadStoredSettings(this.sql), this.by, this.reconcileMs, this.log);
  }

  /** After a committed write: put Postgres's settings on the bus and run them here already. */
  async announce(): Promise<void> {
    if (!this.store) return;
    try {
      const rec = await announceFrom(this.store, SETTINGS_GROUP, () => loadStoredSettings(this.sql), this.by);
      if (rec) this.live.apply(rec);
      // Logged by the writer whether its put or another replica's reconciler got there first.
      if (rec) this.log.info({ group: SETTINGS_GROUP, revision: rec.revision }, `config ${SETTINGS_GROUP}: saved here, announced as revision ${rec.revision}`);
    } catch (err) {
      this.log.warn({ err }, 'chat settings saved but not announced yet; the reconciler will');
      throw err;
    }
  }

  get(): Promise<ChatSettings> {
    return Promise.resolve(this.live.value);
  }

  stop(): void {
    this.reconciler?.stop();
    this.live.stop();
  }
}
