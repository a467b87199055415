import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InjectOptions } from 'fastify';
import { generateKey } from '@gatehouse/common';
import { faceForTests, quietServer } from '../../gates/test-support.ts';
import { buildSpeechFace } from './speech-face.ts';

/**
 * The speech face in process, without NATS: the gate in each state, path tricks, OpenAI's error
 * envelope. No bus is attached, so a request the gate lets through reaches its route and gets the
 * face's "not connected to its bus" 503 — which tells it apart from the gate's own answers.
 */
const key = generateKey();
const face = faceForTests('speech', 'open', (gates) => buildSpeechFace(quietServer, { gates, bus: () => undefined, streamIdleMs: 1000 }));
const inject = (r: InjectOptions) => face().app.inject(r);

const errorOf = (body: string) => (JSON.parse(body) as { error: { message: string; type: string; param: string | null; code: string | null } }).error;
const bearer = (k: string) => ({ authorization: `Bearer ${k}` });
const speech = { model: 'tts-1', voice: 'alloy', input: 'Hello.' };

/** What a request got: refused by the gate, or let through (then the missing bus answers). */
async function outcome(req: InjectOptions | string): Promise<'unauthorized' | 'gate-unavailable' | 'passed' | number> {
  const res = typeof req === 'string' ? await face().send({ path: req }).then((r) => ({ statusCode: r.status, body: r.body })) : await inject(req);
  if (res.statusCode === 401) return 'unauthorized';
  if (res.statusCode === 503) {
    const body = JSON.parse(res.body) as { error?: { code: string }; status?: string };
    if (body.error?.code === 'gate_unavailable') return 'gate-unavailable';
    if (body.error?.code === 'service_unavailable' || body.status === 'degraded') return 'passed';
  }
  return res.statusCode < 400 ? 'passed' : res.statusCode;
}

describe('speech face: open gate', () => {
  beforeAll(() => face().set('speech', 'open'));

  it('serves every route without a key', async () => {
    expect(await outcome({ method: 'GET', url: '/v1/models' })).toBe('passed');
    expect(await outcome({ method: 'POST', url: '/v1/audio/speech', payload: speech })).toBe('passed');
    expect(await outcome({ method: 'GET', url: '/openapi.json' })).toBe('passed');
  });
});

describe('speech face: enforced gate', () => {
  beforeAll(() => face().set('speech', { keys: [key] }));

  it('refuses a missing key as OpenAI does, with WWW-Authenticate: Bearer', async () => {
    const res = await inject({ method: 'GET', url: '/v1/models' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(errorOf(res.body)).toEqual({ message: expect.stringMatching(/didn't provide an API key/), type: 'invalid_request_error', param: null, code: null });
  });

  it('refuses a wrong key with invalid_api_key, and another scheme as no key', async () => {
    const wrong = await inject({ method: 'POST', url: '/v1/audio/speech', headers: bearer(generateKey()), payload: speech });
    expect(wrong.statusCode).toBe(401);
    expect(errorOf(wrong.body).code).toBe('invalid_api_key');
    const basic = await inject({ method: 'GET', url: '/v1/models', headers: { authorization: `Basic ${key}` } });
    expect(errorOf(basic.body).code).toBeNull();
  });

  it('lets the key through, whatever the scheme case', async () => {
    expect(await outcome({ method: 'GET', url: '/v1/models', headers: bearer(key) })).toBe('passed');
    expect(await outcome({ method: 'GET', url: '/v1/audio/voices', headers: { authorization: `bearer  ${key}` } })).toBe('passed');
  });

  it('keeps the public paths public', async () => {
    for (const url of ['/health', '/openapi.json', '/docs', '/redoc', '/redoc/redoc.standalone.js', '/admin/status']) {
      expect(await outcome({ method: 'GET', url }), url).toBe('passed');
    }
    const status = await inject({ method: 'GET', url: '/admin/status' });
    expect(JSON.parse(status.body)).toMatchObject({ face: 'speech', gate: { state: 'enforced' } });
    expect(status.body).not.toContain(key);
  });

  it('gates unknown paths too, and answers them 404 in the envelope once the key is right', async () => {
    expect(await outcome({ method: 'GET', url: '/v1/nope' })).toBe('unauthorized');
    const res = await inject({ method: 'GET', url: '/v1/nope', headers: bearer(key) });
    expect(res.statusCode).toBe(404);
    expect(errorOf(res.body)).toMatchObject({ type: 'invalid_request_error', param: null, code: null });
  });

  it.each([
    '/health/../v1/models',
    '//v1/models',
    '/docs/%2e%2e/v1/models',
    '/docs/%252e%252e/v1/models',
    '/openapi.json/..%2fv1/models',
    '/admin/../v1/audio/voices',
    '/./health',
    '/%68ealth',
  ])('never exempts the tricky path %s', async (url) => {
    expect(await outcome(url)).toBe('unauthorized');
  });

  it('gates every method, HEAD and overrides included', async () => {
    expect(await outcome({ method: 'HEAD', url: '/v1/models' })).toBe('unauthorized');
    expect(await outcome({ method: 'POST', url: '/v1/audio/speech', headers: { 'x-http-method-override': 'GET' }, payload: speech })).toBe('unauthorized');
  });
});

describe('speech face: gate state unknown (fail closed)', () => {
  beforeAll(() => face().set('speech', 'unknown'));
  afterAll(() => face().set('speech', 'open'));

  it('answers 503 on gated routes even to a key that used to work', async () => {
    const res = await inject({ method: 'GET', url: '/v1/models', headers: bearer(key) });
    expect(res.statusCode).toBe(503);
    expect(errorOf(res.body)).toMatchObject({ type: 'server_error', code: 'gate_unavailable' });
    expect(await outcome({ method: 'POST', url: '/v1/audio/speech', payload: speech })).toBe('gate-unavailable');
  });

  it('reports the reason on /health and keeps the documents public', async () => {
    const health = await inject({ method: 'GET', url: '/health' });
    expect(health.statusCode).toBe(503);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'degraded', gate: { state: 'unknown' } });
    expect((await inject({ method: 'GET', url: '/openapi.json' })).statusCode).toBe(200);
  });
});

describe('speech face: errors in the OpenAI envelope', () => {
  it('names the invalid field in param', async () => {
    const res = await inject({ method: 'POST', url: '/v1/audio/speech', payload: { ...speech, speed: 9 } });
    expect(res.statusCode).toBe(400);
    expect(errorOf(res.body)).toEqual({ message: 'speed must be at most 4.0', type: 'invalid_request_error', param: 'speed', code: 'invalid_value' });
    const long = await inject({ method: 'POST', url: '/v1/audio/speech', payload: { ...speech, input: 'a'.repeat(4097) } });
    expect(errorOf(long.body)).toMatchObject({ param: 'input', code: 'string_above_max_length' });
  });

  it('answers a body that is not JSON with 400 invalid_json', async () => {
    const res = await inject({ method: 'POST', url: '/v1/audio/speech', headers: { 'content-type': 'application/json' }, payload: '{"model":' });
    expect(res.statusCode).toBe(400);
    expect(errorOf(res.body)).toMatchObject({ type: 'invalid_request_error', param: null, code: 'invalid_json' });
  });

  it('answers 503 service_unavailable while the bus is away', async () => {
    for (const req of [{ method: 'GET' as const, url: '/v1/models' }, { method: 'GET' as const, url: '/v1/models/tts-1' }, { method: 'POST' as const, url: '/v1/audio/speech', payload: speech }]) {
      const res = await inject(req);
      expect(res.statusCode).toBe(503);
      expect(errorOf(res.body)).toEqual({ message: expect.stringMatching(/not connected to its bus/), type: 'server_error', param: null, code: 'service_unavailable' });
    }
  });
});
