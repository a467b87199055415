import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { acceptedWithoutWait, qdrantBodyError, VECTOR_CATALOG, vectorContracts, type RequestContract, type VectorOp, type VectorOpRequest } from '@gatehouse/contracts';
import { busRequest, BusError, mayHaveLostInteger, parseExactJson, parseLossless, stringifyExactJson, type Bus, type SightingRecorder } from '@gatehouse/common';
import { envelope, forward, forwardable, JsonText, textOf, WORKER_VALIDATES } from './forward.ts';
import { installGateGuard } from '../../gates/gate-guard.ts';
import { exemptMatcher } from '../../gates/normalise-path.ts';
import type { LiveGates } from '../../gates/live-gates.ts';
import { bearerToken, buildFace, catalogRouteSchema, registerApiDocs, requireBus, type FaceServerOptions } from '../../kit/index.ts';
import { QDRANT_ERROR_ENVELOPE, qdrantError, toQdrantError, vectorRefusal } from './qdrant-errors.ts';
import type { RequestStats } from './request-stats.ts';
import { installServiceRoutes } from './service-routes.ts';
import { snapshotRoutes } from './snapshot-routes.ts';

/** Qdrant's whitelist (reference §2): `/`, `/healthz`, and everything under `/readyz` and `/livez`. */
export const VECTOR_EXEMPT = ['/', '/healthz', '/readyz', '/readyz/*', '/livez', '/livez/*'] as const;

/** What `GET /` reports: Qdrant clients warn when the major/minor version is far from theirs. */
export const QDRANT_VERSION = { title: 'qdrant - vector search engine', version: '1.19.0', commit: '74f3e85b9473c62560006c043e13737ce6b48412' };

export interface VectorFaceOptions {
  gates: LiveGates;
  /** The bus, or undefined while NATS is not connected (requests then get 503). */
  bus: () => Bus | undefined;
  /** Records which key each client presents (rollout preflight); absent when Redis is not configured. */
  sightings?: SightingRecorder;
  /** Request statistics for `/telemetry` and `/metrics`, shared with the gRPC port (main.ts). */
  requestStats?: RequestStats;
  /** VECTOR_REQUEST_TIMEOUT_MS (default 300 s). */
  requestTimeoutMs?: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The vector catalog operation a route serves: the gate reads from it whether the request writes. */
    vectorOp?: VectorOp;
  }
}

/**
 * Qdrant reads `api-key` first — present, even empty, it decides — then `Authorization: Bearer `
 * (case-sensitive). The gRPC port passes its metadata in the same form.
 */
export function vectorCredential(h: { 'api-key'?: string | string[]; authorization?: string }): string | undefined {
  const apiKey = h['api-key'];
  if (apiKey !== undefined) return Array.isArray(apiKey) ? (apiKey[0] ?? '') : apiKey;
  return bearerToken(h.authorization, { exact: true });
}

/**
 * Whether a request writes (a read-only key gets 403): the matched route's catalog entry says. The
 * router has matched before the gate runs (onRequest), so this is the operation that would run; a
 * path no route serves counts as a write unless it is a GET or HEAD.
 */
export function vectorWrites(req: FastifyRequest): boolean {
  const op = req.routeOptions.config.vectorOp;
  return op ? VECTOR_CATALOG[op].writes : req.method !== 'GET' && req.method !== 'HEAD';
}

/**
 * Refuse a malformed body at the edge, without a bus hop, with Qdrant's 400 ("Format error in
 * JSON body") or 422 ("Validation error in JSON body").
 */
export function validateBody(schema: z.ZodType, body: unknown): void {
  const parsed = schema.safeParse(body);
  if (parsed.success) return;
  const e = qdrantBodyError(parsed.error);
  throw new BusError(e.status, e.message);
}

/** The vector face (Qdrant's REST API) as a plugin: gate, key sightings, Qdrant's envelopes, catalog routes. */
export const vectorFace: FastifyPluginAsync<VectorFaceOptions> = async (app, opts) => {
  const exempt = exemptMatcher(VECTOR_EXEMPT);
  app.addHook('onRequest', async (req) => {
    // Seen also while the gate is open, and also when refused: that is what preflight needs.
    if (!exempt(req.url.split('?')[0] ?? '')) {
      opts.sightings?.record(req.ip, String(req.headers['user-agent'] ?? ''), vectorCredential(req.headers));
    }
  });

  // Point ids are u64: an integer beyond 2^53 must reach the worker, and come back, exactly (as a
  // BigInt, written as its digits); JSON.parse and JSON.stringify would round it or throw. Fastify's
  // own parser runs first (empty bodies, bad JSON and prototype poisoning keep their errors); only a
  // body whose numbers show a possibly rounded integer is parsed again, losslessly.
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    // Bodies the worker validates travel as the client's text (forward.ts): parsed once, there.
    const op = req.routeOptions.config?.vectorOp;
    if (op && WORKER_VALIDATES.has(op) && forwardable(body as string)) return done(null, new JsonText(body as string));
    defaultJson(req, body as string, (err, parsed) => {
      if (err) return done(err, undefined);
      done(null, mayHaveLostInteger(parsed) ? parseLossless(body as string) : parsed);
    });
  });
  app.setReplySerializer((payload) => stringifyExactJson(payload));

  installGateGuard(app, {
    face: 'vector',
    gates: opts.gates,
    gated: (_req, path, tricky) => tricky || !exempt(path),
    credential: (req) => vectorCredential(req.headers),
    refusal: vectorRefusal,
    writes: vectorWrites,
  });

  app.setErrorHandler((err, req, reply) => {
    const e = toQdrantError(err, req.startedAt);
    if (e.status >= 500) req.log.error({ err }, 'vector request failed');
    // Strict mode's rate limits (429) say when to retry, as Qdrant's `Retry-After` header.
    const retryAfter = err instanceof BusError ? err.details.retry_after : undefined;
    if (typeof retryAfter === 'number') void reply.header('retry-after', String(retryAfter));
    return reply.code(e.status).send(e.body);
  });
  app.setNotFoundHandler((req, reply) => {
    const e = qdrantError(404, `Not found: ${req.method} ${req.url.split('?')[0]}`, req.startedAt);
    return reply.code(404).send(e.body);
  });

  await registerApiDocs(app, {
    title: 'Gatehouse vector store (Qdrant-compatible)',
    description:
      'Qdrant 1.19 REST on Postgres + pgvector. When the gate is enforced every path except /, /healthz, /readyz and /livez needs `api-key: <key>` or `Authorization: Bearer <key>`; a read-only key may call what does not write (this document included).',
    errorEnvelope: QDRANT_ERROR_ENVELOPE,
    errors: { 400: 'Format error in JSON body', 401: 'Missing or wrong key (gate enforced; plain text)', 403: 'A read-only key on a write', 422: 'Validation error in JSON body', 503: 'Worker down or gate state unavailable (fail closed)' },
    securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'api-key' }, bearer: { type: 'http', scheme: 'bearer' } },
    security: [{ apiKey: [] }, { bearer: [] }],
  });
  const publicDoc = { config: { docs: { public: true as const } } };
  app.get('/', publicDoc, async () => QDRANT_VERSION);
  app.get('/healthz', publicDoc, async (_req, reply) => reply.type('text/plain').send('healthz check passed'));
  app.get('/livez', publicDoc, async (_req, reply) => reply.type('text/plain').send('healthz check passed'));
  app.get('/readyz', publicDoc, async (_req, reply) => {
    const ready = opts.bus() !== undefined && opts.gates.degraded().length === 0;
    return reply.code(ready ? 200 : 503).type('text/plain').send(ready ? 'all shards are ready' : 'some shards are not ready');
  });

  const bus = requireBus(opts.bus, 'Service unavailable: the vector store is not connected to its bus');
  // Telemetry, metrics, issues, cluster (service-routes.ts); snapshot bytes (snapshot-routes.ts).
  installServiceRoutes(app, { bus, version: QDRANT_VERSION.version, ...(opts.requestStats ? { stats: opts.requestStats } : {}) });
  const special = await snapshotRoutes(app, bus);
  const routes = app.withTypeProvider<ZodTypeProvider>();
  for (const op of Object.keys(VECTOR_CATALOG) as VectorOp[]) {
    const entry: { routes: (typeof VECTOR_CATALOG)[VectorOp]['routes']; body?: z.ZodType; reply: z.ZodType } = VECTOR_CATALOG[op];
    // Every operation has the same envelope; only the reply schema differs, checked by busRequest.
    const contract = vectorContracts[op] as RequestContract<typeof VectorOpRequest, z.ZodObject<{ result: z.ZodType }>>;
    for (const route of entry.routes) {
      routes.route({
        method: route.method,
        url: route.url,
        schema: catalogRouteSchema(route, op, entry.body, [op.split('.')[0]!]),
        config: { vectorOp: op, docs: { reply: special[op] ? entry.reply : z.object({ result: entry.reply, status: z.literal('ok'), time: z.number() }) } },
        handler: special[op] ?? (async (req: FastifyRequest<{ Params: { collection?: string; id?: string; field?: string } }>, reply: FastifyReply) => {
          const b = bus();
          const query = Object.fromEntries(Object.entries(req.query as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
          const { collection, id, field } = req.params;
          let result: unknown;
          if (req.body instanceof JsonText) {
            const bytes = await forward(b, op, contract, { collection, id, field, query }, req.body.text, { trace: req.trace, timeoutMs: opts.requestTimeoutMs ?? 300_000 });
            if (acceptedWithoutWait(op, req.query)) return reply.code(202).send({ status: 'accepted', time: (performance.now() - req.startedAt) / 1000 });
            const out = envelope(bytes, (performance.now() - req.startedAt) / 1000);
            if (out) return reply.type('application/json').send(out);
            ({ result } = parseExactJson(textOf(bytes)) as { result: unknown });
          } else {
            const body = req.body ?? {};
            if (entry.body) validateBody(entry.body, body);
            ({ result } = await busRequest(b, contract, { collection, id, field, query, body }, { trace: req.trace, timeoutMs: opts.requestTimeoutMs ?? 300_000 }));
          }
          if (acceptedWithoutWait(op, req.query)) return reply.code(202).send({ status: 'accepted', time: (performance.now() - req.startedAt) / 1000 });
          return { result, status: 'ok', time: (performance.now() - req.startedAt) / 1000 };
        }),
      });
    }
  }
};

export function buildVectorFace(server: Pick<FaceServerOptions, 'log' | 'logRequests' | 'trustProxy'>, opts: VectorFaceOptions): Promise<FastifyInstance> {
  // 32 MiB: Qdrant's service.max_request_size_mb default.
  // A collection name longer than Qdrant's 255 characters must reach the 422 of the name check,
  // not Fastify's 404 for an over-long path parameter.
  return buildFace({ ...server, face: 'vector', bodyLimit: 32 * 1024 * 1024, requestTimeout: 300_000 }, vectorFace, opts);
}
