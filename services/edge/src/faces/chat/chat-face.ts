import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fastifyCookie from '@fastify/cookie';
import { registerCsrfCheck } from './csrf.ts';
import {
  Bytes,
  CHAT_CATALOG,
  CHAT_PLATFORM_VERSION,
  latestChangelog,
  CHAT_ROUTES,
  chatContracts,
  OWUI_ERRORS,
  validationDetail,
  type ChatCatalogEntry,
  type ChatEdgeDuties,
  type ChatIdentity,
  type ChatOpRequest,
  type ChatRoute,
  type ValidationItem,
  ChatOpReply,
  plainReplyBody,
} from '@gatehouse/contracts';
import { busRequestBytes, BusError, jsonBytes, parseJson, type Bus } from '@gatehouse/common';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  buildFace,
  catalogRouteSchema,
  headerValue,
  jsonDepthExceeds,
  MAX_JSON_DEPTH,
  registerApiDocs,
  requireBus,
  type ApiDocsOptions,
  type FaceServerOptions,
  type StreamSlots,
} from '../../kit/index.ts';
import type { SessionStore } from './session-store.ts';
import { registerWebUi, type WebUiOptions } from './web-ui.ts';
import { registerLiveEvents } from './live-events.ts';
import { fileRoutes, sendDownload, type RouteHandler } from './files-routes.ts';
import { oauthRoutes, type OAuthEdgeOptions } from './oauth-routes.ts';
import { ApiKeyGate } from './api-keys.ts';
import { peerTrust, type TrustedHeaderConfig } from './api-keys-trusted-header.ts';
import { clearSessionCookies, sessionAuth } from './session-auth.ts';
import { edgeDuties, editsAnswer, sendJson, type Duties } from './edge-duties.ts';
import { completionsRoute, invalid } from './completions-route.ts';

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
  /**
   * `/openapi.json` and `/docs` (ENV=dev, as Open WebUI serves them only then); otherwise those
   * paths are the web UI's, as any other page.
   */
  apiDocs?: boolean;
}

/** How long an operation that answers bytes (file content, an export) may take to put them in the object store. */
const BYTES_TIMEOUT_MS = 10 * 60 * 1000;
const JSON_TYPE = 'application/json; charset=utf-8';
const NO_DUTIES: Duties = {};

/** The chat face's OpenAPI document (ENV=dev). */
const CHAT_DOCS: ApiDocsOptions = {
  title: 'Open WebUI (Gatehouse chat platform)',
  description: `Open WebUI ${CHAT_PLATFORM_VERSION}'s API. Sign in with POST /api/v1/auths/signin; then \`Authorization: Bearer <token>\`, the \`token\` cookie, or an API key (\`sk-…\`).`,
  errorEnvelope: { type: 'object', properties: { detail: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] } } },
  errors: { 422: 'Validation error (FastAPI\'s list in `detail`)', 503: 'The workers or the session store cannot be reached' },
  securitySchemes: { bearer: { type: 'http', scheme: 'bearer' }, cookie: { type: 'apiKey', in: 'cookie', name: 'token' } },
  security: [{ bearer: [] }, { cookie: [] }],
};
const BYTES_DOC = { description: 'The bytes (a file, an export)', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } };
/** What each kind of caller may be refused, besides the common answers. */
const CHAT_STATUS: Record<ChatRoute['auth'], Record<number, string>> = {
  none: {},
  any: { 401: 'Not signed in, or the token is invalid' },
  verified: { 401: 'Not signed in, or the token is invalid', 403: 'A pending account' },
  admin: { 401: 'Not signed in, or the token is invalid', 403: 'Not an admin' },
};

/** The edge's own handlers, one per kind the catalog names in `edge.handler` (none missing). */
type OwnHandlers = Record<NonNullable<ChatEdgeDuties['handler']>, RouteHandler>;

/**
 * The chat platform face (Open WebUI 0.10.2's HTTP API on :8080) as a plugin. It authenticates —
 * session token from `Authorization: Bearer`, else the `token` cookie, else `x-api-key`; signature,
 * expiry and revocation checked here (session-auth.ts) — validates bodies with the catalog's forms,
 * does what the catalog's `edge` duties say (edge-duties.ts), and sends each route to its
 * `chat.<op>` worker with the verified identity. Every answer is JSON, with or without the trailing
 * slash, 404s included.
 */
export const chatFace: FastifyPluginAsync<ChatFaceOptions> = async (app, opts) => {
  const bus = requireBus(opts.bus, 'The chat service is not connected to its bus yet; try again shortly.');
  await app.register(fastifyCookie);
  registerCsrfCheck(app, opts.allowedOrigins ?? []);
  app.decorateRequest('session', null);
  app.decorateRequest('apiKey', null);
  const keys = startApiKeys(app, opts);
  followRevocations(app, opts.sessions);
  installJsonParser(app);
  installErrorHandler(app);
  // Pages of the web UI (index.html at any non-API path) before the API's JSON 404.
  const webUi = opts.webUi ? await registerWebUi(app, opts.webUi) : undefined;
  app.setNotFoundHandler((req, reply) => webUi?.serve(req, reply) ?? sendJson(reply, 404, { detail: 'Not Found' }));
  if (opts.apiDocs) await registerApiDocs(app, CHAT_DOCS);
  publicRoutes(app, opts);

  const { authenticate, stillValid } = sessionAuth({ secret: opts.secret, sessions: opts.sessions, redisReady: opts.redisReady, keys });
  const envelope = (req: FastifyRequest, identity: ChatIdentity | null, body: unknown): ChatOpRequest => ({
    identity,
    params: (req.params ?? {}) as Record<string, string>,
    query: firstValues(req.query),
    body,
    client: { ip: req.ip, userAgent: headerValue(req.headers, 'user-agent') ?? '' },
  });

  // The caller's own events, live (Server-Sent Events; live-events.ts).
  registerLiveEvents(app, { bus, authenticate, stillValid });
  // The OAuth / OIDC browser flow and back-channel logout (oauth-routes.ts): never JSON in, JSON out.
  const oauth = oauthRoutes(app, {
    bus,
    envelope,
    secret: opts.secret,
    cookie: opts.cookie,
    redisReady: opts.redisReady,
    revoke: (jti, exp) => opts.sessions.revoke(jti, exp),
    ...(opts.oauth ? { oauth: opts.oauth } : {}),
  });
  const duties = edgeDuties({
    bus,
    envelope,
    secret: opts.secret,
    cookie: opts.cookie,
    sessions: opts.sessions,
    redisReady: opts.redisReady,
    trustedPeer: peerTrust(opts.trustProxy),
    signoutRedirect: oauth.signoutRedirect,
    ...(opts.trustedHeader ? { trustedHeader: opts.trustedHeader } : {}),
  });

  /** Every catalog route but the edge's own: JSON in, the worker's JSON (or bytes) out, with the entry's duties. */
  async function forward(route: ChatRoute, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const entry: ChatCatalogEntry = CHAT_CATALOG[route.op];
    const d = entry.edge ?? NO_DUTIES;
    const identity = route.auth === 'none' ? null : await authenticate(req, reply);
    checkBody(route, req.body);
    const answered = await duties.before(d, req, reply);
    if (answered) return answered;
    // An operation answering bytes first copies them into the object store: give it longer.
    const timeoutMs = entry.reply === Bytes ? BYTES_TIMEOUT_MS : (opts.requestTimeoutMs ?? 30_000);
    const bytes = await busRequestBytes(bus(), chatContracts[route.op], jsonBytes(envelope(req, identity, req.body ?? null)), { trace: req.trace, timeoutMs });
    // A plain 200 (most answers) goes to the client as the worker wrote it, unless this edge adds to it.
    const plain = editsAnswer(d) ? undefined : plainReplyBody(bytes);
    if (plain) return reply.code(200).type(JSON_TYPE).send(Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength));
    const out = ChatOpReply.parse(parseJson(bytes));
    // Bytes (a file's content, an export): the worker named an object to stream.
    if (out.download) return sendDownload(bus(), reply, out.download);
    return sendJson(reply, out.status ?? 200, await duties.after(d, out, req, reply));
  }

  // Multipart uploads, the status event stream (files-routes.ts), the OIDC flow; every other route is forward().
  const maxMb = opts.fileMaxSizeMb ?? 100;
  const files = await fileRoutes(app, { bus, authenticate, envelope, handle: forward, maxFileBytes: Math.floor(maxMb * 1024 * 1024), maxFileLabel: `${maxMb} MB`, uploadTimeoutMs: opts.uploadTimeoutMs });
  const own: OwnHandlers = { ...files, ...oauth.routes };
  const routes = app.withTypeProvider<ZodTypeProvider>();
  for (const route of CHAT_ROUTES) {
    const entry: ChatCatalogEntry = CHAT_CATALOG[route.op];
    const handler = entry.edge?.handler ? own[entry.edge.handler] : forward;
    routes.route({
      method: route.method,
      url: route.url,
      schema: catalogRouteSchema(route, route.op, route.body, [route.op.split('.')[0]!]),
      config: { docs: { reply: entry.reply === Bytes ? BYTES_DOC : entry.reply, status: CHAT_STATUS[route.auth] } },
      handler: (req, reply) => handler(route, req, reply),
    });
  }
  completionsRoute(app, { bus, authenticate, envelope, streamIdleMs: opts.streamIdleMs, streamSlots: opts.streamSlots, streamMaxMs: opts.streamMaxMs });
};

/** API keys are checked from a cache that follows the keys' changes (api-keys.ts). */
function startApiKeys(app: FastifyInstance, opts: ChatFaceOptions): ApiKeyGate {
  const keys = new ApiKeyGate({ bus: opts.bus, log: app.log as never, ...(opts.apiKeyCacheTtlMs ? { ttlMs: opts.apiKeyCacheTtlMs } : {}) });
  app.addHook('onClose', async () => keys.stop());
  return keys;
}

/** Revocation checks answered from memory while the store's channel is followed (session-store.ts). */
function followRevocations(app: FastifyInstance, sessions: ChatFaceOptions['sessions']): void {
  sessions.watch?.();
  app.addHook('onClose', async () => sessions.unwatch?.());
}

/** JSON bodies as FastAPI reads them: an empty body is "no body" (FastAPI then reports the missing fields), not a parse error. */
function installJsonParser(app: FastifyInstance): void {
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
}

/** The face's one error handler: every refusal in Open WebUI's `{detail}` (a 422 with FastAPI's list). */
function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err, req, reply) => {
    if (err instanceof BusError) {
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
}

/** Routes anyone may read: health, version, change log. */
function publicRoutes(app: FastifyInstance, opts: ChatFaceOptions): void {
  // Open WebUI answers {status: true}; here it also says whether the workers can be reached.
  app.get('/health', async (_req, reply) => (opts.bus() ? { status: true } : sendJson(reply, 503, { status: false })));
  app.get('/api/version', async () => ({ version: OWUI_VERSION }));
  // Open WebUI's main.py: the parsed CHANGELOG.md, 5 newest versions; here Gatehouse's own notes.
  app.get('/api/changelog', async () => latestChangelog());
}

/** The catalog's form, checked as FastAPI does before the handler (422 with its list). */
function checkBody(route: ChatRoute, body: unknown): void {
  if (!route.body) return;
  const r = route.body.safeParse(body);
  if (r.success) return;
  throw invalid(body === undefined ? [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null } satisfies ValidationItem] : validationDetail(r.error, body));
}

function firstValues(q: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((q ?? {}) as Record<string, unknown>)) out[k] = String(Array.isArray(v) ? v[0] : v);
  return out;
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
