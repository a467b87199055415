import { headers as natsHeaders, nanos, RetentionPolicy, StorageType } from 'nats';
import type { Sql } from 'postgres';
import { EVENTS_DUPLICATE_WINDOW_MS, EVENTS_STREAM, EVENTS_SUBJECTS } from '@gatehouse/contracts';
import client from 'prom-client';
import { registry, type Bus, type Logger } from '@gatehouse/common';

const BATCH = 200;

const eventsPublished = new client.Counter({
  name: 'gatehouse_events_published_total',
  help: 'Platform events published to the EVENTS stream by the outbox relay, by event name',
  labelNames: ['event'] as const,
  registers: [registry],
});
/** Read at scrape time (one indexed query), never on the write path. */
let outboxSql: Sql | undefined;
const outbox = async () => {
  if (!outboxSql) return { n: 0, age: 0 };
  const [r] = await outboxSql<{ n: number; age: number | null }[]>`
    select count(*)::int as n, extract(epoch from now() - min(created_at))::float8 as age from outbox where published_at is null`;
  return { n: r?.n ?? 0, age: r?.age ?? 0 };
};
new client.Gauge({
  name: 'gatehouse_outbox_pending_events',
  help: 'Events committed to the outbox and not yet published to the EVENTS stream',
  registers: [registry],
  async collect() {
    this.set((await outbox()).n);
  },
});
new client.Gauge({
  name: 'gatehouse_outbox_lag_seconds',
  help: 'Age of the oldest event still waiting in the outbox (0 when it is empty)',
  registers: [registry],
  async collect() {
    this.set((await outbox()).age);
  },
});
/** Published rows are kept this long (to answer "was it published?"), then swept. */
const KEEP_PUBLISHED = '7 days';

/** Create the events stream if it is missing (idempotent; every replica may call it). */
export async function ensureEventsStream(bus: Bus): Promise<string> {
  const jsm = await bus.nc.jetstreamManager();
  const name = bus.bucket(EVENTS_STREAM);
  try {
    await jsm.streams.info(name);
  } catch {
    await jsm.streams
      .add({
        name,
        subjects: [bus.subject(EVENTS_SUBJECTS)],
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        duplicate_window: nanos(EVENTS_DUPLICATE_WINDOW_MS),
        max_age: nanos(30 * 24 * 3600 * 1000),
      })
      .catch(async (err) => {
        // Another replica created it between info and add: fine; anything else is real.
        await jsm.streams.info(name).catch(() => {
          throw err;
        });
      });
  }
  return name;
}

/**
 * Publishes the outbox in order: rows are claimed with FOR UPDATE SKIP LOCKED (replicas share
 * the work, never the same row), published with their event id as `Nats-Msg-Id`, then stamped
 * in the same transaction. A crash after the publish and before the commit leaves the row
 * pending; its re-publish falls inside the stream's duplicate window and is dropped, so each
 * event is in the stream once. Woken by NOTIFY at commit, with a slow poll as a safety net.
 */
export class OutboxRelay {
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private stopped = false;

  constructor(
    private readonly sql: Sql,
    private readonly bus: Bus,
    private readonly stream: string,
    private readonly channel: string,
    private readonly log: Logger,
    private readonly pollMs = 2000,
  ) {}

  async start(): Promise<void> {
    outboxSql = this.sql;
    const sub = await this.sql.listen(this.channel, () => this.kick());
    this.unlisten = () => sub.unlisten();
    this.timer = setInterval(() => this.kick(), this.pollMs);
    this.timer.unref();
    this.kick();
  }

  /** Publish what is pending (coalesced: one pass at a time, one more if poked meanwhile). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((err) => this.log.warn({ err: (err as Error).message }, 'outbox relay pass failed; will retry'))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Resolves when nothing is pending (tests and shutdown use it). */
  async flush(): Promise<void> {
    for (let i = 0; i < 50; i++) {
      await this.running;
      const [counted] = await this.sql<{ n: number }[]>`select count(*)::int as n from outbox where published_at is null`;
      if (counted!.n === 0) return;
      this.kick();
      await this.running;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.unlisten?.().catch(() => undefined);
    await this.running;
  }

  private async drain(): Promise<void> {
    for (;;) {
      const n = await this.sql.begin(async (tx) => {
        const rows = await tx<{ seq: string; event_id: string; subject: string; event: unknown }[]>`
          select seq, event_id, subject, event from outbox where published_at is null
          order by seq limit ${BATCH} for update skip locked`;
        for (const r of rows) {
          eventsPublished.inc({ event: String((r.event as { event?: unknown }).event ?? 'unknown') });
          const h = natsHeaders();
          h.set('Content-Type', 'application/json');
          await this.bus.js.publish(this.bus.subject(r.subject), JSON.stringify(r.event), {
            msgID: r.event_id,
            expect: { streamName: this.stream },
            headers: h,
          });
        }
        if (rows.length) await tx`update outbox set published_at = now() where seq = any(${rows.map((r) => r.seq)}::bigint[])`;
        return rows.length;
      });
      if (n < BATCH) break;
    }
    await this.sql`delete from outbox where published_at < now() - ${KEEP_PUBLISHED}::interval`;
  }
}
