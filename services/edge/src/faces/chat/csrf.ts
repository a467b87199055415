import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BusError } from '@gatehouse/common';
import { bearerToken, headerValue } from '../../kit/index.ts';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Cross-site request forgery: a state change authenticated by the session cookie alone must come
 * from this site's own pages. SameSite=Lax (the cookie's default here, as Open WebUI's) keeps the
 * cookie off cross-site form posts, but not off requests from another origin of the same site (a
 * sibling subdomain, another port on the same host), and a deployment may set SameSite=None.
 * So, as OWASP recommends, the standard headers decide: a browser sends `Origin` on every
 * state-changing request (and `Sec-Fetch-Site`); when either names another origin the request is
 * refused with 403. Bearer and API-key callers carry no ambient credential and are not checked;
 * neither are clients that send neither header (not a browser, so not forgeable by a page).
 * `allowed`: further origins that may (CORS_ALLOW_ORIGIN, `;`-separated as Open WebUI reads it).
 */
export function registerCsrfCheck(app: FastifyInstance, allowed: string[]): void {
  const extra = new Set(allowed.filter((o) => o && o !== '*').map((o) => o.replace(/\/$/, '').toLowerCase()));
  // A callback hook, not an async one: no promise per request for what is a few header reads.
  app.addHook('preHandler', (req, _reply, done) => done(refusal(req, extra)));
}

/** Why this request may not use its session cookie, or undefined when it may. */
function refusal(req: FastifyRequest, extra: Set<string>): BusError | undefined {
  if (SAFE.has(req.method)) return undefined;
  if (bearerToken(headerValue(req.headers, 'authorization'))) return undefined;
  const cookie = req.cookies?.token;
  if (!cookie || cookie === '""') return undefined;
  const origin = headerValue(req.headers, 'origin');
  const site = headerValue(req.headers, 'sec-fetch-site');
  if (origin && origin !== 'null') {
    const o = origin.replace(/\/$/, '').toLowerCase();
    let host: string | undefined;
    try {
      host = new URL(o).host;
    } catch {
      host = undefined;
    }
    if (host && host === (req.headers.host ?? '').toLowerCase()) return undefined;
    if (extra.has(o)) return undefined;
    return new BusError(403, `Cross-origin request refused: ${origin} may not use this session cookie.`);
  }
  if (origin === 'null' || site === 'cross-site' || site === 'same-site') {
    return new BusError(403, 'Cross-origin request refused: this session cookie only works from this site’s own pages.');
  }
  return undefined;
}
