import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { DEFAULT_RETRIES, DEFAULT_TIMEOUT_MS, type RetryPolicy } from './config.ts';
import { abortError, UpstreamNetworkError, UpstreamStreamError, UpstreamTimeoutError } from './errors.ts';

/**
 * The HTTP exchange shared by both clients: one request, retried per the policy, with per-attempt timeouts and
 * the caller's abort signal. node:http rather than fetch: undici's built-in 300 s headers/body timeouts would
 * cut the proxy's 600 s default short and cannot be changed without the undici package; node:http has none,
 * so `timeoutMs` alone decides.
 */

export interface RequestOptions {
  /** Aborts everything at once (request, body, waits between attempts); the error is then an AbortError. */
  signal?: AbortSignal;
  /** Per attempt: until response headers, then between two body chunks (idle). Default 600 000. */
  timeoutMs?: number;
  retries?: RetryPolicy;
  /** Called before each wait between attempts (for logging). */
  onRetry?: (info: RetryInfo) => void;
}

export interface RetryInfo {
  /** The attempt that failed, from 1. */
  attempt: number;
  delayMs: number;
  status?: number;
  error?: Error;
}

export interface UpstreamRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: Uint8Array;
}

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** How many attempts it took (1 = no retry). */
  attempts: number;
  /**
   * The body as it arrives. Throws UpstreamTimeoutError (idle), UpstreamStreamError (connection lost) or an
   * AbortError. Ending the iteration early (break/return) closes the connection.
   */
  body: AsyncGenerator<Uint8Array>;
  /** Drops the response and its connection; idempotent, harmless after the body ended. */
  release(): void;
}

/** Which answers are worth another attempt (before any body byte went to the caller). */
export type RetryableStatus = (status: number) => boolean;

const agents = {
  http: new http.Agent({ keepAlive: true }),
  https: new https.Agent({ keepAlive: true }),
};

/**
 * Sends `req`, retrying network errors, header timeouts and answers `retryable` accepts. A retryable answer is
 * returned as is when the retries are used up or its `retry-after` exceeds `maxDelayMs`. Network errors and
 * timeouts that outlast the retries are thrown.
 */
export async function sendWithRetries(req: UpstreamRequest, opts: RequestOptions, retryable: RetryableStatus): Promise<UpstreamResponse> {
  const policy = opts.retries ?? DEFAULT_RETRIES;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const { signal } = opts;
  const url = new URL(req.url);
  for (let attempt = 0; ; attempt++) {
    if (signal?.aborted) throw abortError(signal);
    const exchange = new Exchange(url, req, signal, timeoutMs);
    let res: IncomingMessage;
    try {
      res = await exchange.start();
    } catch (err) {
      if (signal?.aborted) throw abortError(signal);
      if (attempt >= policy.max) throw err;
      const delayMs = backoffMs(attempt, policy);
      opts.onRetry?.({ attempt: attempt + 1, delayMs, error: err as Error });
      await sleep(delayMs, signal);
      continue;
    }
    const status = res.statusCode ?? 0;
    const shouldRetry = headerValue(res.headers['x-should-retry']);
    const wanted = shouldRetry === 'true' ? status >= 400 : shouldRetry === 'false' ? false : retryable(status);
    if (wanted && attempt < policy.max) {
      const delayMs = retryDelayMs(res.headers, attempt, policy);
      if (delayMs !== undefined) {
        exchange.release();
        opts.onRetry?.({ attempt: attempt + 1, delayMs, status });
        await sleep(delayMs, signal);
        continue;
      }
    }
    return { status, headers: res.headers, attempts: attempt + 1, body: exchange.body(), release: () => exchange.release() };
  }
}

/** One attempt: the request, its timers, and the link to the caller's signal. */
class Exchange {
  private req: http.ClientRequest | undefined;
  private res: IncomingMessage | undefined;
  private failure: 'headers' | 'idle' | 'abort' | 'released' | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly onAbort = () => this.fail('abort');

  constructor(
    private readonly url: URL,
    private readonly spec: UpstreamRequest,
    private readonly signal: AbortSignal | undefined,
    private readonly timeoutMs: number,
  ) {}

  start(): Promise<IncomingMessage> {
    return new Promise<IncomingMessage>((resolve, reject) => {
      const isHttps = this.url.protocol === 'https:';
      const headers: Record<string, string> = { ...this.spec.headers };
      if (this.spec.body) headers['content-length'] = String(this.spec.body.byteLength);
      const req = (isHttps ? https : http).request(this.url, {
        method: this.spec.method,
        headers,
        agent: isHttps ? agents.https : agents.http,
      });
      this.req = req;
      this.signal?.addEventListener('abort', this.onAbort, { once: true });
      this.timer = setTimeout(() => this.fail('headers'), this.timeoutMs);
      const onError = (err: Error) => {
        clearTimeout(this.timer);
        this.detach();
        reject(this.mapError(err, false));
      };
      req.once('error', onError);
      req.once('response', (res) => {
        clearTimeout(this.timer);
        this.res = res;
        // Errors after this point surface through the body iterator; keep the emitters from throwing.
        req.off('error', onError);
        req.on('error', () => {});
        res.on('error', () => {});
        resolve(res);
      });
      req.end(this.spec.body);
    });
  }

  /** The response body with the idle timeout; closes the connection when left early. */
  async *body(): AsyncGenerator<Uint8Array> {
    const res = this.res;
    if (!res) return;
    const it = res[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    let done = false;
    try {
      for (;;) {
        this.timer = setTimeout(() => this.fail('idle'), this.timeoutMs);
        let step: IteratorResult<Buffer>;
        try {
          step = await it.next();
        } catch (err) {
          throw this.mapError(err, true);
        } finally {
          clearTimeout(this.timer);
        }
        if (step.done) {
          // A response cut short without an error still must not pass for a complete one.
          if (!res.complete) throw this.mapError(new Error('connection closed before the response ended'), true);
          done = true;
          return;
        }
        yield step.value;
      }
    } finally {
      if (!done) this.release();
      else this.detach();
    }
  }

  /** Drops the attempt: its socket is destroyed unless the response already ended. */
  release(): void {
    clearTimeout(this.timer);
    this.detach();
    if (this.res?.complete) return;
    if (!this.failure) this.failure = 'released';
    this.req?.destroy(new Error('released'));
    this.res?.destroy();
  }

  private fail(why: 'headers' | 'idle' | 'abort'): void {
    if (!this.failure) this.failure = why;
    clearTimeout(this.timer);
    this.req?.destroy(new Error(why === 'abort' ? 'aborted by the caller' : `${why} timeout`));
    this.res?.destroy();
  }

  private detach(): void {
    this.signal?.removeEventListener('abort', this.onAbort);
  }

  private mapError(err: unknown, afterResponse: boolean): Error {
    if (this.failure === 'abort' || this.signal?.aborted) return abortError(this.signal);
    if (this.failure === 'headers' || this.failure === 'idle') return new UpstreamTimeoutError(this.failure, this.timeoutMs);
    const message = err instanceof Error ? err.message : String(err);
    if (afterResponse) return new UpstreamStreamError(`upstream connection lost mid-response: ${message}`, { cause: err });
    return new UpstreamNetworkError(`cannot reach ${this.url.origin}: ${message}`, { cause: err });
  }
}

/** Reads a whole body, up to `maxBytes` (the rest is dropped and the connection closed). */
export async function readBody(res: UpstreamResponse, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const part of res.body) {
    if (size + part.byteLength > maxBytes) {
      parts.push(part.subarray(0, maxBytes - size));
      size = maxBytes;
      break;
    }
    parts.push(part);
    size += part.byteLength;
  }
  return Buffer.concat(parts, size);
}

export function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

/** Node's header object as a fetch `Headers` (set-cookie kept as separate values). */
export function toHeaders(h: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [name, value] of Object.entries(h)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) out.append(name, v);
    else out.append(name, value);
  }
  return out;
}

/** Node's header object flattened to single strings (repeated headers joined with ", "). */
export function flattenHeaders(h: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(h)) {
    const v = headerValue(value);
    if (v !== undefined) out[name] = v;
  }
  return out;
}

/**
 * Milliseconds to wait before retrying an answer: its `retry-after-ms` or `retry-after` (seconds or HTTP date)
 * when given — undefined (give up now) when that exceeds `maxDelayMs` — else exponential backoff.
 */
export function retryDelayMs(headers: IncomingHttpHeaders, attempt: number, policy: RetryPolicy, now = Date.now()): number | undefined {
  const asked = parseRetryAfter(headerValue(headers['retry-after-ms']), headerValue(headers['retry-after']), now);
  if (asked === undefined) return backoffMs(attempt, policy);
  return asked <= policy.maxDelayMs ? asked : undefined;
}

/** `retry-after-ms` (OpenAI's) wins over `retry-after`; unparseable values count as absent. */
export function parseRetryAfter(retryAfterMs: string | undefined, retryAfter: string | undefined, now = Date.now()): number | undefined {
  if (retryAfterMs !== undefined && /^\s*\d+(\.\d+)?\s*$/.test(retryAfterMs)) return Math.ceil(Number(retryAfterMs));
  if (retryAfter === undefined) return undefined;
  const text = retryAfter.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.ceil(Number(text) * 1000);
  // An HTTP date names its weekday and month; Date.parse would also take "-1" or "2026" for a date.
  if (!/[A-Za-z]{3}/.test(text)) return undefined;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Exponential backoff with "equal jitter": between half and all of min(maxDelayMs, baseDelayMs × 2^attempt). */
export function backoffMs(attempt: number, policy: RetryPolicy, random = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Waits `ms`, or rejects with an AbortError as soon as `signal` fires. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError(signal));
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
