import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_REDIS_URL } from '@gatehouse/common';
import { SessionStore } from './session-store.ts';

// Real Redis (REDIS_URL, default the local one); a namespace of its own per run.
const redis = new Redis(process.env.REDIS_URL ?? DEFAULT_REDIS_URL, { maxRetriesPerRequest: 1 });
const ns = `t${randomBytes(5).toString('hex')}`;
afterAll(async () => {
  const keys = await redis.keys(`${ns}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

describe('sign-in rate limit (rolling window in Redis)', () => {
  it('allows the limit per account, then refuses with the exact wait, then allows again', async () => {
    const store = new SessionStore(redis, ns, { perAccount: 3, perAddress: 100, windowMs: 10_000 });
    const t0 = 1_000_000;
    for (let i = 0; i < 3; i++) expect((await store.attemptSignin('Alice@Example.com', '10.0.0.1', t0 + i * 1000)).allowed).toBe(true);
    // Case does not matter: it is the same account.
    const refused = await store.attemptSignin('alice@example.com', '10.0.0.2', t0 + 3000);
    expect(refused).toEqual({ allowed: false, retryAfterMs: 7000 });
    // Refused attempts are not counted: when the first attempt leaves the window, one more fits.
    expect((await store.attemptSignin('alice@example.com', '10.0.0.2', t0 + 10_001)).allowed).toBe(true);
    expect((await store.attemptSignin('alice@example.com', '10.0.0.2', t0 + 10_002)).allowed).toBe(false);
    // Another account is not affected.
    expect((await store.attemptSignin('bob@example.com', '10.0.0.1', t0 + 3000)).allowed).toBe(true);
  });
  it('bounds one address across many accounts', async () => {
    const store = new SessionStore(redis, ns, { perAccount: 100, perAddress: 2, windowMs: 60_000 });
    const t0 = 2_000_000;
    expect((await store.attemptSignin('a1@x.io', '10.9.9.9', t0)).allowed).toBe(true);
    expect((await store.attemptSignin('a2@x.io', '10.9.9.9', t0 + 1)).allowed).toBe(true);
    expect(await store.attemptSignin('a3@x.io', '10.9.9.9', t0 + 2)).toEqual({ allowed: false, retryAfterMs: 59_998 });
    expect((await store.attemptSignin('a3@x.io', '10.9.9.8', t0 + 2)).allowed).toBe(true);
  });
  it('admits exactly the limit under concurrent attempts', async () => {
    const store = new SessionStore(redis, ns, { perAccount: 5, perAddress: 1000, windowMs: 60_000 });
    const results = await Promise.all(Array.from({ length: 40 }, () => store.attemptSignin('burst@x.io', '10.1.1.1')));
    expect(results.filter((r) => r.allowed)).toHaveLength(5);
  });
});

describe('token revocation', () => {
  it('remembers a revoked jti until the token would have expired', async () => {
    const store = new SessionStore(redis, ns, { perAccount: 1, perAddress: 1, windowMs: 1 });
    const jti = randomBytes(8).toString('hex');
    expect(await store.isRevoked(jti)).toBe(false);
    const now = Math.floor(Date.now() / 1000);
    await store.revoke(jti, now + 120, now);
    expect(await store.isRevoked(jti)).toBe(true);
    const ttl = await redis.ttl(`${ns}:chat:auth:token:${jti}:revoked`);
    expect(ttl).toBeGreaterThan(100);
    expect(ttl).toBeLessThanOrEqual(120);
  });
});
