import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { BusError } from '@gatehouse/common';

/**
 * The `openai` engines: another server speaking OpenAI's audio API (base URL + key, set on the
 * admin's Audio page), as Open WebUI calls it: `{base}/audio/speech`, `{base}/audio/transcriptions`,
 * and for a server that is not api.openai.com its `{base}/audio/voices` and `{base}/audio/models`.
 */

const TIMEOUT_MS = 120_000;
const LIST_TIMEOUT_MS = 10_000;
/** OpenAI's own lists, answered when the server is OpenAI or does not list its own (Open WebUI's fallback). */
const OPENAI_VOICES = ['alloy', 'echo', 'fable', 'onyx', 'nova', 'shimmer'];
const OPENAI_MODELS = ['tts-1', 'tts-1-hd'];

export interface OpenAIEndpoint {
  baseUrl: string;
  key: string;
}

const url = (e: OpenAIEndpoint, path: string): string => `${e.baseUrl.replace(/\/+$/, '')}${path}`;
const auth = (e: OpenAIEndpoint): Record<string, string> => (e.key ? { authorization: `Bearer ${e.key}` } : {});

export async function openaiSpeech(e: OpenAIEndpoint, payload: Record<string, unknown>): Promise<{ contentType: string; audio: Readable }> {
  const r = await call(e, '/audio/speech', { method: 'POST', headers: { ...auth(e), 'content-type': 'application/json' }, body: JSON.stringify(payload) }, TIMEOUT_MS);
  if (!r.body) throw new BusError(502, 'External: the speech server answered no audio');
  return { contentType: r.headers.get('content-type') ?? 'audio/mpeg', audio: Readable.fromWeb(r.body as unknown as WebReadableStream<Uint8Array>) };
}

export async function openaiTranscription(e: OpenAIEndpoint, file: { bytes: Buffer; filename: string; contentType: string }, model: string): Promise<Record<string, unknown>> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(file.bytes)], { type: file.contentType }), file.filename);
  form.append('model', model);
  const r = await call(e, '/audio/transcriptions', { method: 'POST', headers: auth(e), body: form }, TIMEOUT_MS);
  const data = (await r.json().catch(() => null)) as unknown;
  if (!data || typeof data !== 'object' || typeof (data as { text?: unknown }).text !== 'string') throw new BusError(400, 'External: the transcription server did not answer {"text": ...}');
  return data as Record<string, unknown>;
}

export async function openaiVoices(e: OpenAIEndpoint): Promise<{ id: string; name: string }[]> {
  const fallback = OPENAI_VOICES.map((v) => ({ id: v, name: v }));
  if (isOpenAI(e)) return fallback;
  try {
    const r = await call(e, '/audio/voices', { headers: auth(e) }, LIST_TIMEOUT_MS);
    const data = (await r.json()) as { voices?: { id?: unknown; name?: unknown }[] };
    const voices = (data.voices ?? []).filter((v) => typeof v.id === 'string').map((v) => ({ id: String(v.id), name: typeof v.name === 'string' ? v.name : String(v.id) }));
    return voices.length ? voices : fallback;
  } catch {
    return fallback;
  }
}

export async function openaiModels(e: OpenAIEndpoint): Promise<{ id: string }[]> {
  const fallback = OPENAI_MODELS.map((id) => ({ id }));
  if (isOpenAI(e)) return fallback;
  try {
    const r = await call(e, '/audio/models', { headers: auth(e) }, LIST_TIMEOUT_MS);
    const data = (await r.json()) as { models?: { id?: unknown }[] };
    const models = (data.models ?? []).filter((m) => typeof m.id === 'string').map((m) => ({ id: String(m.id) }));
    return models.length ? models : fallback;
  } catch {
    return fallback;
  }
}

/** An upstream's error text, bounded (the bus worker puts it on one line). */
const oneLine = (s: string): string => s.slice(0, 500);

const isOpenAI = (e: OpenAIEndpoint): boolean => e.baseUrl.startsWith('https://api.openai.com');

/**
 * One request; a refusal becomes Open WebUI's `External: <message>` with the server's status (a
 * server error or an unreachable server is a 502: the fault is upstream, not the caller's).
 */
async function call(e: OpenAIEndpoint, path: string, init: RequestInit, timeoutMs: number): Promise<Response> {
  let target: string;
  try {
    target = new URL(url(e, path)).toString();
  } catch {
    throw new BusError(400, `External: the configured base URL is not a URL (${oneLine(e.baseUrl.slice(0, 200))})`);
  }
  let r: Response;
  try {
    r = await fetch(target, { ...init, signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
  } catch (err) {
    throw new BusError(502, `External: ${oneLine((err as Error).message)}`);
  }
  if (r.ok) return r;
  const text = await r.text().catch(() => '');
  let message = text.slice(0, 500);
  try {
    const j = JSON.parse(text) as { error?: { message?: string } | string; detail?: string };
    message = (typeof j.error === 'string' ? j.error : j.error?.message) ?? j.detail ?? message;
  } catch {
    // not JSON: the text as it is
  }
  throw new BusError(r.status >= 500 ? 502 : r.status, `External: ${oneLine(message || `HTTP ${r.status}`)}`);
}
