import type { EngineConfig, UpstreamModel } from './config.ts';

export interface SpeechModel {
  id: string;
  created: number;
  owned_by: string;
  engine: 'espeak-ng' | 'upstream';
}

/** The ids OpenAI clients send, plus our own name for the engine; all are served by espeak-ng. */
export const BUILTIN_MODEL_IDS: readonly string[] = Object.freeze(['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts', 'espeak-ng']);

/** A fixed timestamp (tts-1's public release) so /v1/models is stable across restarts and replicas. */
export const MODEL_CREATED = 1686935002;
const OWNER = 'gatehouse';

/**
 * Built-in models first, then upstream ones. An upstream configured under a built-in id (e.g. routing
 * "tts-1-hd" to a Kokoro server) replaces the built-in, so each id is listed once with the engine that serves it.
 */
export function listModels(config: EngineConfig): SpeechModel[] {
  const models: SpeechModel[] = BUILTIN_MODEL_IDS.map((id) => ({
    id,
    created: MODEL_CREATED,
    owned_by: OWNER,
    engine: config.upstreams.has(id) ? 'upstream' : 'espeak-ng',
  }));
  for (const id of config.upstreams.keys()) {
    if (!BUILTIN_MODEL_IDS.includes(id)) models.push({ id, created: MODEL_CREATED, owned_by: OWNER, engine: 'upstream' });
  }
  return models;
}

export type ModelRoute = { engine: 'espeak-ng'; id: string } | { engine: 'upstream'; id: string; upstream: UpstreamModel };

/** Which engine serves a model id; null for an id we do not offer (the caller answers 400/404). */
export function resolveModel(config: EngineConfig, id: string): ModelRoute | null {
  const upstream = config.upstreams.get(id);
  if (upstream) return { engine: 'upstream', id, upstream };
  if (BUILTIN_MODEL_IDS.includes(id)) return { engine: 'espeak-ng', id };
  return null;
}
