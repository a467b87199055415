import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync, type FastifyPluginOptions } from 'fastify';
import fp from 'fastify-plugin';
import { httpDuration, httpRequests, streamsInFlight, type Logger, type Trace } from '@gatehouse/common';
import { edgeTracing } from './trace.ts';
import { NOT_VALIDATED } from './api-docs.ts';

/**
 * Headers that must never reach the bus or any later code from outside: bus metadata (`Nats-*`),
 * the bus's own headers (`Gh-*`) and internal identity (`X-Gatehouse-*`). One list for every face.
 */
export const SPOOFABLE_HEADER = /^(nats-|gh-|x-gatehouse-)/i;

/** What every face's HTTP server is made of; each face says only what differs. */
export interface FaceServerOptions {
  face: 'speech' | 'llm' | 'vector' | 'chat';
  log: Logger;
  /** Log every request (LOG_REQUESTS=true); off by default, the hot path logs nothing. */
  logRequests: boolean;
  bodyLimit: number;
  /** Fastify's requestTimeout; 0 = none (long generations: the bus idle timeout bounds silence). */
  requestTimeout?: number;
  keepAliveTimeout?: number;
  /** Fastify's trustProxy (EDGE_TRUST_PROXY): which X-Forwarded-For hops name the client. */
  trustProxy?: boolean | number | string[];
  /** Request id format (the LLM face uses Anthropic's `req_…`). */
  genReqId?: () => string;
  /** Answer `/x` and `/x/` alike (Open WebUI's FastAPI does). */
  ignoreTrailingSlash?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** performance.now() when the request arrived (Qdrant's `time`, logs). */
    startedAt: number;
    /** The request's trace (kit/trace.ts): its logs carry it, bus calls send it (`{ trace: req.trace }`). */
    trace: Trace;
  }
}

/**
 * EDGE_TRUST_PROXY for Fastify. A hop count keeps its meaning (trust the nearest N hops, as
 * Express and proxy-addr read it): newer Fastify 5 releases read a bare number as "trust nobody", so the
 * count goes in as a function.
 */
function fastifyTrustProxy(tp: FaceServerOptions['trustProxy']): boolean | string[] | ((addr: string, hop: number) => boolean) {
  if (typeof tp === 'number') return (_addr, hop) => hop < tp;
  return tp ?? false;
}

/**
 * The one way to build a face: a Fastify server with the edge's common behaviour (request ids,
 * timing, spoofable headers dropped before anything else looks at the request), and the face
 * itself as a plugin registered on it. The plugin is not encapsulated (fastify-plugin), so its
 * hooks, error handler and 404 handler cover every route, unknown paths included.
 */
export async function buildFace<O extends FastifyPluginOptions>(server: FaceServerOptions, face: FastifyPluginAsync<O>, opts: O): Promise<FastifyInstance> {
  const tracing = await edgeTracing(server.face, server.genReqId ?? (() => crypto.randomUUID()), server.log);
  const app = Fastify({
    loggerInstance: server.log.child({ face: server.face }) as FastifyBaseLogger,
    bodyLimit: server.bodyLimit,
    requestTimeout: server.requestTimeout ?? 120_000,
    keepAliveTimeout: server.keepAliveTimeout ?? 72_000,
    trustProxy: fastifyTrustProxy(server.trustProxy),
    logController: new LogController({ disableRequestLogging: !server.logRequests }),
    genReqId: tracing.genReqId,
    routerOptions: {
      ...(server.ignoreTrailingSlash ? { ignoreTrailingSlash: true } : {}),
      // Fastify's default (100) answers a longer parameter with its own 414 JSON, before any hook:
      // not in the face's format and past its gate. Node refuses request lines over its 16 KiB
      // header limit first, so with this every path reaches routing, the gate and the handler.
      maxParamLength: 16_384,
    },
  });
  app.setChildLoggerFactory(tracing.childLogger);
  // Route schemas are zod, for types and the OpenAPI document: Fastify never runs them (api-docs.ts).
  app.setValidatorCompiler(NOT_VALIDATED);
  app.decorateRequest('startedAt', 0);
  app.decorateRequest('trace', null as unknown as Trace);
  // A callback hook, not an async one: no promise per request. Header names are lower case here,
  // so the first letter rules out most of them before the pattern runs.
  app.addHook('onRequest', (req, reply, done) => {
    req.startedAt = performance.now();
    tracing.onRequest(req, reply);
    const h = req.headers;
    for (const name in h) {
      const c = name.charCodeAt(0);
      if ((c === 110 || c === 103 || c === 120) && SPOOFABLE_HEADER.test(name)) delete h[name]; // n, g, x
    }
    done();
  });
  // Metrics (common/src/metrics.ts): children bound once per route, method and status, so a
  // request costs one increment and one observation; a streamed answer is counted in flight
  // until its socket closes (which also covers a client that goes away mid-stream).
  const counted = new Map<string, { n: ReturnType<typeof httpRequests.labels>; t: ReturnType<typeof httpDuration.labels> }>();
  const streams = streamsInFlight.labels({ face: server.face });
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (payload !== null && typeof payload === 'object' && typeof (payload as { pipe?: unknown }).pipe === 'function') {
      streams.inc();
      reply.raw.once('close', () => streams.dec());
    }
    done(null, payload);
  });
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? '(unmatched)';
    const key = `${route} ${req.method} ${reply.statusCode}`;
    let c = counted.get(key);
    if (!c) {
      c = { n: httpRequests.labels({ face: server.face, route, method: req.method, status: String(reply.statusCode) }), t: httpDuration.labels({ face: server.face, route }) };
      // Unmatched paths all share one key; the map stays as small as the route table.
      counted.set(key, c);
    }
    c.n.inc();
    c.t.observe((performance.now() - req.startedAt) / 1000);
    done();
  });
  await app.register(fp(face), opts);
  return app;
}
