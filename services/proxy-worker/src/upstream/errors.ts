/**
 * Errors thrown by the upstream clients. The glue maps them to Anthropic-shaped answers:
 * UpstreamHttpError → the upstream's status (body translated), UpstreamTimeoutError → 504,
 * UpstreamNetworkError → 502, UpstreamStreamError → `event: error` mid-stream (or 502 before the first byte),
 * and an AbortError (`err.name === 'AbortError'`) means the caller gave up: answer nothing.
 */

/** The upstream answered with a non-2xx status and the retry policy gave up on it. */
export class UpstreamHttpError extends Error {
  override name = 'UpstreamHttpError';
  constructor(
    public readonly status: number,
    /** The error body: parsed JSON when it parses, else the text (cut at 1 MiB). */
    public readonly body: unknown,
    public readonly headers: Headers,
    /** The upstream's `retry-after` header, verbatim, when it sent one. */
    public readonly retryAfter?: string,
  ) {
    super(`upstream answered HTTP ${status}${describeBody(body)}`);
  }
}

/** No response headers within `timeoutMs` (`phase: 'headers'`), or no body bytes for `timeoutMs` (`'idle'`). */
export class UpstreamTimeoutError extends Error {
  override name = 'UpstreamTimeoutError';
  constructor(
    public readonly phase: 'headers' | 'idle',
    public readonly timeoutMs: number,
  ) {
    super(
      phase === 'headers'
        ? `upstream sent no response within ${timeoutMs} ms`
        : `upstream sent nothing for ${timeoutMs} ms in the middle of its response`,
    );
  }
}

/** The upstream could not be reached, or the connection failed before a response arrived. */
export class UpstreamNetworkError extends Error {
  override name = 'UpstreamNetworkError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * A response that started well went bad: the connection dropped mid-body, an OpenAI stream ended without
 * `data: [DONE]`, or a 2xx body/chunk was not the JSON it should be.
 */
export class UpstreamStreamError extends Error {
  override name = 'UpstreamStreamError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The error every client throws once the caller's signal fired; `name` is always 'AbortError'. */
export function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const err = new DOMException('The operation was aborted', 'AbortError');
  if (reason !== undefined) Object.defineProperty(err, 'cause', { value: reason, enumerable: false, configurable: true });
  return err;
}

export function isAbortError(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

function describeBody(body: unknown): string {
  if (typeof body === 'string') return body ? `: ${body.slice(0, 200)}` : '';
  if (body && typeof body === 'object') {
    const error = (body as { error?: unknown }).error;
    const message = error && typeof error === 'object' ? (error as { message?: unknown }).message : undefined;
    if (typeof message === 'string') return `: ${message.slice(0, 200)}`;
  }
  return '';
}
