import { describe, expect, it } from 'vitest';
import { createLogger } from '../logger.ts';
import { canonicalJson, configDigest, type ConfigRecord } from './config-store.ts';
import { LiveConfig } from './live-config.ts';

const rec = (revision: number, value: unknown): ConfigRecord => ({
  group: 'g',
  revision,
  envelope: { v: 1, value, digest: configDigest(value), at: new Date().toISOString(), by: 'test' },
});

describe('LiveConfig.apply', () => {
  it('applies newer revisions only, tells listeners old and new, and keeps the running value when a revision does not parse', () => {
    const live = new LiveConfig<{ n: number }>({
      group: 'g',
      parse: (raw) => {
        const n = (raw as { n?: unknown }).n;
        if (typeof n !== 'number') throw new Error('n must be a number');
        return { n };
      },
      initial: { n: 0 },
      log: createLogger('test', 'silent'),
    });
    const seen: [number, number][] = [];
    live.onChange((now, before) => seen.push([before.revision, now.revision]));
    expect(live.applied.revision).toBe(0);
    expect(live.apply(rec(3, { n: 3 }))).toBe(true);
    expect(live.apply(rec(2, { n: 2 }))).toBe(false); // older: a replayed or late delivery
    expect(live.apply(rec(3, { n: 3 }))).toBe(false); // the same again
    expect(live.apply(rec(4, { n: 'four' }))).toBe(false); // rejected: revision 3 keeps running
    expect(live.value).toEqual({ n: 3 });
    expect(live.applied.revision).toBe(3);
    expect(live.apply(rec(5, { n: 5 }))).toBe(true);
    expect(seen).toEqual([[0, 3], [3, 5]]);
    expect(live.applied.digest).toBe(configDigest({ n: 5 }));
  });
});

describe('configDigest', () => {
  it('ignores key order, not values', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { y: 1, x: 0 }], c: null } })).toBe('{"a":{"c":null,"d":[2,{"x":0,"y":1}]},"b":1}');
    expect(configDigest({ a: 1, b: 2 })).toBe(configDigest({ b: 2, a: 1 }));
    expect(configDigest({ a: 1 })).not.toBe(configDigest({ a: 2 }));
    expect(configDigest([1, 2])).not.toBe(configDigest([2, 1]));
  });
});
