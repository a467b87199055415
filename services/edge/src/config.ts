import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { DEFAULT_NATS_URL, DEFAULT_REDIS_URL } from '@gatehouse/common';

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

/** The edge's environment. Keys are read here once; only their digests go further. */
export const EdgeEnv = z.object({
  /** NATS server (JetStream on): the bus to the workers and the gate store. */
  NATS_URL: z.string().default(DEFAULT_NATS_URL),
  /** Namespace prefix of subjects, buckets and Redis keys (tests share one NATS and Redis with it). */
  GATEHOUSE_NS: z.string().regex(/^[A-Za-z0-9_-]*$/, 'letters, digits, _ or -').default(''),
  /** Log every request (`true`); off by default so the hot path writes nothing. */
  LOG_REQUESTS: z
    .string()
    .default('false')
    .transform((v) => v.trim().toLowerCase() === 'true'),
  /** Address every face listens on; 0.0.0.0 inside a container, loopback on a bare host. */
  EDGE_HOST: z.string().default('127.0.0.1'),
  /** Speech face port. Bare host: TTS_GATEWAY_PORT (default 8196); container: 8000, published as 8196. */
  SPEECH_PORT: port(8196),
  /** Non-empty enforces the speech gate on start-up when it changed (docs/gates.md). */
  API_KEY: z.string().optional(),
  /** Longest silence between two frames of a synthesis stream before the edge gives up. */
  SPEECH_STREAM_IDLE_MS: z.coerce.number().int().positive().default(15_000),
  /** Longest total time of one synthesis (audio is cut there, the worker stopped); 0 = none. docs/limits.md. */
  SPEECH_STREAM_MAX_DURATION_MS: z.coerce.number().int().min(0).default(600_000),
  /** Syntheses in progress at once per client (key + address); more answer 429; 0 = no limit. */
  SPEECH_MAX_STREAMS_PER_CLIENT: z.coerce.number().int().min(0).default(16),
  /** Faces this edge serves (comma-separated): speech, llm. */
  EDGE_FACES: z
    .string()
    .default('speech,llm,vector,chat')
    .transform((s) => s.split(',').map((f) => f.trim()).filter(Boolean))
    .pipe(z.array(z.enum(['speech', 'llm', 'vector', 'chat'])).min(1, 'name at least one face')),
  /**
   * Whose address is the client's (sign-in limit per address, vector key sightings): unset/false →
   * the TCP peer; behind a reverse proxy, `true` (trust X-Forwarded-For from anyone — only when
   * nothing else can reach the edge), a hop count, or the proxies' addresses/CIDRs comma-separated.
   */
  EDGE_TRUST_PROXY: z
    .string()
    .default('false')
    .transform((v): boolean | number | string[] => {
      const t = v.trim().toLowerCase();
      if (t === '' || t === 'false') return false;
      if (t === 'true') return true;
      if (/^\d+$/.test(t)) return Number(t);
      return t.split(',').map((a) => a.trim()).filter(Boolean);
    }),
  /**
   * Open WebUI's trusted-header sign-in: the header an authenticating proxy puts the user's email
   * (name, comma-separated groups) in. Honoured only from the proxies EDGE_TRUST_PROXY names.
   */
  WEBUI_AUTH_TRUSTED_EMAIL_HEADER: z.string().optional(),
  WEBUI_AUTH_TRUSTED_NAME_HEADER: z.string().optional(),
  WEBUI_AUTH_TRUSTED_GROUPS_HEADER: z.string().optional(),
  /** Open WebUI's: where the OIDC provider sends the browser after its sign-out (post_logout_redirect_uri). */
  WEBUI_AUTH_SIGNOUT_REDIRECT_URL: z.string().optional(),
  /** Chat platform face port (Open WebUI's 8080). */
  CHAT_PORT: port(8080),
  /**
   * Open WebUI's ENV: `dev` serves the chat face's API document at /openapi.json and /docs;
   * anything else leaves those paths to the web UI. `prod` by default, as Open WebUI's image sets it.
   */
  ENV: z.string().default('prod'),
  /** The web UI's build served on the chat face (scripts/start and scripts/test build it). */
  WEB_UI_DIR: z
    .string()
    .default(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web-ui', 'dist'))
    .transform((p) => resolve(p)),
  /** Session signing secret (Open WebUI's variable). Unset → generated once and kept in WEBUI_SECRET_KEY_FILE. */
  WEBUI_SECRET_KEY: z.string().optional(),
  WEBUI_SECRET_KEY_FILE: z.string().default(join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '.state', 'webui_secret_key')),
  /** Bytes of a generated secret (Open WebUI 0.10: default 24). */
  WEBUI_SECRET_KEY_LENGTH: z.coerce.number().int().min(16).max(256).default(24),
  WEBUI_AUTH_COOKIE_SAME_SITE: z.enum(['lax', 'strict', 'none']).default('lax'),
  /** Open WebUI's CORS origins (`;`-separated); here also the other origins allowed to use the session cookie for changes. */
  CORS_ALLOW_ORIGIN: z.string().default(''),
  WEBUI_AUTH_COOKIE_SECURE: z
    .string()
    .default('false')
    .transform((v) => v.trim().toLowerCase() === 'true'),
  /** Longest silence between two frames of a chat completion (a non-streamed answer is one silence). */
  CHAT_STREAM_IDLE_MS: z.coerce.number().int().positive().default(610_000),
  /** Longest total time of one chat completion (ends with Open WebUI's in-stream error, the upstream cancelled); 0 = none. */
  CHAT_STREAM_MAX_DURATION_MS: z.coerce.number().int().min(0).default(1_800_000),
  /** Chat completions in progress at once per user (streamed or not); more answer 429; 0 = no limit. */
  CHAT_MAX_STREAMS_PER_USER: z.coerce.number().int().min(0).default(32),
  /** Longest wait for a chat worker's answer to a JSON operation (a worker killed mid-request answers never). */
  CHAT_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  /** Longest wait for a chat worker to take an upload already in the object store (it may copy a large file first). */
  CHAT_UPLOAD_TIMEOUT_MS: z.coerce.number().int().positive().default(900_000),
  /** Longest wait for a vector worker's answer (large upserts with wait=true take long). */
  VECTOR_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(300_000),
  /** Open WebUI's per-file upload limit, in MB: a larger upload is cut off while streaming and answers 413. */
  RAG_FILE_MAX_SIZE: z.coerce.number().positive().default(100),
  /** Sign-in attempts per rolling window: per account (Open WebUI: 15 in 3 minutes) and per client address. */
  SIGNIN_RATE_LIMIT_PER_ACCOUNT: z.coerce.number().int().min(1).default(15),
  SIGNIN_RATE_LIMIT_PER_ADDRESS: z.coerce.number().int().min(1).default(60),
  SIGNIN_RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).default(180),
  /** Vector store face port (Qdrant's REST port). */
  VECTOR_PORT: port(6333),
  /** Vector store gRPC port (Qdrant's 6334: its Python, Rust and Go clients with prefer_grpc); served with the vector face. */
  VECTOR_GRPC_PORT: port(6334),
  /** Non-empty enforces the vector gate (header `api-key`, or `Authorization: Bearer`). */
  VECTORDB__SERVICE__API_KEY: z.string().optional(),
  /** A key that may read but gets 403 on writes (Qdrant's read_only_api_key). */
  VECTORDB__SERVICE__READ_ONLY_API_KEY: z.string().optional(),
  /** Redis: where the vector face records which key each client presents (rollout preflight). */
  REDIS_URL: z.string().default(DEFAULT_REDIS_URL),
  /** LLM proxy face port (3000 by default, where Anthropic-style clients expect a local proxy). */
  PROXY_PORT: port(3000),
  /** The proxy key; wins over the config file's proxyKey. Empty → no gate. */
  LLMPROXY_PROXY_KEY: z.string().optional(),
  /** The proxy's JSON config file (providers; `proxyKey` is the fallback key). */
  LLMPROXY_CONFIG: z.string().optional(),
  /** Longest silence between two frames of an LLM reply; a non-streamed answer is one silence. */
  LLM_STREAM_IDLE_MS: z.coerce.number().int().positive().default(610_000),
  /** Longest total time of one LLM reply (a stream ends with Anthropic's `event: error`, the upstream cancelled); 0 = none. */
  LLM_STREAM_MAX_DURATION_MS: z.coerce.number().int().min(0).default(1_800_000),
  /** LLM replies in progress at once per client (key + address, streamed or not); more answer 429; 0 = no limit. */
  LLM_MAX_STREAMS_PER_CLIENT: z.coerce.number().int().min(0).default(128),
  /**
   * How long a concurrency slot outlives the last renewal by the edge holding it (Redis leases,
   * kit/stream-limits.ts): after an edge dies, its clients' slots come back within this.
   */
  STREAM_SLOT_LEASE_MS: z.coerce.number().int().min(1000).default(30_000),
});
export type EdgeEnv = z.infer<typeof EdgeEnv>;

/**
 * The proxy key in force at start-up: LLMPROXY_PROXY_KEY, else the config file's `proxyKey`
 * (the environment wins). A config file that cannot be read stops the edge: guessing
 * "no key" would open a gate the operator meant to close.
 */
export function effectiveProxyKey(env: EdgeEnv): string | undefined {
  if (env.LLMPROXY_PROXY_KEY) return env.LLMPROXY_PROXY_KEY;
  if (!env.LLMPROXY_CONFIG) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(env.LLMPROXY_CONFIG, 'utf8'));
  } catch (err) {
    throw new Error(`LLMPROXY_CONFIG: cannot read ${env.LLMPROXY_CONFIG} as JSON (${(err as Error).message})`);
  }
  const key = (parsed as { proxyKey?: unknown }).proxyKey;
  if (key !== undefined && typeof key !== 'string') throw new Error(`LLMPROXY_CONFIG: proxyKey in ${env.LLMPROXY_CONFIG} must be a string`);
  return key || undefined;
}
