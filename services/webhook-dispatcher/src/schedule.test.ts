import { describe, expect, it } from 'vitest';
import { DEFAULT_SCHEDULE, nextDelay, parseSchedule } from './schedule.ts';
import { retryAfter } from './send.ts';

describe('retry schedule', () => {
  it('reads durations and refuses what it cannot read', () => {
    expect(parseSchedule('100ms,2s,1m,1h')).toEqual([100, 2000, 60_000, 3_600_000]);
    expect(() => parseSchedule('soon')).toThrow(/cannot read/);
  });

  it('spans about a day by default, then gives up', () => {
    const s = parseSchedule(DEFAULT_SCHEDULE);
    const total = s.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(20 * 3_600_000);
    expect(total).toBeLessThan(30 * 3_600_000);
    expect(nextDelay(s, s.length + 1, null)).toBeNull();
  });

  it('jitters within ±20 % and honours a longer Retry-After', () => {
    expect(nextDelay([1000], 1, null, () => 0)).toBe(800);
    expect(nextDelay([1000], 1, null, () => 1)).toBe(1200);
    expect(nextDelay([1000], 1, 5000, () => 0.5)).toBe(5000);
    expect(nextDelay([1000], 1, 10, () => 0.5)).toBe(1000);
  });

  it('reads Retry-After as seconds or a date', () => {
    expect(retryAfter('3')).toBe(3000);
    expect(retryAfter(undefined)).toBeNull();
    const d = retryAfter(new Date(Date.now() + 60_000).toUTCString())!;
    expect(d).toBeGreaterThan(55_000);
    expect(d).toBeLessThanOrEqual(60_000);
  });
});
