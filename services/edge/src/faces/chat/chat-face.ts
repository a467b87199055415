import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fastifyCookie from '@fastify/cookie';
import { registerCsrfCheck } from './csrf.ts';
import {
  Bytes,
  CHAT_CATALOG,
  CHAT_COMPLETION_PATHS,
  CHAT_PLATFORM_VERSION,
  latestChangelog,
  CHAT_ROUTES,
  chatCompletionsContract,
  chatContracts,
  OWUI_ERRORS,
  validationDetail,
  type ChatIdentity,
  type ChatOpRequest,
  type ChatRoute,
  type ValidationItem,
  API_KEY_ERRORS,
  ChatOpReply,
  plainReplyBody,
  trustedSigninContract,
  type ChatOp,
} from '@gatehouse/contracts';
import { busRequest, busRequestBytes, BusError, jsonBytes, openBusStream, parseJson, type Bus } from '@gatehouse/common';
import {
  bearerToken,
  buildFace,
  headerValue,
  holdSlot,
  jsonDepthExceeds,
  MAX_JSON_DEPTH,
  readMeta,
  requireBus,
  responseBody,
  withDeadline,
  type FaceServerOptions,
  type StreamSlots,
} from '../../kit/index.ts';
import { mintToken, parseExpiresIn, verifyToken, type SessionClaims } from './jwt.ts';
import type { SessionStore } from './session-store.ts';
import { registerWebUi, type WebUiOptions } from './web-ui.ts';
import { registerLiveEvents } from './live-events.ts';
import { fileRoutes, sendDownload } from './files-routes.ts';
import { oauthRoutes, type OAuthEdgeOptions } from './oauth-routes.ts';
import { ApiKeyGate } from './api-keys.ts';
import { peerTrust, trustedIdentity, type TrustedHeaderConfig } from './api-keys-trusted-header.ts';

/** Open WebUI release this face speaks. */
export const OWUI_VERSION = CHAT_PLATFORM_VERSION;

export interface ChatFaceOptions {
  bus: () => Bus | undefined;
  /** Revocations and the sign-in rate limit (Redis); `watch` (if there) answers revocation checks from memory while it can. */
  sessions: Pick<SessionStore, 'isRevoked' | 'revoke' | 'attemptSignin'> & Partial<Pick<SessionStore, 'watch' | 'unwatch'>>;
  /** Whether Redis answers right now (auth fails closed when it does not). */
  redisReady: () => boolean;
  secret: string;
  cookie: { sameSite: 'lax' | 'strict' | 'none'; secure: boolean };
  /** Origins besides the face's own whose pages may use the session cookie for changes (csrf.ts). */
  allowedOrigins?: string[];
  /** Longest silence between two frames of a completion (a non-streamed answer is one silence). */
  streamIdleMs: number;
  /** CHAT_MAX_STREAMS_PER_USER: completions in progress per user (kit/stream-limits.ts); absent → no limit. */
  streamSlots?: StreamSlots;
  /** CHAT_STREAM_MAX_DURATION_MS: longest total time of one completion; 0 → none. */
  streamMaxMs?: number;
  /** CHAT_REQUEST_TIMEOUT_MS (default 30 s). */
  requestTimeoutMs?: number;
  /** CHAT_UPLOAD_TIMEOUT_MS (default 15 min). */
  uploadTimeoutMs?: number;
  /** The web UI's build and the Pyodide runtime (web-ui.ts); absent → the face serves the API only. */
  webUi?: WebUiOptions;
  /** RAG_FILE_MAX_SIZE in MB: uploads over it answer 413 (files-routes.ts). Default 100. */
  fileMaxSizeMb?: number;
  /** OIDC sign-in's Redis (pending logins, provider sessions) and options (oauth-routes.ts); absent → its routes say sign-in is unavailable. */
  oauth?: OAuthEdgeOptions;
  /** WEBUI_AUTH_TRUSTED_*_HEADER names; honoured only from the proxies `trustProxy` names (api-keys-trusted-header.ts). */
  trustedHeader?: TrustedHeaderConfig;
  /** EDGE_TRUST_PROXY as the kit reads it (buildChatFace passes the server's). */
  trustProxy?: boolean | number | string[];
  /** API key owner lookups kept this long without a notification (api-keys.ts). */
  apiKeyCacheTtlMs?: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    session: { claims: SessionClaims; token: string } | null;
    /** Set when the request authenticated with an API key (its SHA-256 digest is what the edge keeps). */
    apiKey: { key: string; userId: string } | null;
  }
}

/** Cookies Open WebUI clears on sign-out and on a token it cannot accept. */
const SESSION_COOKIES = ['token', 'oui-session', 'oauth_id_token', 'oauth_session_id'];
/** How long an operation that answers bytes (file content, an export) may take to put them in the object store. */
const BYTES_TIMEOUT_MS = 10 * 60 * 1000;
const STORE_DOWN = 'Session store unavailable; try again shortly.';
const SIGNIN_DOWN = 'Sign-in is unavailable while the session store is down; try again shortly.';

const JSON_TYPE = 'application/json; charset=utf-8';
const VERIFIED_MAX = 10_000;
/** Operations whose answer this edge adds to (the session's token, sign-out's redirect, trusted-header settings). */
const EDGE_EDITS = new Set<ChatOp>(['auths.session', 'auths.signout', 'auths.adminConfig.get', 'auths.adminConfig.set', 'config.get']);

/**
 * Open WebUI's in-stream error event (`data: {"error": {"detail": …}}`, Python's separators), for a
 * completion that fails after its 200: its duration limit, a worker gone mid-stream.
 */
const sseError = (err: unknown): Buffer => Buffer.from(`data: {"error": {"detail": ${pyString(err instanceof BusError ? err.message : OWUI_ERRORS.default)}}}\n\n`);
/** Python's json.dumps of a string: JSON's escapes, and every character past ASCII as \uXXXX. */
const pyString = (s: string): string => JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** FastAPI's 422: the list travels as the error's details, as the worker's own 422s do. */
const invalid = (detail: unknown[]) => new BusError(422, 'validation failed', { detail });

/**
 * The chat platform face (Open WebUI 0.10.2's HTTP API on :8080) as a plugin. It authenticates —
 * session token from `Authorization: Bearer`, else the `token` cookie, else `x-api-key`; signature,
 * expiry and revocation checked here — validates bodies with the catalog's forms, and sends each
 * route to its `chat.<op>` worker with the verified identity. Every answer is JSON, with or without
 * the trailing slash, 404s included.
 */
export const chatFace: FastifyPluginAsync<ChatFaceOptions> = async (app, opts) => {
  const bus = requireBus(opts.bus, 'The chat service is not connected to its bus yet; try again shortly.');
  await app.register(fastifyCookie);
  registerCsrfCheck(app, opts.allowedOrigins ?? []);
  app.decorateRequest('session', null);
  app.decorateRequest('apiKey', null);
  const keys = new ApiKeyGate({ bus: opts.bus, log: app.log as never, ...(opts.apiKeyCacheTtlMs ? { ttlMs: opts.apiKeyCacheTtlMs } : {}) });
  app.addHook('onClose', async () => keys.stop());
  opts.sessions.watch?.();
  app.addHook('onClose', async () => opts.sessions.unwatch?.());
  const trustedPeer = peerTrust(opts.trustProxy);

  // An empty body is "no body" (FastAPI then reports the missing fields), not a parse error.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
      return done(invalid([{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: `nested deeper than ${MAX_JSON_DEPTH} levels` } }]), undefined);
    }
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(invalid([{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: (err as Error).message } }]), undefined);
    }
  });

  app.setErrorHandler((err, req, reply) => {
    if (err instanceof BusError) {
      // A 422 carries FastAPI's list; anything else is Open WebUI's `{detail: message}`.
      const list = (err.details as { detail?: unknown }).detail;
      if (err.status >= 500) req.log.error({ err: err.message, status: err.status }, 'chat request failed');
      // The worker found no such user behind a valid token (deleted): the session is over.
      if (err.status === 401 && err.message === OWUI_ERRORS.invalidToken) clearSessionCookies(reply);
      return sendJson(reply, err.status, { detail: err.status === 422 && Array.isArray(list) ? list : err.message });
    }
    const status = (err as { statusCode?: number }).statusCode;
    if (status && status >= 400 && status < 500) return sendJson(reply, status, { detail: (err as Error).message });
    req.log.error({ err }, 'chat request failed');
    return sendJson(reply, 500, { detail: OWUI_ERRORS.default });
  });
  // Pages of the web UI (index.html at any non-API path) before the API's JSON 404.
  const webUi = opts.webUi ? await registerWebUi(app, opts.webUi) : undefined;
  app.setNotFoundHandler((req, reply) => webUi?.serve(req, reply) ?? sendJson(reply, 404, { detail: 'Not Found' }));

  // Open WebUI answers {status: true}; here it also says whether the workers can be reached.
  app.get('/health', async (_req, reply) => (opts.bus() ? { status: true } : sendJson(reply, 503, { status: false })));
  app.get('/api/version', async () => ({ version: OWUI_VERSION }));
  // Open WebUI's main.py: the parsed CHANGELOG.md, 5 newest versions; here Gatehouse's own notes.
  app.get('/api/changelog', async () => latestChangelog());

  // Tokens whose signature was checked, so a client's every request does not cost an HMAC again;
  // expiry is still checked on each use. The oldest goes first past VERIFIED_MAX.
  const verified = new Map<string, SessionClaims>();
  function verifySession(token: string): SessionClaims | undefined {
    const nowS = Math.floor(Date.now() / 1000);
    const hit = verified.get(token);
    if (hit) {
      if (hit.exp === undefined || hit.exp > nowS) return hit;
      verified.delete(token);
      return undefined;
    }
    const claims = verifyToken(opts.secret, token, nowS);
    if (claims) {
      if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value!);
      verified.set(token, claims);
    }
    return claims;
  }

  async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<ChatIdentity> {
    const token = credential(req);
    if (!token) throw new BusError(401, OWUI_ERRORS.notAuthenticated);
    if (token.startsWith('sk-')) {
      // Checked here from a cache (api-keys.ts): no database round trip once the key was seen.
      const userId = await keys.authenticate(token, req.url.split('?')[0]!);
      req.apiKey = { key: token, userId };
      return { userId, jti: `apikey:${ApiKeyGate.digest(token).slice(0, 16)}`, expiresAt: null };
    }
    const claims = verifySession(token);
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

  const envelope = (req: FastifyRequest, identity: ChatIdentity | null, body: unknown): ChatOpRequest => ({
    identity,
    params: (req.params ?? {}) as Record<string, string>,
    query: firstValues(req.query),
    body,
    client: { ip: req.ip, userAgent: headerValue(req.headers, 'user-agent') ?? '' },
  });

  // The caller's own events, live (Server-Sent Events; live-events.ts).
  registerLiveEvents(app, {
    bus,
    authenticate,
    stillValid: async (req) =>
      req.apiKey
        ? (await keys.authenticate(req.apiKey.key, req.url.split('?')[0]!).catch(() => null)) === req.apiKey.userId
        : !!req.session && opts.redisReady() && !(await opts.sessions.isRevoked(req.session.claims.jti)),
  });

  // Multipart uploads, the status event stream (files-routes.ts); every other route is handle().
  const maxMb = opts.fileMaxSizeMb ?? 100;
  const own = await fileRoutes(app, { bus, authenticate, envelope, handle, maxFileBytes: Math.floor(maxMb * 1024 * 1024), maxFileLabel: `${maxMb} MB`, uploadTimeoutMs: opts.uploadTimeoutMs });
  // The OAuth / OIDC browser flow and back-channel logout (oauth-routes.ts): never handle()'s JSON.
  const oauth = oauthRoutes(app, {
    bus,
    envelope,
    secret: opts.secret,
    cookie: opts.cookie,
    redisReady: opts.redisReady,
    revoke: (jti, exp) => opts.sessions.revoke(jti, exp),
    ...(opts.oauth ? { oauth: opts.oauth } : {}),
  });
  for (const route of CHAT_ROUTES) {
    const special = own[route.op] ?? oauth.routes[route.op];
    app.route({ method: route.method, url: route.url, handler: async (req, reply) => (special ? special(route, req, reply) : handle(route, req, reply)) });
  }

  // Completions stream: the worker sends the status and content type first, then the exact bytes
  // (SSE or JSON); a client that goes away cancels the stream, and the worker the upstream. The
  // chunks that arrived together go out in one socket write (kit/relay.ts responseBody).
  for (const url of CHAT_COMPLETION_PATHS) {
    app.post(url, async (req, reply) => {
      const identity = await authenticate(req, reply);
      if (!req.body || typeof req.body !== 'object' || Array.isArray(req.body)) {
        throw invalid([{ type: 'dict_type', loc: ['body'], msg: 'Input should be a valid dictionary', input: req.body ?? null }]);
      }
      // Streamed or not, a completion holds a worker and an upstream request for as long: both count.
      if (!(await holdSlot(opts.streamSlots, identity.userId, reply))) {
        throw new BusError(429, `You already have ${opts.streamSlots!.limit} chat completions in progress, the most allowed at once; wait for one to finish.`);
      }
      const abort = new AbortController();
      reply.raw.on('close', () => abort.abort());
      const stream = withDeadline(
        openBusStream(bus(), chatCompletionsContract, { ...envelope(req, identity, req.body), params: {} }, {
          idleTimeoutMs: opts.streamIdleMs,
          signal: abort.signal,
          trace: req.trace,
        }),
        opts.streamMaxMs ?? 0,
      );
      const { status, contentType } = await readMeta(stream, 'chat worker');
      reply.code(status).type(contentType);
      const sse = contentType.startsWith('text/event-stream');
      if (sse) reply.header('cache-control', 'no-cache').header('x-accel-buffering', 'no');
      // A stream that fails after its 200 ends with Open WebUI's in-stream error event, not a cut connection.
      return reply.send(responseBody(stream, sse ? sseError : undefined));
    });
  }

  async function handle(route: ChatRoute, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const identity = route.auth === 'none' ? null : await authenticate(req, reply);
    if (route.body) {
      const r = route.body.safeParse(req.body);
      if (!r.success) {
        throw invalid(
          req.body === undefined ? [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null } satisfies ValidationItem] : validationDetail(r.error, req.body),
        );
      }
    }
    // Trusted-header mode replaces the password form (Open WebUI's signin), and is not rate limited.
    if (route.op === 'auths.signin' && opts.trustedHeader?.email) return trustedSignin(req, reply);
    // LDAP sign-in counts against the same limit as a password sign-in (the account key is its user name).
    if (route.op === 'auths.signin' || route.op === 'auths.ldap') await limitSignin(req, reply);
    if (route.op === 'auths.signout' && req.session) {
      await opts.sessions.revoke(req.session.claims.jti, req.session.claims.exp).catch(() => {
        throw new BusError(503, 'Session store unavailable; the session was not revoked. Try again.');
      });
    }
    // An operation answering bytes first copies them into the object store: give it longer.
    const timeoutMs = CHAT_CATALOG[route.op].reply === Bytes ? BYTES_TIMEOUT_MS : (opts.requestTimeoutMs ?? 30_000);
    const bytes = await busRequestBytes(bus(), chatContracts[route.op], jsonBytes(envelope(req, identity, req.body ?? null)), { trace: req.trace, timeoutMs });
    // A plain 200 (most answers) goes to the client as the worker wrote it, unless this edge adds to it.
    const plain = EDGE_EDITS.has(route.op) ? undefined : plainReplyBody(bytes);
    if (plain) return reply.code(200).type(JSON_TYPE).send(Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength));
    const out = ChatOpReply.parse(parseJson(bytes));
    // Bytes (a file's content, an export): the worker named an object to stream.
    if (out.download) return sendDownload(bus(), reply, out.download);
    let body = out.body;
    if (out.issueSession) {
      const expiresIn = parseExpiresIn(out.issueSession.expiresIn);
      const { token, claims } = mintToken(opts.secret, out.issueSession.userId, expiresIn);
      // The caller of /auths/add is the admin: the new user's token is returned, the admin's
      // own cookie is left alone.
      if (route.op !== 'auths.add') setSessionCookie(reply, token, claims.exp);
      body = { token, token_type: 'Bearer', expires_at: claims.exp ?? null, ...(body as object) };
    } else if (route.op === 'auths.session' && req.apiKey) {
      body = { ...(body as object), token: req.apiKey.key };
    } else if ((route.op === 'auths.adminConfig.get' || route.op === 'auths.adminConfig.set') && opts.trustedHeader?.email) {
      // When configured, the trusted-header names (this edge's environment, read-only) go with the
      // AdminConfig for the admin page; otherwise the answer is exactly Open WebUI's.
      const t = opts.trustedHeader;
      body = { ...(body as object), WEBUI_AUTH_TRUSTED_EMAIL_HEADER: t.email, WEBUI_AUTH_TRUSTED_NAME_HEADER: t.name ?? null, WEBUI_AUTH_TRUSTED_GROUPS_HEADER: t.groups ?? null };
    } else if (route.op === 'config.get' && opts.trustedHeader?.email) {
      const b = body as { features?: Record<string, unknown> };
      body = { ...b, features: { ...b.features, auth_trusted_header: true } };
    } else if (route.op === 'auths.session' && req.session) {
      setSessionCookie(reply, req.session.token, req.session.claims.exp);
      body = { ...(body as object), token: req.session.token };
    } else if (route.op === 'auths.signout') {
      clearSessionCookies(reply);
      // Signed in through a provider: Open WebUI sends the browser on to its end-session endpoint.
      const redirectUrl = await oauth.signoutRedirect(req, req.session?.claims.id);
      if (redirectUrl) body = { ...(body as object), redirect_url: redirectUrl };
    }
    return sendJson(reply, out.status ?? 200, body);
  }

  async function trustedSignin(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const who = trustedIdentity(req, opts.trustedHeader!, trustedPeer);
    if (!who) throw new BusError(400, API_KEY_ERRORS.invalidTrustedHeader);
    const out = await busRequest(bus(), trustedSigninContract, { ...envelope(req, null, null), body: who }, { trace: req.trace });
    if (!out.issueSession) throw new BusError(500, OWUI_ERRORS.default);
    const { token, claims } = mintToken(opts.secret, out.issueSession.userId, parseExpiresIn(out.issueSession.expiresIn));
    setSessionCookie(reply, token, claims.exp);
    return sendJson(reply, 200, { token, token_type: 'Bearer', expires_at: claims.exp ?? null, ...(out.body as object) });
  }

  async function limitSignin(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    // The account key: a password sign-in's email, an LDAP sign-in's user name (its LdapForm has no email).
    const body = req.body as { email?: unknown; user?: unknown };
    const email = String(body.email ?? body.user ?? '');
    if (!opts.redisReady()) throw new BusError(503, SIGNIN_DOWN);
    const verdict = await opts.sessions.attemptSignin(email, req.ip).catch(() => {
      throw new BusError(503, SIGNIN_DOWN);
    });
    if (!verdict.allowed) {
      reply.header('retry-after', String(Math.ceil(verdict.retryAfterMs / 1000)));
      throw new BusError(429, OWUI_ERRORS.rateLimited);
    }
  }

  /** The `token` cookie as Open WebUI sets it (WEBUI_AUTH_COOKIE_SAME_SITE / _SECURE), expiring with the token. */
  function setSessionCookie(reply: FastifyReply, token: string, exp: number | undefined): void {
    reply.setCookie('token', token, {
      path: '/',
      httpOnly: true,
      sameSite: opts.cookie.sameSite,
      secure: opts.cookie.secure,
      ...(exp === undefined ? {} : { expires: new Date(exp * 1000), maxAge: Math.max(0, exp - Math.floor(Date.now() / 1000)) }),
    });
  }
};

/** Starlette's delete_cookie: an empty quoted value, expired at the epoch, for the whole site. */
function clearSessionCookies(reply: FastifyReply): void {
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

function firstValues(q: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((q ?? {}) as Record<string, unknown>)) out[k] = String(Array.isArray(v) ? v[0] : v);
  return out;
}

/** Always JSON, even for `true`, `null` or a string (Fastify would send a bare string as text). */
function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type(JSON_TYPE).send(JSON.stringify(body ?? null));
}

export function buildChatFace(server: Pick<FaceServerOptions, 'log' | 'logRequests' | 'trustProxy'>, opts: ChatFaceOptions): Promise<FastifyInstance> {
  return buildFace(
    {
      ...server,
      face: 'chat',
      ignoreTrailingSlash: true,
      requestTimeout: 0, // long generations: the bus idle timeout bounds silence instead
      bodyLimit: 16 * 1024 * 1024,
    },
    chatFace,
    { trustProxy: server.trustProxy, ...opts },
  );
}
