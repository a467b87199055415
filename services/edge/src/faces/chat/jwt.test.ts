import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { mintToken, parseExpiresIn, verifyToken } from './jwt.ts';

const secret = randomBytes(24).toString('base64');

describe('session tokens (HS256 JWT)', () => {
  it('round-trips the claims Open WebUI puts in a token', async () => {
    const { token, claims } = await mintToken(secret, 'user-1', 3600, 1_000_000);
    expect(claims).toMatchObject({ id: 'user-1', iat: 1_000_000, exp: 1_003_600 });
    expect(await verifyToken(secret, token, 1_000_001)).toEqual(claims);
    const [h] = token.split('.');
    expect(JSON.parse(Buffer.from(h!, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
  });
  it('refuses expired tokens, other secrets, tampered claims and alg none', async () => {
    const { token } = await mintToken(secret, 'user-1', 60, 1_000_000);
    expect(await verifyToken(secret, token, 1_000_060)).toBeUndefined();
    expect(await verifyToken(randomBytes(24).toString('base64'), token, 1_000_001)).toBeUndefined();
    const [h, , s] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ id: 'admin', jti: 'j', iat: 1 })).toString('base64url');
    expect(await verifyToken(secret, `${h}.${forged}.${s}`, 1_000_001)).toBeUndefined();
    const none = Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url');
    expect(await verifyToken(secret, `${none}.${forged}.`, 1_000_001)).toBeUndefined();
    // Correctly signed but with another algorithm name: still refused.
    const hs512 = Buffer.from(JSON.stringify({ alg: 'HS512' })).toString('base64url');
    const sig = createHmac('sha256', secret).update(`${hs512}.${forged}`).digest('base64url');
    expect(await verifyToken(secret, `${hs512}.${forged}.${sig}`, 1_000_001)).toBeUndefined();
    expect(await verifyToken(secret, 'not-a-token', 1)).toBeUndefined();
  });
  it('never-expiring tokens have no exp and stay valid', async () => {
    const { token, claims } = await mintToken(secret, 'u', null, 5);
    expect(claims.exp).toBeUndefined();
    expect((await verifyToken(secret, token, 10 ** 10))?.id).toBe('u');
  });
  it('parses JWT_EXPIRES_IN as Open WebUI does', () => {
    expect(parseExpiresIn('-1')).toBeNull();
    expect(parseExpiresIn('0')).toBeNull();
    expect(parseExpiresIn('4w')).toBe(4 * 7 * 86400);
    expect(parseExpiresIn('90m')).toBe(5400);
    expect(parseExpiresIn('1.5h')).toBe(5400);
    expect(parseExpiresIn('1500ms')).toBe(1);
    expect(parseExpiresIn('soon')).toBe(4 * 7 * 86400);
  });
});
