import { describe, expect, it } from 'vitest';
import { generateKey, keyDigest, keyFingerprint, keyMatches } from './gate-key.ts';

describe('gate keys', () => {
  it('generates 43-character URL-safe keys from 32 random bytes, each different', () => {
    const keys = new Set(Array.from({ length: 50 }, generateKey));
    expect(keys.size).toBe(50);
    for (const k of keys) {
      expect(k).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(k, 'base64url')).toHaveLength(32);
    }
  });

  it('matches only the exact key against any accepted digest', () => {
    const a = generateKey();
    const b = generateKey();
    expect(keyMatches(a, [keyDigest(a)])).toBe(true);
    expect(keyMatches(b, [keyDigest(a), keyDigest(b)])).toBe(true);
    expect(keyMatches(b, [keyDigest(a)])).toBe(false);
    expect(keyMatches(a.slice(0, -1), [keyDigest(a)])).toBe(false);
    expect(keyMatches(`${a} `, [keyDigest(a)])).toBe(false);
    expect(keyMatches('', [keyDigest('')])).toBe(false);
    expect(keyMatches(undefined, [keyDigest(a)])).toBe(false);
  });

  it('fingerprints without revealing the key', () => {
    const k = generateKey();
    const fp = keyFingerprint(keyDigest(k));
    expect(fp).toMatch(/^sha256:[0-9a-f]{12}$/);
    expect(fp).not.toContain(k.slice(0, 6));
  });
});
