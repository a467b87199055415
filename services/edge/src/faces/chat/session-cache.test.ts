import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createLogger } from '@gatehouse/common';
import { buildChatFace } from './chat-face.ts';
import { mintToken, verifyToken } from './jwt.ts';
import { SessionStore } from './session-store.ts';

/**
 * Revocation checks answered from memory (session-store.ts `watch`), against a redis-server of this
 * test's own on a loopback port, which the test kills and starts again: the shared Redis is never
 * touched. Two stores stand for two edges. The face on top (no bus attached) tells a request that
 * passed the session check (the "not connected to its bus" 503) from one the check refused.
 */
let port = 0;
let server: ChildProcess | undefined;
const clients: Redis[] = [];
const stores: SessionStore[] = [];
const secret = randomBytes(32).toString('base64url');
const NO_BUS = 'The chat service is not connected to its bus yet; try again shortly.';
const STORE_DOWN = 'Session store unavailable; try again shortly.';
const limits = { perAccount: 100, perAddress: 100, windowMs: 60_000 };

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
    s.on('error', reject);
  });
}

async function startRedis(): Promise<void> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  server = child;
  await waitFor(async () => {
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      return (await probe.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      probe.disconnect();
    }
  });
}

async function stopRedis(): Promise<void> {
  const child = server;
  server = undefined;
  if (!child || child.exitCode !== null) return;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await gone;
}

async function waitFor(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One edge's Redis connection as the edge opens it (main.ts), and its store, watching. */
function edgeStore(ns: string): { redis: Redis; store: SessionStore } {
  const redis = new Redis({ port, host: '127.0.0.1', enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  redis.on('error', () => undefined);
  clients.push(redis);
  const store = new SessionStore(redis, ns, limits);
  stores.push(store);
  return { redis, store };
}

beforeAll(async () => {
  port = await freePort();
  await startRedis();
});
afterAll(async () => {
  for (const s of stores) s.unwatch();
  for (const c of clients) c.disconnect();
  await stopRedis();
});

describe('revocations pushed to every edge', () => {
  it('answers from memory, and a revocation made on another edge reaches it', async () => {
    const ns = `t${randomBytes(4).toString('hex')}`;
    const a = edgeStore(ns);
    const b = edgeStore(ns);
    a.store.watch();
    b.store.watch();
    await waitFor(() => a.store.cached && b.store.cached);
    const jti = randomBytes(8).toString('hex');
    const lookups = vi.spyOn(b.redis, 'exists');
    expect(await b.store.isRevoked(jti)).toBe(false);
    expect(await b.store.isRevoked(jti)).toBe(false);
    // The second check came from memory.
    expect(lookups).toHaveBeenCalledTimes(1);
    await a.store.revoke(jti, Math.floor(Date.now() / 1000) + 60);
    // Edge A knows at once; edge B as soon as the message arrives, still without asking Redis.
    expect(await a.store.isRevoked(jti)).toBe(true);
    await waitFor(async () => await b.store.isRevoked(jti));
    expect(lookups).toHaveBeenCalledTimes(1);
    lookups.mockRestore();
  });

  it('forgets what it remembered when the channel drops, and asks Redis until it is back', async () => {
    const ns = `t${randomBytes(4).toString('hex')}`;
    const a = edgeStore(ns);
    const b = edgeStore(ns);
    b.store.watch();
    await waitFor(() => b.store.cached);
    const jti = randomBytes(8).toString('hex');
    expect(await b.store.isRevoked(jti)).toBe(false);
    // Drop the subscriber connections (edge B's channel): B stops trusting its memory.
    const admin = new Redis({ port, host: '127.0.0.1', retryStrategy: () => 50 });
    admin.on('error', () => undefined);
    clients.push(admin);
    await admin.client('KILL', 'TYPE', 'pubsub');
    await waitFor(() => !b.store.cached, 5000).catch(() => undefined);
    // Revoked while B may not be subscribed: B must not answer "not revoked" from memory.
    await a.store.revoke(jti, undefined);
    expect(await b.store.isRevoked(jti)).toBe(true);
    await waitFor(() => b.store.cached);
    expect(await b.store.isRevoked(jti)).toBe(true);
  });

  it('stops trusting a channel that went silent', async () => {
    const ns = `t${randomBytes(4).toString('hex')}`;
    const { redis, store } = edgeStore(ns);
    store.watch({ heartbeatMs: 50, staleMs: 300 });
    await waitFor(() => store.cached);
    // Heartbeats stop reaching the channel (published elsewhere): the memory is dropped.
    const publish = vi.spyOn(redis, 'publish').mockImplementation(async () => 0);
    await waitFor(() => !store.cached, 5000);
    publish.mockRestore();
  });
});

describe('the face fails closed while Redis is away', () => {
  let app: FastifyInstance;
  let redis: Redis;
  let store: SessionStore;
  beforeAll(async () => {
    ({ redis, store } = edgeStore(`t${randomBytes(4).toString('hex')}`));
    app = await buildChatFace(
      { log: createLogger('session-cache-test', 'silent'), logRequests: false },
      { bus: () => undefined, sessions: store, redisReady: () => redis.status === 'ready', secret, cookie: { sameSite: 'lax', secure: false }, streamIdleMs: 1000 },
    );
  });
  afterAll(() => app.close());

  const get = (token: string) => app.inject({ method: 'GET', url: '/api/v1/auths/', headers: { authorization: `Bearer ${token}` } });
  const detail = (r: { body: string }) => (JSON.parse(r.body) as { detail: unknown }).detail;

  it('503 while Redis is down even for a token it remembered; revoked stays revoked after', async () => {
    await waitFor(() => store.cached);
    const { token } = await mintToken(secret, 'u-1', 3600);
    const other = await mintToken(secret, 'u-2', 3600);
    // Passes the check (and is remembered): the route then finds no bus.
    expect(detail(await get(token))).toBe(NO_BUS);
    expect(detail(await get(other.token))).toBe(NO_BUS);

    await stopRedis();
    await waitFor(() => redis.status !== 'ready' && !store.cached);
    const down = await get(token);
    expect([down.statusCode, detail(down)]).toEqual([503, STORE_DOWN]);

    await startRedis();
    await waitFor(() => redis.status === 'ready' && store.cached);
    expect(detail(await get(token))).toBe(NO_BUS);
    // Sign-out's revocation (the store's revoke) holds on this edge and in Redis.
    await store.revoke((await verifyToken(secret, other.token))!.jti, undefined);
    const refused = await get(other.token);
    expect([refused.statusCode, detail(refused)]).toEqual([401, 'Your session has expired or the token is invalid. Please sign in again.']);
  });
});
