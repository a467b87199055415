import type { Redis } from 'ioredis';

/** How the revocation channel is watched (SessionStore.watch). */
export interface WatchOptions {
  /** How often this edge sends a heartbeat through the channel. */
  heartbeatMs?: number;
  /** No message (heartbeat or revocation) for this long: the remembered answers are dropped. */
  staleMs?: number;
  /** Most jtis remembered at once; the oldest goes first. */
  maxEntries?: number;
  /** Told when the channel becomes trusted (caught up) or stops being trusted. */
  onTrust?: (trusted: boolean) => void;
}

/**
 * What the chat face keeps in Redis: revoked session tokens (by jti, until they would have
 * expired anyway) and the sign-in rate limit. Keys are prefixed by the namespace so test stacks
 * sharing one Redis never see each other.
 *
 * Revocation checks are answered from memory once `watch()` runs: a revocation is written and
 * published in one transaction, every edge subscribes to the channel, and an edge remembers the
 * answer for a jti it looked up. The memory is trusted only while the channel is known to be
 * caught up: subscribed (every later revocation arrives; every earlier one is in Redis for the
 * lookups made from then on), and some message — each edge sends a heartbeat through Redis every
 * `heartbeatMs` — arrived less than `staleMs` ago. A dropped or silent channel
 * drops everything remembered, and until it is back every check asks Redis again (which answers
 * 503 while Redis is away: sessions fail closed). A lookup that a revocation overtook is not kept.
 */
export class SessionStore {
  private readonly p: string;
  private readonly channel: string;
  /** jti → revoked, for tokens looked up while the channel was trusted. */
  private readonly known = new Map<string, boolean>();
  /** Counts revocations heard and changes of trust, so a lookup overtaken by either is not remembered. */
  private epoch = 0;
  private trusted = false;
  private lastHeard = 0;
  private sub: Redis | undefined;
  private timer: NodeJS.Timeout | undefined;
  private watchOpts: Required<Omit<WatchOptions, 'onTrust'>> & Pick<WatchOptions, 'onTrust'> = { heartbeatMs: 1000, staleMs: 3500, maxEntries: 100_000 };

  constructor(
    private readonly redis: Redis,
    ns: string,
    private readonly limits: { perAccount: number; perAddress: number; windowMs: number },
  ) {
    this.p = `${ns ? `${ns}:` : ''}chat:`;
    this.channel = `${this.p}auth:revocations`;
  }

  async revoke(jti: string, exp: number | undefined, nowS = Math.floor(Date.now() / 1000)): Promise<void> {
    const key = `${this.p}auth:token:${jti}:revoked`;
    const tx = this.redis.multi();
    if (exp === undefined) tx.set(key, '1');
    else tx.set(key, '1', 'EX', Math.max(1, exp - nowS));
    // One transaction: no edge can miss a revocation that Redis stored.
    tx.publish(this.channel, `r:${jti}`);
    const res = await tx.exec();
    const failed = res?.find(([err]) => err);
    if (!res || failed) throw failed?.[0] ?? new Error('revocation not stored');
    this.learn(jti);
  }

  /** Whether a token was revoked: from memory while the channel is trusted, else one Redis lookup. */
  isRevoked(jti: string): Promise<boolean> {
    if (this.trusted) {
      const v = this.known.get(jti);
      if (v !== undefined) return v ? TRUE : FALSE;
    }
    const before = this.trusted ? this.epoch : -1;
    return this.redis.exists(`${this.p}auth:token:${jti}:revoked`).then((n) => {
      const revoked = n === 1;
      // Remembered only if the channel was trusted throughout and no revocation arrived
      // meanwhile (it may have been this jti's).
      if (this.trusted && before === this.epoch) this.remember(jti, revoked);
      return revoked;
    });
  }

  /** Whether revocation checks are answered from memory right now (the channel is caught up). */
  get cached(): boolean {
    return this.trusted;
  }

  /**
   * Subscribe to the revocation channel on a connection of its own and start trusting memory once
   * caught up. Stop with `unwatch()`.
   */
  watch(opts: WatchOptions = {}): void {
    if (this.sub) return;
    this.watchOpts = { ...this.watchOpts, ...opts };
    const sub = this.redis.duplicate({ lazyConnect: false, enableOfflineQueue: false, autoResubscribe: false, maxRetriesPerRequest: 1 });
    this.sub = sub;
    sub.on('error', () => undefined);
    const distrust = () => this.distrust();
    sub.on('close', distrust);
    sub.on('end', distrust);
    sub.on('reconnecting', distrust);
    sub.on('ready', () => {
      // Once subscribed, every later revocation arrives here, and every earlier one is in Redis
      // for the lookups that start from now on.
      sub.subscribe(this.channel).then(() => this.trust(), distrust);
    });
    sub.on('message', (_channel: string, message: string) => this.hear(message));
    const { heartbeatMs, staleMs } = this.watchOpts;
    this.timer = setInterval(() => {
      // A silent channel (a hung Redis, a lost connection not yet noticed) is not trusted.
      if (this.trusted && Date.now() - this.lastHeard > staleMs) this.distrust();
      if (sub.status === 'ready') this.redis.publish(this.channel, 'h').catch(() => undefined);
    }, heartbeatMs);
    this.timer.unref();
  }

  unwatch(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.sub?.disconnect();
    this.sub = undefined;
    this.distrust();
  }

  private hear(message: string): void {
    this.lastHeard = Date.now();
    if (message.startsWith('r:')) {
      this.epoch++;
      this.learn(message.slice(2));
    }
  }

  private trust(): void {
    if (this.trusted || this.sub?.status !== 'ready') return;
    this.known.clear();
    this.epoch++;
    this.lastHeard = Date.now();
    this.trusted = true;
    this.watchOpts.onTrust?.(true);
  }

  /** A revocation heard or made here: remembered as revoked (only while trusted). */
  private learn(jti: string): void {
    if (this.trusted) this.remember(jti, true);
    else this.known.delete(jti);
  }

  private remember(jti: string, revoked: boolean): void {
    if (!this.known.has(jti) && this.known.size >= this.watchOpts.maxEntries) {
      const oldest = this.known.keys().next().value;
      if (oldest !== undefined) this.known.delete(oldest);
    }
    this.known.set(jti, revoked);
  }

  private distrust(): void {
    this.known.clear();
    this.epoch++;
    if (!this.trusted) return;
    this.trusted = false;
    this.watchOpts.onTrust?.(false);
  }

  /**
   * One sign-in attempt against two rolling windows (sorted sets of attempt times): the account
   * (lower-cased email, Open WebUI's key) and the client address. Both are checked and recorded
   * in one script, so concurrent attempts cannot slip past the limit. A refused attempt is not
   * recorded, so `retryAfterMs` is exact: one attempt is allowed again at that moment.
   */
  async attemptSignin(email: string, address: string, nowMs = Date.now()): Promise<{ allowed: true } | { allowed: false; retryAfterMs: number }> {
    const member = `${nowMs}-${Math.random().toString(36).slice(2)}`;
    const [allowed, retry] = (await this.redis.eval(
      SIGNIN_SCRIPT,
      2,
      `${this.p}ratelimit:signin:account:${email.trim().toLowerCase()}`,
      `${this.p}ratelimit:signin:address:${address}`,
      String(nowMs),
      String(this.limits.windowMs),
      String(this.limits.perAccount),
      String(this.limits.perAddress),
      member,
    )) as [number, number];
    return allowed === 1 ? { allowed: true } : { allowed: false, retryAfterMs: Math.max(1, retry) };
  }
}

const TRUE = Promise.resolve(true);
const FALSE = Promise.resolve(false);

const SIGNIN_SCRIPT = `
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local limits = { tonumber(ARGV[3]), tonumber(ARGV[4]) }
local wait = 0
for i = 1, 2 do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
  if redis.call('ZCARD', KEYS[i]) >= limits[i] then
    -- the (count - limit + 1)-th oldest attempt has to leave the window first
    local over = redis.call('ZCARD', KEYS[i]) - limits[i]
    local t = redis.call('ZRANGE', KEYS[i], over, over, 'WITHSCORES')
    wait = math.max(wait, tonumber(t[2]) + window - now)
  end
end
if wait > 0 then return { 0, wait } end
for i = 1, 2 do
  redis.call('ZADD', KEYS[i], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[i], window)
end
return { 1, 0 }
`;
