import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { chatContracts, OWUI_ERRORS, validationDetail, type ChatIdentity, type ChatOpRequest, type ChatRoute, type OAuthClientSettings } from '@gatehouse/contracts';
import { busRequest, BusError, type Bus } from '@gatehouse/common';
import { mintToken, parseExpiresIn } from './jwt.ts';
import type { RouteHandler } from './files-routes.ts';

/**
 * OAuth / OpenID Connect sign-in at the edge (Open WebUI 0.10.2: main.py's `/oauth/{provider}/login`,
 * `/oauth/{provider}/login/callback` (legacy `/oauth/{provider}/callback`), utils/oauth.py
 * handle_callback, auths.py signout, `/oauth/backchannel-logout`), with `openid-client`:
 *
 * - login: the worker says how the provider is configured (settings applied live); the edge
 *   discovers it (cached per configuration), keeps state → {nonce, PKCE verifier} in Redis for 10
 *   minutes, binds the state to this browser with a short-lived cookie, and redirects.
 * - callback: the state is taken from Redis exactly once (a replayed or foreign callback finds
 *   nothing), must match the browser's cookie, and openid-client checks the code exchange (PKCE),
 *   the ID token (signature, issuer, audience, nonce; 60 s of clock skew tolerated). The verified
 *   claims go to the worker, which decides the account; the edge mints the session and ends as
 *   Open WebUI does: cookie `token` (readable by the page) and a redirect to `{WEBUI_URL}/auth`, or
 *   `/auth?error=<message>` for anything that went wrong — never a 500 page.
 * - sign-out: a session that came from the provider answers `redirect_url` = the end-session
 *   endpoint with `id_token_hint`, as Open WebUI does.
 * - back-channel logout: a logout token verified against the provider's keys revokes the sessions
 *   the provider's session (`sid`) or subject (`sub`) opened here.
 */
export interface OAuthEdgeOptions {
  redis: Redis;
  ns: string;
  /** How long to wait for the provider when its settings say nothing (OAUTH_TIMEOUT). */
  defaultTimeoutS?: number;
  /** WEBUI_AUTH_SIGNOUT_REDIRECT_URL: where the provider sends the browser after its sign-out. */
  signoutRedirectUrl?: string;
}

export interface OAuthRoutesDeps {
  bus: () => Bus;
  envelope(req: FastifyRequest, identity: ChatIdentity | null, body: unknown): ChatOpRequest;
  secret: string;
  cookie: { sameSite: 'lax' | 'strict' | 'none'; secure: boolean };
  redisReady: () => boolean;
  revoke(jti: string, exp: number | undefined): Promise<void>;
  oauth?: OAuthEdgeOptions;
}

/** One sign-in in flight, kept server-side under its state. */
interface PendingLogin {
  provider: string;
  nonce: string;
  verifier: string;
  redirectUri: string;
}

/** A session that came from the provider (`oauth_session_id` cookie → this). */
interface ProviderSession {
  userId: string;
  provider: string;
  sub: string;
  sid: string | null;
  idToken: string | null;
  endSession: string | null;
  jti: string;
  exp: number | null;
}

const STATE_TTL_S = 600;
const STATE_COOKIE = 'oui-oauth-state';
const CLOCK_TOLERANCE_S = 60;
const CONFIG_TTL_MS = 10 * 60 * 1000;
/** A session with no expiry (JWT_EXPIRES_IN=-1) still lets go of its provider record after this long. */
const SESSION_RECORD_MAX_S = 365 * 24 * 3600;
const BACKCHANNEL_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
/** The provider key this build serves (Open WebUI's generic OIDC provider). */
const OIDC = 'oidc';

const providerDown = (name: string) => `Could not reach the sign-in provider (${name}); try again shortly.`;

/** Python's urllib.parse.quote_plus, which Open WebUI applies to the error it puts in the URL. */
const quotePlus = (s: string) => encodeURIComponent(s).replace(/%20/g, '+').replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Raised inside the flow: ends as a redirect to `/auth?error=<message>`. */
class FlowError extends Error {
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message);
  }
}

/** What every step of the flow shares: the face's dependencies and the provider's cached configuration. */
interface OAuthContext {
  deps: OAuthRoutesDeps;
  o: OAuthEdgeOptions | undefined;
  /** Redis key prefix of this edge's pending logins and provider sessions. */
  prefix: string;
  configs: Map<string, { at: number; config: Promise<oidc.Configuration> }>;
  jwks: Map<string, ReturnType<typeof createRemoteJWKSet>>;
}

export function oauthRoutes(app: FastifyInstance, deps: OAuthRoutesDeps) {
  const o = deps.oauth;
  const ctx: OAuthContext = { deps, o, prefix: `${o?.ns ? `${o.ns}:` : ''}chat:oauth:`, configs: new Map(), jwks: new Map() };

  // Back-channel logout tokens arrive as a form post (OpenID Connect Back-Channel Logout 1.0 §2.5).
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });

  const routes = {
    oauthTokenExchange: (route, req, reply) => tokenExchange(ctx, route, req, reply),
    oauthLogin: (_route, req, reply) => login(ctx, req, reply),
    oauthCallback: (_route, req, reply) => callback(ctx, req, reply),
    oauthBackchannelLogout: (_route, req, reply) => backchannel(ctx, req, reply),
  } satisfies Record<string, RouteHandler>;
  return { routes, signoutRedirect: (req: FastifyRequest, userId: string | undefined) => signoutRedirect(ctx, req, userId) };
}

async function clientSettings(ctx: OAuthContext, req: FastifyRequest, provider: string): Promise<OAuthClientSettings> {
  // This build offers one provider; any other is Open WebUI's bare 404 without asking anyone.
  if (provider !== OIDC) throw new BusError(404, 'Not Found');
  const out = await busRequest(ctx.deps.bus(), chatContracts['oauth.login'], { ...ctx.deps.envelope(req, null, null), params: { provider } }, { trace: req.trace });
  return out.body as OAuthClientSettings;
}

/** The provider's discovered configuration, cached per settings (a changed setting is a new key). */
function configFor(ctx: OAuthContext, s: OAuthClientSettings): Promise<oidc.Configuration> {
  const { configs } = ctx;
  const key = createHash('sha256').update(JSON.stringify([s.discoveryUrl, s.clientId, s.clientSecret, s.tokenEndpointAuthMethod, s.timeoutS])).digest('hex');
  const hit = configs.get(key);
  if (hit && Date.now() - hit.at < CONFIG_TTL_MS) return hit.config;
  const auth =
    s.tokenEndpointAuthMethod === 'client_secret_post'
      ? oidc.ClientSecretPost(s.clientSecret)
      : s.tokenEndpointAuthMethod === 'none'
        ? oidc.None()
        : oidc.ClientSecretBasic(s.clientSecret);
  const url = new URL(s.discoveryUrl);
  const config = oidc
    .discovery(url, s.clientId, { [oidc.clockTolerance]: CLOCK_TOLERANCE_S }, auth, {
      timeout: s.timeoutS ?? ctx.o?.defaultTimeoutS ?? 10,
      // A provider on plain HTTP is allowed: a loopback or in-cluster issuer is an admin's choice.
      ...(url.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {}),
    })
    .catch((err: unknown) => {
      configs.delete(key);
      throw err;
    });
  configs.set(key, { at: Date.now(), config });
  if (configs.size > 8) configs.delete(configs.keys().next().value!);
  return config;
}

/** The configuration, or the flow's "provider unreachable" ending. */
async function flowConfig(ctx: OAuthContext, s: OAuthClientSettings): Promise<oidc.Configuration> {
  try {
    return await configFor(ctx, s);
  } catch (err) {
    throw new FlowError(providerDown(s.name), (err as Error).message);
  }
}

const origin = (req: FastifyRequest) => `${req.protocol}://${req.host}`;
const base = (req: FastifyRequest, s?: OAuthClientSettings) => (s?.webuiUrl || origin(req)).replace(/\/+$/, '');

/** Open WebUI's error ending: back to the sign-in page with the message in `?error=`. */
function failRedirect(req: FastifyRequest, reply: FastifyReply, message: string, s?: OAuthClientSettings): FastifyReply {
  reply.clearCookie(STATE_COOKIE, { path: '/oauth' });
  return reply.redirect(`${base(req, s)}/auth?error=${quotePlus(message)}`, 307);
}

function needStore(ctx: OAuthContext): Redis {
  if (!ctx.o || !ctx.deps.redisReady()) throw new FlowError('Sign-in is unavailable while the session store is down; try again shortly.', 'session store down');
  return ctx.o.redis;
}

async function login(ctx: OAuthContext, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const provider = (req.params as { provider?: string }).provider ?? '';
  // Unknown or unconfigured provider: the worker's 404, as Open WebUI's.
  const s = await clientSettings(ctx, req, provider);
  try {
    const redis = needStore(ctx);
    const config = await flowConfig(ctx, s);
    const state = oidc.randomState();
    const pending: PendingLogin = {
      provider,
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      redirectUri: s.redirectUri || `${origin(req)}/oauth/${provider}/login/callback`,
    };
    await redis.set(`${ctx.prefix}state:${state}`, JSON.stringify(pending), 'EX', STATE_TTL_S);
    const challenge = s.codeChallengeMethod === 'plain' ? pending.verifier : await oidc.calculatePKCECodeChallenge(pending.verifier);
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: pending.redirectUri,
      scope: s.scopes,
      state,
      nonce: pending.nonce,
      code_challenge: challenge,
      code_challenge_method: s.codeChallengeMethod,
      ...(s.audience ? { audience: s.audience } : {}),
    });
    // The state is also this browser's: a callback carrying a state started elsewhere is refused.
    reply.setCookie(STATE_COOKIE, state, { path: '/oauth', httpOnly: true, sameSite: 'lax', secure: ctx.deps.cookie.secure, maxAge: STATE_TTL_S });
    return reply.redirect(url.href, 302);
  } catch (err) {
    if (!(err instanceof FlowError)) throw err;
    req.log.warn({ provider, reason: err.reason }, 'oauth login failed');
    return failRedirect(req, reply, err.message, s);
  }
}

async function callback(ctx: OAuthContext, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const provider = (req.params as { provider?: string }).provider ?? '';
  const s = await clientSettings(ctx, req, provider);
  const started = process.hrtime.bigint();
  try {
    const q = req.query as Record<string, string | undefined>;
    const redis = needStore(ctx);
    // The provider refused (the user cancelled, consent denied…): its own words.
    if (q.error) throw new FlowError(String(q.error_description || q.error), `provider error ${q.error}`);
    const { state, pending } = await takePendingLogin(ctx, redis, req, q, provider);
    const config = await flowConfig(ctx, s);
    const { tokens, idClaims, claims, exchangeMs } = await exchangeCode(config, s, pending, state, q);
    const accountAt = process.hrtime.bigint();
    const out = await accountFor(ctx, req, provider, claims);
    const accountMs = Number(process.hrtime.bigint() - accountAt) / 1e6;
    await startProviderSession(ctx, redis, reply, out, {
      provider,
      sub: String(idClaims.sub),
      sid: typeof idClaims.sid === 'string' ? idClaims.sid : null,
      idToken: tokens.id_token ?? null,
      endSession: s.endSessionEndpoint || config.serverMetadata().end_session_endpoint || null,
    });
    // What the callback cost here: in all, the provider's token endpoint (with the ID token's
    // checks), the worker's account decision (scripts/bench/auth-oidc.ts reads these).
    const total = Number(process.hrtime.bigint() - started) / 1e6;
    reply.header('server-timing', `oidc-callback;dur=${total.toFixed(2)}, oidc-exchange;dur=${exchangeMs.toFixed(2)}, oidc-account;dur=${accountMs.toFixed(2)}`);
    return reply.redirect(`${base(req, s)}/auth`, 307);
  } catch (err) {
    if (!(err instanceof FlowError)) throw err;
    req.log.warn({ provider, reason: err.reason }, 'oauth callback refused');
    return failRedirect(req, reply, err.message, s);
  }
}

/** The login this callback ends: its state taken from Redis exactly once, started by this provider in this browser. */
async function takePendingLogin(ctx: OAuthContext, redis: Redis, req: FastifyRequest, q: Record<string, string | undefined>, provider: string): Promise<{ state: string; pending: PendingLogin }> {
  const state = typeof q.state === 'string' ? q.state : '';
  // One use only: a replayed callback finds no state, even with the browser's cookie.
  const raw = state ? await redis.getdel(`${ctx.prefix}state:${state}`) : null;
  if (!raw) throw new FlowError(OWUI_ERRORS.invalidCredentials, 'unknown, used or expired state');
  const pending = JSON.parse(raw) as PendingLogin;
  if (pending.provider !== provider) throw new FlowError(OWUI_ERRORS.invalidCredentials, 'state of another provider');
  if (req.cookies[STATE_COOKIE] !== state) throw new FlowError(OWUI_ERRORS.invalidCredentials, 'state not started in this browser');
  return { state, pending };
}

/** The code exchanged (PKCE, the ID token's checks), and the claims: the ID token's, with the userinfo endpoint's when it lacks the email or the name (as Open WebUI reads them). */
async function exchangeCode(config: oidc.Configuration, s: OAuthClientSettings, pending: PendingLogin, state: string, q: Record<string, string | undefined>) {
  const current = new URL(pending.redirectUri);
  current.search = new URLSearchParams(q as Record<string, string>).toString();
  let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
  const exchangeAt = process.hrtime.bigint();
  try {
    tokens = await oidc.authorizationCodeGrant(config, current, { pkceCodeVerifier: pending.verifier, expectedState: state, expectedNonce: pending.nonce, idTokenExpected: true });
  } catch (err) {
    throw unreachable(err) ? new FlowError(providerDown(s.name), (err as Error).message) : new FlowError(OWUI_ERRORS.invalidCredentials, describe(err));
  }
  const exchangeMs = Number(process.hrtime.bigint() - exchangeAt) / 1e6;
  const idClaims = tokens.claims();
  if (!idClaims) throw new FlowError(OWUI_ERRORS.invalidCredentials, 'no ID token');
  let claims: Record<string, unknown> = { ...idClaims };
  if (!('email' in claims) || !('name' in claims)) {
    try {
      claims = { ...claims, ...(await oidc.fetchUserInfo(config, tokens.access_token, idClaims.sub)) };
    } catch (err) {
      throw unreachable(err) ? new FlowError(providerDown(s.name), (err as Error).message) : new FlowError(OWUI_ERRORS.invalidCredentials, describe(err));
    }
  }
  return { tokens, idClaims, claims, exchangeMs };
}

/** The worker decides the account for the verified claims; its refusal (domain, sign-up off, taken email) is the message Open WebUI shows. */
async function accountFor(ctx: OAuthContext, req: FastifyRequest, provider: string, claims: Record<string, unknown>) {
  let out;
  try {
    out = await busRequest(ctx.deps.bus(), chatContracts['oauth.callback'], { ...ctx.deps.envelope(req, null, { provider, claims }), params: { provider } }, { trace: req.trace });
  } catch (err) {
    if (err instanceof BusError && err.status < 500) throw new FlowError(err.message, `refused: ${err.message}`);
    throw err;
  }
  if (!out.issueSession) throw new FlowError(OWUI_ERRORS.default, 'no session from the worker');
  return out as typeof out & { issueSession: NonNullable<typeof out.issueSession> };
}

/** The session minted and remembered as the provider's (for sign-out and back-channel logout), ended as Open WebUI does: cookie `token` readable by the page. */
async function startProviderSession(
  ctx: OAuthContext,
  redis: Redis,
  reply: FastifyReply,
  out: { issueSession: { userId: string; expiresIn: string } },
  from: Pick<ProviderSession, 'provider' | 'sub' | 'sid' | 'idToken' | 'endSession'>,
): Promise<void> {
  const { deps } = ctx;
  const { token, claims: session } = await mintToken(deps.secret, out.issueSession.userId, parseExpiresIn(out.issueSession.expiresIn));
  const sessionId = randomBytes(24).toString('base64url');
  await saveSession(ctx, redis, sessionId, { userId: out.issueSession.userId, ...from, jti: session.jti, exp: session.exp ?? null });
  const cookie = { path: '/', sameSite: deps.cookie.sameSite, secure: deps.cookie.secure } as const;
  const expiry = session.exp === undefined ? {} : { expires: new Date(session.exp * 1000) };
  // Open WebUI: httponly=False, the page reads it.
  reply.setCookie('token', token, { ...cookie, httpOnly: false, ...expiry });
  reply.setCookie('oauth_session_id', sessionId, { ...cookie, httpOnly: true, ...expiry });
  reply.clearCookie(STATE_COOKIE, { path: '/oauth' });
}

async function saveSession(ctx: OAuthContext, redis: Redis, id: string, r: ProviderSession): Promise<void> {
  const { prefix } = ctx;
  const ttl = r.exp === null ? SESSION_RECORD_MAX_S : Math.max(1, r.exp - Math.floor(Date.now() / 1000));
  const m = redis.multi().set(`${prefix}session:${id}`, JSON.stringify(r), 'EX', ttl);
  const bySub = `${prefix}sub:${r.provider}:${r.sub}`;
  m.sadd(bySub, id).expire(bySub, SESSION_RECORD_MAX_S);
  if (r.sid) {
    const bySid = `${prefix}sid:${r.provider}:${r.sid}`;
    m.sadd(bySid, id).expire(bySid, SESSION_RECORD_MAX_S);
  }
  await m.exec();
}

async function dropSession(ctx: OAuthContext, redis: Redis, id: string): Promise<ProviderSession | null> {
  const { prefix } = ctx;
  const raw = await redis.getdel(`${prefix}session:${id}`);
  if (!raw) return null;
  const r = JSON.parse(raw) as ProviderSession;
  await redis.multi().srem(`${prefix}sub:${r.provider}:${r.sub}`, id).srem(`${prefix}sid:${r.provider}:${r.sid ?? ''}`, id).exec();
  return r;
}

/**
 * `POST /oauth/backchannel-logout` (OpenID Connect Back-Channel Logout 1.0): verify the logout
 * token (signature by the provider's keys, issuer, audience = our client, the logout event, no
 * nonce, sub or sid, each token once), then revoke every session it names. 200 empty on success;
 * 400 `{error, error_description}` otherwise, as the specification says.
 */
async function backchannel(ctx: OAuthContext, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { deps, o, prefix } = ctx;
  const refuse = (description: string) => reply.code(400).header('cache-control', 'no-store').send({ error: 'invalid_request', error_description: description });
  const token = (req.body as { logout_token?: unknown } | undefined)?.logout_token;
  if (typeof token !== 'string' || !token) return refuse('logout_token is required (a form post).');
  // Open WebUI's route names no provider: the one configured (`oidc`), or `?provider=` when given.
  const provider = String((req.query as { provider?: string }).provider ?? OIDC);
  let s: OAuthClientSettings;
  try {
    s = await clientSettings(ctx, req, provider);
  } catch (err) {
    if (err instanceof BusError && err.status === 404) return refuse('No such provider is configured.');
    throw err;
  }
  if (!o || !deps.redisReady()) return reply.code(503).header('cache-control', 'no-store').send({ error: 'temporarily_unavailable', error_description: 'Session store unavailable.' });
  let config: oidc.Configuration;
  try {
    config = await configFor(ctx, s);
  } catch {
    return reply.code(503).header('cache-control', 'no-store').send({ error: 'temporarily_unavailable', error_description: providerDown(s.name) });
  }
  const checked = await verifyLogoutToken(ctx, config, s, token);
  if (typeof checked === 'string') return refuse(checked);
  const { sub, sid, jti } = checked;
  // Each logout token once.
  const fresh = await o.redis.set(`${prefix}logout-jti:${jti}`, '1', 'EX', 600, 'NX');
  if (fresh !== 'OK') return refuse('This logout token was already used.');
  const ids = new Set<string>([
    ...(sid ? await o.redis.smembers(`${prefix}sid:${provider}:${sid}`) : []),
    ...(sub && !sid ? await o.redis.smembers(`${prefix}sub:${provider}:${sub}`) : []),
  ]);
  for (const id of ids) {
    const r = await dropSession(ctx, o.redis, id);
    if (r && (!sub || r.sub === sub)) await deps.revoke(r.jti, r.exp ?? undefined);
  }
  // The worker records it (auth.logout) for the account the subject belongs to.
  await busRequest(deps.bus(), chatContracts['oauth.backchannelLogout'], { ...deps.envelope(req, null, { provider, sub, sid }), params: {} }, { trace: req.trace }).catch((err: unknown) => {
    req.log.warn({ err: (err as Error).message }, 'back-channel logout not recorded');
  });
  req.log.info({ provider, sessions: ids.size }, 'back-channel logout');
  return reply.code(200).header('cache-control', 'no-store').send();
}

/** The logout token's subject and session, or why it is refused. */
async function verifyLogoutToken(ctx: OAuthContext, config: oidc.Configuration, s: OAuthClientSettings, token: string): Promise<{ sub: string | null; sid: string | null; jti: unknown } | string> {
  const meta = config.serverMetadata();
  if (!meta.jwks_uri) return 'The provider publishes no keys.';
  let keys = ctx.jwks.get(meta.jwks_uri);
  if (!keys) ctx.jwks.set(meta.jwks_uri, (keys = createRemoteJWKSet(new URL(meta.jwks_uri))));
  let claims: JWTPayload & { sid?: unknown; events?: unknown; nonce?: unknown };
  try {
    ({ payload: claims } = await jwtVerify(token, keys, { issuer: meta.issuer, audience: s.clientId, clockTolerance: CLOCK_TOLERANCE_S, requiredClaims: ['iat', 'jti'] }));
  } catch (err) {
    return `The logout token is not valid: ${(err as Error).message}`;
  }
  const events = claims.events as Record<string, unknown> | undefined;
  if (!events || typeof events !== 'object' || typeof events[BACKCHANNEL_EVENT] !== 'object') return 'The logout token carries no back-channel logout event.';
  if (claims.nonce !== undefined) return 'A logout token must not carry a nonce.';
  const sub = typeof claims.sub === 'string' ? claims.sub : null;
  const sid = typeof claims.sid === 'string' ? claims.sid : null;
  if (!sub && !sid) return 'The logout token names neither sub nor sid.';
  return { sub, sid, jti: claims.jti };
}

/**
 * Sign-out of a session that came from the provider: forget it here and answer where the browser
 * goes next (Open WebUI: `{end_session_endpoint}?id_token_hint=…[&post_logout_redirect_uri=…]`).
 */
async function signoutRedirect(ctx: OAuthContext, req: FastifyRequest, userId: string | undefined): Promise<string | undefined> {
  const { o, deps } = ctx;
  const id = req.cookies.oauth_session_id;
  if (!o || !id || !deps.redisReady()) return undefined;
  const r = await dropSession(ctx, o.redis, id).catch(() => null);
  if (!r || r.userId !== userId || !r.endSession) return undefined;
  const url = `${r.endSession}?id_token_hint=${r.idToken ?? ''}`;
  return o.signoutRedirectUrl ? `${url}&post_logout_redirect_uri=${o.signoutRedirectUrl}` : url;
}

/**
 * `POST /api/v1/auths/oauth/{provider}/token/exchange` (Open WebUI, only with
 * ENABLE_OAUTH_TOKEN_EXCHANGE): the provider's userinfo read with the given access token names the
 * account; the worker gets those claims — never the request's body — and answers an existing
 * account's session (JSON and the `token` cookie, as a sign-in).
 */
async function tokenExchange(ctx: OAuthContext, route: ChatRoute, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { deps } = ctx;
  const provider = (req.params as { provider?: string }).provider?.toLowerCase() ?? '';
  const r = route.body!.safeParse(req.body);
  if (!r.success) {
    throw new BusError(422, 'validation failed', {
      detail: req.body === undefined ? [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] : validationDetail(r.error, req.body),
    });
  }
  const token = (r.data as { token: string }).token;
  const s = await clientSettings(ctx, req, provider);
  if (!s.tokenExchange) throw new BusError(403, 'Token exchange is disabled');
  let config: oidc.Configuration;
  try {
    config = await configFor(ctx, s);
  } catch {
    throw new BusError(503, providerDown(s.name));
  }
  let claims: Record<string, unknown>;
  try {
    claims = { ...(await oidc.fetchUserInfo(config, token, oidc.skipSubjectCheck)) };
  } catch (err) {
    if (unreachable(err)) throw new BusError(503, providerDown(s.name));
    throw new BusError(400, 'Invalid token or unable to validate with provider');
  }
  const out = await busRequest(deps.bus(), chatContracts['oauth.tokenExchange'], { ...deps.envelope(req, null, { provider, claims }), params: { provider } }, { trace: req.trace });
  if (!out.issueSession) throw new BusError(500, OWUI_ERRORS.default);
  const { token: session, claims: c } = await mintToken(deps.secret, out.issueSession.userId, parseExpiresIn(out.issueSession.expiresIn));
  reply.setCookie('token', session, { path: '/', httpOnly: true, sameSite: deps.cookie.sameSite, secure: deps.cookie.secure, ...(c.exp === undefined ? {} : { expires: new Date(c.exp * 1000) }) });
  return reply
    .code(200)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify({ token: session, token_type: 'Bearer', expires_at: c.exp ?? null, ...(out.body as object) }));
}

/** The provider could not be reached (refused, timed out, DNS), as opposed to refusing us. */
function unreachable(err: unknown, depth = 0): boolean {
  const e = err as { name?: string; code?: string; cause?: unknown } | undefined;
  if (!e || depth > 4 || e.name === 'ResponseBodyError') return false;
  if (e.name === 'TypeError' || e.name === 'AbortError' || e.name === 'TimeoutError') return true;
  if (typeof e.code === 'string' && /^(ECONN|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|UND_ERR)/.test(e.code)) return true;
  return e.cause !== undefined && unreachable(e.cause, depth + 1);
}

function describe(err: unknown): string {
  const e = err as { message?: string; error?: string; error_description?: string; code?: string };
  return [e.code, e.error, e.error_description, e.message].filter(Boolean).join(': ');
}
