import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { rawRequest } from '../../scripts/src/probe.ts';
import { enforcedState, flipGate, openState } from '../../scripts/src/gate-ops.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';

/** The documented status matrix for the speech gateway, in both states, plus the ways around it. */
const stack = new Stack();
let edge: Edge;
const key = newKey();

beforeAll(async () => {
  await stack.startWorker();
  edge = await stack.startEdge();
});
afterAll(() => stack.close());

const get = (path: string, headers: Record<string, string> = {}, method = 'GET') => rawRequest(edge.url, path, { headers, method });
const bearer = (k: string) => ({ authorization: `Bearer ${k}` });

/** Send a request line exactly as written (methods Node's client would refuse to send). */
function rawLine(line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(edge.port, '127.0.0.1', () => s.end(`${line}\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`));
    let out = '';
    s.on('data', (d) => (out += d.toString()));
    s.on('end', () => resolve(out.split('\r\n')[0] ?? ''));
    s.on('error', reject);
    s.setTimeout(5000, () => s.destroy(new Error('timeout')));
  });
}

describe('speech gate: open (the default)', () => {
  it('serves /v1/models and /health without a key, and ignores a key', async () => {
    expect((await get('/v1/models')).status).toBe(200);
    expect((await get('/v1/models', bearer(newKey()))).status).toBe(200);
    expect((await get('/health')).status).toBe(200);
    const health = JSON.parse((await get('/health')).body);
    expect(health.gate.state).toBe('open');
  });
});

describe('speech gate: enforced', () => {
  beforeAll(async () => {
    const store = await stack.store();
    const r = await flipGate(store, 'speech', enforcedState([key], 'test'));
    expect(r.lagging).toEqual([]);
  });

  it('refuses a missing key with 401, OpenAI envelope and WWW-Authenticate: Bearer', async () => {
    const r = await get('/v1/models');
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Bearer');
    const body = JSON.parse(r.body);
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toMatch(/didn't provide an API key/);
  });

  it('refuses a wrong key (value compared, not presence) with 401 invalid_api_key', async () => {
    const r = await get('/v1/models', bearer(newKey()));
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body).error.code).toBe('invalid_api_key');
    // A prefix of the right key, the key with a different scheme, and a key in other headers.
    expect((await get('/v1/models', bearer(key.slice(0, 20)))).status).toBe(401);
    expect((await get('/v1/models', { authorization: `Basic ${key}` })).status).toBe(401);
    expect((await get('/v1/models', { 'x-api-key': key })).status).toBe(401);
  });

  it('accepts the right key', async () => {
    const r = await get('/v1/models', bearer(key));
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).data.map((m: { id: string }) => m.id)).toContain('tts-1');
    expect((await get('/v1/models', { authorization: `bearer ${key}` })).status).toBe(200);
  });

  it('keeps the public paths public', async () => {
    for (const p of ['/health', '/docs', '/openapi.json', '/redoc', '/admin/status']) {
      expect((await get(p)).status, p).toBe(200);
    }
    const status = JSON.parse((await get('/admin/status')).body);
    expect(status.gate.state).toBe('enforced');
    expect(JSON.stringify(status)).not.toMatch(/sha256|key/i);
  });

  it('gates every other path, including unknown ones', async () => {
    expect((await get('/v1/audio/voices')).status).toBe(401);
    expect((await get('/v1/models/tts-1')).status).toBe(401);
    expect((await get('/nope')).status).toBe(401);
    expect((await get('/v1/audio/speech', {}, 'POST')).status).toBe(401);
  });

  it.each([
    '/health/../v1/models',
    '//v1/models',
    '/docs/%2e%2e/v1/models',
    '/docs/%252e%252e/v1/models',
    '/admin/../v1/models',
    '/admin/%2e%2e/v1/models',
    '/redoc/..%2fv1/models',
    '/./v1/models',
    '/health%2f..%2fv1/models',
    '/HEALTH',
    '/health;/../v1/models',
  ])('does not treat %s as exempt', async (path) => {
    expect((await get(path)).status).toBe(401);
  });

  it('cannot be got around with methods', async () => {
    expect((await get('/v1/models', {}, 'HEAD')).status).toBe(401);
    expect((await get('/v1/models', {}, 'OPTIONS')).status).toBe(401);
    expect((await get('/v1/models', { 'x-http-method-override': 'GET' }, 'POST')).status).toBe(401);
    expect((await get('/health', { 'x-http-method-override': 'GET' }, 'POST')).status).not.toBe(200);
    // A lower-case method is not HTTP; it must not reach a handler.
    expect(await rawLine('get /v1/models HTTP/1.1')).not.toMatch(/ 200 /);
  });

  it('works with the official OpenAI client holding the key, and fails without it', async () => {
    const client = new OpenAI({ baseURL: `${edge.url}/v1`, apiKey: key, maxRetries: 0 });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toContain('tts-1');
    const speech = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'Hello from the gate.', response_format: 'wav' });
    const audio = Buffer.from(await speech.arrayBuffer());
    expect(audio.subarray(0, 4).toString()).toBe('RIFF');
    expect(audio.readUInt32LE(24)).toBe(24000);

    const anonymous = new OpenAI({ baseURL: `${edge.url}/v1`, apiKey: newKey(), maxRetries: 0 });
    await expect(anonymous.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('opens again', async () => {
    const r = await flipGate(await stack.store(), 'speech', openState('test'));
    expect(r.lagging).toEqual([]);
    expect((await get('/v1/models')).status).toBe(200);
  });
});
