import { createHash, timingSafeEqual } from 'node:crypto';
import { allText, type Exchange, type FakeOptions, type FakeUpstream, lastUserText, pieces, randomId, sendJson, sendJsonCut, startFake, tokenCount, write } from './common.ts';

export type { FakeUpstream, Recorded } from './common.ts';

/**
 * A fake Anthropic Messages API on 127.0.0.1 (url without /v1). `POST /v1/messages` records the raw body bytes
 * (`requests[i].body` is a Buffer) and answers by `model`:
 * - any model not named below (normally `claude-…`): `echo: <last user text>`, as a `message` or as the exact
 *   SSE sequence (message_start, ping, content_block_start, text_delta × n, content_block_stop, message_delta
 *   with usage, message_stop);
 * - `claude-error-<status>` (429: retry-after 3 or the request's `x-fake-retry-after`,
 *   anthropic-ratelimit-requests-remaining 0): Anthropic's error envelope;
 * - `claude-slow`: 200 ms before the answer / between events; `claude-drop`: two events (non-stream: half the
 *   JSON), then the socket is destroyed; `claude-hang`: never answers.
 * Like the real API it wants `anthropic-version` (400 otherwise). Every answer carries `request-id` and
 * `x-fake-saw-auth`: which credential header arrived — `x-api-key`, `authorization`, `x-api-key,authorization`
 * or `none` — never its value. With `apiKey` set, that key is required (as x-api-key or bearer).
 * Also: `POST /v1/messages/count_tokens` and `GET /v1/models` in Anthropic's shapes.
 */
export function startFakeAnthropic(opts: FakeOptions = {}): Promise<FakeUpstream> {
  const expected = opts.apiKey === undefined ? undefined : digest(opts.apiKey);
  return startFake({ ...opts, urlSuffix: '' }, async (ex) => {
    const { req, res, rec } = ex;
    rec.body = rec.raw;
    const requestId = randomId('req_fake_');
    const sawAuth = [req.headers['x-api-key'] !== undefined ? 'x-api-key' : '', req.headers.authorization !== undefined ? 'authorization' : ''].filter(Boolean).join(',') || 'none';
    const base = { 'request-id': requestId, 'x-fake-saw-auth': sawAuth };
    const fail = (status: number, type: string, message: string, extra: Record<string, string> = {}) =>
      sendJson(res, status, { type: 'error', error: { type, message }, request_id: requestId }, { ...base, ...extra });

    if (expected) {
      const bearer = /^Bearer (.*)$/.exec(req.headers.authorization ?? '')?.[1];
      const given = headerOne(req.headers['x-api-key']) ?? bearer ?? '';
      if (!timingSafeEqual(digest(given), expected)) return fail(401, 'authentication_error', 'invalid x-api-key');
    }
    const path = rec.path.split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      const data = ['claude-echo-1', 'claude-slow'].map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' }));
      return sendJson(res, 200, { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }, base);
    }
    if (req.method !== 'POST' || (path !== '/v1/messages' && path !== '/v1/messages/count_tokens')) {
      return fail(404, 'not_found_error', `Not found: ${req.method} ${path}`);
    }
    if (!req.headers['anthropic-version']) return fail(400, 'invalid_request_error', 'anthropic-version: header is required');
    const body = rec.json as MessagesBody | undefined;
    if (!body || typeof body !== 'object' || Array.isArray(body)) return fail(400, 'invalid_request_error', 'There was an error parsing the body of your request.');
    if (typeof body.model !== 'string') return fail(400, 'invalid_request_error', 'model: Field required');
    if (path === '/v1/messages/count_tokens') return sendJson(res, 200, { input_tokens: tokenCount(allText(body)) }, base);

    const model = body.model;
    const err = /^claude-error-(\d{3})$/.exec(model);
    if (err) {
      const status = Number(err[1]);
      const extra: Record<string, string> = {};
      if (status === 429) {
        extra['retry-after'] = headerOne(req.headers['x-fake-retry-after']) ?? '3';
        extra['anthropic-ratelimit-requests-limit'] = '50';
        extra['anthropic-ratelimit-requests-remaining'] = '0';
        extra['anthropic-ratelimit-requests-reset'] = new Date(Date.now() + 3000).toISOString();
      }
      return fail(status, ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), `fake upstream error ${status}`, extra);
    }
    if (model === 'claude-hang') return;
    await answer(ex, body, model, base);
  });
}

interface MessagesBody {
  model?: unknown;
  messages?: unknown;
  system?: unknown;
  stream?: unknown;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

async function answer(ex: Exchange, body: MessagesBody, model: string, headers: Record<string, string>): Promise<void> {
  const text = `echo: ${lastUserText(body.messages)}`;
  const id = randomId('msg_01', 22);
  const inputTokens = tokenCount(allText(body));
  const outputTokens = tokenCount(text);
  const delayMs = model === 'claude-slow' ? 200 : 0;

  if (body.stream !== true) {
    if (delayMs) await ex.sleep(delayMs);
    if (ex.gone) return;
    const send = model === 'claude-drop' ? (b: unknown, h: Record<string, string>) => sendJsonCut(ex, b, h) : (b: unknown, h: Record<string, string>) => sendJson(ex.res, 200, b, h);
    return send(
      {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [{ type: 'text', text }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: outputTokens },
      },
      headers,
    );
  }

  const events: [string, unknown][] = [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
        },
      },
    ],
    ['ping', { type: 'ping' }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ...pieces(text).map((piece): [string, unknown] => ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }]),
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: outputTokens } }],
    ['message_stop', { type: 'message_stop' }],
  ];
  ex.res.writeHead(200, { ...headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  let sent = 0;
  for (const [name, data] of events) {
    if (delayMs && sent > 0) await ex.sleep(delayMs);
    if (ex.gone) return;
    await write(ex, `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    sent++;
    if (model === 'claude-drop' && sent === 2) {
      ex.req.socket.destroy();
      return;
    }
  }
  ex.res.end();
}

function headerOne(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
