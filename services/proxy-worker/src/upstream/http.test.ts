import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from './config.ts';
import { backoffMs, parseRetryAfter, retryDelayMs, sleep } from './http.ts';
import { failure } from './test-helpers.ts';

const policy: RetryPolicy = { max: 5, baseDelayMs: 500, maxDelayMs: 10_000 };

describe('retry delays', () => {
  it('parses retry-after as seconds, decimals and HTTP dates; retry-after-ms wins', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter(undefined, '3', now)).toBe(3000);
    expect(parseRetryAfter(undefined, ' 0 ', now)).toBe(0);
    expect(parseRetryAfter(undefined, '1.5', now)).toBe(1500);
    expect(parseRetryAfter(undefined, 'Thu, 01 Jan 2026 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter(undefined, 'Wed, 31 Dec 2025 23:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('250', '3', now)).toBe(250);
    expect(parseRetryAfter('soon', '3', now)).toBe(3000);
    expect(parseRetryAfter(undefined, 'soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, '-1', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, undefined, now)).toBeUndefined();
  });

  it('backoff doubles from baseDelayMs with jitter between half and all, capped at maxDelayMs', () => {
    expect(backoffMs(0, policy, () => 0)).toBe(250);
    expect(backoffMs(0, policy, () => 1)).toBe(500);
    expect(backoffMs(3, policy, () => 0)).toBe(2000);
    expect(backoffMs(3, policy, () => 1)).toBe(4000);
    expect(backoffMs(10, policy, () => 1)).toBe(10_000);
    expect(backoffMs(10, policy, () => 0)).toBe(5000);
    for (let i = 0; i < 100; i++) {
      const d = backoffMs(1, policy);
      expect(d).toBeGreaterThanOrEqual(500);
      expect(d).toBeLessThanOrEqual(1000);
    }
  });

  it('retry-after within maxDelayMs is waited; beyond it means give up (undefined); absent means backoff', () => {
    expect(retryDelayMs({ 'retry-after': '2' }, 0, policy)).toBe(2000);
    expect(retryDelayMs({ 'retry-after': '11' }, 0, policy)).toBeUndefined();
    expect(retryDelayMs({ 'retry-after-ms': '10001' }, 0, policy)).toBeUndefined();
    const d = retryDelayMs({}, 1, policy) ?? -1;
    expect(d).toBeGreaterThanOrEqual(500);
    expect(d).toBeLessThanOrEqual(1000);
  });

  it('sleep ends early with an AbortError', async () => {
    const ac = new AbortController();
    // An hour: only the abort can end it.
    const pending = failure(() => sleep(3_600_000, ac.signal));
    ac.abort();
    const { error } = await pending;
    expect(error.name).toBe('AbortError');
    expect((await failure(() => sleep(3_600_000, AbortSignal.abort()))).error.name).toBe('AbortError');
    await sleep(0);
    await sleep(5);
  });
});
