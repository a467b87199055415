import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

/**
 * Session tokens as Open WebUI issues them: HS256 JWTs with claims `{id, exp?, jti, iat}`, signed
 * with WEBUI_SECRET_KEY. Twenty lines of node:crypto instead of a dependency; only HS256 is
 * accepted (an `alg: none` or RS/HS confusion token fails the header check before the signature).
 */
export interface SessionClaims {
  id: string;
  jti: string;
  iat: number;
  exp?: number;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');
const HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));

function sign(input: string, secret: string): Buffer {
  return createHmac('sha256', secret).update(input).digest();
}

export function mintToken(secret: string, userId: string, expiresInSeconds: number | null, nowS = Math.floor(Date.now() / 1000)): { token: string; claims: SessionClaims } {
  const claims: SessionClaims = { id: userId, ...(expiresInSeconds === null ? {} : { exp: nowS + expiresInSeconds }), jti: randomUUID(), iat: nowS };
  const body = `${HEADER}.${b64url(JSON.stringify(claims))}`;
  return { token: `${body}.${b64url(sign(body, secret))}`, claims };
}

/** The claims of a token signed with `secret` and not expired; undefined for anything else. */
export function verifyToken(secret: string, token: string, nowS = Math.floor(Date.now() / 1000)): SessionClaims | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [h, p, s] = parts as [string, string, string];
  let header: unknown;
  let claims: unknown;
  try {
    header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
    claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!header || typeof header !== 'object' || (header as { alg?: unknown }).alg !== 'HS256') return undefined;
  const given = Buffer.from(s, 'base64url');
  const expected = sign(`${h}.${p}`, secret);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  const c = claims as Partial<SessionClaims>;
  if (typeof c.id !== 'string' || typeof c.jti !== 'string') return undefined;
  if (c.exp !== undefined && (typeof c.exp !== 'number' || c.exp <= nowS)) return undefined;
  return c as SessionClaims;
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
