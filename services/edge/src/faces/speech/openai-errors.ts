import type { FastifyError } from 'fastify';
import { BusError } from '@gatehouse/common';
import type { Refusal, Rejection } from '../../gates/gate-guard.ts';

/** OpenAI's error envelope: `{ error: { message, type, param, code } }`. */
export interface OpenAIError {
  status: number;
  headers?: Record<string, string>;
  body: { error: { message: string; type: string; param: string | null; code: string | null } };
}

export function openaiError(
  status: number,
  message: string,
  opts: { type?: string; param?: string | null; code?: string | null; headers?: Record<string, string> } = {},
): OpenAIError {
  const type = opts.type ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
  return { status, headers: opts.headers, body: { error: { message, type, param: opts.param ?? null, code: opts.code ?? null } } };
}

/** The envelope's JSON schema, for the face's OpenAPI document. */
export const OPENAI_ERROR_ENVELOPE = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { message: { type: 'string' }, type: { type: 'string' }, param: { type: ['string', 'null'] }, code: { type: ['string', 'null'] } },
    },
  },
};

/** Gate refusals worded as OpenAI words them, with `WWW-Authenticate: Bearer` on 401. */
export function speechRefusal(r: Rejection): Refusal {
  if (r.why === 'unavailable') {
    return openaiError(503, 'The speech gateway cannot confirm its access gate right now and refuses to serve (fail closed). Try again shortly.', {
      type: 'server_error',
      code: 'gate_unavailable',
    });
  }
  const headers = { 'www-authenticate': 'Bearer' };
  return r.presented
    ? openaiError(401, 'Incorrect API key provided.', { code: 'invalid_api_key', headers })
    : openaiError(
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        { headers },
      );
}

/** Any error thrown on the speech face, in OpenAI's envelope. A client mistake is never a 500. */
export function toOpenAIError(err: unknown): OpenAIError {
  if (err instanceof BusError) {
    const param = typeof err.details.param === 'string' ? err.details.param : null;
    const code = typeof err.details.code === 'string' ? err.details.code : err.status === 503 ? 'service_unavailable' : null;
    return openaiError(err.status === 499 ? 503 : err.status, err.message, { param, code });
  }
  const fe = err as FastifyError;
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return openaiError(
        400,
        "We could not parse the JSON body of your request. The speech gateway expects a JSON payload, but what was sent was not valid JSON.",
        { code: 'invalid_json' },
      );
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return openaiError(413, 'The request body is too large.', { code: 'request_too_large' });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return openaiError(415, `Unsupported content type; send JSON with Content-Type: application/json.`, { code: 'unsupported_media_type' });
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return openaiError(fe.statusCode, fe.message);
  }
  return openaiError(500, 'The server had an error while processing your request.');
}
