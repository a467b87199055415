import type { UpstreamChatRequest } from '@gatehouse/contracts';
import { BusError, ChunkWriter, type HandlerContext, type Logger, type StreamWriter } from '@gatehouse/common';
import type { RetryPolicy } from '../upstream/config.ts';
import { readBody, sendWithRetries, type UpstreamResponse } from '../upstream/http.ts';
import { createChatCompletion, OPENAI_RETRYABLE, streamChatCompletionBatches, throwUpstreamError } from '../upstream/openai-client.ts';
import { isAbortError, UpstreamHttpError, UpstreamNetworkError, UpstreamStreamError, UpstreamTimeoutError } from '../upstream/errors.ts';
import type { OllamaConnection } from './config.ts';
import { ChunkNormalizer, normalizeCompletion, normalizeUsage } from './normalize.ts';
import { OllamaToOpenAIStream, ollamaResponseToOpenAI, openAIToOllamaPayload, parseNDJSON } from './ollama.ts';
import type { ConnectionRegistry, Route } from './registry.ts';

/**
 * `llm.connections.chat`: one completion against the connection that lists the model. Frames: meta
 * `{model, owned_by}` once the upstream answered 2xx; then one JSON per chunk frame (streamed: each
 * normalised `chat.completion.chunk`; not streamed: the whole normalised `chat.completion`); end
 * `{finish_reason, usage}`. Failures before meta are BusErrors (the upstream's status and message, 404
 * "Model not found", 500 "Open WebUI: Server Connection Error" when it cannot be reached); after meta
 * they become the stream's error frame. A cancelled request (ctx.signal) aborts the upstream at once.
 */

type Json = Record<string, unknown>;
type Meta = { model: string; owned_by: 'ollama' | 'openai'; sse?: boolean };
type End = { finish_reason: string | null; usage: Record<string, unknown> | null };
export type ConnectionChatOut = StreamWriter<Meta, End>;

export interface ChatDeps {
  registry: ConnectionRegistry;
  /** Per-attempt limit until headers, and between two body chunks. */
  timeoutMs: number;
  retries: RetryPolicy;
  log: Logger;
}

const enc = new TextEncoder();
/** Open WebUI's detail when an upstream cannot be reached at all. */
export const CONNECTION_ERROR = 'Open WebUI: Server Connection Error';

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export async function handleConnectionChat(deps: ChatDeps, req: UpstreamChatRequest, out: ConnectionChatOut, ctx: HandlerContext): Promise<void> {
  const route = await deps.registry.resolve(req.model);
  if (!route) throw new BusError(404, 'Model not found');
  const held = metaWithFirstChunks(out);
  try {
    if (route.kind === 'openai') await openaiChat(deps, route, req, held, ctx);
    else await ollamaChat(deps, route, req, held, ctx);
  } catch (err) {
    if (isAbortError(err) || ctx.signal.aborted) return;
    throw toBusError(err, deps.log, route);
  } finally {
    // A meta written goes out before any failure is reported: the failure is then in-band, as before.
    held.release();
  }
}

/**
 * The meta frame held until the end of the current turn (`setImmediate`) unless a chunk or the end
 * comes first: the upstream's headers usually arrive with its first chunks, and then all of them
 * leave in one bus message. Chunks are never held.
 */
function metaWithFirstChunks(out: ConnectionChatOut): ConnectionChatOut & { release(): void } {
  let held: { meta: Meta } | undefined;
  let timer: NodeJS.Immediate | undefined;
  const release = () => {
    if (timer) clearImmediate(timer);
    timer = undefined;
    if (!held) return;
    const { meta } = held;
    held = undefined;
    out.meta(meta);
  };
  return {
    meta(meta) {
      release();
      held = { meta };
      timer = setImmediate(release);
    },
    chunk(data) {
      release();
      out.chunk(data);
    },
    end(e) {
      release();
      out.end(e);
    },
    release,
  };
}

/** The upstream's own message and status; details `{type, code}` when it gave them. */
export function upstreamHttpError(status: number, body: unknown): BusError {
  let message = '';
  const details: Record<string, unknown> = {};
  if (isObject(body)) {
    const e = body.error;
    if (isObject(e)) {
      if (typeof e.message === 'string') message = e.message;
      if (e.type !== undefined) details.type = e.type;
      if (e.code !== undefined) details.code = e.code;
    } else if (typeof e === 'string') message = e;
    else if (typeof body.detail === 'string') message = body.detail;
    else if (typeof body.message === 'string') message = body.message;
  } else if (typeof body === 'string') message = body.trim().slice(0, 1000);
  return new BusError(status, message || `upstream answered HTTP ${status}`, details);
}

function toBusError(err: unknown, log: Logger, route: Route): BusError {
  if (err instanceof BusError) return err;
  if (err instanceof UpstreamHttpError) return upstreamHttpError(err.status, err.body);
  if (err instanceof UpstreamNetworkError) {
    log.warn({ model: route.model, reason: err.message }, 'upstream unreachable');
    return new BusError(500, CONNECTION_ERROR);
  }
  if (err instanceof UpstreamTimeoutError) {
    log.warn({ model: route.model, reason: err.message }, 'upstream timed out');
    return err.phase === 'headers' ? new BusError(500, CONNECTION_ERROR) : new BusError(504, err.message);
  }
  if (err instanceof UpstreamStreamError) return new BusError(502, err.message);
  return err instanceof Error ? new BusError(500, err.message) : new BusError(500, String(err));
}

/** A `{"error": …}` object sent inside a 2xx stream. */
function midStreamError(obj: Json): BusError | undefined {
  if (obj.error === undefined || obj.error === null) return undefined;
  const e = upstreamHttpError(500, obj);
  return new BusError(500, e.message, e.details);
}

function emit(out: ConnectionChatOut, chunk: unknown): void {
  out.chunk(enc.encode(JSON.stringify(chunk)));
}

/**
 * How a streamed request's chunks are written: JSON, one frame each, or — asked for with `sse` —
 * Open WebUI's SSE event of each (common/src/owui-sse.ts), which the chat worker forwards as it is.
 * Events are plain bytes to the reader, so those of one read of the upstream leave as one frame
 * (`flush` after each read, and before a failure is reported).
 */
function chunkSink(req: UpstreamChatRequest, out: ConnectionChatOut): { meta: Partial<Meta>; send(chunk: unknown, data?: string): void; flush(): void } {
  if (!req.sse) return { meta: {}, send: (chunk, data) => (data === undefined ? emit(out, chunk) : out.chunk(enc.encode(data))), flush: () => undefined };
  const writer = new ChunkWriter(req.model);
  let text = '';
  return {
    meta: { sse: true },
    // Anything but an object is no chunk Open WebUI would send (the chat worker skipped those too).
    send: (chunk) => void (isObject(chunk) && (text += writer.sse(chunk))),
    flush: () => {
      if (!text) return;
      out.chunk(enc.encode(text));
      text = '';
    },
  };
}

/** Tracks what the end frame reports: choice 0's finish_reason and the last usage seen. */
class Tally {
  finish: string | null = null;
  usage: unknown;
  see(chunk: Json): void {
    if (isObject(chunk.usage)) this.usage = chunk.usage;
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const c of choices) {
      if (isObject(c) && (c.index ?? 0) === 0 && typeof c.finish_reason === 'string') this.finish = c.finish_reason;
    }
  }
  end(): End {
    return { finish_reason: this.finish, usage: normalizeUsage(this.usage) };
  }
}

async function openaiChat(deps: ChatDeps, route: Extract<Route, { kind: 'openai' }>, req: UpstreamChatRequest, out: ConnectionChatOut, ctx: HandlerContext): Promise<void> {
  const body: Json = { ...req.body, model: route.upstreamModel };
  delete body.stream;
  const opts = { signal: ctx.signal, timeoutMs: route.upstream.timeoutMs ?? deps.timeoutMs, retries: deps.retries };
  const meta: Meta = { model: route.upstreamModel, owned_by: 'openai' };

  if (!req.stream) {
    const { json } = await createChatCompletion(route.upstream, body, opts);
    if (isObject(json)) {
      const e = midStreamError(json);
      if (e && !Array.isArray(json.choices)) throw e;
    }
    const completion = normalizeCompletion(json);
    out.meta(meta);
    emit(out, completion);
    const t = new Tally();
    for (const c of Array.isArray(completion.choices) ? completion.choices : []) {
      if (isObject(c) && (c.index ?? 0) === 0 && typeof c.finish_reason === 'string') t.finish = c.finish_reason;
    }
    t.usage = completion.usage;
    out.end(t.end());
    return;
  }

  // Open WebUI asks for usage on every streamed request.
  const streamOptions = isObject(body.stream_options) ? { ...body.stream_options } : {};
  body.stream_options = { ...streamOptions, include_usage: true };
  // A read of the upstream's body often holds many chunks: they are handled in one go, so their
  // frames leave in one bus message (the stream writer batches what is written in one turn).
  const { batches } = await streamChatCompletionBatches(route.upstream, body, opts);
  try {
    const sink = chunkSink(req, out);
    out.meta({ ...meta, ...sink.meta });
    const norm = new ChunkNormalizer();
    const tally = new Tally();
    for await (const batch of batches) {
      try {
        for (const { chunk: raw, data } of batch) {
          if (isObject(raw)) {
            const e = midStreamError(raw);
            if (e) throw e;
          }
          for (const c of norm.push(raw)) {
            tally.see(c);
            // A chunk that needed no change goes as the upstream wrote it (it parses to the same value).
            sink.send(c, norm.untouched ? data : undefined);
          }
        }
      } finally {
        sink.flush();
      }
    }
    for (const c of norm.end()) sink.send(c);
    sink.flush();
    out.end(tally.end());
  } finally {
    await batches.return(undefined);
  }
}

function ollamaHeaders(c: OllamaConnection, accept: string): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json', accept, 'accept-encoding': 'identity' };
  if (c.key) h.authorization = `Bearer ${c.key}`;
  return { ...h, ...c.headers };
}

async function ollamaSend(deps: ChatDeps, c: OllamaConnection, payload: Json, accept: string, signal: AbortSignal): Promise<UpstreamResponse> {
  const res = await sendWithRetries(
    { url: `${c.url}/api/chat`, method: 'POST', headers: ollamaHeaders(c, accept), body: enc.encode(JSON.stringify(payload)) },
    { signal, timeoutMs: deps.timeoutMs, retries: deps.retries },
    OPENAI_RETRYABLE,
  );
  if (res.status >= 200 && res.status < 300) return res;
  return throwUpstreamError(res);
}

async function ollamaChat(deps: ChatDeps, route: Extract<Route, { kind: 'ollama' }>, req: UpstreamChatRequest, out: ConnectionChatOut, ctx: HandlerContext): Promise<void> {
  const c = route.connection;
  const payload = openAIToOllamaPayload(req.body, route.upstreamModel, req.stream);
  const meta: Meta = { model: route.upstreamModel, owned_by: 'ollama' };

  if (!req.stream) {
    const res = await ollamaSend(deps, c, payload, 'application/json', ctx.signal);
    const text = (await readBody(res)).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new UpstreamStreamError(`upstream answered with a body that is not JSON: ${text.slice(0, 200)}`, { cause: err });
    }
    if (!isObject(json)) throw new UpstreamStreamError('upstream answered with a body that is not a JSON object');
    const e = midStreamError(json);
    if (e) throw e;
    const completion = normalizeCompletion(ollamaResponseToOpenAI(json));
    out.meta(meta);
    emit(out, completion);
    out.end({ finish_reason: 'stop', usage: normalizeUsage(completion.usage) });
    return;
  }

  const res = await ollamaSend(deps, c, payload, 'application/x-ndjson', ctx.signal);
  try {
    const sink = chunkSink(req, out);
    out.meta({ ...meta, ...sink.meta });
    const conv = new OllamaToOpenAIStream();
    const norm = new ChunkNormalizer();
    const tally = new Tally();
    for await (const obj of parseNDJSON(res.body)) {
      const e = midStreamError(obj);
      if (e) throw e;
      const chunk = conv.push(obj);
      if (!chunk) continue;
      for (const n of norm.push(chunk)) {
        tally.see(n);
        sink.send(n);
      }
      sink.flush();
      if (conv.done) break;
    }
    if (!conv.done) throw new UpstreamStreamError('upstream stream ended before its final ("done") object');
    for (const n of norm.end()) sink.send(n);
    sink.flush();
    out.end(tally.end());
  } finally {
    res.release();
  }
}
