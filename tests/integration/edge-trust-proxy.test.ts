import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listSightings } from '@gatehouse/common';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient } from './chat-fixture.ts';

/**
 * Behind a reverse proxy every client arrives from the proxy's address. EDGE_TRUST_PROXY names the
 * proxy: the sign-in limit per address then counts the client X-Forwarded-For names, and the vector
 * face's key sightings (rollout preflight) record it; without it, X-Forwarded-For is ignored (a
 * client cannot dodge the limit by inventing addresses).
 */
const stack = new Stack();
let trusting: Edge;
let plain: Edge;
const limits = { EDGE_FACES: 'chat', SIGNIN_RATE_LIMIT_PER_ACCOUNT: '1000', SIGNIN_RATE_LIMIT_PER_ADDRESS: '2', SIGNIN_RATE_LIMIT_WINDOW_SECONDS: '60' };

const redis = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: 1 });

beforeAll(async () => {
  await stack.startChatWorker();
  trusting = await stack.startEdge({ ...limits, EDGE_FACES: 'chat,vector', EDGE_TRUST_PROXY: '127.0.0.1' });
  plain = await stack.startEdge({ ...limits, EDGE_FACES: 'chat,vector' });
});
afterAll(async () => {
  redis.disconnect();
  await stack.close();
});

const attempt = (edge: Edge, forwardedFor: string, i: number) =>
  chatClient(() => edge.chatUrl).call('/api/v1/auths/signin', null, 'POST', { email: `nobody${i}@example.com`, password: 'x' }, { headers: { 'x-forwarded-for': forwardedFor } });

describe('client address behind a reverse proxy', () => {
  it('with the proxy trusted, each forwarded client has its own per-address limit', async () => {
    expect((await attempt(trusting, '203.0.113.7', 1)).status).toBe(400);
    expect((await attempt(trusting, '203.0.113.7', 2)).status).toBe(400);
    expect((await attempt(trusting, '203.0.113.7', 3)).status).toBe(429);
    expect((await attempt(trusting, '198.51.100.9', 4)).status).toBe(400);
  });

  it('without it, X-Forwarded-For is ignored: invented addresses share the peer address limit', async () => {
    expect((await attempt(plain, '192.0.2.1', 5)).status).toBe(400);
    expect((await attempt(plain, '192.0.2.2', 6)).status).toBe(400);
    expect((await attempt(plain, '192.0.2.3', 7)).status).toBe(429);
  });
});

describe('vector key sightings behind a reverse proxy', () => {
  it('record the forwarded client when the proxy is trusted, the peer otherwise', async () => {
    const seen = (edge: Edge, forwardedFor: string, agent: string) =>
      fetch(`${edge.vectorUrl}/collections`, { headers: { 'x-forwarded-for': forwardedFor, 'user-agent': agent } });
    await seen(trusting, '203.0.113.50', 'trusting-client');
    await seen(plain, '203.0.113.51', 'plain-client');
    const byAgent = async (agent: string) => (await listSightings(redis, 'vector', 60_000, stack.ns)).find((s) => s.userAgent === agent);
    await expect.poll(() => byAgent('trusting-client').then((s) => s?.address)).toBe('203.0.113.50');
    await expect.poll(() => byAgent('plain-client').then((s) => s?.address)).toBe('127.0.0.1');
  });
});
