import { availableParallelism } from 'node:os';
import { z } from 'zod';

/**
 * The environment of every program the engine starts (espeak-ng, ffmpeg): only what they need,
 * since ours may hold upstream API keys. PATH finds them; ESPEAK_DATA_PATH is the one variable of
 * ours espeak-ng honours (a voice data directory other than Debian's). Read at each start, so a
 * test that points either elsewhere sees its effect on the next program.
 */
const ChildEnv = z.object({
  PATH: z.string().default('/usr/local/bin:/usr/bin:/bin'),
  ESPEAK_DATA_PATH: z.preprocess((v) => v || undefined, z.string().optional()),
});

export function childEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const { PATH, ESPEAK_DATA_PATH } = ChildEnv.parse(env);
  return { PATH, LANG: 'C.UTF-8', ...(ESPEAK_DATA_PATH ? { ESPEAK_DATA_PATH } : {}) };
}

/** One model served by another OpenAI-compatible TTS server (Kokoro-FastAPI, openedai-speech, OpenAI…). */
export interface UpstreamModel {
  /** The model id our clients use. */
  id: string;
  /** Base URL including the version prefix, e.g. "http://kokoro:8880/v1" (no trailing slash). */
  baseUrl: string;
  /** The model name sent upstream; defaults to `id`. */
  model: string;
  /** Name of the environment variable holding the upstream key (the key itself is never in the config). */
  apiKeyEnv?: string;
  /** Voices the upstream offers, for voice listings; the engine does not restrict requests to them. */
  voices?: string[];
  /** The key read from `apiKeyEnv`. Non-enumerable so that logging or JSON-serialising a config never leaks it. */
  readonly apiKey?: string;
  /** Time limit for one upstream request, body included. */
  timeoutMs?: number;
}

export interface EngineConfig {
  /** Upstream models by id. A Map, because ids come from JSON and "__proto__" must stay a plain key. */
  upstreams: ReadonlyMap<string, UpstreamModel>;
  /** SPEECH_MAX_CONCURRENCY: pipelines (one espeak-ng + one ffmpeg each) running at once; default 2 × cores. */
  maxConcurrency: number;
  /** SPEECH_SYNTH_TIMEOUT_MS: limit for one synthesis from start to last byte; default 60000. */
  synthTimeoutMs: number;
  /** SPEECH_WARM_PROCESSES: started espeak-ng/ffmpeg processes kept waiting for requests, two per pipeline (0 or 1 = none); default 8. */
  warmProcesses: number;
}

export const DEFAULT_SYNTH_TIMEOUT_MS = 60_000;
/** Four command lines' worth of espeak-ng + ffmpeg pairs, or two pairs each for two; ~10 MB each when idle. */
export const DEFAULT_WARM_PROCESSES = 8;

export function defaultMaxConcurrency(): number {
  return 2 * availableParallelism();
}

function positiveIntFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 1): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    throw new Error(`${name} must be a ${min === 0 ? 'non-negative' : 'positive'} integer, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/** The two pipeline limits, read on their own so the synthesizer can default them without the whole config. */
export function parseSynthesisLimits(env: NodeJS.ProcessEnv): Pick<EngineConfig, 'maxConcurrency' | 'synthTimeoutMs' | 'warmProcesses'> {
  return {
    maxConcurrency: positiveIntFromEnv(env, 'SPEECH_MAX_CONCURRENCY', defaultMaxConcurrency()),
    synthTimeoutMs: positiveIntFromEnv(env, 'SPEECH_SYNTH_TIMEOUT_MS', DEFAULT_SYNTH_TIMEOUT_MS),
    warmProcesses: positiveIntFromEnv(env, 'SPEECH_WARM_PROCESSES', DEFAULT_WARM_PROCESSES, 0),
  };
}

/**
 * Reads SPEECH_UPSTREAMS, SPEECH_MAX_CONCURRENCY, SPEECH_SYNTH_TIMEOUT_MS and SPEECH_WARM_PROCESSES. Throws at start-up on any
 * malformed value (naming the variable) rather than failing later request by request.
 */
export function parseEngineConfig(env: NodeJS.ProcessEnv): EngineConfig {
  const limits = parseSynthesisLimits(env);
  return { ...limits, upstreams: parseUpstreams(env, limits.synthTimeoutMs) };
}

const UPSTREAM_KEYS = new Set(['baseUrl', 'apiKeyEnv', 'model', 'voices']);
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function parseUpstreams(env: NodeJS.ProcessEnv, timeoutMs: number): Map<string, UpstreamModel> {
  const upstreams = new Map<string, UpstreamModel>();
  const raw = env.SPEECH_UPSTREAMS?.trim();
  if (!raw) return upstreams;
  const bad = (what: string): Error => new Error(`SPEECH_UPSTREAMS: ${what}`);

  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw bad(`not valid JSON (${(err as Error).message})`);
  }
  if (!isPlainObject(parsed)) throw bad('must be a JSON object mapping model ids to { baseUrl, apiKeyEnv?, model?, voices? }');

  for (const [id, value] of Object.entries(parsed)) {
    const where = `model ${JSON.stringify(id)}`;
    if (id.trim() === '' || id !== id.trim()) throw bad(`${where}: model ids must be non-empty without surrounding spaces`);
    if (!isPlainObject(value)) throw bad(`${where}: must be an object`);
    const unknown = Object.keys(value).filter((key) => !UPSTREAM_KEYS.has(key));
    // Unknown keys are refused because a typo ("apikeyEnv") would otherwise silently drop authentication.
    if (unknown.length > 0) throw bad(`${where}: unknown field(s) ${unknown.join(', ')}`);

    const { baseUrl, apiKeyEnv, model, voices } = value;
    if (typeof baseUrl !== 'string' || !isHttpUrl(baseUrl)) throw bad(`${where}: baseUrl must be an http(s) URL`);
    if (model !== undefined && (typeof model !== 'string' || model.trim() === '')) throw bad(`${where}: model must be a non-empty string`);
    if (voices !== undefined && (!Array.isArray(voices) || !voices.every((v) => typeof v === 'string' && v.trim() !== ''))) {
      throw bad(`${where}: voices must be an array of non-empty strings`);
    }
    let apiKey: string | undefined;
    if (apiKeyEnv !== undefined) {
      if (typeof apiKeyEnv !== 'string' || !ENV_NAME.test(apiKeyEnv)) throw bad(`${where}: apiKeyEnv must be an environment variable name`);
      apiKey = env[apiKeyEnv];
      // Fail at start-up: without its key every request to this upstream would be a 401.
      if (!apiKey) throw bad(`${where}: apiKeyEnv names ${apiKeyEnv}, which is not set`);
    }

    const upstream: UpstreamModel = {
      id,
      baseUrl: baseUrl.replace(/\/+$/, ''),
      model: typeof model === 'string' ? model : id,
      ...(typeof apiKeyEnv === 'string' ? { apiKeyEnv } : {}),
      ...(voices !== undefined ? { voices: [...(voices as string[])] } : {}),
      timeoutMs,
    };
    if (apiKey !== undefined) Object.defineProperty(upstream, 'apiKey', { value: apiKey, enumerable: false });
    upstreams.set(id, upstream);
  }
  return upstreams;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}
