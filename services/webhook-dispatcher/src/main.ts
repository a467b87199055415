import { z } from 'zod';
import { ConfigReporter, connectBus, createLogger, openConfigStore, DEFAULT_DATABASE_URL, DEFAULT_NATS_URL, localFetchAllowed, parseEnv, requireMigrated, SchemaNotMigratedError, startWorker, serveMetricsFromEnv } from '@gatehouse/common';
import postgres from 'postgres';
import { Dispatcher } from './dispatcher.ts';
import { WebhookRegistry } from './registry.ts';
import { DEFAULT_SCHEDULE, parseSchedule } from './schedule.ts';

/**
 * Webhook dispatcher: delivers the chat platform's `EVENTS` stream to the webhooks of the registry
 * (chat schema tables `webhook`, `webhook_delivery`). Run as many replicas as you like: they share
 * one durable consumer and the delivery table (README.md).
 */
const env = parseEnv(
  z.object({
    NATS_URL: z.string().default(DEFAULT_NATS_URL),
    DATABASE_URL: z.string().default(DEFAULT_DATABASE_URL),
    CHAT_SCHEMA: z.string().regex(/^[a-z_][a-z0-9_]*$/, 'a lowercase SQL identifier').default('chat'),
    WEBHOOK_DB_POOL: z.coerce.number().int().min(1).max(100).default(10),
    ENABLE_LOCAL_WEB_FETCH: z.string().optional(),
    ENABLE_RAG_LOCAL_WEB_FETCH: z.string().optional(),
    /** Delays before each retry (e.g. `5s,1m,1h`); the delivery is dead-lettered after the last. */
    WEBHOOK_RETRY_SCHEDULE: z.string().default(DEFAULT_SCHEDULE),
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
    WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
    WEBHOOK_BREAKER_FAILURES: z.coerce.number().int().min(1).default(5),
    WEBHOOK_BREAKER_COOLDOWN_MS: z.coerce.number().int().min(0).default(30_000),
    /** A webhook with no successful delivery for this long is disabled (default 3 days). */
    WEBHOOK_DISABLE_AFTER_MS: z.coerce.number().int().min(0).default(3 * 24 * 3600 * 1000),
    WEBHOOK_LEASE_MS: z.coerce.number().int().min(100).default(60_000),
    WEBHOOK_POLL_MS: z.coerce.number().int().min(10).default(1000),
    /** How often (ms) the registry's revision is re-read besides the watch, and the bucket checked against Postgres. */
    CONFIG_RECONCILE_MS: z.coerce.number().int().min(100).default(10_000),
  }),
);
const log = createLogger('webhook-dispatcher');
// Prometheus metrics on METRICS_PORT when set (common/src/metrics.ts).
await serveMetricsFromEnv('webhook-dispatcher', log);
const schedule = parseSchedule(env.WEBHOOK_RETRY_SCHEDULE);
const sql = postgres(env.DATABASE_URL, {
  max: env.WEBHOOK_DB_POOL,
  onnotice: () => undefined,
  connection: { search_path: `${env.CHAT_SCHEMA}, public` },
  types: { bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } },
});
try {
  await requireMigrated(sql, { folder: 'chat', schema: env.CHAT_SCHEMA });
} catch (err) {
  const why = err instanceof SchemaNotMigratedError ? err.message : `cannot read the chat schema (${(err as Error).message}); run scripts/start or set DATABASE_URL`;
  process.stderr.write(`webhook dispatcher not started: ${why}\n`);
  process.exit(1);
}
const bus = await connectBus({ url: env.NATS_URL, name: 'webhook-dispatcher', log });
// The registry travels the config bucket (group `webhooks`, registry.ts); the presence record says
// which revision this replica runs (configs/status, scripts/config status).
const configStore = await openConfigStore(bus);
const reporter = new ConfigReporter(configStore, 'webhook-dispatcher', log);
const registry = new WebhookRegistry(sql, `webhook-dispatcher ${reporter.instance}`, log, env.CONFIG_RECONCILE_MS);
reporter.track(registry.running);
await registry.start(configStore);
await reporter.start();
const dispatcher = new Dispatcher(sql, bus, log, {
  allowLocal: localFetchAllowed({ ENABLE_LOCAL_WEB_FETCH: env.ENABLE_LOCAL_WEB_FETCH, ENABLE_RAG_LOCAL_WEB_FETCH: env.ENABLE_RAG_LOCAL_WEB_FETCH }),
  schedule,
  timeoutMs: env.WEBHOOK_TIMEOUT_MS,
  concurrency: env.WEBHOOK_CONCURRENCY,
  breakerFailures: env.WEBHOOK_BREAKER_FAILURES,
  breakerCooldownMs: env.WEBHOOK_BREAKER_COOLDOWN_MS,
  disableAfterMs: env.WEBHOOK_DISABLE_AFTER_MS,
  leaseMs: env.WEBHOOK_LEASE_MS,
  pollMs: env.WEBHOOK_POLL_MS,
  durable: 'webhook-dispatcher',
}, registry);
await dispatcher.start();
// A NATS service without endpoints: `$SRV.PING.webhooks` is how the compose healthcheck and
// `nats micro ls` see a live replica.
const service = await startWorker(bus, { name: 'webhooks', version: '1.0.0', description: 'webhook dispatcher' });
log.info({ schema: env.CHAT_SCHEMA, retries: schedule.length, configRevision: registry.running.applied.revision }, 'webhook dispatcher serving');
let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, async () => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: sig }, 'webhook dispatcher stopping');
    await service.stop(1000);
    await dispatcher.stop();
    registry.stop();
    await reporter.stop();
    await bus.nc.drain().catch(() => undefined);
    await sql.end({ timeout: 5 });
    process.exit(0);
  });
}
