import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_REDIS_URL, type BusStreamReader } from '@gatehouse/common';
import type { FastifyReply } from 'fastify';
import { callerOf, holdSlot, StreamDurationError, StreamSlots, withDeadline, type Slot } from './stream-limits.ts';

// Real Redis (REDIS_URL, default the local one); a namespace of its own per run.
const redis = new Redis(process.env.REDIS_URL ?? DEFAULT_REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
const ns = `t${randomBytes(5).toString('hex')}`;
const ready = new Promise<void>((resolve) => (redis.status === 'ready' ? resolve() : redis.once('ready', () => resolve())));
afterAll(async () => {
  const keys = await redis.keys(`${ns}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

async function waitUntil(cond: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  for (let i = 0; i < 200 && Date.now() < end; i++) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return cond();
}

describe('StreamSlots without Redis (one edge counts alone)', () => {
  it('allows the limit per caller, refuses one more, and a release frees exactly one slot', async () => {
    const slots = new StreamSlots({ face: 'llm', limit: 2 });
    const a1 = await slots.acquire('a');
    const a2 = await slots.acquire('a');
    expect(a1 && a2).toBeTruthy();
    expect(await slots.acquire('a')).toBeUndefined();
    expect(await slots.acquire('b')).toBeTruthy(); // another caller is not affected
    a1!.release();
    a1!.release(); // idempotent: a second release frees nothing more
    expect(await slots.count('a')).toBe(1);
    const a3 = await slots.acquire('a');
    expect(a3).toBeTruthy();
    expect(await slots.acquire('a')).toBeUndefined();
  });

  it('limit 0 counts nothing', async () => {
    const slots = new StreamSlots({ face: 'llm', limit: 0 });
    for (let i = 0; i < 5; i++) expect(await slots.acquire('a')).toBeTruthy();
    expect(await slots.count('a')).toBe(0);
  });

  it('counts locally while its Redis does not answer', async () => {
    const down = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    const slots = new StreamSlots({ face: 'llm', limit: 1, redis: down, ns });
    expect(await slots.acquire('a')).toBeTruthy();
    expect(await slots.acquire('a')).toBeUndefined();
    down.disconnect();
  });
});

describe('StreamSlots in Redis (shared by every edge)', () => {
  it('two edges share one count per caller; releases free it on either', async () => {
    await ready;
    const edge1 = new StreamSlots({ face: 'chat', limit: 3, redis, ns });
    const edge2 = new StreamSlots({ face: 'chat', limit: 3, redis, ns });
    const held: Slot[] = [];
    held.push((await edge1.acquire('u1'))!, (await edge2.acquire('u1'))!, (await edge1.acquire('u1'))!);
    expect(held.every(Boolean)).toBe(true);
    expect(await edge1.acquire('u1')).toBeUndefined();
    expect(await edge2.acquire('u1')).toBeUndefined();
    expect(await edge2.acquire('u2')).toBeTruthy();
    expect(await edge1.count('u1')).toBe(3);
    held[1]!.release();
    // The release is sent without waiting; the next command on the same connection comes after it.
    expect(await edge1.acquire('u1')).toBeTruthy();
    expect(await edge2.acquire('u1')).toBeUndefined();
    for (const s of held) s.release();
    edge1.stop();
    edge2.stop();
  });

  it('a lease held by an edge that died (no renewal, no release) lapses; a live edge keeps its own', async () => {
    await ready;
    const dead = new StreamSlots({ face: 'llm', limit: 1, redis, ns, leaseMs: 2400 });
    const live = new StreamSlots({ face: 'llm', limit: 1, redis, ns, leaseMs: 2400 });
    expect(await dead.acquire('gone')).toBeTruthy();
    dead.stop(); // the edge is gone: its lease is never renewed nor removed
    const kept = await live.acquire('kept');
    const keptAt = Date.now();
    expect(kept).toBeTruthy();
    expect(await live.acquire('gone')).toBeUndefined();
    expect(await waitUntil(async () => (await live.count('gone')) === 0, 10_000)).toBe(true);
    const again = await live.acquire('gone');
    expect(again).toBeTruthy();
    // The live edge renews 'kept' (every lease/3): held well past one lease, so still refused.
    await new Promise((r) => setTimeout(r, Math.max(0, keptAt + 5000 - Date.now())));
    expect(await live.count('kept')).toBe(1);
    expect(await live.acquire('kept')).toBeUndefined();
    kept!.release();
    again!.release();
    live.stop();
  });
});

describe('holdSlot', () => {
  const fakeReply = () => {
    const raw = new EventEmitter();
    const headers: Record<string, string> = {};
    return { raw, headers, reply: { raw, header: (k: string, v: string) => ((headers[k] = v), undefined) } as unknown as FastifyReply };
  };

  it('holds a slot until the response closes, and refuses with retry-after at the limit', async () => {
    const slots = new StreamSlots({ face: 'chat', limit: 1 });
    const first = fakeReply();
    expect(await holdSlot(slots, 'u', first.reply)).toBe(true);
    const second = fakeReply();
    expect(await holdSlot(slots, 'u', second.reply)).toBe(false);
    expect(second.headers['retry-after']).toBe('1');
    second.raw.emit('close'); // a refused request's close frees nothing
    expect(await slots.count('u')).toBe(1);
    first.raw.emit('close');
    expect(await slots.count('u')).toBe(0);
  });
});

describe('callerOf', () => {
  it('names a caller by a digest of its key and its address, never the key itself', () => {
    const key = 'sk-secret-key-123';
    const c = callerOf(key, '10.0.0.1');
    expect(c).not.toContain(key);
    expect(c.endsWith('@10.0.0.1')).toBe(true);
    expect(callerOf(key, '10.0.0.2')).not.toBe(c);
    expect(callerOf('other', '10.0.0.1')).not.toBe(c);
    expect(callerOf(undefined, '10.0.0.1')).toBe('-@10.0.0.1');
  });
});

describe('withDeadline', () => {
  /** A reader that never sends anything until closed (then its pending read resolves undefined, as openBusStream's). */
  function silentStream() {
    let closed = 0;
    let pending: ((v: undefined) => void) | undefined;
    const reader: BusStreamReader<unknown, unknown> = {
      ended: false,
      buffered: () => undefined,
      next: () => new Promise((resolve) => (pending = resolve)),
      close: () => {
        closed++;
        pending?.(undefined);
      },
    };
    return { reader, closed: () => closed };
  }

  it('fails a read waiting past the deadline with a 504 StreamDurationError and closes the stream (cancelling the work)', async () => {
    const s = silentStream();
    const r = withDeadline(s.reader, 50);
    const err = await r.next().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamDurationError);
    expect((err as StreamDurationError).status).toBe(504);
    expect(s.closed()).toBe(1);
    await expect(r.next()).rejects.toBeInstanceOf(StreamDurationError);
    expect(() => r.buffered()).toThrow(StreamDurationError);
  });

  it('a stream closed before its deadline is left alone', async () => {
    const s = silentStream();
    const r = withDeadline(s.reader, 50);
    r.close();
    await new Promise((res) => setTimeout(res, 80));
    expect(s.closed()).toBe(1);
  });

  it('0 is no limit: the same reader', () => {
    const s = silentStream();
    expect(withDeadline(s.reader, 0)).toBe(s.reader);
  });
});
