import type { FastifyReply, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import { OWUI_ERRORS, type ChatIdentity } from '@gatehouse/contracts';
import { BusError } from '@gatehouse/common';
import { bearerToken, headerValue } from '../../kit/index.ts';
import { verifyToken, type SessionClaims } from './jwt.ts';
import type { SessionStore } from './session-store.ts';
import { ApiKeyGate } from './api-keys.ts';

declare module 'fastify' {
  interface FastifyRequest {
    session: { claims: SessionClaims; token: string } | null;
    /** Set when the request authenticated with an API key (its SHA-256 digest is what the edge keeps). */
    apiKey: { key: string; userId: string } | null;
  }
}

/** Cookies Open WebUI clears on sign-out and on a token it cannot accept. */
const SESSION_COOKIES = ['token', 'oui-session', 'oauth_id_token', 'oauth_session_id'];
export const STORE_DOWN = 'Session store unavailable; try again shortly.';
const VERIFIED_MAX = 10_000;

export interface CookieSettings {
  sameSite: 'lax' | 'strict' | 'none';
  secure: boolean;
}

export interface SessionAuthOptions {
  secret: string;
  sessions: Pick<SessionStore, 'isRevoked'>;
  redisReady: () => boolean;
  keys: ApiKeyGate;
}

/**
 * Who is calling: a session token (`Authorization: Bearer`, else the `token` cookie) checked for
 * signature, expiry and revocation, or an API key (`sk-…`) checked from the key cache.
 */
export function sessionAuth(opts: SessionAuthOptions) {
  // Tokens whose signature was checked, so a client's every request does not cost an HMAC again;
  // expiry is still checked on each use. The least recently used goes first past VERIFIED_MAX.
  const verified = new LRUCache<string, SessionClaims>({ max: VERIFIED_MAX });
  async function verifySession(token: string): Promise<SessionClaims | undefined> {
    const nowS = Math.floor(Date.now() / 1000);
    const hit = verified.get(token);
    if (hit) {
      if (hit.exp === undefined || hit.exp > nowS) return hit;
      verified.delete(token);
      return undefined;
    }
    const claims = await verifyToken(opts.secret, token, nowS);
    if (claims) verified.set(token, claims);
    return claims;
  }

  async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<ChatIdentity> {
    const token = credential(req);
    if (!token) throw new BusError(401, OWUI_ERRORS.notAuthenticated);
    if (token.startsWith('sk-')) {
      // Checked here from a cache (api-keys.ts): no database round trip once the key was seen.
      const userId = await opts.keys.authenticate(token, req.url.split('?')[0]!);
      req.apiKey = { key: token, userId };
      return { userId, jti: `apikey:${ApiKeyGate.digest(token).slice(0, 16)}`, expiresAt: null };
    }
    const claims = await verifySession(token);
    let revoked = false;
    if (claims) {
      if (!opts.redisReady()) throw new BusError(503, STORE_DOWN);
      revoked = await opts.sessions.isRevoked(claims.jti).catch(() => {
        throw new BusError(503, STORE_DOWN);
      });
    }
    if (!claims || revoked) {
      clearSessionCookies(reply);
      throw new BusError(401, OWUI_ERRORS.invalidToken);
    }
    req.session = { claims, token };
    return { userId: claims.id, jti: claims.jti, expiresAt: claims.exp ?? null };
  }

  /** Whether the credential a long-lived answer (an event stream) was opened with still holds. */
  async function stillValid(req: FastifyRequest): Promise<boolean> {
    if (req.apiKey) return (await opts.keys.authenticate(req.apiKey.key, req.url.split('?')[0]!).catch(() => null)) === req.apiKey.userId;
    return !!req.session && opts.redisReady() && !(await opts.sessions.isRevoked(req.session.claims.jti));
  }

  return { authenticate, stillValid };
}

/** The `token` cookie as Open WebUI sets it (WEBUI_AUTH_COOKIE_SAME_SITE / _SECURE), expiring with the token. */
export function setSessionCookie(reply: FastifyReply, cookie: CookieSettings, token: string, exp: number | undefined): void {
  reply.setCookie('token', token, {
    path: '/',
    httpOnly: true,
    sameSite: cookie.sameSite,
    secure: cookie.secure,
    ...(exp === undefined ? {} : { expires: new Date(exp * 1000), maxAge: Math.max(0, exp - Math.floor(Date.now() / 1000)) }),
  });
}

/** Starlette's delete_cookie: an empty quoted value, expired at the epoch, for the whole site. */
export function clearSessionCookies(reply: FastifyReply): void {
  for (const name of SESSION_COOKIES) reply.setCookie(name, '""', { path: '/', expires: new Date(0), maxAge: 0, sameSite: undefined, encode: String });
}

/** Open WebUI's order: `Authorization: Bearer`, then the `token` cookie, then `x-api-key`. */
function credential(req: FastifyRequest): string | undefined {
  return bearerToken(headerValue(req.headers, 'authorization')) ?? unquote(req.cookies.token) ?? headerValue(req.headers, 'x-api-key');
}

/** A cookie value as Starlette reads it: surrounding quotes dropped; empty is absent. */
function unquote(v: string | undefined): string | undefined {
  return (v && v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v) || undefined;
}
