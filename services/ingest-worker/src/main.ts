import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { z } from 'zod';
import type { JsMsg } from 'nats';
import {
  ConfigReporter,
  connectBus,
  createLogger,
  DEFAULT_DATABASE_URL,
  DEFAULT_NATS_URL,
  LiveConfig,
  openConfigStore,
  parseEnv,
  requireMigrated,
  SchemaNotMigratedError,
  serveMetricsFromEnv,
  continueTrace,
  TRACEPARENT,
} from '@gatehouse/common';
import {
  createEmbedder,
  ensureIngestConsumer,
  localUploadStore,
  markFailed,
  openChatDb,
  Outbox,
  parseSettings,
  runIngestJob,
  SETTINGS_GROUP,
  tokenEncoding,
  type ChatSettings,
  type ChunkOptions,
  type IngestJob,
} from '@gatehouse/chat-worker/ingest';

/**
 * The ingest worker: pulls jobs from the INGEST work queue (the chat worker's knowledge/ingest-queue.ts) and runs
 * each (its knowledge/ingest.ts: extract → chunk → embed → store), off the request path. Its own
 * process, so a heavy PDF never slows the chat worker's answers; start N copies to share the
 * queue. A job whose process dies is delivered again after the ack wait; a failing one is retried
 * with a growing delay until max-deliver, then its file is `failed` with the reason.
 */
const env = parseEnv(
  z.object({
    NATS_URL: z.string().default(DEFAULT_NATS_URL),
    DATABASE_URL: z.string().default(DEFAULT_DATABASE_URL),
    /** The chat worker's schema (files and chunks live there). */
    CHAT_SCHEMA: z.string().regex(/^[a-z_][a-z0-9_]*$/, 'a lowercase SQL identifier').default('chat'),
    /** The upload store's directory, shared with the chat worker (a compose volume). */
    UPLOAD_DIR: z.string().default(join(import.meta.dirname, '..', '..', '..', '.state', 'uploads')),
    /** Open WebUI's chunking: characters per chunk and overlap between neighbours. */
    CHUNK_SIZE: z.coerce.number().int().min(100).default(1000),
    CHUNK_OVERLAP: z.coerce.number().int().min(0).default(100),
    /** Jobs this process runs at once. */
    INGEST_CONCURRENCY: z.coerce.number().int().min(1).max(32).default(2),
    /** Chunks per embedding request. */
    INGEST_EMBED_BATCH: z.coerce.number().int().min(1).max(2048).default(64),
    /** A job silent this long (no ack, no heartbeat) is delivered again: its process is taken for dead. */
    INGEST_ACK_WAIT_MS: z.coerce.number().int().min(500).default(60_000),
    /** Deliveries of a job before its file is given up as `failed`. */
    INGEST_MAX_DELIVER: z.coerce.number().int().min(1).max(100).default(5),
    /** Pause before each embedding batch; 0 in production (tests slow a job down to crash it midway). */
    INGEST_BATCH_DELAY_MS: z.coerce.number().int().min(0).default(0),
  }),
);
if (env.CHUNK_OVERLAP >= env.CHUNK_SIZE) {
  process.stderr.write('Invalid configuration:\n  CHUNK_OVERLAP: must be smaller than CHUNK_SIZE\n');
  process.exit(1);
}
const log = createLogger('ingest-worker');
// Prometheus metrics on METRICS_PORT when set (common/src/metrics.ts).
await serveMetricsFromEnv('ingest-worker', log);
const sql = openChatDb(env.DATABASE_URL, env.CHAT_SCHEMA, env.INGEST_CONCURRENCY + 1);
try {
  await requireMigrated(sql, { folder: 'chat', schema: env.CHAT_SCHEMA });
} catch (err) {
  const why = err instanceof SchemaNotMigratedError ? err.message : `cannot read the chat schema (${(err as Error).message}); run scripts/start or set DATABASE_URL`;
  process.stderr.write(`ingest worker not started: ${why}\n`);
  process.exit(1);
}

const bus = await connectBus({ url: env.NATS_URL, name: 'ingest-worker', log });
const { stream, consumer: durable } = await ensureIngestConsumer(bus, { ackWaitMs: env.INGEST_ACK_WAIT_MS, maxDeliver: env.INGEST_MAX_DELIVER });
const consumer = await bus.js.consumers.get(stream, durable);
const outbox = new Outbox(randomUUID(), `${env.CHAT_SCHEMA}_outbox`);
const uploads = localUploadStore(env.UPLOAD_DIR);
const envEmbedder = createEmbedder(process.env);
// The admin's retrieval settings (chunking, embeddings) as the chat workers run them: the config
// bucket's chat.settings, applied live (docs/config.md). Until a chat worker announced any, the
// environment's values (the same ones the chat worker seeds its settings from) are used.
const configStore = await openConfigStore(bus);
const settings = new LiveConfig<ChatSettings>({ group: SETTINGS_GROUP, parse: parseSettings, initial: parseSettings({}), log });
await settings.follow(configStore);
const configReporter = new ConfigReporter(configStore, 'ingest-worker', log);
configReporter.track(settings);
await configReporter.start();

/** Chunking and embedder for the next job, from the settings running now. */
async function jobSettings() {
  if (settings.applied.revision === 0) return { chunking: { size: env.CHUNK_SIZE, overlap: env.CHUNK_OVERLAP } as ChunkOptions, embedder: envEmbedder };
  const s = settings.value;
  const chunking: ChunkOptions = { size: s.CHUNK_SIZE, overlap: s.CHUNK_OVERLAP, splitter: s.TEXT_SPLITTER };
  if (s.TEXT_SPLITTER === 'token') chunking.encoding = await tokenEncoding(s.TIKTOKEN_ENCODING_NAME);
  return { chunking, embedder: createEmbedder(s) };
}
const failDeps = { sql, emit: outbox.emitChecked, log };

/** Retry delay after the n-th failed delivery: 1 s, 4 s, 16 s… capped at 2 minutes. */
const backoffMs = (delivery: number): number => Math.min(120_000, 1000 * 4 ** Math.max(0, delivery - 1));

async function handle(m: JsMsg): Promise<void> {
  // The job's lines carry the trace of the request that queued it (ingest-queue.ts), or a new one.
  const jobLog = log.child(continueTrace(m.headers?.get(TRACEPARENT)).logFields);
  let job: IngestJob;
  try {
    job = z.object({ file_id: z.string(), use_content: z.boolean().optional() }).parse(m.json());
  } catch {
    jobLog.error({ seq: m.seq }, 'malformed ingest job dropped');
    return m.term();
  }
  if (m.info.redelivered) jobLog.info({ file: job.file_id, delivery: m.info.deliveryCount }, 'job delivered again: an earlier attempt did not finish');
  // Tell the server the job is alive at least twice per ack wait, however long a step takes.
  const beat = setInterval(() => m.working(), Math.max(250, env.INGEST_ACK_WAIT_MS / 3));
  try {
    const { chunking, embedder } = await jobSettings();
    const outcome = await runIngestJob(
      { sql, uploads, embedder, emit: outbox.emitChecked, log: jobLog, chunking, batchSize: env.INGEST_EMBED_BATCH, batchDelayMs: env.INGEST_BATCH_DELAY_MS, heartbeat: () => m.working() },
      job,
    );
    m.ack();
    jobLog.debug({ file: job.file_id, outcome, delivery: m.info.deliveryCount }, 'ingest job done');
  } catch (err) {
    const reason = (err as Error).message;
    if (m.info.deliveryCount >= env.INGEST_MAX_DELIVER) {
      await markFailed({ ...failDeps, log: jobLog }, job.file_id, `Processing failed after ${m.info.deliveryCount} attempts: ${reason}`).catch((e) => jobLog.error({ err: (e as Error).message }, 'could not mark the file failed'));
      m.term();
    } else {
      jobLog.warn({ file: job.file_id, delivery: m.info.deliveryCount, err: reason }, 'ingest job failed; will retry');
      m.nak(backoffMs(m.info.deliveryCount));
    }
  } finally {
    clearInterval(beat);
  }
}

// A job whose process died on its last delivery is never delivered again: the server says so in
// an advisory, and the file is marked failed here instead of staying `pending` for ever.
const advisories = bus.nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.${durable}`);
void (async () => {
  const jsm = await bus.nc.jetstreamManager();
  for await (const a of advisories) {
    try {
      const { stream_seq } = a.json<{ stream_seq: number }>();
      const stored = await jsm.streams.getMessage(stream, { seq: stream_seq });
      const { file_id } = stored.json<IngestJob>();
      const [row] = await sql<{ status: string | null }[]>`select data ->> 'status' as status from file where id = ${file_id}`;
      if (row && row.status !== 'completed' && row.status !== 'failed') await markFailed(failDeps, file_id, `Processing stopped: no attempt finished (${env.INGEST_MAX_DELIVER} deliveries).`);
      await jsm.streams.deleteMessage(stream, stream_seq).catch(() => undefined);
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'max-deliveries advisory not handled');
    }
  }
})();

let stopping = false;
const inFlight = new Set<Promise<void>>();
async function loop(): Promise<void> {
  while (!stopping) {
    const m = await consumer.next({ expires: 5000 }).catch((err) => {
      log.warn({ err: (err as Error).message }, 'ingest pull failed; retrying');
      return new Promise<null>((r) => setTimeout(() => r(null), 1000));
    });
    if (!m || stopping) {
      // A job pulled while stopping goes back at once, for another process.
      m?.nak();
      continue;
    }
    const p = handle(m);
    inFlight.add(p);
    await p.finally(() => inFlight.delete(p));
  }
}

// A NATS service with no endpoints: `$SRV.PING.ingest` answers while this process is connected
// (the compose healthcheck and `nats micro ls` see it).
const service = await bus.nc.services.add({ name: 'ingest', version: '1.0.0', description: 'Extracts, chunks and embeds uploaded files (INGEST work queue)' });
await bus.nc.flush();
log.info({ schema: env.CHAT_SCHEMA, stream, concurrency: env.INGEST_CONCURRENCY, embedder: await jobSettings().then((j) => j.embedder.model, (err: Error) => `unusable: ${err.message}`), configRevision: settings.applied.revision }, 'ingest worker serving on the bus');
for (let i = 0; i < env.INGEST_CONCURRENCY; i++) void loop();
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, async () => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: sig }, 'ingest worker stopping');
    // Jobs in flight finish (bounded: an unfinished one is delivered again elsewhere); an idle pull is not waited for.
    await Promise.race([Promise.allSettled([...inFlight]), new Promise((r) => setTimeout(r, 10_000))]);
    advisories.unsubscribe();
    await service.stop().catch(() => undefined);
    await bus.nc.drain().catch(() => undefined);
    await sql.end({ timeout: 5 });
    process.exit(0);
  });
}
