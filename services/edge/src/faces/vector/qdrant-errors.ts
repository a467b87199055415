import type { FastifyError } from 'fastify';
import { BusError } from '@gatehouse/common';
import type { Refusal, Rejection } from '../../gates/gate-guard.ts';

/** The envelope's JSON schema, for the face's OpenAPI document. */
export const QDRANT_ERROR_ENVELOPE = {
  type: 'object',
  properties: { status: { type: 'object', properties: { error: { type: 'string' } } }, time: { type: 'number' } },
};

/** Qdrant's error envelope: `{"status":{"error":msg},"time":s}` (no `result`). */
export function qdrantError(status: number, message: string, startedAt: number): { status: number; body: unknown } {
  return { status, body: { status: { error: message }, time: (performance.now() - startedAt) / 1000 } };
}

/**
 * Qdrant answers 401 from its auth middleware as plain text; 403 (a read-only key on a write)
 * comes later, in the JSON envelope (reference §2).
 */
export function vectorRefusal(r: Rejection): Refusal {
  if (r.why === 'unavailable') {
    return {
      status: 503,
      body: { status: { error: 'Service unavailable: the vector store cannot confirm its access gate (fail closed)' }, time: 0 },
    };
  }
  if (r.why === 'forbidden') return { status: 403, body: { status: { error: 'Forbidden: Write access is required' }, time: 0 } };
  return {
    status: 401,
    headers: { 'content-type': 'text/plain; charset=utf-8' },
    body: r.presented ? 'Invalid API key or JWT' : 'Must provide an API key or an Authorization bearer token',
  };
}

export function toQdrantError(err: unknown, startedAt: number): { status: number; body: unknown } {
  if (err instanceof BusError) return qdrantError(err.status === 499 ? 503 : err.status, err.message, startedAt);
  const fe = err as FastifyError;
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return qdrantError(400, `Format error in JSON body: ${fe.message}`, startedAt);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return qdrantError(413, 'Payload too large', startedAt);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return qdrantError(400, 'Content type error: expected application/json', startedAt);
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) return qdrantError(fe.statusCode, fe.message, startedAt);
  return qdrantError(500, 'Service internal error', startedAt);
}
