/**
 * Open WebUI 0.10.2's connection settings, read from the environment exactly as its config.py reads
 * them (see ./README.md for every variable). Keys and per-connection `headers` are non-enumerable
 * properties: `JSON.stringify`, a spread or a log line never carries them.
 */

import { z } from 'zod';
import type { OllamaConnectionsForm, OpenAIConnectionsForm } from '@gatehouse/contracts';

export const DEFAULT_OLLAMA_API_BASE_URL = 'http://localhost:11434/api';
export const DEFAULT_OPENAI_API_BASE_URL = 'https://api.openai.com/v1';
/** Open WebUI waits 10 s per listing; 5 s here so a listing answers within the bus's 10 s request timeout. */
export const DEFAULT_LIST_TIMEOUT_MS = 5_000;
export const DEFAULT_MODELS_CACHE_TTL_MS = 10_000;

export type Tag = { name: string };

interface ConnectionBase {
  /** Position in its *_BASE_URLS list (Open WebUI's url_idx / urlIdx). */
  readonly idx: number;
  /** No trailing slash. Empty when the list entry was empty or not an http(s) URL: such a connection lists nothing. */
  readonly url: string;
  readonly enabled: boolean;
  readonly prefixId?: string;
  readonly modelIds: readonly string[];
  readonly tags: readonly Tag[];
  readonly connectionType: string;
  /** Non-enumerable. */
  readonly key?: string;
  /** Extra request headers from the config, names lower-cased. Non-enumerable (they may carry credentials). */
  readonly headers: Readonly<Record<string, string>>;
}

export interface OllamaConnection extends ConnectionBase {
  readonly kind: 'ollama';
}

export interface OpenAIConnection extends ConnectionBase {
  readonly kind: 'openai';
  /** `bearer` (default) sends the key; `none` sends no Authorization header. */
  readonly authType: string;
}

export type Connection = OllamaConnection | OpenAIConnection;

export interface ConnectionsConfig {
  readonly ollama: { readonly enabled: boolean; readonly connections: readonly OllamaConnection[] };
  readonly openai: { readonly enabled: boolean; readonly connections: readonly OpenAIConnection[] };
  /** Whole-request limit for one upstream model listing. */
  readonly listTimeoutMs: number;
  /** How long one connection's model list is reused. */
  readonly cacheTtlMs: number;
}

export class ConnectionsConfigError extends Error {
  override name = 'ConnectionsConfigError';
}

const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Open WebUI's boolean env parsing: only "true" (any case) is true. */
function envFlag(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  return value.trim().toLowerCase() === 'true';
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

function positiveSeconds(env: NodeJS.ProcessEnv, name: string, fallbackMs: number, problems: string[]): number {
  const raw = env[name]?.trim();
  if (!raw) return fallbackMs;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) {
    problems.push(`${name}: must be a number of seconds, got ${JSON.stringify(raw)}`);
    return fallbackMs;
  }
  return Math.round(n * 1000);
}

function parseConfigs(env: NodeJS.ProcessEnv, name: string, problems: string[]): Record<string, unknown> {
  const raw = env[name]?.trim();
  if (!raw) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    problems.push(`${name}: not valid JSON (${(err as Error).message})`);
    return {};
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    problems.push(`${name}: must be a JSON object keyed by connection index ("0", "1", …) or base URL`);
    return {};
  }
  return parsed as Record<string, unknown>;
}

/** Open WebUI: `configs.get(str(idx), configs.get(url, {}))` — the index key wins even when its value is empty. */
function configFor(configs: Record<string, unknown>, idx: number, url: string, rawUrl: string): { at: string; value: Record<string, unknown> } {
  for (const key of [String(idx), rawUrl, url]) {
    if (Object.hasOwn(configs, key)) {
      const value = configs[key];
      return { at: key, value: value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {} };
    }
  }
  return { at: String(idx), value: {} };
}

interface CommonFields {
  enabled: boolean;
  prefixId?: string;
  modelIds: string[];
  tags: Tag[];
  connectionType?: string;
  key?: string;
  authType?: string;
  headers: Record<string, string>;
}

function readCommon(where: string, c: Record<string, unknown>, problems: string[]): CommonFields {
  const out: CommonFields = { enabled: true, modelIds: [], tags: [], headers: {} };
  if (c.enable !== undefined && c.enable !== null) {
    if (typeof c.enable === 'boolean') out.enabled = c.enable;
    else problems.push(`${where}.enable: must be true or false`);
  }
  if (c.prefix_id !== undefined && c.prefix_id !== null) {
    if (typeof c.prefix_id === 'string') {
      if (c.prefix_id.trim()) out.prefixId = c.prefix_id.trim();
    } else problems.push(`${where}.prefix_id: must be a string`);
  }
  if (c.model_ids !== undefined && c.model_ids !== null) {
    if (Array.isArray(c.model_ids) && c.model_ids.every((m) => typeof m === 'string')) out.modelIds = c.model_ids as string[];
    else problems.push(`${where}.model_ids: must be a list of model ids`);
  }
  if (c.tags !== undefined && c.tags !== null) {
    // Open WebUI's admin page stores [{name}]; plain strings are accepted too.
    if (Array.isArray(c.tags)) {
      for (const t of c.tags) {
        if (typeof t === 'string' && t) out.tags.push({ name: t });
        else if (t && typeof t === 'object' && typeof (t as { name?: unknown }).name === 'string') out.tags.push({ name: (t as { name: string }).name });
        else problems.push(`${where}.tags: each tag must be a string or {"name": "…"}`);
      }
    } else problems.push(`${where}.tags: must be a list`);
  }
  if (c.connection_type !== undefined && c.connection_type !== null) {
    if (typeof c.connection_type === 'string') {
      if (c.connection_type) out.connectionType = c.connection_type;
    } else problems.push(`${where}.connection_type: must be a string`);
  }
  if (c.key !== undefined && c.key !== null) {
    if (typeof c.key === 'string') {
      if (c.key) out.key = c.key;
    } else problems.push(`${where}.key: must be a string`);
  }
  if (c.auth_type !== undefined && c.auth_type !== null) {
    if (typeof c.auth_type === 'string') out.authType = c.auth_type;
    else problems.push(`${where}.auth_type: must be a string`);
  }
  if (c.headers !== undefined && c.headers !== null) {
    if (typeof c.headers === 'object' && !Array.isArray(c.headers)) {
      for (const [name, value] of Object.entries(c.headers as Record<string, unknown>)) {
        if (!HEADER_NAME.test(name)) problems.push(`${where}.headers: ${JSON.stringify(name)} is not a valid header name`);
        else if (RESERVED_HEADERS.has(name.toLowerCase())) problems.push(`${where}.headers.${name}: this header is set by the proxy itself`);
        else if (typeof value !== 'string' || /[\r\n\0]/.test(value)) problems.push(`${where}.headers.${name}: must be a string without CR, LF or NUL`);
        else out.headers[name.toLowerCase()] = value;
      }
    } else problems.push(`${where}.headers: must be an object of header names to values`);
  }
  return out;
}

function hide(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: false, writable: false, configurable: false });
}

function splitList(value: string): string[] {
  return value.split(';').map((s) => s.trim());
}

/**
 * Reads the connection registry's settings. Throws ConnectionsConfigError naming every bad variable or
 * config field at once.
 *
 * Defaults as Open WebUI: both APIs enabled; Ollama at OLLAMA_BASE_URL, else OLLAMA_API_BASE_URL without
 * its `/api`, i.e. http://localhost:11434. One deliberate difference: with no OPENAI_API_* variable at all
 * (no URL and no key) there is no OpenAI connection, where Open WebUI would list https://api.openai.com/v1
 * without a key — a request that can only answer 401 and contribute nothing.
 */
export function loadConnectionsConfig(env: NodeJS.ProcessEnv, stored: StoredConnections = {}): ConnectionsConfig {
  const problems: string[] = [];

  // Ollama: as an admin saved it, else from the environment (the seed).
  let ollamaEnabled: boolean;
  let ollamaUrls: string[];
  let ollamaConfigs: Record<string, unknown>;
  if (stored.ollama) {
    ({ enabled: ollamaEnabled, urls: ollamaUrls, configs: ollamaConfigs } = stored.ollama);
    ollamaUrls = ollamaUrls.map((u) => u.trim());
  } else {
    ollamaEnabled = envFlag(env.ENABLE_OLLAMA_API, true);
    let ollamaBase = env.OLLAMA_BASE_URL ?? '';
    if (ollamaBase.endsWith('/')) ollamaBase = ollamaBase.slice(0, -1);
    if (ollamaBase === '') {
      const api = env.OLLAMA_API_BASE_URL ?? DEFAULT_OLLAMA_API_BASE_URL;
      ollamaBase = api.endsWith('/api') ? api.slice(0, -4) : api;
    }
    ollamaUrls = splitList(env.OLLAMA_BASE_URLS ? env.OLLAMA_BASE_URLS : ollamaBase);
    ollamaConfigs = parseConfigs(env, 'OLLAMA_API_CONFIGS', problems);
  }
  const ollamaConnections: OllamaConnection[] = ollamaUrls.map((raw, idx) => {
    const url = trimSlash(raw);
    const { at, value } = configFor(ollamaConfigs, idx, url, raw);
    const c = readCommon(`OLLAMA_API_CONFIGS[${JSON.stringify(at)}]`, value, problems);
    const conn = {
      kind: 'ollama' as const,
      idx,
      url: isHttpUrl(url) ? url : '',
      enabled: c.enabled,
      ...(c.prefixId ? { prefixId: c.prefixId } : {}),
      modelIds: Object.freeze([...c.modelIds]),
      tags: Object.freeze(c.tags),
      connectionType: c.connectionType ?? 'local',
    };
    hide(conn, 'headers', Object.freeze(c.headers));
    if (c.key) hide(conn, 'key', c.key);
    return Object.freeze(conn) as OllamaConnection;
  });

  // OpenAI-compatible: as an admin saved it, else from the environment (the seed).
  let openaiEnabled: boolean;
  let openaiUrls: string[];
  let keys: string[];
  let openaiConfigs: Record<string, unknown>;
  if (stored.openai) {
    ({ enabled: openaiEnabled, urls: openaiUrls, keys, configs: openaiConfigs } = stored.openai);
    openaiUrls = openaiUrls.map((u) => u.trim());
  } else {
    openaiEnabled = envFlag(env.ENABLE_OPENAI_API, true);
    const anyOpenAIEnv = Boolean(env.OPENAI_API_BASE_URLS || env.OPENAI_API_BASE_URL || env.OPENAI_API_KEYS || env.OPENAI_API_KEY);
    let openaiBase = env.OPENAI_API_BASE_URL ?? '';
    if (openaiBase === '') openaiBase = DEFAULT_OPENAI_API_BASE_URL;
    else if (openaiBase.endsWith('/')) openaiBase = openaiBase.slice(0, -1);
    openaiUrls = anyOpenAIEnv ? splitList(env.OPENAI_API_BASE_URLS ? env.OPENAI_API_BASE_URLS : openaiBase).map((u) => (u === '' ? DEFAULT_OPENAI_API_BASE_URL : u)) : [];
    keys = splitList(env.OPENAI_API_KEYS ? env.OPENAI_API_KEYS : (env.OPENAI_API_KEY ?? ''));
    openaiConfigs = parseConfigs(env, 'OPENAI_API_CONFIGS', problems);
  }
  const openaiConnections: OpenAIConnection[] = openaiUrls.map((raw, idx) => {
    const url = trimSlash(raw);
    const { at, value } = configFor(openaiConfigs, idx, url, raw);
    const c = readCommon(`OPENAI_API_CONFIGS[${JSON.stringify(at)}]`, value, problems);
    const conn = {
      kind: 'openai' as const,
      idx,
      url: isHttpUrl(url) ? url : '',
      enabled: c.enabled,
      ...(c.prefixId ? { prefixId: c.prefixId } : {}),
      modelIds: Object.freeze([...c.modelIds]),
      tags: Object.freeze(c.tags),
      connectionType: c.connectionType ?? 'external',
      authType: c.authType ?? 'bearer',
    };
    hide(conn, 'headers', Object.freeze(c.headers));
    // Open WebUI pads missing keys with "" and drops extra ones: index-aligned.
    const key = keys[idx] ?? '';
    if (key) hide(conn, 'key', key);
    return Object.freeze(conn) as OpenAIConnection;
  });

  const listTimeoutMs = positiveSeconds(env, 'AIOHTTP_CLIENT_TIMEOUT_MODEL_LIST', DEFAULT_LIST_TIMEOUT_MS, problems) || DEFAULT_LIST_TIMEOUT_MS;
  const cacheTtlMs = positiveSeconds(env, 'MODELS_CACHE_TTL', DEFAULT_MODELS_CACHE_TTL_MS, problems);

  if (problems.length) {
    throw new ConnectionsConfigError(problems.length === 1 ? (problems[0] as string) : `\n  ${problems.join('\n  ')}`);
  }
  return Object.freeze({
    ollama: Object.freeze({ enabled: ollamaEnabled, connections: Object.freeze(ollamaConnections) }),
    openai: Object.freeze({ enabled: openaiEnabled, connections: Object.freeze(openaiConnections) }),
    listTimeoutMs,
    cacheTtlMs,
  });
}

/**
 * The `connections` group of the config bucket (services/common/src/config): what an admin saved
 * through `/openai/config/update` or `/ollama/config/update`, per API, keys included — the bucket is
 * where connections live (Open WebUI's PersistentConfig: the environment seeds an API until it is
 * saved once). An API absent here runs from the environment.
 */
export const StoredConnections = z.object({
  openai: z.object({ enabled: z.boolean(), urls: z.array(z.string()), keys: z.array(z.string()), configs: z.record(z.string(), z.unknown()) }).optional(),
  ollama: z.object({ enabled: z.boolean(), urls: z.array(z.string()), configs: z.record(z.string(), z.unknown()) }).optional(),
});
export type StoredConnections = z.infer<typeof StoredConnections>;

/** The connection running now at `url` (same index preferred), whose secrets an update without them keeps. */
function previous<C extends Connection>(running: readonly C[], idx: number, url: string): C | undefined {
  const u = trimSlash(url.trim());
  const same = running[idx];
  if (same && same.url === u) return same;
  return running.find((c) => c.url === u);
}

/** Open WebUI drops config entries not keyed by an index of the new URL list (update_config). */
function configsInRange(configs: Record<string, unknown>, count: number): Record<string, unknown> {
  const keep = new Set(Array.from({ length: count }, (_, i) => String(i)));
  return Object.fromEntries(Object.entries(configs).filter(([k]) => keep.has(k)));
}

/**
 * The config entry, with the running connection's `headers` (and, for Ollama, `key`) carried over
 * when the entry leaves them out: the GET never shows them, so a client saving what it read must
 * not erase them. Sending the field (even empty) replaces it.
 */
function keepSecrets(entry: unknown, prev: Connection | undefined, withKey: boolean): unknown {
  if (!prev || !entry || typeof entry !== 'object' || Array.isArray(entry)) return entry;
  const e = { ...(entry as Record<string, unknown>) };
  if (!('headers' in e) && Object.keys(prev.headers).length) e.headers = { ...prev.headers };
  if (withKey && !('key' in e) && prev.key) e.key = prev.key;
  return e;
}

/** Apply Open WebUI's `/openai/config/update` form to what runs now (update_config's rules, secrets kept as above). */
export function updateOpenAI(running: ConnectionsConfig, form: OpenAIConnectionsForm): NonNullable<StoredConnections['openai']> {
  const urls = form.OPENAI_API_BASE_URLS;
  // Open WebUI: extra keys are dropped, missing ones padded with "".
  const keys = urls.map((url, i) => {
    const k = form.OPENAI_API_KEYS[i] ?? '';
    return k !== '' ? k : (previous(running.openai.connections, i, url)?.key ?? '');
  });
  const configs = configsInRange(form.OPENAI_API_CONFIGS, urls.length);
  for (const [k, v] of Object.entries(configs)) configs[k] = keepSecrets(v, previous(running.openai.connections, Number(k), urls[Number(k)] ?? ''), false);
  return { enabled: form.ENABLE_OPENAI_API ?? running.openai.enabled, urls, keys, configs };
}

/** Apply Open WebUI's `/ollama/config/update` form to what runs now. */
export function updateOllama(running: ConnectionsConfig, form: OllamaConnectionsForm): NonNullable<StoredConnections['ollama']> {
  const urls = form.OLLAMA_BASE_URLS;
  const configs = configsInRange(form.OLLAMA_API_CONFIGS, urls.length);
  for (const [k, v] of Object.entries(configs)) configs[k] = keepSecrets(v, previous(running.ollama.connections, Number(k), urls[Number(k)] ?? ''), true);
  // A connection whose running one had a key but has no config entry now keeps the key too.
  urls.forEach((url, i) => {
    const prev = previous(running.ollama.connections, i, url);
    if (prev?.key && !(String(i) in configs)) configs[String(i)] = keepSecrets({}, prev, true);
  });
  return { enabled: form.ENABLE_OLLAMA_API ?? running.ollama.enabled, urls, configs };
}
