import closeWithGrace from 'close-with-grace';
import {
  connectBus,
  createLogger,
  openGateStore,
  parseEnv,
  reconcileEnvKey,
  type Bus,
  serveMetricsFromEnv,
} from '@gatehouse/common';
import type { FastifyInstance } from 'fastify';
import type { Face } from '@gatehouse/contracts';
import { EdgeEnv, effectiveProxyKey } from './config.ts';
import { LiveGates } from './gates/live-gates.ts';
import { FACES, type EdgeContext, type ExtraListener } from './faces/registry.ts';
import { RequestStats } from './faces/vector/request-stats.ts';
import { Redis } from 'ioredis';
import { SightingRecorder, shutdownTracing } from '@gatehouse/common';
import { loadSessionSecret } from './faces/chat/session-secret.ts';
import { StreamSlots } from './kit/index.ts';

/**
 * Composition root of the edge. The listeners come up first with every gate `unknown` (503), so
 * an edge that cannot reach NATS is visibly degraded instead of silently open; the bus and the
 * gate store are attached when NATS answers.
 */
const env = parseEnv(EdgeEnv);
const log = createLogger('edge');
// Prometheus metrics on METRICS_PORT when set (common/src/metrics.ts).
await serveMetricsFromEnv('edge', log);
const faces = env.EDGE_FACES;
const gatedFaces = faces.filter((f): f is Face => f !== 'chat');
let proxyKey: string | undefined;
try {
  proxyKey = faces.includes('llm') ? effectiveProxyKey(env) : undefined;
} catch (err) {
  process.stderr.write(`Invalid configuration:\n  ${(err as Error).message}\n`);
  process.exit(1);
}
/** Each face's key variable at start-up, as documented in docs/gates.md. */
const startupKeys: Partial<Record<Face, { value: string | undefined | { key?: string; readOnlyKey?: string }; source: string }>> = {
  speech: { value: env.API_KEY, source: 'API_KEY' },
  llm: { value: proxyKey, source: env.LLMPROXY_PROXY_KEY ? 'LLMPROXY_PROXY_KEY' : env.LLMPROXY_CONFIG ? 'proxyKey in LLMPROXY_CONFIG' : 'LLMPROXY_PROXY_KEY' },
  vector: {
    value: { key: env.VECTORDB__SERVICE__API_KEY || undefined, readOnlyKey: env.VECTORDB__SERVICE__READ_ONLY_API_KEY || undefined },
    source: 'VECTORDB__SERVICE__API_KEY / VECTORDB__SERVICE__READ_ONLY_API_KEY',
  },
};
// Sightings are best effort: a Redis outage must never fail or slow a request. The chat face's
// sessions are not: it answers 503 while Redis is away (no offline queue, so nothing hangs).
// The concurrency limits count in Redis, and per edge while it is away (kit/stream-limits.ts).
// Auto-pipelining: the commands of one event-loop turn (slot leases and releases of many requests,
// session checks) leave in one socket write instead of one each; a write per command was 7 % of
// the LLM edge's CPU at 100 in flight (docs/benchmarks.md).
const redis = new Redis(env.REDIS_URL, { lazyConnect: false, enableOfflineQueue: false, maxRetriesPerRequest: 1, enableAutoPipelining: true });
redis.on('error', () => undefined);
const gates = new LiveGates(gatedFaces, log);
let bus: Bus | undefined;
let stopping = false;

const servers: FastifyInstance[] = [];
/** Listeners besides the faces' HTTP ports (the vector face's gRPC), closed with them. */
const extraListeners: ExtraListener[] = [];
/** Concurrent generations per caller, counted across edges (kit/stream-limits.ts; docs/limits.md). */
const allSlots: StreamSlots[] = [];
const context: EdgeContext = {
  env,
  log,
  server: { log, logRequests: env.LOG_REQUESTS, trustProxy: env.EDGE_TRUST_PROXY },
  gates,
  bus: () => bus,
  redis,
  slots(face, limit) {
    const s = new StreamSlots({ face, limit, redis, ns: env.GATEHOUSE_NS, leaseMs: env.STREAM_SLOT_LEASE_MS });
    allSlots.push(s);
    return s;
  },
  vectorStats: new RequestStats(),
  ...(faces.includes('vector') ? { vectorSightings: new SightingRecorder(redis, 'vector', env.GATEHOUSE_NS) } : {}),
  sessionSecret,
};
for (const face of faces) {
  const entry = FACES[face];
  const app = await entry.build(context);
  const port = entry.port(env);
  await app.listen({ host: env.EDGE_HOST, port });
  servers.push(app);
  log.info({ face, address: `http://${env.EDGE_HOST}:${port}`, instance: gates.instance }, `${face} face listening`);
  if (entry.alsoListen) extraListeners.push(await entry.alsoListen(context));
}

function sessionSecret(): string {
  try {
    const { secret, source } = loadSessionSecret({ value: env.WEBUI_SECRET_KEY, file: env.WEBUI_SECRET_KEY_FILE, length: env.WEBUI_SECRET_KEY_LENGTH });
    log.info({ source, ...(source === 'env' ? {} : { file: env.WEBUI_SECRET_KEY_FILE }) }, 'chat session secret loaded');
    return secret;
  } catch (err) {
    process.stderr.write(`cannot load the chat session secret: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

async function attachBus(): Promise<void> {
  for (let attempt = 1; !stopping; attempt++) {
    try {
      const b = await connectBus({ url: env.NATS_URL, name: `edge ${gates.instance}`, log });
      const store = await openGateStore(b);
      // Start-up is where the key variables speak: a changed one flips the gate, an
      // unchanged one leaves runtime flips alone.
      for (const face of gatedFaces) {
        const k = startupKeys[face]!;
        const outcome = await reconcileEnvKey(store, face, k.value, `edge ${gates.instance} (${k.source} at start-up)`);
        log.info({ face, outcome }, `${face} gate reconciled with ${k.source}`);
      }
      await gates.follow(store);
      watchConnection(b);
      bus = b;
      return;
    } catch (err) {
      const delay = Math.min(5000, 250 * attempt);
      log.error({ err: (err as Error).message, retryInMs: delay }, 'cannot attach to NATS / the gate store; gated routes answer 503');
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

function watchConnection(b: Bus): void {
  void (async () => {
    for await (const s of b.nc.status()) {
      if (s.type === 'disconnect') gates.lost('lost connection to NATS');
      if (s.type === 'reconnect') await gates.reload().catch((err) => log.error({ err }, 'gate reload failed'));
    }
  })();
}

void attachBus();

closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
  stopping = true;
  if (err) log.error({ err }, 'edge stopping after an error');
  else log.info({ signal }, 'edge stopping');
  await Promise.all([...servers.map((s) => s.close()), ...extraListeners.map((l) => l.close())]);
  await gates.stop();
  for (const s of allSlots) s.stop();
  redis.disconnect();
  await bus?.nc.drain();
  await shutdownTracing(); // spans still batched go out (a no-op when tracing is off)
});
