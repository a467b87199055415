import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { parseRouting, RoutingConfigError, type Routing } from '../routing/config.ts';

/**
 * The LLM proxy's upstream configuration: a JSON file named by LLMPROXY_CONFIG (format:
 * docs/llm-proxy-config.example.json, described in ./README.md). Secrets — `proxyKey`, every `apiKey`,
 * `native.serverApiKey` and provider `headers` (which may carry credentials) — are non-enumerable properties
 * of the returned objects: `JSON.stringify(config)`, a spread or a log line never contains them.
 */

export const DEFAULT_NATIVE_BASE_URL = 'https://api.anthropic.com';
export const DEFAULT_TIMEOUT_MS = 600_000;
export const DEFAULT_RETRIES: RetryPolicy = Object.freeze({ max: 2, baseDelayMs: 500, maxDelayMs: 10_000 });
export const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/** How often and how long the clients retry 429/5xx answers and failed connections (see ./README.md). */
export interface RetryPolicy {
  /** Retries after the first attempt (0 = one attempt only). */
  readonly max: number;
  readonly baseDelayMs: number;
  /** Longest wait between attempts; a `retry-after` longer than this ends the retries at once. */
  readonly maxDelayMs: number;
}

interface ProviderBase {
  /** The key in `providers`, i.e. the `<provider>` part of `<provider>/<model>`. */
  readonly name: string;
  /** No trailing slash. OpenAI type: includes the version prefix (`…/v1`); Anthropic type: without `/v1`. */
  readonly baseUrl: string;
  /** Models listed for this provider (model listing only; requests for other models still go through). */
  readonly models: readonly string[];
  /** Per-attempt time limit: until response headers, and between two body chunks. */
  readonly timeoutMs: number;
  /** Name of the environment variable the key came from, when it came from one. */
  readonly apiKeyEnv?: string;
  /** Non-enumerable. */
  readonly apiKey?: string;
  /** Extra static request headers, names lower-cased. Non-enumerable (they may carry credentials). */
  readonly headers: Readonly<Record<string, string>>;
}

export interface OpenAIProviderConfig extends ProviderBase {
  readonly type: 'openai';
  /** Forward Anthropic's `top_k` (Ollama, vLLM accept it; OpenAI does not). Default false. */
  readonly passTopK: boolean;
  /** Map Anthropic `thinking` to `reasoning_effort`. Default true. */
  readonly reasoningEffort: boolean;
  /** What `output_config.effort: "max"` becomes: `high` (default) or `xhigh` for models that have it. */
  readonly maxEffort: 'high' | 'xhigh';
  /**
   * Mid-conversation system messages go to this provider as `system` messages in place (default
   * true); false: such a request is refused with Anthropic's wording, so Claude Code retries without.
   */
  readonly midConversationSystem: boolean;
}

export interface AnthropicProviderConfig extends ProviderBase {
  readonly type: 'anthropic';
}

export type ProviderConfig = OpenAIProviderConfig | AnthropicProviderConfig;

export interface NativeConfig {
  /** First-party Anthropic API for bare `claude…` ids; LLMPROXY_NATIVE_BASE_URL overrides the file. */
  readonly baseUrl: string;
  readonly serverApiKeyEnv?: string;
  /** Non-enumerable. The key swapped in for callers who presented the proxy key. */
  readonly serverApiKey?: string;
}

export interface ProxyConfig {
  /** The file the config came from; undefined for the empty default. */
  readonly source?: string;
  /** Non-enumerable. Undefined when absent or empty. Read by the edge. */
  readonly proxyKey?: string;
  /** Null-prototype record: look names up with `getProvider` (or Object.hasOwn). */
  readonly providers: Readonly<Record<string, ProviderConfig>>;
  readonly native: NativeConfig;
  readonly timeoutMs: number;
  readonly retries: RetryPolicy;
  /** `metadata.user_id` → OpenAI `user`: off (default), hashed (SHA-256) or raw. */
  readonly forwardUserId: 'off' | 'hashed' | 'raw';
  /** The file's routing table (the seed; the config bucket's `llm.routing` replaces it live). */
  readonly routing: Routing;
  /** The file's `routing` section as written (what a stored revision is compared against). */
  readonly routingSource: unknown;
}

export class ProxyConfigError extends Error {
  override name = 'ProxyConfigError';
}

// setTimeout fires at once for anything above 2^31-1 ms.
const MAX_TIMER_MS = 2_147_483_647;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Set by the clients themselves, or hop-by-hop.
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection']);

const httpUrl = z.string().refine(
  (s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'http:' || u.protocol === 'https:') && !u.search && !u.hash && !u.username && !u.password;
    } catch {
      return false;
    }
  },
  { error: 'must be an absolute http(s) URL without query, fragment or credentials' },
);
const timeoutMs = z.number({ error: 'must be a number of milliseconds' }).int('must be an integer').min(1, 'must be at least 1').max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS}`);
const delayMs = z.number({ error: 'must be a number of milliseconds' }).int('must be an integer').min(0, 'must not be negative').max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS}`);
const nonEmpty = z.string({ error: 'must be a string' }).min(1, 'must not be empty');
const envName = z.string({ error: 'must be a string' }).regex(ENV_NAME, 'must be an environment variable name');
const headers = z.record(
  z.string().regex(HEADER_NAME, 'header names must be HTTP tokens').refine((n) => !RESERVED_HEADERS.has(n.toLowerCase()), { error: 'this header is set by the proxy itself' }),
  z.string({ error: 'header values must be strings' }).regex(/^[^\r\n\0]*$/, 'header values must not contain CR, LF or NUL'),
);

const providerCommon = {
  baseUrl: httpUrl,
  apiKey: nonEmpty.optional(),
  apiKeyEnv: envName.optional(),
  models: z.array(nonEmpty).optional(),
  headers: headers.optional(),
  timeoutMs: timeoutMs.optional(),
};

const OpenAIProviderSchema = z.strictObject({
  type: z.literal('openai'),
  ...providerCommon,
  passTopK: z.boolean({ error: 'must be true or false' }).optional(),
  reasoningEffort: z.boolean({ error: 'must be true or false' }).optional(),
  maxEffort: z.enum(['high', 'xhigh'], { error: 'must be "high" or "xhigh"' }).optional(),
  midConversationSystem: z.boolean({ error: 'must be true or false' }).optional(),
});
const AnthropicProviderSchema = z.strictObject({ type: z.literal('anthropic'), ...providerCommon });

const FileSchema = z.strictObject({
  $schema: z.string().optional(),
  proxyKey: z.string({ error: 'must be a string' }).optional(),
  providers: z
    .record(z.string(), z.discriminatedUnion('type', [OpenAIProviderSchema, AnthropicProviderSchema], { error: 'type must be "openai" or "anthropic"' }), {
      error: 'must be an object mapping provider names to providers',
    })
    .optional(),
  native: z
    .strictObject({ baseUrl: httpUrl.optional(), serverApiKey: nonEmpty.optional(), serverApiKeyEnv: envName.optional() }, { error: 'must be an object' })
    .optional(),
  timeoutMs: timeoutMs.optional(),
  forwardUserId: z.enum(['off', 'hashed', 'raw'], { error: 'must be "off", "hashed" or "raw"' }).optional(),
  // Checked against the providers in resolve() (routing/config.ts), where every problem is named.
  routing: z.unknown().optional(),
  retries: z
    .strictObject(
      { max: z.number({ error: 'must be a number' }).int('must be an integer').min(0, 'must not be negative').max(10, 'must be at most 10').optional(), baseDelayMs: delayMs.optional(), maxDelayMs: delayMs.optional() },
      { error: 'must be an object' },
    )
    .optional(),
});
type FileConfig = z.infer<typeof FileSchema>;

/**
 * Reads the config file at `path` (normally `env.LLMPROXY_CONFIG`). No path (undefined or empty) → the empty
 * config: no providers, native pass-through to the default base URL. Throws ProxyConfigError naming the file and
 * every bad field.
 */
export function loadProxyConfig(path: string | undefined, env: NodeJS.ProcessEnv): ProxyConfig {
  if (!path) return parseProxyConfig({}, env);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ProxyConfigError(`${path}: cannot read the LLM proxy config (${(err as Error).message})`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ProxyConfigError(`${path}: not valid JSON (${(err as Error).message})`);
  }
  return parseProxyConfig(raw, env, path);
}

/** `loadProxyConfig(env.LLMPROXY_CONFIG, env)`. */
export function loadProxyConfigFromEnv(env: NodeJS.ProcessEnv = process.env): ProxyConfig {
  return loadProxyConfig(env.LLMPROXY_CONFIG, env);
}

/** Validates an already-parsed config object; `source` names it in errors (the file path). */
export function parseProxyConfig(raw: unknown, env: NodeJS.ProcessEnv, source?: string): ProxyConfig {
  const where = source ?? 'LLM proxy config';
  const parsed = FileSchema.safeParse(raw);
  const problems: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(...describeIssue(issue));
  }
  // Provider names are checked here rather than in the schema so the message can quote the name.
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    const providers = (raw as { providers?: unknown }).providers;
    if (providers && typeof providers === 'object' && !Array.isArray(providers)) {
      for (const name of Object.keys(providers)) {
        if (!PROVIDER_NAME.test(name)) problems.push(`providers.${JSON.stringify(name)}: provider names must match ${PROVIDER_NAME.source}`);
      }
    }
  }
  if (problems.length || !parsed.success) throw configError(where, problems);

  const file = parsed.data;
  const config = resolve(file, env, source, problems);
  if (problems.length) throw configError(where, problems);
  return config;
}

function configError(where: string, problems: string[]): ProxyConfigError {
  return new ProxyConfigError(problems.length === 1 ? `${where}: ${problems[0]}` : `${where}:\n  ${problems.join('\n  ')}`);
}

function describeIssue(issue: z.core.$ZodIssue): string[] {
  const path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => `${path ? `${path}.` : ''}${key}: unknown field`);
  }
  if (issue.code === 'invalid_key') {
    // The key's own checks (header names) carry the useful message.
    return issue.issues.map((inner) => `${path}: ${inner.message}`);
  }
  return [`${path || '(top level)'}: ${issue.message}`];
}

function resolve(file: FileConfig, env: NodeJS.ProcessEnv, source: string | undefined, problems: string[]): ProxyConfig {
  const globalTimeout = file.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const retries: RetryPolicy = Object.freeze({
    max: file.retries?.max ?? DEFAULT_RETRIES.max,
    baseDelayMs: file.retries?.baseDelayMs ?? DEFAULT_RETRIES.baseDelayMs,
    maxDelayMs: file.retries?.maxDelayMs ?? DEFAULT_RETRIES.maxDelayMs,
  });

  const providers: Record<string, ProviderConfig> = Object.create(null) as Record<string, ProviderConfig>;
  for (const [name, p] of Object.entries(file.providers ?? {})) {
    const at = `providers.${name}`;
    const apiKey = secret(p.apiKey, p.apiKeyEnv, env, at, 'apiKey', 'apiKeyEnv', problems);
    const base = {
      name,
      type: p.type,
      baseUrl: trimSlash(p.baseUrl),
      models: Object.freeze([...(p.models ?? [])]),
      timeoutMs: p.timeoutMs ?? globalTimeout,
      ...(p.apiKeyEnv ? { apiKeyEnv: p.apiKeyEnv } : {}),
      ...(p.type === 'openai'
        ? { passTopK: p.passTopK ?? false, reasoningEffort: p.reasoningEffort ?? true, maxEffort: p.maxEffort ?? 'high', midConversationSystem: p.midConversationSystem ?? true }
        : {}),
    };
    const lowered: Record<string, string> = {};
    for (const [k, v] of Object.entries(p.headers ?? {})) lowered[k.toLowerCase()] = v;
    hide(base, 'headers', Object.freeze(lowered));
    if (apiKey !== undefined) hide(base, 'apiKey', apiKey);
    providers[name] = Object.freeze(base) as ProviderConfig;
  }

  let nativeBase = file.native?.baseUrl ?? DEFAULT_NATIVE_BASE_URL;
  const override = env.LLMPROXY_NATIVE_BASE_URL?.trim();
  if (override) {
    if (httpUrl.safeParse(override).success) nativeBase = override;
    else problems.push(`LLMPROXY_NATIVE_BASE_URL: must be an absolute http(s) URL, got ${JSON.stringify(override)}`);
  }
  const native = { baseUrl: trimSlash(nativeBase), ...(file.native?.serverApiKeyEnv ? { serverApiKeyEnv: file.native.serverApiKeyEnv } : {}) };
  const serverApiKey = secret(file.native?.serverApiKey, file.native?.serverApiKeyEnv, env, 'native', 'serverApiKey', 'serverApiKeyEnv', problems);
  if (serverApiKey !== undefined) hide(native, 'serverApiKey', serverApiKey);

  let routing: Routing | undefined;
  try {
    routing = parseRouting(file.routing, new Set(Object.keys(providers)));
  } catch (err) {
    if (!(err instanceof RoutingConfigError)) throw err;
    problems.push(...err.message.split('\n'));
  }
  const config = {
    ...(source ? { source } : {}),
    providers: Object.freeze(providers),
    native: Object.freeze(native),
    timeoutMs: globalTimeout,
    retries,
    forwardUserId: file.forwardUserId ?? 'off',
    routing: routing ?? parseRouting(undefined, new Set()),
    routingSource: file.routing ?? {},
  };
  if (file.proxyKey) hide(config, 'proxyKey', file.proxyKey);
  return Object.freeze(config);
}

/** A key given directly or through an environment variable; problems name the field and the variable. */
function secret(
  direct: string | undefined,
  envVar: string | undefined,
  env: NodeJS.ProcessEnv,
  at: string,
  directField: string,
  envField: string,
  problems: string[],
): string | undefined {
  if (direct !== undefined && envVar !== undefined) {
    problems.push(`${at}: give either ${directField} or ${envField}, not both`);
    return undefined;
  }
  if (envVar === undefined) return direct;
  const value = env[envVar];
  if (value === undefined || value === '') {
    problems.push(`${at}.${envField}: environment variable ${envVar} is ${value === undefined ? 'not set' : 'empty'}`);
    return undefined;
  }
  return value;
}

function hide(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: false, writable: false, configurable: false });
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/** The provider named `name`, or undefined (never an Object.prototype member such as "constructor"). */
export function getProvider(config: ProxyConfig, name: string): ProviderConfig | undefined {
  return Object.hasOwn(config.providers, name) ? config.providers[name] : undefined;
}

export type ParsedModelId =
  | { kind: 'native' }
  | { kind: 'provider'; provider: string; model: string }
  | { kind: 'invalid'; reason: string };

const EXPECTED_FORM = "expected '<provider>/<model>' (e.g. 'openai/gpt-4o-mini') or a first-party Anthropic model id starting with 'claude'";

/**
 * Routes a request's `model`. `<provider>/<model>` splits on the FIRST slash, so upstream ids may contain
 * slashes (`openrouter/google/gemini-2.5-pro` → provider `openrouter`, model `google/gemini-2.5-pro`). A bare id
 * (no slash) is native — passed through untouched to the first-party API — when it starts with `claude`
 * (case-sensitive, like Anthropic's ids); any other bare id is invalid. Whether the provider exists is the
 * caller's check (getProvider).
 */
export function parseModelId(model: string): ParsedModelId {
  const slash = model.indexOf('/');
  if (slash < 0) {
    if (model.startsWith('claude')) return { kind: 'native' };
    return { kind: 'invalid', reason: model ? `model ${JSON.stringify(model)}: ${EXPECTED_FORM}` : `model is empty: ${EXPECTED_FORM}` };
  }
  const provider = model.slice(0, slash);
  const upstream = model.slice(slash + 1);
  if (!provider) return { kind: 'invalid', reason: `model ${JSON.stringify(model)}: the provider part before '/' is empty; ${EXPECTED_FORM}` };
  if (!upstream) return { kind: 'invalid', reason: `model ${JSON.stringify(model)}: the model part after '/' is empty; ${EXPECTED_FORM}` };
  if (!PROVIDER_NAME.test(provider)) {
    return { kind: 'invalid', reason: `model ${JSON.stringify(model)}: provider names match ${PROVIDER_NAME.source}; ${EXPECTED_FORM}` };
  }
  return { kind: 'provider', provider, model: upstream };
}
