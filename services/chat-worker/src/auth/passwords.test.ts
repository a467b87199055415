import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SCRYPT,
  hashPassword,
  needsRehash,
  scryptParamsFromEnv,
  verifyAgainstPlaceholder,
  verifyPassword,
  type ScryptParams,
} from './passwords.ts';

// Cheap parameters keep the suite fast; one test runs the real default cost.
const FAST: ScryptParams = { log2N: 10, r: 8, p: 1 };
const secret = () => randomBytes(12).toString('base64url');

describe('scrypt passwords', () => {
  it('stores scrypt$<log2N>$<r>$<p>$<salt>$<hash> and verifies only the right password', async () => {
    const pw = secret();
    const stored = await hashPassword(pw, FAST);
    const parts = stored.split('$');
    expect(parts.slice(0, 4)).toEqual(['scrypt', '10', '8', '1']);
    expect(Buffer.from(parts[4]!, 'base64')).toHaveLength(16);
    expect(Buffer.from(parts[5]!, 'base64')).toHaveLength(32);
    expect(stored).not.toContain(pw);
    expect(await verifyPassword(pw, stored)).toBe(true);
    expect(await verifyPassword(`${pw}x`, stored)).toBe(false);
    expect(await verifyPassword('', stored)).toBe(false);
  });

  it('salts every hash', async () => {
    const pw = secret();
    const [a, b] = await Promise.all([hashPassword(pw, FAST), hashPassword(pw, FAST)]);
    expect(a).not.toBe(b);
    expect(await verifyPassword(pw, a)).toBe(true);
    expect(await verifyPassword(pw, b)).toBe(true);
  });

  it('uses the default cost (N=2^15, r=8, p=1) and verifies with it', async () => {
    expect(DEFAULT_SCRYPT).toEqual({ log2N: 15, r: 8, p: 1 });
    const pw = secret();
    const stored = await hashPassword(pw, DEFAULT_SCRYPT);
    expect(stored.startsWith('scrypt$15$8$1$')).toBe(true);
    expect(await verifyPassword(pw, stored)).toBe(true);
  });

  it('treats canonically equivalent Unicode passwords as the same password', async () => {
    const composed = `caf\u00e9-${secret()}`;
    const decomposed = composed.replace('\u00e9', 'e\u0301');
    const stored = await hashPassword(composed, FAST);
    expect(await verifyPassword(decomposed, stored)).toBe(true);
  });

  it('never matches a malformed or out-of-range stored value', async () => {
    const pw = secret();
    const good = await hashPassword(pw, FAST);
    const [, , r, p, salt, key] = good.split('$');
    for (const bad of [
      '',
      'bcrypt$2b$12$abc',
      good.replace('scrypt$', 'argon2$'),
      `scrypt$40$${r}$${p}$${salt}$${key}`, // would ask for 2^40 blocks
      `scrypt$x$${r}$${p}$${salt}$${key}`,
      `scrypt$10$${r}$${p}$${salt}$`,
      `scrypt$10$${r}$${p}$$${key}`,
      `${good}$extra`,
    ]) {
      expect(await verifyPassword(pw, bad)).toBe(false);
    }
  });

  it('reads PASSWORD_SCRYPT_LOG2N and refuses nonsense', () => {
    expect(scryptParamsFromEnv({})).toEqual(DEFAULT_SCRYPT);
    expect(scryptParamsFromEnv({ PASSWORD_SCRYPT_LOG2N: '' })).toEqual(DEFAULT_SCRYPT);
    expect(scryptParamsFromEnv({ PASSWORD_SCRYPT_LOG2N: '12' })).toEqual({ log2N: 12, r: 8, p: 1 });
    for (const bad of ['9', '21', '14.5', 'abc', '-1']) {
      expect(() => scryptParamsFromEnv({ PASSWORD_SCRYPT_LOG2N: bad })).toThrow(/PASSWORD_SCRYPT_LOG2N/);
    }
  });

  it('says when a stored hash was made with other parameters', async () => {
    const stored = await hashPassword(secret(), FAST);
    expect(needsRehash(stored, FAST)).toBe(false);
    expect(needsRehash(stored, { ...FAST, log2N: 11 })).toBe(true);
    expect(needsRehash('garbage', FAST)).toBe(true);
  });

  it('answers false for unknown accounts after doing the same work as a real check', async () => {
    const params: ScryptParams = { log2N: 14, r: 8, p: 1 };
    const pw = secret();
    const stored = await hashPassword(pw, params);
    expect(await verifyAgainstPlaceholder(pw, params)).toBe(false); // warms the placeholder
    const time = async (f: () => Promise<unknown>) => {
      const t = process.hrtime.bigint();
      await f();
      return Number(process.hrtime.bigint() - t) / 1e6;
    };
    // Medians of a few runs: a real check and the placeholder path cost the same scrypt work, and
    // both clearly more than nothing (the placeholder path is not a shortcut).
    const real: number[] = [];
    const fake: number[] = [];
    for (let i = 0; i < 5; i++) {
      real.push(await time(() => verifyPassword(`${pw}x`, stored)));
      fake.push(await time(() => verifyAgainstPlaceholder(`${pw}x`, params)));
    }
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const [r, f] = [median(real), median(fake)];
    expect(f).toBeGreaterThan(r / 3);
    expect(f).toBeLessThan(r * 3);
    expect(await verifyAgainstPlaceholder(pw, params)).toBe(false);
  });
});
