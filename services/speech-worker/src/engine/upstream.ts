import type { UpstreamModel } from './config.ts';
import { contentTypeFor, isAudioFormat } from './formats.ts';

/** The OpenAI POST /v1/audio/speech body, as forwarded upstream. */
export interface OpenAISpeechBody {
  model?: string;
  input: string;
  voice: string;
  response_format?: string;
  speed?: number;
  instructions?: string;
}

/**
 * The upstream could not give us audio. `status` is the upstream's HTTP status for a non-2xx answer,
 * 502 when it could not be reached and 504 when it did not finish in time; `message` carries its reason.
 */
export class UpstreamError extends Error {
  override name = 'UpstreamError';
  constructor(
    message: string,
    public readonly status: number,
  ) {
    super(message);
  }
}

/** Enough of an error body to find the message; error pages can be large and are not worth more. */
const MAX_ERROR_BODY_BYTES = 16 * 1024;

/**
 * Forwards one speech request to an OpenAI-compatible server and streams its audio back. The caller's
 * `model` is replaced by the upstream's model name; only OpenAI fields are forwarded.
 */
export async function synthesizeUpstream(
  cfg: UpstreamModel,
  body: OpenAISpeechBody,
  signal?: AbortSignal,
): Promise<{ contentType: string; body: AsyncIterable<Buffer> }> {
  signal?.throwIfAborted();
  const payload: Record<string, unknown> = { model: cfg.model, input: body.input, voice: body.voice };
  if (body.response_format !== undefined) payload.response_format = body.response_format;
  if (body.speed !== undefined) payload.speed = body.speed;
  if (body.instructions !== undefined) payload.instructions = body.instructions;

  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/octet-stream, audio/*, application/json' };
  if (cfg.apiKey) headers.authorization = `Bearer ${cfg.apiKey}`;

  // The time limit covers the whole transfer, body included, like the espeak pipeline's.
  const timeout = cfg.timeoutMs ? AbortSignal.timeout(cfg.timeoutMs) : undefined;
  const combined = signal && timeout ? AbortSignal.any([signal, timeout]) : (signal ?? timeout);

  let res: Response;
  try {
    res = await fetch(`${cfg.baseUrl}/audio/speech`, { method: 'POST', headers, body: JSON.stringify(payload), signal: combined ?? null });
  } catch (err) {
    throw translateFetchError(err, cfg, signal, timeout);
  }

  if (!res.ok) {
    const message = await readErrorMessage(res);
    throw new UpstreamError(`upstream ${cfg.id} answered ${res.status}${message ? `: ${message}` : ''}`, res.status);
  }
  if (!res.body) throw new UpstreamError(`upstream ${cfg.id} answered ${res.status} without a body`, 502);

  const format = body.response_format ?? 'mp3';
  const contentType = res.headers.get('content-type') ?? (isAudioFormat(format) ? contentTypeFor(format) : 'application/octet-stream');
  return { contentType, body: streamBody(res.body, cfg, signal, timeout) };
}

async function* streamBody(
  stream: ReadableStream<Uint8Array>,
  cfg: UpstreamModel,
  signal: AbortSignal | undefined,
  timeout: AbortSignal | undefined,
): AsyncGenerator<Buffer, void, undefined> {
  const reader = stream.getReader();
  try {
    for (;;) {
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch (err) {
        throw translateFetchError(err, cfg, signal, timeout);
      }
      if (step.done) return;
      yield Buffer.from(step.value.buffer, step.value.byteOffset, step.value.byteLength);
    }
  } finally {
    // Consumer stopped early: cancel so the connection is closed instead of draining the whole body.
    reader.cancel().catch(() => {});
  }
}

function translateFetchError(err: unknown, cfg: UpstreamModel, signal: AbortSignal | undefined, timeout: AbortSignal | undefined): unknown {
  if (signal?.aborted) return signal.reason; // our client left: not an upstream failure
  if (timeout?.aborted) return new UpstreamError(`upstream ${cfg.id} did not answer within ${cfg.timeoutMs} ms`, 504);
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const detail = cause?.code ?? cause?.message ?? (err as Error).message;
  return new UpstreamError(`upstream ${cfg.id} is unreachable (${detail})`, 502);
}

/** OpenAI `{error:{message}}`, FastAPI `{detail:{message}|string}`, flat `{message}`/`{error:string}`, or text. */
async function readErrorMessage(res: Response): Promise<string> {
  let text = '';
  try {
    const reader = res.body?.getReader();
    if (reader) {
      const decoder = new TextDecoder();
      let bytes = 0;
      for (let i = 0; i < 1000 && bytes < MAX_ERROR_BODY_BYTES; i++) {
        const step = await reader.read();
        if (step.done) break;
        bytes += step.value.byteLength;
        text += decoder.decode(step.value, { stream: true });
      }
      reader.cancel().catch(() => {});
    }
  } catch {
    // The status alone is still worth reporting.
  }
  text = text.slice(0, MAX_ERROR_BODY_BYTES).trim();
  try {
    const json = JSON.parse(text) as Record<string, unknown>;
    const candidates = [
      (json.error as { message?: unknown } | undefined)?.message,
      json.error,
      (json.detail as { message?: unknown } | undefined)?.message,
      json.detail,
      json.message,
    ];
    const found = candidates.find((c) => typeof c === 'string' && c.trim() !== '');
    if (typeof found === 'string') return found.slice(0, 500);
  } catch {
    // Not JSON: fall through to the raw text.
  }
  return text.replace(/\s+/g, ' ').slice(0, 500);
}
