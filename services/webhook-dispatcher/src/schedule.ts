/**
 * The retry schedule: delays (ms) before attempt 2, 3, …; after the last one fails the delivery
 * is dead-lettered. The default doubles from 5 s and tops out at 4 h, about a day in all (Standard
 * Webhooks' and Svix's shape); `WEBHOOK_RETRY_SCHEDULE` replaces it (tests compress it to ms).
 */
export const DEFAULT_SCHEDULE = '5s,10s,30s,1m,2m,5m,10m,20m,40m,1h,2h,4h,4h,4h,4h,4h';

export function parseSchedule(s: string): number[] {
  const out = s.split(',').map((part) => {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(part);
    if (!m) throw new Error(`WEBHOOK_RETRY_SCHEDULE: cannot read "${part}" (use e.g. 5s,1m,1h or 100ms)`);
    const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h'];
    return Math.round(Number(m[1]) * unit);
  });
  return out;
}

/**
 * Delay before the next attempt after `attempts` failed ones, with ±20 % jitter so receivers that
 * failed together are not retried together; null when the schedule is used up. A receiver's
 * `Retry-After` is honoured when it asks for longer.
 */
export function nextDelay(schedule: readonly number[], attempts: number, retryAfterMs: number | null, random = Math.random): number | null {
  const base = schedule[attempts - 1];
  if (base === undefined) return null;
  const jittered = Math.round(base * (0.8 + 0.4 * random()));
  return retryAfterMs !== null ? Math.max(jittered, retryAfterMs) : jittered;
}
