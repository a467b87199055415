import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createLogger } from '@gatehouse/common';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { buildChatFace, type ChatFaceOptions } from './chat-face.ts';
import { mintToken } from './jwt.ts';

/**
 * The chat face in process, without NATS or Redis: authentication, FastAPI's error bodies, paths
 * and headers. No bus is attached, so a request that passes every check reaches its route and
 * gets the face's "not connected to its bus" 503 — which tells it apart from the checks' answers.
 * The session store is a stub the tests steer (revoked tokens, sign-in verdict, Redis up or down).
 */
const secret = randomBytes(32).toString('base64url');
const revoked = new Set<string>();
let redisUp = true;
let signinVerdict: { allowed: true } | { allowed: false; retryAfterMs: number } = { allowed: true };
const sessions: ChatFaceOptions['sessions'] = {
  isRevoked: async (jti) => revoked.has(jti),
  revoke: async (jti) => void revoked.add(jti),
  attemptSignin: async () => signinVerdict,
};
let app: FastifyInstance;

beforeAll(async () => {
  app = await buildChatFace(
    { log: createLogger('chat-face-test', 'silent'), logRequests: false },
    { bus: () => undefined, sessions, redisReady: () => redisUp, secret, cookie: { sameSite: 'lax', secure: false }, streamIdleMs: 1000 },
  );
  // What reached the routes of the face, after the kit's header stripping.
  app.get('/__headers', async (req) => Object.keys(req.headers));
  await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => app.close());
beforeEach(() => {
  redisUp = true;
  signinVerdict = { allowed: true };
});

/** GET with the path sent exactly as written (inject() would resolve `..` and `.` first). */
function rawGet(path: string): Promise<{ statusCode: number; contentType: string; body: string }> {
  const { port } = app.server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, contentType: String(res.headers['content-type']), body }));
    })
      .on('error', reject)
      .end();
  });
}

const NO_BUS = 'The chat service is not connected to its bus yet; try again shortly.';
const token = async (exp: number | null = 3600) => (await mintToken(secret, 'u-1', exp)).token;
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const body = (r: { body: string }) => JSON.parse(r.body) as unknown;
const cleared = (r: { headers: Record<string, unknown> }) =>
  ([] as string[]).concat((r.headers['set-cookie'] as string | string[] | undefined) ?? []).map((c) => c.slice(0, c.indexOf('=')));

describe('chat face: authentication', () => {
  it('401 Not authenticated without a credential, JSON', async () => {
    const r = await app.inject({ method: 'GET', url: '/api/v1/auths/' });
    expect(r.statusCode).toBe(401);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(body(r)).toEqual({ detail: OWUI_ERRORS.notAuthenticated });
  });

  it('401 for a tampered, foreign or revoked token, and every session cookie is cleared', async () => {
    const good = await token();
    const [h, p] = good.split('.');
    const foreign = (await mintToken(randomBytes(32).toString('base64url'), 'u-1', 3600)).token;
    const gone = await token();
    revoked.add(JSON.parse(Buffer.from(gone.split('.')[1]!, 'base64url').toString()).jti);
    for (const t of [`${h}.${p}.${randomBytes(32).toString('base64url')}`, foreign, gone, (await token(-10))]) {
      const r = await app.inject({ method: 'GET', url: '/api/v1/memories/', headers: bearer(t) });
      expect(r.statusCode).toBe(401);
      expect(body(r)).toEqual({ detail: OWUI_ERRORS.invalidToken });
      expect(cleared(r)).toEqual(['token', 'oui-session', 'oauth_id_token', 'oauth_session_id']);
      expect(r.headers['set-cookie']).toContain('token=""; Max-Age=0; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT');
    }
  });

  it('takes the token from Bearer, else the token cookie (quoted or not), else x-api-key', async () => {
    for (const headers of [bearer(await token()), { cookie: `theme=dark; token=${await token()}` }, { cookie: `token="${await token()}"` }, { 'x-api-key': (await token()) }]) {
      const r = await app.inject({ method: 'GET', url: '/api/v1/memories/', headers });
      expect([r.statusCode, body(r)]).toEqual([503, { detail: NO_BUS }]);
    }
    // Bearer wins over a bad cookie.
    const r = await app.inject({ method: 'GET', url: '/api/v1/memories/', headers: { ...bearer(await token()), cookie: 'token=nonsense' } });
    expect(r.statusCode).toBe(503);
  });

  it('sk- API keys, in any of the three places, go to the key check (api-keys.ts), which needs the bus', async () => {
    for (const headers of [bearer('sk-123'), { cookie: 'token=sk-123' }, { 'x-api-key': 'sk-123' }]) {
      const r = await app.inject({ method: 'GET', url: '/api/v1/auths/', headers });
      expect([r.statusCode, body(r)]).toEqual([503, { detail: NO_BUS }]);
      // Never taken for a session: no cookie is cleared or set.
      expect(r.headers['set-cookie']).toBeUndefined();
    }
  });

  it('fails closed with 503 JSON while the session store is down', async () => {
    redisUp = false;
    const r = await app.inject({ method: 'GET', url: '/api/v1/auths/', headers: bearer(await token()) });
    expect([r.statusCode, body(r)]).toEqual([503, { detail: 'Session store unavailable; try again shortly.' }]);
    const s = await app.inject({ method: 'POST', url: '/api/v1/auths/signin', payload: { email: 'a@b.c', password: 'x' } });
    expect(s.statusCode).toBe(503);
  });

  it('429 with Retry-After (whole seconds, rounded up) when the sign-in limit refuses', async () => {
    signinVerdict = { allowed: false, retryAfterMs: 1500 };
    const r = await app.inject({ method: 'POST', url: '/api/v1/auths/signin', payload: { email: 'a@b.c', password: 'x' } });
    expect([r.statusCode, body(r), r.headers['retry-after']]).toEqual([429, { detail: OWUI_ERRORS.rateLimited }, '2']);
  });
});

describe('chat face: FastAPI error bodies', () => {
  it('422 lists what is wrong with a body', async () => {
    const r = await app.inject({ method: 'POST', url: '/api/v1/auths/signin', payload: { email: 5, password: 'x' } });
    expect(r.statusCode).toBe(422);
    expect(body(r)).toEqual({ detail: [{ type: 'string_type', loc: ['body', 'email'], msg: 'Input should be a valid string', input: 5 }] });
  });

  it('422 "Field required" for a missing body, and json_invalid for one that is not JSON', async () => {
    const missing = await app.inject({ method: 'POST', url: '/api/v1/auths/signin', headers: { 'content-type': 'application/json' }, payload: '' });
    expect([missing.statusCode, body(missing)]).toEqual([422, { detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] }]);
    const broken = await app.inject({ method: 'POST', url: '/api/v1/auths/signin', headers: { 'content-type': 'application/json' }, payload: '{"email": ' });
    expect(broken.statusCode).toBe(422);
    expect(body(broken)).toMatchObject({ detail: [{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error' }] });
  });

  it('completions want a JSON object (after authentication)', async () => {
    expect((await app.inject({ method: 'POST', url: '/api/chat/completions', payload: [] })).statusCode).toBe(401);
    const r = await app.inject({ method: 'POST', url: '/api/chat/completions', headers: bearer(await token()), payload: [1] });
    expect([r.statusCode, body(r)]).toEqual([422, { detail: [{ type: 'dict_type', loc: ['body'], msg: 'Input should be a valid dictionary', input: [1] }] }]);
  });
});

describe('chat face: paths, headers and the bus', () => {
  it('404 {"detail":"Not Found"} with and without the trailing slash', async () => {
    for (const url of ['/api/v1/nothing', '/api/v1/nothing/', '/', '/api/v1/memories/x/y/z']) {
      const r = await app.inject({ method: 'GET', url, headers: bearer(await token()) });
      expect([r.statusCode, body(r)]).toEqual([404, { detail: 'Not Found' }]);
      expect(r.headers['content-type']).toMatch(/^application\/json/);
    }
  });

  it('known paths answer with and without their trailing slash', async () => {
    for (const url of ['/api/v1/memories', '/api/v1/memories/', '/api/v1/chats/pinned', '/api/v1/chats/pinned/', '/api/models/']) {
      const r = await app.inject({ method: 'GET', url, headers: bearer(await token()) });
      expect([url, r.statusCode]).toEqual([url, 503]);
    }
  });

  it('path tricks never reach a route without authentication, and every answer is JSON', async () => {
    for (const path of ['/api/v1/memories/../auths/', '/api/v1/./auths/', '/api/v1/auths/%2e%2e/users/', '//api/v1/auths/', '/api/v1/auths//', '/api/v1/AUTHS/', '/api/v1/users/%2F/update']) {
      const r = await rawGet(path);
      expect([path, r.statusCode === 401 || r.statusCode === 404]).toEqual([path, true]);
      expect(r.contentType).toMatch(/^application\/json/);
      expect(JSON.parse(r.body)).toHaveProperty('detail');
    }
  });

  it('drops headers that could pass for bus metadata or an identity before any route sees them', async () => {
    const r = await app.inject({
      method: 'GET',
      url: '/__headers',
      headers: { 'x-gatehouse-user': 'admin', 'X-Gatehouse-Identity': '{}', 'nats-msg-id': 'x', 'Gh-Contract': 'chat.users.delete@1', 'x-kept': '1' },
    });
    const seen = body(r) as string[];
    expect(seen).toContain('x-kept');
    expect(seen.filter((h) => /^(x-gatehouse-|nats-|gh-)/.test(h))).toEqual([]);
  });

  it('503 JSON while there is no bus: routes, completions and /health', async () => {
    const routes = await app.inject({ method: 'POST', url: '/api/v1/memories/add', headers: bearer(await token()), payload: { content: 'c' } });
    expect([routes.statusCode, body(routes)]).toEqual([503, { detail: NO_BUS }]);
    const signin = await app.inject({ method: 'POST', url: '/api/v1/auths/signin', payload: { email: 'a@b.c', password: 'x' } });
    expect([signin.statusCode, body(signin)]).toEqual([503, { detail: NO_BUS }]);
    const completion = await app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: bearer(await token()), payload: { model: 'm', messages: [] } });
    expect([completion.statusCode, body(completion)]).toEqual([503, { detail: NO_BUS }]);
    const health = await app.inject({ method: 'GET', url: '/health' });
    expect([health.statusCode, body(health)]).toEqual([503, { status: false }]);
    expect(body(await app.inject({ method: 'GET', url: '/api/version' }))).toEqual({ version: '0.10.2' });
  });
});
