import { createServer, type Server } from 'node:http';
import client from 'prom-client';
import type { Logger } from 'pino';
import { commonEnv, type CommonEnv } from './env.ts';

/**
 * Prometheus metrics of one process (prom-client): the process's own (CPU, memory, file
 * descriptors, event loop lag, GC) and what the service records — HTTP requests at the edge, bus
 * handlers in every worker, gates, outbox and webhook deliveries. Served as Prometheus text on
 * `METRICS_PORT` by `serveMetrics` (off when unset: no listener, and recording is a few counter
 * increments). infra/prometheus/ has a scrape configuration and a Grafana dashboard.
 *
 * One registry per process; every metric carries the `service` label (edge, chat-worker…) so one
 * dashboard reads all of them.
 */
export const registry = new client.Registry();
let started = false;

/** Name this process and start the default metrics. Call once, at start-up. */
export function initMetrics(service: string): void {
  if (started) return;
  started = true;
  registry.setDefaultLabels({ service });
  client.collectDefaultMetrics({ register: registry });
}

const seconds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Edge: every HTTP request, by face, route pattern (never the raw path: bounded cardinality), method and status. */
export const httpRequests = new client.Counter({
  name: 'gatehouse_http_requests_total',
  help: 'HTTP requests answered by the edge, by face, route pattern, method and status',
  labelNames: ['face', 'route', 'method', 'status'] as const,
  registers: [registry],
});
export const httpDuration = new client.Histogram({
  name: 'gatehouse_http_request_duration_seconds',
  help: 'Time from request arrival to the end of the answer (a stream: its whole length), by face and route pattern',
  labelNames: ['face', 'route'] as const,
  buckets: seconds,
  registers: [registry],
});
export const streamsInFlight = new client.Gauge({
  name: 'gatehouse_http_streams_in_flight',
  help: 'Streamed answers (speech audio, LLM and chat completions) being sent right now, by face',
  labelNames: ['face'] as const,
  registers: [registry],
});

/** Bus: each worker's handling of requests (the bus side of every face's latency). */
export const busHandled = new client.Histogram({
  name: 'gatehouse_bus_handler_duration_seconds',
  help: 'Time a worker spent on one bus request, by subject and status (200, the error status it answered, 499 when the requester cancelled)',
  labelNames: ['subject', 'status'] as const,
  buckets: seconds,
  registers: [registry],
});
export const busInFlight = new client.Gauge({
  name: 'gatehouse_worker_requests_in_flight',
  help: 'Bus requests a worker is handling right now (its pool usage), by subject',
  labelNames: ['subject'] as const,
  registers: [registry],
});

/** Gates (edge): state per face (1 enforced, 0 open, -1 unknown → failing closed) and the revision applied. */
export const gateState = new client.Gauge({
  name: 'gatehouse_gate_state',
  help: 'Gate state applied by this edge per face: 1 enforced, 0 open, -1 unknown (failing closed)',
  labelNames: ['face'] as const,
  registers: [registry],
});
export const gateRevision = new client.Gauge({
  name: 'gatehouse_gate_revision',
  help: 'Revision of the gate record this edge applied, per face',
  labelNames: ['face'] as const,
  registers: [registry],
});

/** Webhook dispatcher: attempts by outcome, and committed → delivered time. */
export const webhookAttempts = new client.Counter({
  name: 'gatehouse_webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome (delivered, retry, dead, refused)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});
export const webhookLatency = new client.Histogram({
  name: 'gatehouse_webhook_delivery_seconds',
  help: 'Time of one delivery attempt (request → answer), by outcome',
  labelNames: ['outcome'] as const,
  buckets: seconds,
  registers: [registry],
});

/**
 * LLM proxy worker: usage per route and per client. `route` is the routing table's route
 * (`default`, `background`, `think`, `longContext`, `webSearch`, `model:<pattern>`), `direct` for a
 * `<provider>/<model>` id and `native` for pass-through; `client` the verified proxy key's
 * fingerprint (`sha256:…`) or `anonymous` — both bounded by the configuration, never a raw key.
 */
export const llmRequests = new client.Counter({
  name: 'gatehouse_llm_requests_total',
  help: 'LLM proxy requests answered by this worker, by route and client key fingerprint',
  labelNames: ['route', 'client'] as const,
  registers: [registry],
});
export const llmErrors = new client.Counter({
  name: 'gatehouse_llm_errors_total',
  help: 'LLM proxy requests that ended in an error (an error status, or an error event after the stream began), by route and client',
  labelNames: ['route', 'client'] as const,
  registers: [registry],
});
export const llmTokens = new client.Counter({
  name: 'gatehouse_llm_tokens_total',
  help: 'Tokens of translated answers (the upstream count, or the estimate), by route, client and direction (in, out)',
  labelNames: ['route', 'client', 'direction'] as const,
  registers: [registry],
});
export const llmUpstreamAttempts = new client.Counter({
  name: 'gatehouse_llm_upstream_attempts_total',
  help: 'Upstream attempts of routed requests, by route, target (provider/model) and outcome (ok, fallback: failed before the first byte and the next target was tried, error: the answer given)',
  labelNames: ['route', 'target', 'outcome'] as const,
  registers: [registry],
});

/** Serve `GET /metrics` on its own port (loopback unless a host is given). */
export async function serveMetrics(opts: { port: number; host?: string; log: Logger }): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics here\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: unknown) => {
        opts.log.error({ err }, 'metrics collection failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics collection failed\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '127.0.0.1', () => resolve());
  });
  server.unref();
  opts.log.info({ port: opts.port, host: opts.host ?? '127.0.0.1' }, 'metrics served on /metrics');
  return server;
}

/** `METRICS_PORT` (and `METRICS_HOST`) from the environment: serve when set. */
export async function serveMetricsFromEnv(
  service: string,
  log: Logger,
  env: Pick<CommonEnv, 'METRICS_PORT' | 'METRICS_HOST'> = commonEnv(),
): Promise<Server | undefined> {
  initMetrics(service);
  if (env.METRICS_PORT === undefined) return undefined;
  return serveMetrics({ port: env.METRICS_PORT, host: env.METRICS_HOST, log });
}
