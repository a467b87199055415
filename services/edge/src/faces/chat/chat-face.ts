import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import {
  CHAT_COMPLETION_PATHS,
  CHAT_OPS,
  CHAT_ROUTES,
  chatCompletionsContract,
  chatContracts,
  OWUI_ERRORS,
  validationDetail,
  type ChatIdentity,
  type ChatRoute,
} from '@gatehouse/contracts';
import { busRequest, busStream, BusError, type Bus, type Logger } from '@gatehouse/common';
import { mintToken, parseExpiresIn, verifyToken, type SessionClaims } from './jwt.ts';
import type { SessionStore } from './session-store.ts';

/** Open WebUI release this face speaks. */
export const OWUI_VERSION = '0.10.2';

export interface ChatFaceOptions {
  log: Logger;
  bus: () => Bus | undefined;
  /** Revocations and the sign-in rate limit; undefined while Redis is not configured. */
  sessions: SessionStore;
  /** Whether Redis answers right now (auth fails closed when it does not). */
  redisReady: () => boolean;
  secret: string;
  cookie: { sameSite: 'lax' | 'strict' | 'none'; secure: boolean };
  /** Longest silence between two frames of a completion (a non-streamed answer is one silence). */
  streamIdleMs: number;
  /** Fastify's trustProxy: which X-Forwarded-For hops name the client (EDGE_TRUST_PROXY). */
  trustProxy?: boolean | number | string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    session: { claims: SessionClaims; token: string } | null;
  }
}

/** Cookies Open WebUI clears on sign-out and on a token it cannot accept. */
const SESSION_COOKIES = ['token', 'oui-session', 'oauth_id_token', 'oauth_session_id'];

/** Headers that must never reach the bus from outside (bus metadata, internal identity). */
const SPOOFABLE = /^(nats-|gh-|x-gatehouse-)/i;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === 'string' ? detail : 'request failed');
  }
}

/**
 * The chat platform face (Open WebUI 0.10.2's HTTP API on :8080). It authenticates — session
 * token from `Authorization: Bearer`, else the `token` cookie, else `x-api-key`; signature, expiry
 * and revocation checked here — validates bodies with the shared forms, and sends each route to
 * its `chat.<op>` worker with the verified identity. Every answer is JSON, with or without the
 * trailing slash, 404s included.
 */
export async function buildChatFace(opts: ChatFaceOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.log.child({ face: 'chat' }) as FastifyBaseLogger,
    routerOptions: { ignoreTrailingSlash: true },
    bodyLimit: 16 * 1024 * 1024,
    trustProxy: opts.trustProxy ?? false,
    disableRequestLogging: process.env.LOG_REQUESTS !== 'true',
    genReqId: () => crypto.randomUUID(),
  });
  app.decorateRequest('session', null);

  // An empty body is "no body" (FastAPI then reports the missing fields), not a parse error.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(new HttpError(422, [{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: (err as Error).message } }]), undefined);
    }
  });

  app.addHook('onRequest', async (req) => {
    for (const h of Object.keys(req.headers)) if (SPOOFABLE.test(h)) delete req.headers[h];
  });

  app.setErrorHandler((err, req, reply) => {
    if (err instanceof HttpError) return sendJson(reply.headers(err.headers), err.status, { detail: err.detail });
    if (err instanceof BusError) {
      // A worker's 422 carries FastAPI's list; anything else is Open WebUI's `{detail: message}`.
      const list = (err.details as { detail?: unknown }).detail;
      if (err.status >= 500) req.log.error({ err: err.message, status: err.status }, 'chat request failed');
      // The worker found no such user behind a valid token (deleted): the session is over.
      if (err.status === 401 && err.message === OWUI_ERRORS.invalidToken) clearSessionCookies(reply);
      return sendJson(reply, err.status, { detail: err.status === 422 && Array.isArray(list) ? list : err.message });
    }
    const status = (err as { statusCode?: number }).statusCode;
    if (status && status >= 400 && status < 500) return sendJson(reply, status, { detail: err.message });
    req.log.error({ err }, 'chat request failed');
    return sendJson(reply, 500, { detail: OWUI_ERRORS.default });
  });
  app.setNotFoundHandler((_req, reply) => sendJson(reply, 404, { detail: 'Not Found' }));

  // Open WebUI answers {status: true}; here it also says whether the workers can be reached.
  app.get('/health', async (_req, reply) => (opts.bus() ? { status: true } : sendJson(reply, 503, { status: false })));
  app.get('/api/version', async () => ({ version: OWUI_VERSION }));

  async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<ChatIdentity> {
    const token = credential(req);
    if (!token) throw new HttpError(401, OWUI_ERRORS.notAuthenticated);
    if (token.startsWith('sk-')) throw new HttpError(403, 'API key usage is not enabled on this server.');
    const claims = verifyToken(opts.secret, token);
    let revoked = false;
    if (claims) {
      if (!opts.redisReady()) throw new HttpError(503, 'Session store unavailable; try again shortly.');
      revoked = await opts.sessions.isRevoked(claims.jti).catch(() => {
        throw new HttpError(503, 'Session store unavailable; try again shortly.');
      });
    }
    if (!claims || revoked) {
      clearSessionCookies(reply);
      throw new HttpError(401, OWUI_ERRORS.invalidToken);
    }
    req.session = { claims, token };
    return { userId: claims.id, jti: claims.jti, expiresAt: claims.exp ?? null };
  }

  for (const route of CHAT_ROUTES) {
    app.route({
      method: route.method,
      url: route.url,
      handler: async (req, reply) => handle(route, req, reply),
    });
  }

  // Completions stream: the worker sends the status and content type first, then the exact bytes
  // (SSE or JSON); a client that goes away cancels the stream, and the worker the upstream.
  for (const url of CHAT_COMPLETION_PATHS) {
    app.post(url, async (req, reply) => {
      const identity = await authenticate(req, reply);
      if (!req.body || typeof req.body !== 'object' || Array.isArray(req.body)) {
        throw new HttpError(422, [{ type: 'dict_type', loc: ['body'], msg: 'Input should be a valid dictionary', input: req.body ?? null }]);
      }
      const bus = opts.bus();
      if (!bus) throw new HttpError(503, 'The chat service is not connected to its bus yet; try again shortly.');
      const abort = new AbortController();
      reply.raw.on('close', () => abort.abort());
      const frames = busStream(
        bus,
        chatCompletionsContract,
        {
          identity,
          params: {},
          query: firstValues(req.query),
          body: req.body,
          client: { ip: req.ip, userAgent: String(req.headers['user-agent'] ?? '') },
        },
        { idleTimeoutMs: opts.streamIdleMs, signal: abort.signal, requestId: req.id },
      );
      const first = await frames.next();
      if (first.done || first.value.kind !== 'meta') {
        await frames.return(undefined);
        throw new BusError(502, 'the chat worker answered without a status');
      }
      const { status, contentType } = first.value.meta;
      reply.code(status).type(contentType);
      if (contentType.startsWith('text/event-stream')) reply.header('cache-control', 'no-cache').header('x-accel-buffering', 'no');
      return reply.send(Readable.from(chunks(frames)));
    });
  }

  async function handle(route: ChatRoute, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const identity = CHAT_OPS[route.op] === 'none' ? null : await authenticate(req, reply);
    if (route.body) {
      const r = route.body.safeParse(req.body);
      if (!r.success) {
        const detail = req.body === undefined
          ? [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]
          : validationDetail(r.error, req.body);
        throw new HttpError(422, detail);
      }
    }
    if (route.op === 'auths.signin') await limitSignin(req);
    if (route.op === 'auths.signout' && req.session) {
      await opts.sessions.revoke(req.session.claims.jti, req.session.claims.exp).catch(() => {
        throw new HttpError(503, 'Session store unavailable; the session was not revoked. Try again.');
      });
    }
    const bus = opts.bus();
    if (!bus) throw new HttpError(503, 'The chat service is not connected to its bus yet; try again shortly.');
    const out = await busRequest(
      bus,
      chatContracts[route.op],
      {
        identity,
        params: (req.params ?? {}) as Record<string, string>,
        query: firstValues(req.query),
        body: req.body ?? null,
        client: { ip: req.ip, userAgent: String(req.headers['user-agent'] ?? '') },
      },
      { requestId: req.id, timeoutMs: 30_000 },
    );
    let body = out.body;
    if (out.issueSession) {
      const expiresIn = parseExpiresIn(out.issueSession.expiresIn);
      const { token, claims } = mintToken(opts.secret, out.issueSession.userId, expiresIn);
      // The caller of /auths/add is the admin: the new user's token is returned, the admin's
      // own cookie is left alone.
      if (route.op !== 'auths.add') setSessionCookie(reply, token, claims.exp);
      body = { token, token_type: 'Bearer', expires_at: claims.exp ?? null, ...(body as object) };
    } else if (route.op === 'auths.session' && req.session) {
      setSessionCookie(reply, req.session.token, req.session.claims.exp);
      body = { ...(body as object), token: req.session.token };
    } else if (route.op === 'auths.signout') {
      clearSessionCookies(reply);
    }
    return sendJson(reply, out.status ?? 200, body);
  }

  async function limitSignin(req: FastifyRequest): Promise<void> {
    const email = String((req.body as { email?: unknown }).email ?? '');
    if (!opts.redisReady()) throw new HttpError(503, 'Sign-in is unavailable while the session store is down; try again shortly.');
    const verdict = await opts.sessions.attemptSignin(email, req.ip).catch(() => {
      throw new HttpError(503, 'Sign-in is unavailable while the session store is down; try again shortly.');
    });
    if (!verdict.allowed) {
      throw new HttpError(429, OWUI_ERRORS.rateLimited, { 'retry-after': String(Math.ceil(verdict.retryAfterMs / 1000)) });
    }
  }

  function setSessionCookie(reply: FastifyReply, token: string, exp: number | undefined): void {
    const parts = [`token=${token}`, 'Path=/', 'HttpOnly', `SameSite=${cap(opts.cookie.sameSite)}`];
    if (exp !== undefined) {
      parts.push(`Expires=${new Date(exp * 1000).toUTCString()}`, `Max-Age=${Math.max(0, exp - Math.floor(Date.now() / 1000))}`);
    }
    if (opts.cookie.secure) parts.push('Secure');
    appendCookie(reply, parts.join('; '));
  }

  return app;
}

function clearSessionCookies(reply: FastifyReply): void {
  for (const name of SESSION_COOKIES) appendCookie(reply, `${name}=""; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/`);
}

function appendCookie(reply: FastifyReply, cookie: string): void {
  const prev = reply.getHeader('set-cookie');
  const list = prev === undefined ? [] : Array.isArray(prev) ? prev.map(String) : [String(prev)];
  reply.header('set-cookie', [...list.filter((c) => !c.startsWith(cookie.slice(0, cookie.indexOf('=') + 1))), cookie]);
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Open WebUI's order: `Authorization: Bearer`, then the `token` cookie, then `x-api-key`. */
export function credential(req: FastifyRequest): string | undefined {
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && /^bearer /i.test(auth)) {
    const t = auth.slice(7).trim();
    if (t) return t;
  }
  const fromCookie = cookieValue(req.headers.cookie, 'token');
  if (fromCookie) return fromCookie;
  const apiKey = req.headers['x-api-key'];
  return typeof apiKey === 'string' && apiKey ? apiKey : undefined;
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== name) continue;
    let v = part.slice(eq + 1).trim();
    if (v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
    try {
      v = decodeURIComponent(v);
    } catch {
      // a malformed escape is taken as it is
    }
    return v || undefined;
  }
  return undefined;
}

async function* chunks(frames: AsyncGenerator<{ kind: string; data?: Uint8Array }>): AsyncGenerator<Buffer> {
  for await (const f of frames) if (f.kind === 'chunk' && f.data) yield Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength);
}

function firstValues(q: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((q ?? {}) as Record<string, unknown>)) out[k] = String(Array.isArray(v) ? v[0] : v);
  return out;
}

/** Always JSON, even for `true`, `null` or a string (Fastify would send a bare string as text). */
function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(JSON.stringify(body ?? null));
}
