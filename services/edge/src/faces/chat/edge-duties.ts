import type { FastifyReply, FastifyRequest } from 'fastify';
import { API_KEY_ERRORS, OWUI_ERRORS, trustedSigninContract, type ChatEdgeDuties, type ChatIdentity, type ChatOpReply, type ChatOpRequest } from '@gatehouse/contracts';
import { busRequest, BusError, type Bus } from '@gatehouse/common';
import { mintToken, parseExpiresIn } from './jwt.ts';
import type { SessionStore } from './session-store.ts';
import { clearSessionCookies, setSessionCookie, type CookieSettings } from './session-auth.ts';
import { trustedIdentity, type TrustedHeaderConfig } from './api-keys-trusted-header.ts';

const SIGNIN_DOWN = 'Sign-in is unavailable while the session store is down; try again shortly.';

export interface EdgeDutiesOptions {
  bus: () => Bus;
  envelope(req: FastifyRequest, identity: ChatIdentity | null, body: unknown): ChatOpRequest;
  secret: string;
  cookie: CookieSettings;
  sessions: Pick<SessionStore, 'revoke' | 'attemptSignin'>;
  redisReady: () => boolean;
  trustedHeader?: TrustedHeaderConfig;
  /** Whether the TCP peer is a proxy allowed to name the user in a header (api-keys-trusted-header.ts). */
  trustedPeer: (ip: string) => boolean;
  /** Where a provider's session sends the browser after sign-out (oauth-routes.ts). */
  signoutRedirect(req: FastifyRequest, userId: string | undefined): Promise<string | undefined>;
}

export type Duties = ChatEdgeDuties;

/** Whether the edge may change the worker's answer (a plain 200 then cannot go out as the worker's bytes). */
export const editsAnswer = (d: Duties): boolean => d.session !== undefined || d.trustedHeader !== undefined;

/**
 * The catalog's `edge` duties of a chat operation (contracts/src/chat/catalog-kit.ts), done around
 * the worker's request: `before` may answer the request itself (trusted-header sign-in) or refuse
 * it (the sign-in limit), and revokes a session being ended; `after` turns the worker's answer into
 * the client's (a minted session, the caller's token, the trusted-header settings).
 */
export function edgeDuties(opts: EdgeDutiesOptions) {
  async function before(d: Duties, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    // Trusted-header mode replaces the password form (Open WebUI's signin), and is not rate limited.
    if (d.trustedHeader === 'signin' && opts.trustedHeader?.email) return trustedSignin(req, reply);
    if (d.signinLimit) await limitSignin(d.signinLimit, req, reply);
    if (d.session === 'end' && req.session) {
      await opts.sessions.revoke(req.session.claims.jti, req.session.claims.exp).catch(() => {
        throw new BusError(503, 'Session store unavailable; the session was not revoked. Try again.');
      });
    }
    return undefined;
  }

  /** The body the client gets for the worker's answer `out`. */
  async function after(d: Duties, out: ChatOpReply, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const body = out.body as object;
    if (out.issueSession) return await issueSession(out.issueSession, body, reply, d.session !== 'issueForAnother');
    if (d.session === 'show') return showSession(body, req, reply);
    if (d.session === 'end') return endSession(body, req, reply);
    if (d.trustedHeader && opts.trustedHeader?.email) return withTrustedHeader(d.trustedHeader, body, opts.trustedHeader);
    return out.body;
  }

  /**
   * The worker's `issueSession` as a token: answered with the body, and set as the caller's cookie
   * unless the caller made the session for another user (an admin's /auths/add).
   */
  async function issueSession(s: NonNullable<ChatOpReply['issueSession']>, body: object, reply: FastifyReply, setCookie: boolean): Promise<object> {
    const { token, claims } = await mintToken(opts.secret, s.userId, parseExpiresIn(s.expiresIn));
    if (setCookie) setSessionCookie(reply, opts.cookie, token, claims.exp);
    return { token, token_type: 'Bearer', expires_at: claims.exp ?? null, ...body };
  }

  /** The caller's own credential as `token`: an API key as given, a session with its cookie refreshed. */
  function showSession(body: object, req: FastifyRequest, reply: FastifyReply): object {
    if (req.apiKey) return { ...body, token: req.apiKey.key };
    if (!req.session) return body;
    setSessionCookie(reply, opts.cookie, req.session.token, req.session.claims.exp);
    return { ...body, token: req.session.token };
  }

  async function endSession(body: object, req: FastifyRequest, reply: FastifyReply): Promise<object> {
    clearSessionCookies(reply);
    // Signed in through a provider: Open WebUI sends the browser on to its end-session endpoint.
    const redirectUrl = await opts.signoutRedirect(req, req.session?.claims.id);
    return redirectUrl ? { ...body, redirect_url: redirectUrl } : body;
  }

  async function trustedSignin(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const who = trustedIdentity(req, opts.trustedHeader!, opts.trustedPeer);
    if (!who) throw new BusError(400, API_KEY_ERRORS.invalidTrustedHeader);
    const out = await busRequest(opts.bus(), trustedSigninContract, { ...opts.envelope(req, null, null), body: who }, { trace: req.trace });
    if (!out.issueSession) throw new BusError(500, OWUI_ERRORS.default);
    return sendJson(reply, 200, await issueSession(out.issueSession, out.body as object, reply, true));
  }

  async function limitSignin(field: NonNullable<Duties['signinLimit']>, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    // The account key: a password sign-in's email, an LDAP sign-in's user name (its LdapForm has no email).
    const email = String((req.body as Record<string, unknown>)[field] ?? '');
    if (!opts.redisReady()) throw new BusError(503, SIGNIN_DOWN);
    const verdict = await opts.sessions.attemptSignin(email, req.ip).catch(() => {
      throw new BusError(503, SIGNIN_DOWN);
    });
    if (!verdict.allowed) {
      reply.header('retry-after', String(Math.ceil(verdict.retryAfterMs / 1000)));
      throw new BusError(429, OWUI_ERRORS.rateLimited);
    }
  }

  return { before, after };
}

/**
 * The trusted-header names (this edge's environment, read-only) with the answers that describe
 * sign-in: the AdminConfig for the admin page, the app config's feature flag for the sign-in page.
 * Without a trusted header the answers are exactly Open WebUI's.
 */
function withTrustedHeader(kind: NonNullable<Duties['trustedHeader']>, body: object, t: TrustedHeaderConfig): object {
  if (kind === 'adminConfig') {
    return { ...body, WEBUI_AUTH_TRUSTED_EMAIL_HEADER: t.email, WEBUI_AUTH_TRUSTED_NAME_HEADER: t.name ?? null, WEBUI_AUTH_TRUSTED_GROUPS_HEADER: t.groups ?? null };
  }
  if (kind === 'appConfig') {
    const b = body as { features?: Record<string, unknown> };
    return { ...b, features: { ...b.features, auth_trusted_header: true } };
  }
  return body;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** Always JSON, even for `true`, `null` or a string (Fastify would send a bare string as text). */
export function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type(JSON_TYPE).send(JSON.stringify(body ?? null));
}
