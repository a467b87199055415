import { AckPolicy, DeliverPolicy, headers as natsHeaders, nanos, RetentionPolicy, StorageType, type JetStreamManager, type MsgHdrs } from 'nats';
import { jsonBytes, TRACEPARENT, type Bus, type TraceCarrier } from '@gatehouse/common';

/**
 * The ingest work queue: a JetStream stream with work-queue retention (a job is gone once acked)
 * and one durable pull consumer that every ingest process (services/ingest-worker) shares. A job that is
 * not acked within the ack wait — its process crashed — is delivered again, up to max-deliver
 * times; the consumer naks failures with a growing delay. Names are namespaced like every
 * stream and bucket (GATEHOUSE_NS).
 */
export const INGEST_STREAM = 'INGEST';
export const INGEST_SUBJECT = 'ingest.file';
export const INGEST_CONSUMER = 'ingest';

/** One job: (re)process a file; `use_content` takes the text stored in data.content instead of extracting the bytes. */
export interface IngestJob {
  file_id: string;
  use_content?: boolean;
}

export interface IngestQueue {
  /** Queue each file for (re)processing; resolves once the jobs are durably queued. */
  enqueue(fileIds: string[], opts?: { useContent?: boolean; trace?: TraceCarrier }): Promise<void>;
}

/** Create the stream if it is missing (idempotent; every process may call it). */
export async function ensureIngestStream(bus: Bus, jsm?: JetStreamManager): Promise<string> {
  const m = jsm ?? (await bus.nc.jetstreamManager());
  const name = bus.bucket(INGEST_STREAM);
  try {
    await m.streams.info(name);
  } catch {
    await m.streams
      .add({ name, subjects: [bus.subject('ingest.>')], retention: RetentionPolicy.Workqueue, storage: StorageType.File, max_age: nanos(7 * 24 * 3600 * 1000) })
      .catch(async (err) => {
        // Another process created it between info and add: fine; anything else is real.
        await m.streams.info(name).catch(() => {
          throw err;
        });
      });
  }
  return name;
}

export interface ConsumerSettings {
  /** How long a delivered job may go without an ack or a "working" heartbeat before it is redelivered. */
  ackWaitMs: number;
  /** Deliveries before the job is given up (the file is then `failed`). */
  maxDeliver: number;
}

/** Create or update the durable consumer every ingest process pulls from. */
export async function ensureIngestConsumer(bus: Bus, s: ConsumerSettings): Promise<{ stream: string; consumer: string }> {
  const jsm = await bus.nc.jetstreamManager();
  const stream = await ensureIngestStream(bus, jsm);
  const config = {
    durable_name: INGEST_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(s.ackWaitMs),
    max_deliver: s.maxDeliver,
    filter_subject: bus.subject(INGEST_SUBJECT),
  };
  try {
    await jsm.consumers.info(stream, INGEST_CONSUMER);
    await jsm.consumers.update(stream, INGEST_CONSUMER, { ack_wait: config.ack_wait, max_deliver: config.max_deliver });
  } catch {
    await jsm.consumers.add(stream, config).catch(async (err) => {
      await jsm.consumers.info(stream, INGEST_CONSUMER).catch(() => {
        throw err;
      });
    });
  }
  return { stream, consumer: INGEST_CONSUMER };
}

/** What operations reach as `ctx.ingest`: publish one job per file once the stream exists. */
export function createIngestQueue(bus: Bus): IngestQueue {
  let ready: Promise<string> | undefined;
  return {
    async enqueue(fileIds, opts = {}) {
      if (!fileIds.length) return;
      await (ready ??= ensureIngestStream(bus).catch((err) => {
        ready = undefined;
        throw err;
      }));
      const subject = bus.subject(INGEST_SUBJECT);
      // The job carries the request's trace (`traceparent` header): the ingest worker's lines for it carry its trace_id.
      let headers: MsgHdrs | undefined;
      if (opts.trace) (headers = natsHeaders()).set(TRACEPARENT, opts.trace.traceparent);
      // js.publish resolves when the stream has stored the job: durably queued.
      await Promise.all(fileIds.map((file_id) => bus.js.publish(subject, jsonBytes({ file_id, ...(opts.useContent ? { use_content: true } : {}) } satisfies IngestJob), { headers })));
    },
  };
}
