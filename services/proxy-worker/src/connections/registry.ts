import type { ConnectionModel } from '@gatehouse/contracts';
import type { Logger } from '@gatehouse/common';
import type { ProxyConfig, OpenAIProviderConfig } from '../upstream/config.ts';
import { readBody, sendWithRetries } from '../upstream/http.ts';
import type { OpenAIUpstream } from '../upstream/openai-client.ts';
import type { ConnectionsConfig, OllamaConnection, OpenAIConnection } from './config.ts';

/**
 * The model registry behind `llm.connections.models` and the routing of `llm.connections.chat`: Open
 * WebUI's connections (OPENAI_API_*, OLLAMA_*) and the LLM proxy's OpenAI-type providers, one list.
 *
 * Listing follows Open WebUI 0.10.2 (routers/openai.py and routers/ollama.py get_all_models,
 * utils/models.py get_all_base_models): every enabled connection is asked concurrently (OpenAI-compatible
 * `GET {url}/models`, Ollama `GET {url}/api/tags`), except an OpenAI connection with `model_ids`, which
 * lists exactly those without asking. Order: OpenAI connections, then the proxy's providers, then Ollama.
 * Ollama models of the same id on several connections merge into one entry whose `ollama.urls` lists
 * them (a request picks one at random, as Open WebUI). Any other duplicate id collapses the way Open
 * WebUI's model dict does: the first position, the last entry — the one requests are routed to.
 *
 * A connection that cannot be reached, times out or answers an error contributes no models; that is
 * logged once when it starts failing (and once when it recovers), never an error of the listing. Each
 * connection's answer (or failure) is reused for `cacheTtlMs`; concurrent listings share one request.
 */

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Model ids Open WebUI hides when the connection is api.openai.com (not chat models). */
const OPENAI_NON_CHAT = ['babbage', 'dall-e', 'davinci', 'embedding', 'tts', 'whisper'];
const MAX_LIST_BYTES = 32 * 1024 * 1024;

export type Route =
  | { kind: 'openai'; model: string; upstreamModel: string; upstream: OpenAIUpstream }
  | { kind: 'ollama'; model: string; upstreamModel: string; connection: OllamaConnection };

type Source =
  | { kind: 'openai-connection'; connection: OpenAIConnection }
  | { kind: 'provider'; provider: OpenAIProviderConfig; upstreamModel: string }
  | { kind: 'ollama'; urls: number[] };

interface Listed {
  /** As `llm.connections.models` answers it: typed by the contract, so a missing field fails here, not in the chat worker. */
  entry: ConnectionModel;
  source: Source;
}

interface CacheSlot {
  value: Promise<unknown>;
  /** Set once the request settled. */
  expires?: number;
}

/** Fetches one URL's JSON; injectable for tests. Throws on any failure. */
export type ListFetcher = (url: string, headers: Record<string, string>, timeoutMs: number) => Promise<unknown>;

export const fetchListing: ListFetcher = async (url, headers, timeoutMs) => {
  const signal = AbortSignal.timeout(timeoutMs);
  const res = await sendWithRetries(
    { url, method: 'GET', headers: { accept: 'application/json', 'accept-encoding': 'identity', ...headers } },
    { signal, timeoutMs, retries: { max: 0, baseDelayMs: 0, maxDelayMs: 0 } },
    () => false,
  );
  const bytes = await readBody(res, MAX_LIST_BYTES);
  res.release();
  if (res.status < 200 || res.status >= 300) throw new Error(`answered HTTP ${res.status}`);
  return JSON.parse(bytes.toString('utf8')) as unknown;
};

function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '(invalid URL)';
  }
}

export class ConnectionRegistry {
  private readonly cache = new Map<string, CacheSlot>();
  private readonly failing = new Set<string>();

  constructor(
    private readonly cfg: ConnectionsConfig,
    private readonly proxy: ProxyConfig,
    private readonly log: Logger,
    private readonly fetcher: ListFetcher = fetchListing,
  ) {}

  /** The merged model list (see the class comment); `refresh` skips the per-connection cache. */
  async models(refresh = false): Promise<ConnectionModel[]> {
    return [...(await this.listed(refresh)).values()].map((l) => l.entry);
  }

  /** Where a listed model id goes, with its prefix_id removed; undefined for an unknown id. */
  async resolve(model: string): Promise<Route | undefined> {
    const hit = (await this.listed(false)).get(model);
    if (!hit) return undefined;
    const { source } = hit;
    if (source.kind === 'provider') return { kind: 'openai', model, upstreamModel: source.upstreamModel, upstream: source.provider };
    if (source.kind === 'openai-connection') {
      const c = source.connection;
      return { kind: 'openai', model, upstreamModel: stripPrefix(model, c.prefixId), upstream: openAIUpstream(c, this.proxy.timeoutMs) };
    }
    const candidates = source.urls.map((i) => this.cfg.ollama.connections[i]).filter((c): c is OllamaConnection => Boolean(c));
    const connection = candidates[Math.floor(Math.random() * candidates.length)];
    if (!connection) return undefined;
    return { kind: 'ollama', model, upstreamModel: stripPrefix(model, connection.prefixId), connection };
  }

  /** The last listing built and the connections' answers it was built from (the same answers build the same listing). */
  private built: { answers: unknown[]; byId: Map<string, Listed> } | undefined;

  private async listed(refresh: boolean): Promise<Map<string, Listed>> {
    const { openai, ollama } = this.cfg;
    const openaiConnections = openai.enabled ? openai.connections : [];
    const ollamaConnections = ollama.enabled ? ollama.connections : [];
    const answers = await Promise.all([
      ...openaiConnections.map((c) => this.openaiAnswer(c, refresh)),
      ...ollamaConnections.map((c) => this.ollamaAnswer(c, refresh)),
    ]);
    // Every request resolves its model here: while no connection's cached answer changed, the
    // listing is the one built last time (building it clones every model: ~0.1 ms per request).
    const last = this.built;
    if (last && last.answers.length === answers.length && last.answers.every((a, i) => a === answers[i])) return last.byId;
    const openaiLists = openaiConnections.map((c, i) => this.openaiModels(c, answers[i]));
    const ollamaLists = ollamaConnections.map((c, i) => this.ollamaList(c, answers[openaiConnections.length + i]));

    const all: Listed[] = [];
    for (const list of openaiLists) all.push(...list);
    all.push(...this.providerModels());
    all.push(...mergeOllama(ollamaLists));

    // Map#set on an existing key keeps its position and replaces the value, like Open WebUI's dict.
    const byId = new Map<string, Listed>();
    for (const l of all) byId.set(l.entry.id, l);
    this.built = { answers, byId };
    return byId;
  }

  /** A connection's cached `/models` answer (a disabled one: null; one with model_ids: itself, nothing is asked). */
  private openaiAnswer(c: OpenAIConnection, refresh: boolean): unknown {
    if (!c.enabled) return null;
    if (c.modelIds.length) return c;
    const headers: Record<string, string> = {};
    if (c.key && c.authType !== 'none') headers.authorization = `Bearer ${c.key}`;
    Object.assign(headers, c.headers);
    return this.fetchCached(`openai[${c.idx}]`, c.url, `${c.url}/models`, headers, refresh);
  }

  /** A connection's cached `/api/tags` answer (a disabled one: null). */
  private ollamaAnswer(c: OllamaConnection, refresh: boolean): unknown {
    if (!c.enabled) return null;
    const headers: Record<string, string> = {};
    if (c.key) headers.authorization = `Bearer ${c.key}`;
    Object.assign(headers, c.headers);
    return this.fetchCached(`ollama[${c.idx}]`, c.url, `${c.url}/api/tags`, headers, refresh);
  }

  private providerModels(): Listed[] {
    const out: Listed[] = [];
    for (const p of Object.values(this.proxy.providers)) {
      if (p.type !== 'openai') continue;
      for (const m of p.models) {
        const id = `${p.name}/${m}`;
        out.push({
          entry: { id, name: id, object: 'model', created: 0, owned_by: 'openai', connection_type: 'external', tags: [], openai: { id: m, object: 'model', owned_by: p.name } },
          source: { kind: 'provider', provider: p, upstreamModel: m },
        });
      }
    }
    return out;
  }

  private openaiModels(c: OpenAIConnection, answer: unknown): Listed[] {
    if (!c.enabled) return [];
    const response = c.modelIds.length
      ? { object: 'list', data: c.modelIds.map((id) => ({ id, name: id, owned_by: 'openai', openai: { id }, urlIdx: c.idx })) }
      : answer;
    const list = Array.isArray(response) ? response : isObject(response) && Array.isArray(response.data) ? response.data : [];
    const out: Listed[] = [];
    for (const raw of list) {
      if (!isObject(raw)) continue;
      const m = structuredClone(raw);
      if ('name' in m && m.name == null) delete m.name;
      if (c.prefixId) m.id = `${c.prefixId}.${String(m.id ?? m.name ?? '')}`;
      if (c.tags.length) m.tags = c.tags.map((t) => ({ ...t }));
      m.connection_type = c.connectionType;
      const id = typeof m.id === 'string' && m.id ? m.id : undefined;
      if (!id) continue;
      if (c.url.includes('api.openai.com') && OPENAI_NON_CHAT.some((n) => id.includes(n))) continue;
      out.push({
        entry: {
          ...m,
          id,
          object: 'model',
          created: typeof m.created === 'number' ? m.created : 0,
          tags: tagList(m.tags),
          name: typeof m.name === 'string' ? m.name : id,
          owned_by: 'openai',
          openai: m,
          connection_type: c.connectionType,
          urlIdx: c.idx,
        },
        source: { kind: 'openai-connection', connection: c },
      });
    }
    return out;
  }

  private ollamaList(c: OllamaConnection, response: unknown): Json[] | null {
    if (!c.enabled) return null;
    if (!isObject(response) || !Array.isArray(response.models)) return null;
    let models = response.models.filter(isObject).map((m) => structuredClone(m));
    if (c.modelIds.length) models = models.filter((m) => c.modelIds.includes(m.model as string));
    for (const m of models) {
      if (typeof m.model !== 'string') m.model = typeof m.name === 'string' ? m.name : '';
      if (c.prefixId) m.model = `${c.prefixId}.${m.model as string}`;
      if (c.tags.length) m.tags = c.tags.map((t) => ({ ...t }));
      m.connection_type = c.connectionType;
    }
    return models.filter((m) => m.model);
  }

  /** One connection's listing, cached; undefined when it failed (logged on the first failure only). */
  private fetchCached(name: string, base: string, url: string, headers: Record<string, string>, refresh: boolean): Promise<unknown> {
    const now = Date.now();
    const slot = this.cache.get(name);
    if (slot && !refresh && (slot.expires === undefined || slot.expires > now)) return slot.value;
    const value = (async () => {
      if (!base) {
        this.noteFailure(name, base, new Error('the configured URL is empty or not an http(s) URL'));
        return undefined;
      }
      try {
        const json = await this.fetcher(url, headers, this.cfg.listTimeoutMs);
        if (this.failing.delete(name)) this.log.info({ connection: name, url: safeUrl(base) }, 'connection lists models again');
        return json;
      } catch (err) {
        this.noteFailure(name, base, err);
        return undefined;
      }
    })();
    const fresh: CacheSlot = { value };
    this.cache.set(name, fresh);
    void value.then(() => {
      fresh.expires = Date.now() + this.cfg.cacheTtlMs;
    });
    return value;
  }

  private noteFailure(name: string, base: string, err: unknown): void {
    if (this.failing.has(name)) return;
    this.failing.add(name);
    const reason = err instanceof Error ? (err.name === 'TimeoutError' || err.name === 'AbortError' ? `no answer within ${this.cfg.listTimeoutMs} ms` : err.message) : String(err);
    this.log.warn({ connection: name, url: base ? safeUrl(base) : '', reason }, 'connection unavailable: it lists no models until it answers');
  }
}

/** merge_ollama_models_lists: the first entry of an id wins, `urls` collects every connection index serving it. */
function mergeOllama(lists: Array<Json[] | null>): Listed[] {
  const merged = new Map<string, Json>();
  lists.forEach((list, idx) => {
    if (!list) return;
    for (const m of list) {
      const id = m.model as string;
      const seen = merged.get(id);
      if (seen) (seen.urls as number[]).push(idx);
      else {
        m.urls = [idx];
        merged.set(id, m);
      }
    }
  });
  return [...merged.values()].map((m) => ({
    entry: {
      // ollamaList keeps only models whose `model` is a non-empty string.
      id: m.model as string,
      name: typeof m.name === 'string' ? m.name : (m.model as string),
      object: 'model',
      created: 0,
      owned_by: 'ollama',
      ollama: m,
      loaded: 'expires_at' in m,
      connection_type: typeof m.connection_type === 'string' ? m.connection_type : 'local',
      tags: tagList(m.tags),
    },
    source: { kind: 'ollama', urls: m.urls as number[] },
  }));
}

/** `[{name}]` whatever an upstream put there (the contract's shape; strings become names, the rest is dropped). */
function tagList(v: unknown): Array<{ name: string }> {
  if (!Array.isArray(v)) return [];
  const out: Array<{ name: string }> = [];
  for (const t of v) {
    if (typeof t === 'string') out.push({ name: t });
    else if (isObject(t) && typeof t.name === 'string') out.push({ name: t.name });
  }
  return out;
}

function stripPrefix(model: string, prefixId: string | undefined): string {
  return prefixId && model.startsWith(`${prefixId}.`) ? model.slice(prefixId.length + 1) : model;
}

/** The OpenAI client's view of a connection; the key and headers stay non-enumerable. */
function openAIUpstream(c: OpenAIConnection, timeoutMs: number): OpenAIUpstream {
  // Open WebUI merges the config's headers after Authorization, so a configured authorization header wins.
  const overridesAuth = Object.hasOwn(c.headers, 'authorization');
  const u = { baseUrl: c.url, timeoutMs };
  Object.defineProperty(u, 'headers', { value: c.headers, enumerable: false });
  if (c.key && c.authType !== 'none' && !overridesAuth) Object.defineProperty(u, 'apiKey', { value: c.key, enumerable: false });
  return u as OpenAIUpstream;
}
