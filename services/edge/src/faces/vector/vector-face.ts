import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { vectorContracts, type VectorOp } from '@gatehouse/contracts';
import { busRequest, BusError, type Bus, type Logger, type SightingRecorder } from '@gatehouse/common';
import { installGateGuard } from '../../gates/gate-guard.ts';
import { exemptMatcher } from '../../gates/normalise-path.ts';
import type { LiveGates } from '../../gates/live-gates.ts';
import { qdrantError, toQdrantError, vectorRefusal } from './qdrant-errors.ts';
import { validateVectorBody } from './vector-validation.ts';

/** Qdrant's whitelist (reference §2): `/`, `/healthz`, and everything under `/readyz` and `/livez`. */
export const VECTOR_EXEMPT = ['/', '/healthz', '/readyz', '/readyz/*', '/livez', '/livez/*'] as const;

/** What `GET /` reports: Qdrant clients warn when the major/minor version is far from theirs. */
export const QDRANT_VERSION = { title: 'qdrant - vector search engine', version: '1.19.0', commit: '74f3e85b9473c62560006c043e13737ce6b48412' };

export interface VectorFaceOptions {
  gates: LiveGates;
  log: Logger;
  bus: () => Bus | undefined;
  /** Records which key each client presents (rollout preflight); absent when Redis is not configured. */
  sightings?: SightingRecorder;
  /** Fastify's trustProxy (EDGE_TRUST_PROXY): which X-Forwarded-For hops name the client in sightings. */
  trustProxy?: boolean | number | string[];
}

/** Qdrant reads `api-key` first — present, even empty, it decides — then `Authorization: Bearer `. */
export function vectorCredential(h: FastifyRequest['headers']): string | undefined {
  const apiKey = h['api-key'];
  if (apiKey !== undefined) return Array.isArray(apiKey) ? (apiKey[0] ?? '') : apiKey;
  const auth = h.authorization;
  return typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7) : undefined;
}

/** method + route → operation. */
const ROUTES: [string, string, VectorOp][] = [
  ['GET', '/collections', 'collections.list'],
  ['PUT', '/collections/:collection', 'collections.create'],
  ['GET', '/collections/:collection', 'collections.get'],
  ['PATCH', '/collections/:collection', 'collections.update'],
  ['DELETE', '/collections/:collection', 'collections.delete'],
  ['GET', '/collections/:collection/exists', 'collections.exists'],
  ['PUT', '/collections/:collection/index', 'index.create'],
  ['DELETE', '/collections/:collection/index/:field', 'index.delete'],
  ['PUT', '/collections/:collection/points', 'points.upsert'],
  ['POST', '/collections/:collection/points', 'points.retrieve'],
  ['GET', '/collections/:collection/points/:id', 'points.get'],
  ['POST', '/collections/:collection/points/delete', 'points.delete'],
  ['POST', '/collections/:collection/points/payload', 'points.setPayload'],
  ['PUT', '/collections/:collection/points/payload', 'points.overwritePayload'],
  ['POST', '/collections/:collection/points/payload/delete', 'points.deletePayload'],
  ['POST', '/collections/:collection/points/payload/clear', 'points.clearPayload'],
  ['PUT', '/collections/:collection/points/vectors', 'points.updateVectors'],
  ['POST', '/collections/:collection/points/vectors/delete', 'points.deleteVectors'],
  ['POST', '/collections/:collection/points/batch', 'points.batch'],
  ['POST', '/collections/:collection/points/scroll', 'points.scroll'],
  ['POST', '/collections/:collection/points/count', 'points.count'],
  ['POST', '/collections/:collection/points/search', 'points.search'],
  ['POST', '/collections/:collection/points/search/batch', 'points.searchBatch'],
  ['POST', '/collections/:collection/points/query', 'points.query'],
  ['POST', '/collections/:collection/points/query/batch', 'points.queryBatch'],
];

declare module 'fastify' {
  interface FastifyRequest {
    startedAt: number;
    vectorOp: VectorOp | null;
  }
}

export async function buildVectorFace(opts: VectorFaceOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.log.child({ face: 'vector' }) as FastifyBaseLogger,
    requestTimeout: 300_000,
    keepAliveTimeout: 72_000,
    bodyLimit: 32 * 1024 * 1024, // Qdrant's service.max_request_size_mb default
    trustProxy: opts.trustProxy ?? false,
    disableRequestLogging: process.env.LOG_REQUESTS !== 'true',
    genReqId: () => crypto.randomUUID(),
  });
  app.decorateRequest('startedAt', 0);
  app.decorateRequest('vectorOp', null);

  app.addHook('onRequest', async (req) => {
    req.startedAt = performance.now();
    // Seen also while the gate is open, and also when refused: that is what preflight needs.
    if (!exempt(req.url.split('?')[0] ?? '')) {
      opts.sightings?.record(req.ip, String(req.headers['user-agent'] ?? ''), vectorCredential(req.headers));
    }
  });

  const exempt = exemptMatcher(VECTOR_EXEMPT);
  installGateGuard(app, {
    face: 'vector',
    gates: opts.gates,
    gated: (_req, path, tricky) => tricky || !exempt(path),
    credential: (req) => vectorCredential(req.headers),
    refusal: vectorRefusal,
    // Before routing (onRequest) the route is not known yet: decide from method and path.
    writes: (req) => isWrite(req.method, req.url),
  });

  app.setErrorHandler((err, req, reply) => {
    const e = toQdrantError(err, req.startedAt);
    if (e.status >= 500) req.log.error({ err }, 'vector request failed');
    return reply.code(e.status).send(e.body);
  });
  app.setNotFoundHandler((req, reply) => {
    const e = qdrantError(404, `Not found: ${req.method} ${req.url.split('?')[0]}`, req.startedAt);
    return reply.code(404).send(e.body);
  });

  app.get('/', async () => QDRANT_VERSION);
  app.get('/healthz', async (_req, reply) => reply.type('text/plain').send('healthz check passed'));
  app.get('/livez', async (_req, reply) => reply.type('text/plain').send('healthz check passed'));
  app.get('/readyz', async (_req, reply) => {
    const ready = opts.bus() !== undefined && opts.gates.degraded().length === 0;
    return reply.code(ready ? 200 : 503).type('text/plain').send(ready ? 'all shards are ready' : 'some shards are not ready');
  });

  for (const [method, url, op] of ROUTES) {
    app.route({
      method: method as 'GET',
      url,
      handler: async (req: FastifyRequest<{ Params: { collection?: string; id?: string; field?: string } }>) => {
        const bus = opts.bus();
        if (!bus) throw new BusError(503, 'Service unavailable: the vector store is not connected to its bus');
        const body = req.body ?? {};
        if (method !== 'GET' && method !== 'DELETE') validateVectorBody(op, body);
        const { result } = await busRequest(
          bus,
          vectorContracts[op],
          {
            collection: req.params.collection,
            id: req.params.id,
            field: req.params.field,
            query: Object.fromEntries(Object.entries(req.query as Record<string, unknown>).map(([k, v]) => [k, String(v)])),
            body,
          },
          { requestId: req.id, timeoutMs: 300_000 },
        );
        return { result, status: 'ok', time: (performance.now() - req.startedAt) / 1000 };
      },
    });
  }
  return app;
}

/** Whether a request writes, from method and path alone (reads: GET, and the POST query routes). */
export function isWrite(method: string, url: string): boolean {
  if (method === 'GET' || method === 'HEAD') return false;
  const path = (url.split('?')[0] ?? '').replace(/\/+$/, '');
  const m = /^\/collections\/[^/]+(\/.*)?$/.exec(path);
  const rest = m?.[1] ?? '';
  if (method === 'POST' && /^\/points(\/(scroll|count|search|search\/batch|query|query\/batch))?$/.test(rest)) return false;
  return true;
}
