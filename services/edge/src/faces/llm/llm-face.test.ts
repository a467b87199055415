import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '@gatehouse/common';
import { faceForTests, quietServer, type RawRequest } from '../../gates/test-support.ts';
import { buildLlmFace } from './llm-face.ts';

/**
 * The LLM proxy face in process, without NATS: the gate's rules (only /v1/*, only non-GET,
 * never native pass-through; x-proxy-key, x-api-key, Bearer — the first non-empty wins) in each
 * state, path tricks, and Anthropic's error envelope. No bus is attached, so a request the gate lets
 * through gets the face's "not connected to its bus" 503, which tells it apart from a refusal.
 * Every request goes over a socket, its path exactly as written.
 */
const key = generateKey();
const face = faceForTests('llm', 'open', (gates) => buildLlmFace(quietServer, { gates, bus: () => undefined, streamIdleMs: 1000 }));

type Envelope = { type: string; error: { type: string; message: string }; request_id: string };
const send = (r: RawRequest) => face().send(r);
const routed = { model: 'fake/m1', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] };
const native = { ...routed, model: 'claude-sonnet-4-5' };

/** Refused by the gate (401, or 503 because the gate is unknown), or let through to the route. */
async function outcome(r: RawRequest): Promise<'unauthorized' | 'gate-unavailable' | 'passed' | number> {
  const res = await send(r);
  if (res.status === 401) return 'unauthorized';
  if (res.status === 503) {
    const body = JSON.parse(res.body) as Partial<Envelope> & { status?: string };
    if (body.status === 'degraded') return 'passed'; // /health without a bus
    if (/access gate/.test(body.error?.message ?? '')) return 'gate-unavailable';
    if (/not connected to its bus/.test(body.error?.message ?? '')) return 'passed';
  }
  return res.status;
}

const messages = (body: unknown, headers?: Record<string, string>): RawRequest => ({ path: '/v1/messages', body, headers });

describe('llm face: open gate', () => {
  beforeAll(() => face().set('llm', 'open'));

  it('lets every request through without a key', async () => {
    expect(await outcome(messages(routed))).toBe('passed');
    expect(await outcome({ path: '/v1/messages/count_tokens', body: routed })).toBe('passed');
    expect(await outcome({ path: '/v1/models' })).toBe('passed');
  });
});

describe('llm face: enforced gate', () => {
  beforeAll(() => face().set('llm', { keys: [key] }));

  it('refuses a missing or wrong key in the Anthropic envelope', async () => {
    const res = await send(messages(routed));
    expect(res.status).toBe(401);
    const body = JSON.parse(res.body) as Envelope;
    expect(body).toEqual({ type: 'error', error: { type: 'authentication_error', message: expect.stringMatching(/proxy key is required/) }, request_id: expect.stringMatching(/^req_/) });
    expect(res.headers['request-id']).toBe(body.request_id);
    const wrong = await send(messages(routed, { 'x-proxy-key': generateKey() }));
    expect((JSON.parse(wrong.body) as Envelope).error.message).toBe('invalid proxy key');
  });

  it('takes the key from x-proxy-key, x-api-key or Authorization: Bearer', async () => {
    expect(await outcome(messages(routed, { 'x-proxy-key': key }))).toBe('passed');
    expect(await outcome(messages(routed, { 'x-api-key': key }))).toBe('passed');
    expect(await outcome(messages(routed, { authorization: `Bearer ${key}` }))).toBe('passed');
    expect(await outcome({ path: '/v1/messages/count_tokens', body: routed, headers: { 'x-api-key': key } })).toBe('passed');
  });

  it('judges the first non-empty credential only', async () => {
    expect(await outcome(messages(routed, { 'x-proxy-key': '', 'x-api-key': key }))).toBe('passed');
    expect(await outcome(messages(routed, { 'x-proxy-key': generateKey(), 'x-api-key': key }))).toBe('unauthorized');
    expect(await outcome(messages(routed, { 'x-api-key': generateKey(), authorization: `Bearer ${key}` }))).toBe('unauthorized');
  });

  it('never gates GET, nor native pass-through, nor paths outside /v1', async () => {
    expect(await outcome({ path: '/v1/models' })).toBe('passed');
    expect(await outcome(messages(native))).toBe('passed');
    expect(await outcome({ path: '/v1/messages/count_tokens', body: native })).toBe('passed');
    expect(await outcome({ path: '/health' })).toBe('passed');
    expect(await outcome({ path: '/nope', body: routed })).toBe(404);
  });

  it('reads the model that the worker will read: a native-looking body that routes elsewhere is gated', async () => {
    // The edge reads the model without parsing when the body starts with it; JSON.parse (the
    // worker's) keeps the last duplicate key and unescapes keys, so those bodies must be parsed.
    expect(await outcome(messages('{"model":"claude-sonnet-4-5","max_tokens":1,"messages":[],"model":"fake/m1"}'))).toBe('unauthorized');
    expect(await outcome(messages('{"model":"claude-sonnet-4-5","max_tokens":1,"messages":[],"mod\\u0065l":"fake/m1"}'))).toBe('unauthorized');
    expect(await outcome(messages('{"model":"claude-sonnet-4-5","max_tokens":1,"messages":[],"metadata":{"model":"x"}}'))).toBe('passed');
    expect(await outcome(messages(' {\n "model" : "claude-sonnet-4-5" , "max_tokens":1,"messages":[]}'))).toBe('passed');
    expect(await outcome(messages('{"model":"fake/m1","max_tokens":1,"messages":[]}'))).toBe('unauthorized');
    // Not JSON and no key: the client's mistake, said as such.
    expect(await outcome(messages('{"max_tokens":1,'))).toBe(400);
  });

  it('does not treat HEAD as GET, nor honour a method override', async () => {
    expect(await outcome({ method: 'HEAD', path: '/v1/models' })).toBe('unauthorized');
    expect(await outcome({ path: '/v1/messages', body: routed, headers: { 'x-http-method-override': 'GET' } })).toBe('unauthorized');
    expect(await outcome({ method: 'DELETE', path: '/v1/models' })).toBe('unauthorized');
  });

  it.each(['/v1//messages', '//v1/messages', '/x/../v1/messages', '/v1/./messages', '/v1/%6dessages', '/health/..%2fv1/messages'])(
    'gates the tricky path %s even for a native model',
    async (path) => {
      expect(await outcome({ path, body: native })).toBe('unauthorized');
    },
  );
});

describe('llm face: retry headers (Anthropic\'s, so clients stop or wait as they would there)', () => {
  beforeAll(() => face().set('llm', { keys: [key] }));
  afterAll(() => face().set('llm', 'open'));

  it('a wrong or missing key: 401 with x-should-retry: false and a request-id', async () => {
    for (const headers of [undefined, { 'x-api-key': generateKey() }, { authorization: `Bearer ${generateKey()}` }] as (Record<string, string> | undefined)[]) {
      const res = await send(messages(routed, headers));
      expect(res.status).toBe(401);
      expect(res.headers['x-should-retry']).toBe('false');
      expect(res.headers['request-id']).toMatch(/^req_[0-9a-f]{32}$/);
      expect(res.headers['retry-after']).toBeUndefined();
    }
  });

  it('client mistakes (400, 404) say not to retry; a 503 says when to come back', async () => {
    const bad = await send(messages('{"model":', { 'x-proxy-key': key }));
    expect([bad.status, bad.headers['x-should-retry']]).toEqual([400, 'false']);
    const missing = await send({ path: '/v2/messages' });
    expect([missing.status, missing.headers['x-should-retry']]).toEqual([404, 'false']);
    const away = await send(messages(routed, { 'x-proxy-key': key }));
    expect(away.status).toBe(503);
    expect(away.headers['x-should-retry']).toBeUndefined();
    expect(away.headers['retry-after']).toBe('1');
  });

  it('HEAD / answers a reachability probe: 200, no body, not gated', async () => {
    const res = await send({ method: 'HEAD', path: '/' });
    expect(res.status).toBe(200);
    expect(res.body).toBe('');
    expect(res.headers['request-id']).toMatch(/^req_/);
  });
});

describe('llm face: gate state unknown (fail closed)', () => {
  beforeAll(() => face().set('llm', 'unknown'));
  afterAll(() => face().set('llm', 'open'));

  it('answers 503 on gated requests even with the key, in the envelope', async () => {
    const res = await send(messages(routed, { 'x-proxy-key': key }));
    expect(res.status).toBe(503);
    expect(JSON.parse(res.body)).toMatchObject({ type: 'error', error: { type: 'overloaded_error', message: expect.stringMatching(/fail closed/) } });
    expect(await outcome(messages(routed))).toBe('gate-unavailable');
  });

  it('leaves the ungated requests alone and reports the reason on /health', async () => {
    expect(await outcome({ path: '/v1/models' })).toBe('passed');
    expect(await outcome(messages(native))).toBe('passed');
    const health = await send({ path: '/health' });
    expect(health.status).toBe(503);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'degraded', gate: { state: 'unknown' } });
  });
});

describe('llm face: errors in the Anthropic envelope', () => {
  const error = async (r: RawRequest) => {
    const res = await send(r);
    const body = JSON.parse(res.body) as Envelope;
    expect(body.request_id).toBe(res.headers['request-id']);
    return { status: res.status, type: body.error.type, message: body.error.message };
  };

  it('answers bad bodies with invalid_request_error', async () => {
    expect(await error(messages('{"model":'))).toEqual({ status: 400, type: 'invalid_request_error', message: 'The request body is not valid JSON.' });
    expect(await error(messages([1]))).toEqual({ status: 400, type: 'invalid_request_error', message: 'The request body must be a JSON object.' });
    expect(await error(messages({ max_tokens: 1, messages: [] }))).toEqual({ status: 400, type: 'invalid_request_error', message: 'model: Field required' });
    expect(await error(messages({ ...routed, max_tokens: 'many' }))).toMatchObject({ status: 400, type: 'invalid_request_error', message: expect.stringMatching(/^max_tokens: /) });
  });

  it('answers unknown paths with not_found_error', async () => {
    expect(await error({ path: '/v2/messages' })).toEqual({ status: 404, type: 'not_found_error', message: 'Not found: GET /v2/messages' });
  });

  it('answers 503 while the bus is away', async () => {
    for (const r of [{ path: '/v1/models' }, messages(routed), messages(native), { path: '/v1/messages/count_tokens', body: routed }]) {
      expect(await error(r)).toEqual({ status: 503, type: 'overloaded_error', message: 'the LLM proxy is not connected to its bus; try again shortly' });
    }
  });
});
