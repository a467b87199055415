import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { anthropicError as envelope } from '@gatehouse/contracts';
import { BusError } from '@gatehouse/common';
import type { Refusal, Rejection } from '../../gates/gate-guard.ts';

export interface AnthropicError {
  status: number;
  headers?: Record<string, string>;
  body: { type: 'error'; error: { type: string; message: string } };
}

export function anthropicError(status: number, message: string, headers?: Record<string, string>): AnthropicError {
  return { status, headers, body: envelope(status, message) };
}

/** Gate refusals in Anthropic's envelope, with the request id as every other error of the face. */
export function llmRefusal(r: Rejection, req: FastifyRequest): Refusal {
  const e =
    r.why === 'unavailable'
      ? anthropicError(503, 'The LLM proxy cannot confirm its access gate right now and refuses to serve (fail closed). Try again shortly.')
      : r.presented
        ? anthropicError(401, 'invalid proxy key')
        : anthropicError(401, 'A proxy key is required: send it in the x-proxy-key header (or x-api-key, or Authorization: Bearer).');
  return { ...e, body: { ...e.body, request_id: req.id } };
}

/** Any error on the LLM face, in Anthropic's envelope. A client mistake is never a 500. */
export function toAnthropicError(err: unknown): AnthropicError {
  if (err instanceof BusError) {
    const retryAfter = typeof err.details.retryAfter === 'string' ? { 'retry-after': err.details.retryAfter } : undefined;
    return anthropicError(err.status === 499 ? 503 : err.status, err.message, retryAfter);
  }
  const fe = err as FastifyError;
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return anthropicError(400, 'The request body is not valid JSON.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return anthropicError(413, 'Request exceeds the maximum allowed number of bytes.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return anthropicError(400, 'Send JSON with Content-Type: application/json.');
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) return anthropicError(fe.statusCode, fe.message);
  return anthropicError(500, 'Internal server error');
}

/** Answers a retry can help: the SDKs retry these statuses on their own (408, 409, 429, 5xx, 529). */
const RETRYABLE = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500;
/** Statuses that say "try again later", where a client waits for `retry-after`. */
const WAIT_AND_RETRY = new Set([429, 503, 529]);

/**
 * The headers Anthropic puts on an error answer, so that clients stop or wait as they would there:
 * `x-should-retry: false` on every answer a retry cannot fix (a wrong key, a bad body, an unknown
 * model: Claude Code otherwise retries a 401 for minutes), and `retry-after` on 429/503/529 when
 * the answer has none (1 s: ours are momentary — the worker reconnecting, a slot freeing up).
 * What an upstream sent (native pass-through relays its own) is kept.
 */
export function retryHeaders(reply: FastifyReply): void {
  const status = reply.statusCode;
  if (status < 400) return;
  if (!RETRYABLE(status)) {
    if (!reply.hasHeader('x-should-retry')) reply.header('x-should-retry', 'false');
  } else if (WAIT_AND_RETRY.has(status) && !reply.hasHeader('retry-after')) {
    reply.header('retry-after', '1');
  }
}
