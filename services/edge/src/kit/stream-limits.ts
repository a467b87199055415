import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { FastifyReply } from 'fastify';
import { BusError, type BusStreamReader, type StreamFrame } from '@gatehouse/common';

/**
 * Concurrent generations per caller (a chat user, an LLM or speech client), counted across every
 * edge in Redis so a caller behind a load balancer gets the same limit whichever edge it reaches.
 *
 * Each generation holds a lease (a member of a sorted set per caller, scored by its expiry on
 * Redis' own clock, so edges' clocks do not matter). The edge renews the leases it holds every
 * third of `leaseMs` in one script call, and removes a lease when its response closes — on every
 * end path: finished, client gone, upstream error, timeout, duration limit. An edge that dies
 * holding leases cannot remove them; they lapse after `leaseMs`, so a crash costs its callers at
 * most that long at their limit, never a slot for good.
 *
 * While Redis does not answer (or answers slower than `redisWaitMs`) the edge counts on its own:
 * each edge then allows the limit by itself. Refusing every generation because the counter is
 * away would turn a Redis outage into an outage of the LLM and speech faces, which do not need
 * Redis otherwise; counting per edge keeps the protection (one client cannot take all of an
 * edge) while it lasts.
 */
export interface StreamSlotsOptions {
  face: string;
  /** Most generations in progress per caller; 0 = no limit (nothing is counted). */
  limit: number;
  /** Shared counter; absent → every edge counts on its own. */
  redis?: Redis;
  /** GATEHOUSE_NS: key prefix (test stacks share one Redis). */
  ns?: string;
  /** How long a lease outlives its edge's last renewal. */
  leaseMs?: number;
  /** Longest wait for Redis before counting locally for this request. */
  redisWaitMs?: number;
}

/** A generation's hold on one of its caller's slots; `release` is idempotent. */
export interface Slot {
  release(): void;
}

const NO_SLOT: Slot = { release: () => undefined };

// Redis' clock in milliseconds; scripts are replicated by effect (Redis ≥ 5), so TIME is allowed.
const NOW = "local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)";

/** KEYS[1] = the caller's set; ARGV = limit, leaseMs, member. 1 = taken, 0 = the caller is at the limit. */
const ACQUIRE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

/**
 * KEYS = sets, ARGV[1] = leaseMs, ARGV[i + 1] = the member held in KEYS[i]. A plain ZADD (not XX):
 * after Redis lost its data the leases still held come back, so the count stays honest. A release
 * sent after a renewal is applied after it (one connection, in order), so a renewal never revives
 * a released lease.
 */
const RENEW = `${NOW}
local lease = tonumber(ARGV[1])
for i, k in ipairs(KEYS) do
  redis.call('ZADD', k, now + lease, ARGV[i + 1])
  redis.call('PEXPIRE', k, lease)
end
return #KEYS`;

export class StreamSlots {
  readonly limit: number;
  private readonly redis: Redis | undefined;
  private readonly prefix: string;
  private readonly leaseMs: number;
  private readonly redisWaitMs: number;
  /** Leases this edge holds in Redis: key → members. */
  private readonly leases = new Map<string, Set<string>>();
  /** Slots counted here while Redis was away: caller → count. */
  private readonly local = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(opts: StreamSlotsOptions) {
    this.limit = opts.limit;
    this.redis = opts.redis;
    this.prefix = `${opts.ns ? `${opts.ns}:` : ''}edge:streams:${opts.face}:`;
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.redisWaitMs = opts.redisWaitMs ?? 250;
    this.redis?.defineCommand('ghSlotAcquire', { numberOfKeys: 1, lua: ACQUIRE });
  }

  /** A slot for `who`, or undefined when `who` already holds `limit` of them. */
  async acquire(who: string): Promise<Slot | undefined> {
    if (this.limit <= 0) return NO_SLOT;
    const redis = this.redis;
    if (redis && redis.status === 'ready') {
      const key = this.prefix + who;
      const member = randomUUID();
      const call = (redis as unknown as { ghSlotAcquire(k: string, l: number, ms: number, m: string): Promise<number> }).ghSlotAcquire(key, this.limit, this.leaseMs, member);
      let timer: NodeJS.Timeout | undefined;
      const taken = await Promise.race([
        call.then((n) => n === 1),
        new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), this.redisWaitMs))),
      ]).catch(() => undefined);
      clearTimeout(timer);
      if (taken === undefined) {
        // Redis failed or is slow: count here; a lease it takes after all is given back at once.
        call.then(
          (n) => void (n === 1 && redis.zrem(key, member).catch(() => undefined)),
          () => undefined,
        );
        return this.acquireLocal(who);
      }
      if (!taken) return undefined;
      return this.hold(key, member);
    }
    return this.acquireLocal(who);
  }

  /** Generations in progress for `who` as this edge counts them (Redis' count when it answers). Tests and metrics. */
  async count(who: string): Promise<number> {
    const local = this.local.get(who) ?? 0;
    if (!this.redis || this.redis.status !== 'ready') return local;
    const key = this.prefix + who;
    const [sec, micro] = await this.redis.time();
    const now = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
    return local + (await this.redis.zcount(key, now, '+inf'));
  }

  /** Stop renewing (the leases then lapse); for shutdown. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private acquireLocal(who: string): Slot | undefined {
    const n = this.local.get(who) ?? 0;
    if (n >= this.limit) return undefined;
    this.local.set(who, n + 1);
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        const left = (this.local.get(who) ?? 1) - 1;
        if (left <= 0) this.local.delete(who);
        else this.local.set(who, left);
      },
    };
  }

  private hold(key: string, member: string): Slot {
    let set = this.leases.get(key);
    if (!set) this.leases.set(key, (set = new Set()));
    set.add(member);
    this.timer ??= setInterval(() => this.renew(), Math.max(100, Math.floor(this.leaseMs / 3))).unref();
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        const s = this.leases.get(key);
        s?.delete(member);
        if (s && s.size === 0) this.leases.delete(key);
        if (this.leases.size === 0) this.stop();
        // Best effort: a lease Redis does not hear about lapses after leaseMs.
        this.redis!.zrem(key, member).catch(() => undefined);
      },
    };
  }

  private renew(): void {
    const redis = this.redis!;
    if (redis.status !== 'ready' || this.leases.size === 0) return;
    const keys: string[] = [];
    const members: string[] = [];
    for (const [key, set] of this.leases) for (const m of set) keys.push(key), members.push(m);
    redis.eval(RENEW, keys.length, ...keys, this.leaseMs, ...members).catch(() => undefined);
  }
}

/**
 * Who a generation on the LLM or speech face is counted against: the credential presented (a
 * digest, never the key) at the client's address. Their gates hold one key that every client of a
 * deployment shares, so the key alone would make the limit one for the whole deployment; the
 * address (EDGE_TRUST_PROXY decides whose it is) tells those clients apart, and a pass-through
 * caller's own key is its own.
 */
export function callerOf(credential: string | undefined, ip: string): string {
  return `${credential ? createHash('sha256').update(credential).digest('base64url').slice(0, 22) : '-'}@${ip}`;
}

/**
 * Hold one of `who`'s slots for the life of this response: released when the response closes,
 * however it ends (sent, client gone, error answer). False when `who` is at the limit: the caller
 * answers 429 in its face's format (`retry-after: 1` is already on the reply).
 */
export async function holdSlot(slots: StreamSlots | undefined, who: string, reply: FastifyReply): Promise<boolean> {
  if (!slots || slots.limit <= 0) return true;
  // Listen before asking: a client that leaves while Redis answers still releases the slot.
  let slot: Slot | undefined;
  let closed = false;
  reply.raw.once('close', () => {
    closed = true;
    slot?.release();
  });
  slot = await slots.acquire(who);
  if (!slot) {
    // A slot frees when one of the caller's own generations ends, which nobody can foresee; 1 s
    // lets SDKs that honour retry-after try again soon (their retries are bounded).
    reply.header('retry-after', '1');
    return false;
  }
  if (closed) slot.release();
  return true;
}

/** The error a stream fails with when it reached its face's longest duration (504: the edge gave up). */
export class StreamDurationError extends BusError {
  constructor(ms: number) {
    const took = ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`;
    super(504, `the answer was still streaming after ${took}, the longest this service allows; it was stopped`, { code: 'stream_duration_exceeded' });
    this.name = 'StreamDurationError';
  }
}

/**
 * `stream` that fails with a StreamDurationError once `ms` have passed: the inner stream is closed
 * at that moment (which tells the worker to stop, and it the upstream), a reader waiting for the
 * next frame gets the error, and so does every later read. 0 or less = no limit.
 */
export function withDeadline<M, E>(stream: BusStreamReader<M, E>, ms: number): BusStreamReader<M, E> {
  if (!(ms > 0)) return stream;
  let expired: StreamDurationError | undefined;
  const timer = setTimeout(() => {
    if (stream.ended) return;
    expired = new StreamDurationError(ms);
    stream.close(); // a pending next() resolves undefined and is turned into the error below
  }, ms);
  const check = <T>(v: T): T => {
    if (expired) throw expired;
    return v;
  };
  return {
    get ended() {
      return stream.ended;
    },
    buffered: () => check(stream.buffered()),
    next: () => (expired ? Promise.reject(expired) : stream.next().then(check)),
    close: () => {
      clearTimeout(timer);
      stream.close();
    },
  };
}

/** A reader's frames as an async iterator (to the end frame); leaving early or failing closes the reader. */
export async function* framesOf<M, E>(stream: BusStreamReader<M, E>): AsyncGenerator<StreamFrame<M, E>> {
  try {
    for (let f = await stream.next(); f; f = stream.ended ? undefined : await stream.next()) yield f;
  } finally {
    stream.close();
  }
}
