import { randomUUID } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';

/**
 * Session tokens as Open WebUI issues them: HS256 JWTs with claims `{id, exp?, jti, iat}`, signed
 * with WEBUI_SECRET_KEY (jose). Only HS256 is accepted: an `alg: none` token, another HMAC or an
 * RS/HS confusion fails before the signature is looked at.
 */
export interface SessionClaims {
  id: string;
  jti: string;
  iat: number;
  exp?: number;
}

const keys = new Map<string, Uint8Array>();
/** The secret's bytes, encoded once per secret (one per face). */
function keyOf(secret: string): Uint8Array {
  let k = keys.get(secret);
  if (!k) keys.set(secret, (k = new TextEncoder().encode(secret)));
  return k;
}

export async function mintToken(secret: string, userId: string, expiresInSeconds: number | null, nowS = Math.floor(Date.now() / 1000)): Promise<{ token: string; claims: SessionClaims }> {
  const claims: SessionClaims = { id: userId, ...(expiresInSeconds === null ? {} : { exp: nowS + expiresInSeconds }), jti: randomUUID(), iat: nowS };
  const token = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(keyOf(secret));
  return { token, claims };
}

/** The claims of a token signed with `secret` and not expired; undefined for anything else. */
export async function verifyToken(secret: string, token: string, nowS = Math.floor(Date.now() / 1000)): Promise<SessionClaims | undefined> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, keyOf(secret), { algorithms: ['HS256'], currentDate: new Date(nowS * 1000) }));
  } catch {
    return undefined;
  }
  if (typeof payload.id !== 'string' || typeof payload.jti !== 'string') return undefined;
  return payload as unknown as SessionClaims;
}

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/**
 * Open WebUI's JWT_EXPIRES_IN: `-1` or `0` → no expiry (null), else `<number><ms|s|m|h|d|w>`.
 * Anything else is refused by the admin form, so here it falls back to Open WebUI's default (4w)
 * rather than minting a token that never expires.
 */
export function parseExpiresIn(v: string): number | null {
  if (v === '-1' || v === '0') return null;
  const m = /^(-?\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/.exec(v);
  if (!m) return 4 * UNIT_SECONDS.w!;
  return Math.max(1, Math.floor(Number(m[1]) * UNIT_SECONDS[m[2]!]!));
}
