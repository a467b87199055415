import type { Redis } from 'ioredis';

/**
 * What the chat face keeps in Redis: revoked session tokens (by jti, until they would have
 * expired anyway) and the sign-in rate limit. Keys are prefixed by the namespace so test stacks
 * sharing one Redis never see each other.
 */
export class SessionStore {
  private readonly p: string;
  constructor(
    private readonly redis: Redis,
    ns: string,
    private readonly limits: { perAccount: number; perAddress: number; windowMs: number },
  ) {
    this.p = `${ns ? `${ns}:` : ''}chat:`;
  }

  async revoke(jti: string, exp: number | undefined, nowS = Math.floor(Date.now() / 1000)): Promise<void> {
    const key = `${this.p}auth:token:${jti}:revoked`;
    if (exp === undefined) await this.redis.set(key, '1');
    else await this.redis.set(key, '1', 'EX', Math.max(1, exp - nowS));
  }

  async isRevoked(jti: string): Promise<boolean> {
    return (await this.redis.exists(`${this.p}auth:token:${jti}:revoked`)) === 1;
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
