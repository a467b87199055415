import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, type Account } from './chat-fixture.ts';

/**
 * Sessions at the chat face's edge: token transport (Bearer, cookie), revocation on sign-out,
 * the sign-in rate limit (per account and per address, rolling window, Retry-After), headers that
 * try to pass as an identity, the persisted secret, and Redis being away (fail closed).
 * Small limits and a short window so the test can watch the window roll; cheap password hashing
 * (this file is about sessions, not hashing cost) so a busy machine's sign-ins stay well inside it.
 */
const WINDOW_S = 6;
const stack = new Stack();
let edge: Edge;
let admin: Account;
const users: Account[] = [];
const chat = chatClient(() => edge.chatUrl);
const { call } = chat;
const signin = (email: string, password: string, via = chat) => via.call('/api/v1/auths/signin', null, 'POST', { email, password });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  await stack.startChatWorker({ PASSWORD_SCRYPT_LOG2N: '10' });
  edge = await stack.startEdge({
    EDGE_FACES: 'chat',
    SIGNIN_RATE_LIMIT_PER_ACCOUNT: '5',
    SIGNIN_RATE_LIMIT_PER_ADDRESS: '12',
    SIGNIN_RATE_LIMIT_WINDOW_SECONDS: String(WINDOW_S),
  });
  admin = await chat.signup();
  for (let i = 0; i < 3; i++) users.push(await chat.addUser(admin, `User ${i}`));
});
afterAll(() => stack.close());

describe('session transport', () => {
  it('sign-in returns an Open WebUI session and sets the token cookie', async () => {
    const r = await signin(users[0]!.email, users[0]!.password);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ token_type: 'Bearer', email: users[0]!.email, role: 'user' });
    expect(r.body.token.split('.')).toHaveLength(3);
    // Default JWT_EXPIRES_IN is 4w.
    expect(r.body.expires_at - Date.now() / 1000).toBeGreaterThan(27 * 86400);
    const cookie = r.headers.get('set-cookie')!;
    // Attribute order carries no meaning (RFC 6265 5.2); @fastify/cookie writes Max-Age and Path first.
    const [pair, ...attrs] = cookie.split('; ');
    expect(pair).toBe(`token=${r.body.token}`);
    expect(attrs).toEqual(expect.arrayContaining(['Path=/', 'HttpOnly', 'SameSite=Lax', `Expires=${new Date(r.body.expires_at * 1000).toUTCString()}`]));
    expect(attrs.some((a) => /^Max-Age=\d+$/.test(a))).toBe(true);
    expect(cookie).not.toMatch(/Secure/);
    expect(r.body).not.toHaveProperty('password');
    expect(r.body).not.toHaveProperty('password_hash');
  });

  it('the cookie alone authenticates, and GET /api/v1/auths/ echoes the token', async () => {
    const token = (await signin(users[1]!.email, users[1]!.password)).body.token;
    const r = await call('/api/v1/auths/', null, 'GET', undefined, { headers: { cookie: `theme=dark; token=${token}` } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ token, email: users[1]!.email });
  });

  it('refuses missing, tampered and foreign tokens with Open WebUI details, and clears the cookie', async () => {
    expect(await call('/api/v1/auths/')).toMatchObject({ status: 401, body: { detail: 'Not authenticated' } });
    const [h, p] = users[0]!.token.split('.');
    const tampered = `${h}.${p}.${randomBytes(32).toString('base64url')}`;
    const r = await call('/api/v1/memories/', tampered);
    expect(r).toMatchObject({ status: 401, body: { detail: 'Your session has expired or the token is invalid. Please sign in again.' } });
    expect(r.headers.get('set-cookie')).toMatch(/token=""; Max-Age=0; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT/);
  });

  it('headers that look like an identity are not one', async () => {
    const spoofs: Record<string, string>[] = [
      { 'gh-identity': JSON.stringify({ userId: 'x', jti: 'y', expiresAt: null }) },
      { 'x-gatehouse-user': 'admin' },
      { 'nats-service-error-code': '200' },
    ];
    for (const headers of spoofs) {
      expect((await call('/api/v1/auths/', null, 'GET', undefined, { headers })).status).toBe(401);
    }
  });

  it('sign-out revokes that token only; the old token is refused at once', async () => {
    const a = (await signin(users[2]!.email, users[2]!.password)).body.token;
    const b = (await signin(users[2]!.email, users[2]!.password)).body.token;
    const out = await call('/api/v1/auths/signout', a, 'POST');
    expect(out).toMatchObject({ status: 200, body: { status: true } });
    expect(out.headers.get('set-cookie')).toMatch(/token=""/);
    expect((await call('/api/v1/auths/', a)).status).toBe(401);
    expect((await call('/api/v1/auths/', b)).status).toBe(200);
  });

  it('paths answer with and without the trailing slash; unknown /api paths are JSON 404s', async () => {
    expect((await call('/api/v1/auths', users[0]!)).status).toBe(200);
    expect((await call('/api/v1/auths/', users[0]!)).status).toBe(200);
    expect(await call('/api/v1/no/such/thing/')).toMatchObject({ status: 404, body: { detail: 'Not Found' } });
  });
});

describe('sign-in rate limit', () => {
  it('a client that signs in once and reuses its token is never limited', async () => {
    const token = (await signin(users[0]!.email, users[0]!.password)).body.token;
    const statuses = await Promise.all(Array.from({ length: 60 }, () => call('/api/v1/auths/', token).then((r) => r.status)));
    expect(new Set(statuses)).toEqual(new Set([200]));
  });

  it('limits one account: attempts over the limit get 429 with Retry-After, even with the right password', async () => {
    await sleep(WINDOW_S * 1000 + 100);
    const u = users[1]!;
    // At once, so all five stay inside the short window however busy the machine is.
    const wrong = await Promise.all(Array.from({ length: 5 }, () => signin(u.email, 'wrong-password')));
    expect(wrong.map((r) => r.status)).toEqual(Array(5).fill(400));
    const limited = await signin(u.email.toUpperCase(), u.password);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ detail: 'API rate limit exceeded' });
    const retry = Number(limited.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(WINDOW_S);
    // Another account from the same client is not affected.
    expect((await signin(users[0]!.email, users[0]!.password)).status).toBe(200);
    // After Retry-After the account may sign in again.
    await sleep(retry * 1000 + 100);
    expect((await signin(u.email, u.password)).status).toBe(200);
  });

  it('bounds one address across accounts', async () => {
    await sleep(WINDOW_S * 1000 + 100);
    // All at once, so every attempt lands inside the window however busy the machine is; the
    // limiter records them atomically, so exactly the limit gets through whatever the order.
    const codes = (await Promise.all(Array.from({ length: 13 }, (_, i) => signin(`nobody${i}-${stack.ns}@example.com`, 'x')))).map((r) => r.status);
    expect(codes.filter((c) => c === 400)).toHaveLength(12);
    expect(codes.filter((c) => c === 429)).toHaveLength(1);
  });
});

describe('token expiry', () => {
  it('a token past JWT_EXPIRES_IN is refused; the admin setting applies to the next sign-in', async () => {
    await sleep(WINDOW_S * 1000 + 100);
    const set = await call('/api/v1/auths/admin/config', admin, 'POST', { JWT_EXPIRES_IN: '2s' });
    expect(set.body.JWT_EXPIRES_IN).toBe('2s');
    const s = await signin(users[0]!.email, users[0]!.password);
    expect(s.body.expires_at - Date.now() / 1000).toBeLessThanOrEqual(2);
    expect((await call('/api/v1/auths/', s.body.token)).status).toBe(200);
    await sleep(2100);
    expect(await call('/api/v1/auths/', s.body.token)).toMatchObject({ status: 401, body: { detail: 'Your session has expired or the token is invalid. Please sign in again.' } });
    await call('/api/v1/auths/admin/config', admin, 'POST', { JWT_EXPIRES_IN: '4w' });
  });
});

describe('edge restarts and Redis outages', () => {
  it('keeps sessions across a restart: the generated secret persists in its file (mode 0600)', async () => {
    await sleep(WINDOW_S * 1000 + 100);
    const token = (await signin(users[0]!.email, users[0]!.password)).body.token;
    edge = await stack.restartEdge(edge, { EDGE_FACES: 'chat' });
    expect((await call('/api/v1/auths/', token)).status).toBe(200);
    const mode = statSync(join(tmpdir(), `gatehouse-${stack.ns}-webui-secret-key`)).mode & 0o777;
    expect(mode).toBe(0o600);
  });

  it('fails closed (503 JSON) while Redis cannot be reached: no sign-in, no token accepted', async () => {
    const cut = await stack.startEdge({ EDGE_FACES: 'chat', REDIS_URL: 'redis://127.0.0.1:1' });
    const viaCut = chatClient(() => cut.chatUrl);
    const s = await signin(users[0]!.email, users[0]!.password, viaCut);
    expect(s.status).toBe(503);
    expect(s.body.detail).toMatch(/unavailable/);
    const r = await viaCut.call('/api/v1/auths/', users[0]!);
    expect(r.status).toBe(503);
  });
});
