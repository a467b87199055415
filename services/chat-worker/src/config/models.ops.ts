import {
  llmConnectionContracts,
  type OllamaConnectionsForm,
  type OpenAIConnectionsForm,
  type ConnectionInfo,
  type ConnectionModel,
  type ConnectionsConfigReply,
} from '@gatehouse/contracts';
import { busRequest, type Bus, type Logger } from '@gatehouse/common';
import { me, ok, opTable, type OpContext } from '../context.ts';
import { withWorkspaceModels } from '../workspace-models/models.ops.ts';

/**
 * `GET /api/models` (and `/api/v1/models`), Open WebUI 0.10.2's main.py get_models over
 * utils/models.py get_all_models: the connections' models as the proxy worker's registry lists
 * them (`llm.connections.models` — the chat worker never talks to an upstream itself), OpenAI
 * connections first, then Ollama, then the arena models, then the workspace's custom models the
 * caller may read (workspace-models/: presets over a listed base model, and overrides of one).
 */

/** A model as the completions path resolves it: a connection's model or an arena model. */
export interface ModelEntry {
  id: string;
  name: string;
  object: 'model';
  created: number;
  owned_by: 'openai' | 'ollama' | 'arena';
  connection_type?: string;
  arena?: boolean;
  info?: { meta?: Record<string, unknown>; params?: Record<string, unknown> } & Record<string, unknown>;
  tags?: { name: string }[];
  [key: string]: unknown;
}

/** One entry of EVALUATION_ARENA_MODELS (Open WebUI's admin Evaluations page writes the same shape). */
interface ArenaConfig {
  id: string;
  name: string;
  meta: Record<string, unknown>;
}

/** Open WebUI's DEFAULT_ARENA_MODEL (config.py): every other model is a member. */
const DEFAULT_ARENA: ArenaConfig = {
  id: 'arena-model',
  name: 'Arena Model',
  meta: {
    profile_image_url: '/favicon.png',
    description: 'Submit your questions to anonymous AI chatbots and vote on the best response.',
    model_ids: null,
  },
};

export interface ArenaSettings {
  enabled: boolean;
  models: ArenaConfig[];
}

/**
 * ENABLE_EVALUATION_ARENA_MODELS (default true; only the string "true" enables it, as Python's
 * `.lower() == "true"`) and EVALUATION_ARENA_MODELS (a JSON list of `{id, name, meta}`; anything
 * else is ignored with a warning, as Open WebUI does, and the default arena model applies).
 */
export function arenaSettings(env: NodeJS.ProcessEnv, log?: Logger): ArenaSettings {
  const enabled = (env.ENABLE_EVALUATION_ARENA_MODELS ?? 'True').toLowerCase() === 'true';
  let models: ArenaConfig[] = [];
  const raw = env.EVALUATION_ARENA_MODELS;
  if (raw !== undefined && raw.trim() !== '') {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (!Array.isArray(parsed) || !parsed.every((m) => m && typeof m === 'object' && !Array.isArray(m))) {
        throw new Error('EVALUATION_ARENA_MODELS must be a JSON list of objects');
      }
      models = parsed.map((m: Record<string, unknown>) => {
        if (typeof m.id !== 'string' || !m.id) throw new Error('every arena model needs a string id');
        const meta = m.meta && typeof m.meta === 'object' && !Array.isArray(m.meta) ? (m.meta as Record<string, unknown>) : {};
        return { id: m.id, name: typeof m.name === 'string' ? m.name : m.id, meta };
      });
    } catch (err) {
      log?.warn({ err: (err as Error).message }, 'EVALUATION_ARENA_MODELS ignored');
      models = [];
    }
  }
  return { enabled, models };
}

function arenaEntries(settings: ArenaSettings, created: number): ModelEntry[] {
  if (!settings.enabled) return [];
  const list = settings.models.length > 0 ? settings.models : [DEFAULT_ARENA];
  return list.map((m) => ({
    id: m.id,
    name: m.name,
    info: { meta: structuredClone(m.meta) },
    object: 'model',
    created,
    owned_by: 'arena',
    arena: true,
  }));
}

const OWNER_ORDER: Record<string, number> = { openai: 0, ollama: 1, arena: 2 };

/**
 * The model list behind both `/api/models` and the completions path (Open WebUI's
 * app.state.MODELS). Listings are kept for a few seconds so a completion does not cost a round
 * trip to the registry; an id missing from the copy triggers one fresh listing before "Model not
 * found".
 */
/** A model list this many times `maxAgeMs` old is still answered while a fresh one is fetched. */
const STALE_FACTOR = 12;

export class ModelRegistry {
  private cached: { at: number; models: ModelEntry[] } | undefined;

  constructor(
    private readonly bus: Bus,
    private arena: ArenaSettings,
    private readonly maxAgeMs = 5000,
  ) {}

  /** The arena as an admin set it (POST /api/v1/evaluations/config, applied live by main.ts): the next listing has it. */
  setArena(arena: ArenaSettings): void {
    if (JSON.stringify(arena) === JSON.stringify(this.arena)) return;
    this.arena = arena;
    this.forget();
  }

  async list(refresh = false): Promise<ModelEntry[]> {
    const cached = this.cached;
    if (!refresh && cached) {
      const age = Date.now() - cached.at;
      if (age < this.maxAgeMs) return cached.models;
      // A little older: answer with it and refresh behind the request, so no completion waits
      // for the registry every few seconds (a changed connection drops the list: forget()).
      if (age < this.maxAgeMs * STALE_FACTOR) {
        this.refreshing ??= this.fetch(false)
          .catch(() => undefined)
          .finally(() => (this.refreshing = undefined));
        return cached.models;
      }
    }
    return this.fetch(refresh);
  }

  private refreshing: Promise<unknown> | undefined;

  /** Bumped by forget(): a listing asked for before a change is not kept after it. */
  private generation = 0;

  private async fetch(refresh: boolean): Promise<ModelEntry[]> {
    const gen = this.generation;
    const reply = await busRequest(this.bus, llmConnectionContracts.models, { refresh }, { timeoutMs: 30_000 });
    const models = this.assemble(reply.data);
    if (gen === this.generation) this.cached = { at: Date.now(), models };
    return models;
  }

  /** The connections as configured, secrets left out (never cached: it is an admin's occasional read). */
  async connections(): Promise<ConnectionsConfigReply> {
    return busRequest(this.bus, llmConnectionContracts.config, {}, { timeoutMs: 10_000 });
  }

  /** Drop the cached listing: the connections changed (main.ts follows the `connections` group). */
  forget(): void {
    this.generation++;
    this.cached = undefined;
  }

  /** Replace one API's connections (the proxy worker stores them in the config bucket); answers what runs now. */
  async updateConnections(req: { openai?: OpenAIConnectionsForm; ollama?: OllamaConnectionsForm; by: string }) {
    const reply = await busRequest(this.bus, llmConnectionContracts.update, req, { timeoutMs: 10_000 });
    this.forget();
    return reply;
  }

  async get(id: string): Promise<ModelEntry | undefined> {
    const hit = (await this.list()).find((m) => m.id === id);
    if (hit) return hit;
    return (await this.list(true)).find((m) => m.id === id);
  }

  private assemble(base: ConnectionModel[]): ModelEntry[] {
    const seen = new Set<string>();
    const models: ModelEntry[] = [];
    // Open WebUI: OpenAI connections, then Ollama (get_all_base_models), stable within each.
    const ordered = base
      .map((m, i) => ({ m, i }))
      .sort((a, b) => (OWNER_ORDER[a.m.owned_by] ?? 9) - (OWNER_ORDER[b.m.owned_by] ?? 9) || a.i - b.i)
      .map(({ m }) => m);
    for (const m of ordered) {
      if (seen.has(m.id)) continue;
      seen.add(m.id);
      models.push(structuredClone(m) as ModelEntry);
    }
    // No connection model at all → no arena either (an arena of nothing cannot answer).
    if (models.length === 0) return [];
    for (const a of arenaEntries(this.arena, Math.floor(Date.now() / 1000))) {
      if (seen.has(a.id)) continue;
      seen.add(a.id);
      models.push(a);
    }
    return models;
  }
}

/** A model as `/api/models` shows it: actions/filters (none here) and tags merged from info.meta. */
export function modelResponse(m: ModelEntry): ModelEntry {
  const out: ModelEntry = structuredClone(m);
  if (!Array.isArray(out.actions)) out.actions = [];
  if (!Array.isArray(out.filters)) out.filters = [];
  const names: string[] = [];
  const metaTags = out.info?.meta?.tags;
  for (const t of [...(Array.isArray(metaTags) ? metaTags : []), ...(Array.isArray(out.tags) ? out.tags : [])]) {
    const name = (t as { name?: unknown } | null)?.name;
    if (typeof name === 'string' && !names.includes(name)) names.push(name);
  }
  out.tags = names.map((name) => ({ name }));
  // Open WebUI strips profile images from the list (they are served by their own route).
  if (out.info?.meta && 'profile_image_url' in out.info.meta) delete out.info.meta.profile_image_url;
  return out;
}

/**
 * The arena's pick for one request (Open WebUI's process_chat_payload): a random member of
 * `meta.model_ids`, or of every other model minus them with `filter_mode: "exclude"`, or of every
 * non-arena model when no members are listed. Undefined when the pick is not a known model.
 */
export function pickArenaMember(arena: ModelEntry, models: readonly ModelEntry[], random: () => number = Math.random): ModelEntry | undefined {
  const meta = arena.info?.meta ?? {};
  const others = models.filter((m) => m.owned_by !== 'arena').map((m) => m.id);
  let pool = Array.isArray(meta.model_ids) ? (meta.model_ids as unknown[]).filter((x): x is string => typeof x === 'string') : [];
  if (pool.length > 0 && meta.filter_mode === 'exclude') pool = others.filter((id) => !pool.includes(id));
  if (pool.length === 0) pool = others;
  if (pool.length === 0) return undefined;
  const id = pool[Math.floor(random() * pool.length)]!;
  return models.find((m) => m.id === id && m.owned_by !== 'arena');
}

/** A connection's `*_API_CONFIGS` entry as Open WebUI keys it (by index), without url and idx. */
function configEntry({ idx: _idx, url: _url, ...rest }: ConnectionInfo) {
  return rest;
}

/** Open WebUI's GET /openai/config shape (keys withheld) of a connections view. */
const openaiConfig = ({ openai }: ConnectionsConfigReply) => ({
  ENABLE_OPENAI_API: openai.enabled,
  OPENAI_API_BASE_URLS: openai.connections.map((c) => c.url),
  OPENAI_API_KEYS: openai.connections.map(() => '' as const),
  OPENAI_API_CONFIGS: Object.fromEntries(openai.connections.map((c) => [String(c.idx), { ...configEntry(c), auth_type: c.auth_type ?? 'bearer' }])),
});
const ollamaConfig = ({ ollama }: ConnectionsConfigReply) => ({
  ENABLE_OLLAMA_API: ollama.enabled,
  OLLAMA_BASE_URLS: ollama.connections.map((c) => c.url),
  OLLAMA_API_CONFIGS: Object.fromEntries(ollama.connections.map((c) => [String(c.idx), configEntry(c)])),
});

/** A URL as an event may carry it: `user:password@` (a credential some deployments put there) removed. */
function withoutUserinfo(url: string): string {
  try {
    const u = new URL(url);
    if (!u.username && !u.password) return url;
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}

/**
 * `POST /openai|ollama/config/update`: the proxy worker stores and announces the new connections
 * (every proxy worker applies them live); the event commits only once that succeeded. The answer is
 * the GET's shape — keys withheld, where Open WebUI would echo them.
 */
async function updateConnections(registry: ModelRegistry, ctx: OpContext, api: 'openai' | 'ollama', form: OpenAIConnectionsForm | OllamaConnectionsForm) {
  const admin = me(ctx);
  return ctx.sql.begin(async (tx) => {
    const view = await registry.updateConnections({ [api]: form, by: `user ${admin.id}` });
    const { enabled, connections } = view[api];
    await ctx.emit(tx, 'config.connections.updated', {
      actor: admin,
      subject: { type: 'config', id: 'connections' },
      data: { api, enabled, urls: connections.map((c) => withoutUserinfo(c.url)), revision: view.revision },
    });
    return view;
  });
}

const TRUE_VALUES = new Set(['true', '1', 'yes', 'on', 't', 'y']);

export function modelsOps(registry: ModelRegistry) {
  return opTable({
    'models.list': async (req, ctx) => {
      me(ctx);
      // FastAPI's bool query parsing (`?refresh=true`).
      const refresh = TRUE_VALUES.has((req.query.refresh ?? '').toLowerCase());
      const models = await withWorkspaceModels(ctx.sql, me(ctx), await registry.list(refresh));
      return ok({ data: models.map(modelResponse) });
    },
    // Open WebUI's routers/openai.py and ollama.py get_config, read-only and without keys.
    'connections.openai.config': async () => ok(openaiConfig(await registry.connections())),
    'connections.ollama.config': async () => ok(ollamaConfig(await registry.connections())),
    'connections.openai.update': async (req, ctx) =>
      ok(openaiConfig(await updateConnections(registry, ctx, 'openai', req.body))),
    'connections.ollama.update': async (req, ctx) =>
      ok(ollamaConfig(await updateConnections(registry, ctx, 'ollama', req.body))),
  });
}
