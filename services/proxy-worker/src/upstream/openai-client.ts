import { type RequestOptions, readBody, sendWithRetries, toHeaders, headerValue, type UpstreamResponse } from './http.ts';
import { UpstreamHttpError, UpstreamStreamError } from './errors.ts';
import { parseSSE, SSEDecoder, type SSEEvent } from './sse.ts';

/**
 * Client for OpenAI-compatible `POST {baseUrl}/chat/completions` (OpenAI, Ollama's /v1, vLLM, LM Studio,
 * OpenRouter). Bodies are sent as given except `stream`, which each function sets (createChatCompletion also
 * drops `stream_options`, which OpenAI refuses without streaming). Headers: content-type, accept, then the
 * provider's static headers, then `Authorization: Bearer <apiKey>` when a key is configured. Retry policy: ./README.md.
 */

/** What the client needs of a provider (OpenAIProviderConfig fits). */
export interface OpenAIUpstream {
  readonly baseUrl: string;
  readonly apiKey?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
}

export type ChatOptions = RequestOptions;

/** 429 and the 5xx answers that are usually transient. */
export const OPENAI_RETRYABLE = (status: number): boolean => status === 429 || status === 500 || status === 502 || status === 503 || status === 504;

/** Error bodies are read up to this size; enough for any real error envelope. */
const MAX_ERROR_BODY_BYTES = 1024 * 1024;

export async function createChatCompletion(
  provider: OpenAIUpstream,
  body: Record<string, unknown>,
  opts: ChatOptions = {},
): Promise<{ json: unknown; headers: Headers }> {
  // OpenAI rejects stream_options on a non-streaming request.
  const { stream_options: _streamOptions, ...rest } = body;
  const res = await send(provider, { ...rest, stream: false }, opts, 'application/json');
  const headers = toHeaders(res.headers);
  const bytes = await readBody(res);
  const text = bytes.toString('utf8');
  try {
    return { json: JSON.parse(text) as unknown, headers };
  } catch (err) {
    throw new UpstreamStreamError(`upstream answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`, { cause: err });
  }
}

/**
 * Resolves once the upstream answered 2xx (after any retries); `chunks` yields each `data:` JSON object as
 * it arrives (including `{"error":…}` objects some servers send mid-stream) and ends at `data: [DONE]`.
 * A stream ending without `[DONE]` throws UpstreamStreamError. Iterate `chunks` to the end or `return()` it:
 * that (or the signal) is what releases the connection.
 */
export async function streamChatCompletion(
  provider: OpenAIUpstream,
  body: Record<string, unknown>,
  opts: ChatOptions = {},
): Promise<{ headers: Headers; chunks: AsyncGenerator<unknown> }> {
  const res = await send(provider, { ...body, stream: true }, opts, 'text/event-stream');
  const chunks = streamChunks(res);
  // A generator's finally block does not run when return() comes before the first next(): release here too.
  const originalReturn = chunks.return.bind(chunks);
  chunks.return = (value?: unknown) => {
    res.release();
    return originalReturn(value);
  };
  return { headers: toHeaders(res.headers), chunks };
}

async function* streamChunks(res: UpstreamResponse): AsyncGenerator<unknown> {
  try {
    for await (const ev of parseSSE(res.body)) {
      if (ev.data === '[DONE]') return;
      yield chunkOf(ev);
    }
    throw new UpstreamStreamError('upstream stream ended without data: [DONE]');
  } finally {
    res.release();
  }
}

/** One `data:` event's JSON object (an error event that is not JSON, or data that is not, throws). */
function chunkOf(ev: SSEEvent): unknown {
  const data = ev.data;
  if (ev.event === 'error' && !data.trimStart().startsWith('{')) {
    throw new UpstreamStreamError(`upstream sent an error event: ${data.slice(0, 200)}`);
  }
  try {
    return JSON.parse(data);
  } catch (err) {
    throw new UpstreamStreamError(`upstream sent a stream chunk that is not JSON: ${data.slice(0, 200)}`, { cause: err });
  }
}

/** A streamed chunk and the `data:` text it was parsed from. */
export interface StreamedChunk {
  chunk: unknown;
  data: string;
}

/**
 * `streamChatCompletion` a read at a time: `batches` yields, per read of the upstream's body, the
 * chunks it completed (in order; never an empty batch), so a caller can forward them together (one
 * bus message instead of one per chunk), each with its `data:` text (forwarded as it is when
 * nothing in it needs changing). Same rules otherwise: a bad chunk throws after the batch of
 * the chunks before it, `[DONE]` ends it, an end without `[DONE]` throws; `return()` or the signal
 * releases the connection.
 */
export async function streamChatCompletionBatches(
  provider: OpenAIUpstream,
  body: Record<string, unknown>,
  opts: ChatOptions = {},
): Promise<{ headers: Headers; batches: AsyncGenerator<StreamedChunk[]> }> {
  const res = await send(provider, { ...body, stream: true }, opts, 'text/event-stream');
  const batches = chunkBatches(res);
  const originalReturn = batches.return.bind(batches);
  batches.return = (value?: unknown) => {
    res.release();
    return originalReturn(value as never);
  };
  return { headers: toHeaders(res.headers), batches };
}

async function* chunkBatches(res: UpstreamResponse): AsyncGenerator<StreamedChunk[]> {
  try {
    const decoder = new SSEDecoder();
    /** The chunks of these events; stops at [DONE]; a failure comes after the chunks before it. */
    const take = (events: SSEEvent[]): { chunks: StreamedChunk[]; done: boolean; error?: unknown } => {
      const chunks: StreamedChunk[] = [];
      for (const ev of events) {
        if (ev.data === '[DONE]') return { chunks, done: true };
        try {
          chunks.push({ chunk: chunkOf(ev), data: ev.data });
        } catch (error) {
          return { chunks, done: false, error };
        }
      }
      return { chunks, done: false };
    };
    for (;;) {
      const step = await res.body.next();
      let events: SSEEvent[];
      if (step.done) events = decoder.end();
      else events = decoder.push(step.value);
      const got = take(events);
      if (got.chunks.length) yield got.chunks;
      if (got.error !== undefined) throw got.error;
      if (got.done) return;
      decoder.check();
      if (step.done) throw new UpstreamStreamError('upstream stream ended without data: [DONE]');
    }
  } finally {
    // Left early (DONE, a failure, return()): the body's own clean-up, then the connection's.
    await res.body.return(undefined);
    res.release();
  }
}

async function send(provider: OpenAIUpstream, body: Record<string, unknown>, opts: ChatOptions, accept: string): Promise<UpstreamResponse> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept,
    'accept-encoding': 'identity',
    ...(provider.headers ?? {}),
  };
  if (provider.apiKey) headers.authorization = `Bearer ${provider.apiKey}`;
  const res = await sendWithRetries(
    {
      url: `${provider.baseUrl.replace(/\/+$/, '')}/chat/completions`,
      method: 'POST',
      headers,
      body: Buffer.from(JSON.stringify(body)),
    },
    { ...opts, timeoutMs: opts.timeoutMs ?? provider.timeoutMs },
    OPENAI_RETRYABLE,
  );
  if (res.status >= 200 && res.status < 300) return res;
  return throwUpstreamError(res);
}

/**
 * A non-2xx answer as an UpstreamHttpError: the body (JSON when it parses, else its text, read up
 * to MAX_ERROR_BODY_BYTES), headers and retry-after. The connection is released. Shared by every
 * client that speaks to an upstream over HTTP (OpenAI-compatible here, Ollama's native API too).
 */
export async function throwUpstreamError(res: UpstreamResponse): Promise<never> {
  const raw = (await readBody(res, MAX_ERROR_BODY_BYTES)).toString('utf8');
  res.release();
  let parsed: unknown = raw;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // not JSON: keep the text
  }
  throw new UpstreamHttpError(res.status, parsed, toHeaders(res.headers), headerValue(res.headers['retry-after']));
}
