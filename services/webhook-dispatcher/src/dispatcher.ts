import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg, type Subscription } from 'nats';
import type { Sql } from 'postgres';
import { ChatEvent, EVENTS_STREAM, EVENTS_SUBJECTS } from '@gatehouse/contracts';
import {
  publishPlatformEvent,
  WEBHOOKS_DUE_SUBJECT,
  signatureHeader,
  webhookBody,
  webhookMatches,
  deliveryId,
  type Bus,
  type LoadedWebhook,
  type Logger,
  webhookAttempts,
  webhookLatency,
} from '@gatehouse/common';
import type { WebhookRegistry } from './registry.ts';
import { nextDelay } from './schedule.ts';
import { Sender } from './send.ts';

export interface DispatcherOptions {
  allowLocal: boolean;
  schedule: number[];
  timeoutMs: number;
  /** Attempts in flight per webhook and replica. */
  concurrency: number;
  /** Consecutive failures that open an endpoint's circuit, and how long it stays open. */
  breakerFailures: number;
  breakerCooldownMs: number;
  /** A webhook failing (no success) for longer than this is switched off. */
  disableAfterMs: number;
  /** How long a claimed delivery is this replica's; after that (a crash) another takes it. */
  leaseMs: number;
  pollMs: number;
  /** The durable consumer's name (shared by every replica). */
  durable: string;
}

/** A delivery this replica holds (leased) and will attempt. */
interface Job {
  id: string;
  webhook_id: string;
  payload: ChatEvent;
  attempts: number;
  origin_ms: number;
  /** This replica's lease on the row (ms): a queued job whose lease has run out is handed back, not started. */
  lease_until: number;
}

/** Per-endpoint state on this replica: the concurrency limit's queue and the circuit breaker. */
interface Endpoint {
  active: number;
  queue: Job[];
  failures: number;
  openUntil: number;
  /** Known failing streak start (ms) mirrored from the table, to avoid a write per failure. */
  failingSince: number | null;
  /** Jobs were handed back to the table for want of room: take them again once it drains. */
  released: boolean;
  /** Moving average of an attempt's duration (ms), to size the queue this replica may lease. */
  avgMs: number;
}

/** Queued jobs per endpoint always allowed (a slow or unknown endpoint); beyond the cap they go back to the table. */
const QUEUE_CAP_FACTOR = 8;
/** Upper bound of one endpoint's queue on this replica, however fast it is (memory). */
const QUEUE_CAP_MAX = 20_000;
const CLAIM_BATCH = 500;

/**
 * The webhook dispatcher: reads `EVENTS` through one durable pull consumer (replicas share it, each
 * message goes to one), matches each event against every enabled webhook, records the deliveries
 * in `webhook_delivery` (leased to itself) before acknowledging the message — so a crash loses
 * nothing: an unacknowledged message comes again (the insert is idempotent per webhook and event),
 * a leased delivery whose replica died is taken by a poll once its lease runs out.
 *
 * Each endpoint has its own concurrency limit and circuit breaker here, so a slow or dead receiver
 * only ever holds its own deliveries. Failed attempts are rescheduled in the table (backoff with
 * jitter, Retry-After), dead-lettered after the schedule; an endpoint that has not succeeded for
 * `disableAfterMs` is disabled with a `webhook.disabled` event. The registry comes from the config
 * bucket's `webhooks` group (registry.ts: every replica applies each revision live); group targets
 * are resolved again for each batch. Due work queued outside (tests, replays, re-sends) is announced
 * on `webhooks.due`; the poll every `pollMs` takes retries and expired leases.
 */
export class Dispatcher {
  private readonly endpoints = new Map<string, Endpoint>();
  private readonly sender: Sender;
  private messages: ConsumerMessages | undefined;
  private dueSub: Subscription | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private pollAgain = false;
  private stopped = false;
  private consuming: Promise<void> | undefined;
  private readonly inflight = new Set<Promise<void>>();

  constructor(
    private readonly sql: Sql,
    private readonly bus: Bus,
    private readonly log: Logger,
    private readonly opts: DispatcherOptions,
    private readonly registry: WebhookRegistry,
  ) {
    this.sender = new Sender(opts.allowLocal, opts.timeoutMs, opts.concurrency);
  }

  private get hooks(): Map<string, LoadedWebhook> {
    return this.registry.hooks;
  }

  /** The registry must be started (its current revision loaded) before this. */
  async start(): Promise<void> {
    const stream = await this.waitForStream();
    const jsm = await this.bus.nc.jetstreamManager();
    const existing = await jsm.consumers.info(stream, this.opts.durable).catch(() => null);
    if (!existing) {
      await jsm.consumers
        .add(stream, {
          durable_name: this.opts.durable,
          ack_policy: AckPolicy.Explicit,
          // First start: from now on (a new dispatcher does not replay a month of history; replay is explicit).
          deliver_policy: DeliverPolicy.New,
          filter_subject: this.bus.subject(EVENTS_SUBJECTS),
          ack_wait: 30_000_000_000,
          max_ack_pending: 10_000,
        })
        .catch(async (err) => {
          // Another replica created it at the same moment.
          if (!(await jsm.consumers.info(stream, this.opts.durable).catch(() => null))) throw err;
        });
    }
    const consumer = await this.bus.js.consumers.get(stream, this.opts.durable);
    // Pull requests that expire every 5 s: a pull lost under load (its heartbeat missed) is replaced
    // within seconds instead of the default 30.
    this.messages = await consumer.consume({ max_messages: 1000, expires: 5000 });
    this.consuming = this.consume(this.messages);
    // Deliveries queued outside (a test, a replay, a re-send) are announced on a core subject: look
    // at once (every replica; SKIP LOCKED shares the rows). The poll stays for retries, expired
    // leases and a missed message.
    this.dueSub = this.bus.nc.subscribe(this.bus.subject(WEBHOOKS_DUE_SUBJECT), { callback: () => this.kick() });
    this.pollTimer = setInterval(() => this.kick(), this.opts.pollMs);
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    this.dueSub?.unsubscribe();
    await this.messages?.close().catch(() => undefined);
    await this.consuming?.catch(() => undefined);
    await this.polling;
    // Queued jobs go back to the table for whoever runs next; those in flight finish (bounded by the timeout).
    const queued = [...this.endpoints.values()].flatMap((e) => e.queue.splice(0));
    if (queued.length) await this.release(queued, Date.now());
    // Attempts that finish add their success writes: wait for those too (a few rounds at most).
    for (let round = 0; round < 5 && this.inflight.size; round++) await Promise.allSettled([...this.inflight]);
    this.sender.close();
  }

  private async waitForStream(): Promise<string> {
    const jsm = await this.bus.nc.jetstreamManager();
    const name = this.bus.bucket(EVENTS_STREAM);
    for (let i = 0; ; i++) {
      if (await jsm.streams.info(name).catch(() => null)) return name;
      if (i % 20 === 0) this.log.info({ stream: name }, 'waiting for the events stream (the chat worker creates it)');
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /**
   * Messages in order; what arrives together (everything the client has buffered by the next turn
   * of the event loop, at most 500) is recorded in one insert, then acknowledged. Batches are
   * recorded one after another, never on purpose delayed.
   */
  private async consume(messages: ConsumerMessages): Promise<void> {
    let batch: JsMsg[] = [];
    let chain: Promise<void> = Promise.resolve();
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      const b = batch;
      batch = [];
      if (!b.length) return;
      chain = chain.then(() => this.record(b)).catch((err) => this.log.error({ err: (err as Error).message }, 'recording deliveries failed; those messages will come again'));
    };
    for await (const m of messages) {
      batch.push(m);
      if (batch.length >= 500) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    }
    flush();
    await chain;
  }

  private async record(msgs: JsMsg[]): Promise<void> {
    const nowMs = Date.now();
    const rows: { id: string; webhook_id: string; event_id: string; event: string; payload: ChatEvent; origin_ms: number }[] = [];
    await this.registry.refreshMembers();
    for (const m of msgs) {
      let ev: ChatEvent;
      try {
        ev = ChatEvent.parse(m.json());
      } catch {
        this.log.warn({ subject: m.subject, seq: m.seq }, 'not an event envelope; skipped');
        continue;
      }
      // A webhook created, changed or deleted: its row committed with this event, so reading the
      // rows now makes every later event in the stream match against it. The bucket's announcement
      // may arrive after those events (a first delivery to a new webhook was missed that way).
      if (ev.event === 'config.webhook.updated') await this.registry.load();
      // The stream's timestamp: when the event was committed and published.
      const origin = Math.floor(m.info.timestampNanos / 1e6);
      for (const h of this.hooks.values()) {
        if (webhookMatches(h, ev)) rows.push({ id: deliveryId(h.id, ev.id), webhook_id: h.id, event_id: ev.id, event: ev.event, payload: ev, origin_ms: origin });
      }
    }
    const mine: Job[] = [];
    if (rows.length) {
      const lease = nowMs + this.opts.leaseMs;
      // What this replica has room for is leased to it and run now; the rest goes in as pending,
      // for whichever replica has room first (no insert-then-hand-back churn under a burst).
      const room = new Map<string, number>();
      const marked = rows.map((r) => {
        let left = room.get(r.webhook_id);
        if (left === undefined) {
          const e = this.endpoint(r.webhook_id);
          left = this.queueCap(e) - e.queue.length - e.active;
        }
        room.set(r.webhook_id, left - 1);
        return { ...r, leased: left > 0 };
      });
      // Only ids come back: the payloads are in hand (sending them back doubled Postgres's JSON work).
      // A row that already existed (a message delivered again) is not returned, so not run twice here.
      const inserted = await this.sql<{ id: string }[]>`
        insert into webhook_delivery (id, webhook_id, event_id, event, payload, status, origin_ms, next_attempt_at, lease_until, created_at, updated_at)
        select x.id, x.webhook_id, x.event_id, x.event, x.payload, case when x.leased then 'sending' else 'pending' end, x.origin_ms, ${nowMs},
          case when x.leased then ${lease}::double precision end, ${nowMs}, ${nowMs}
        from jsonb_to_recordset(${this.sql.json(marked as never)}) as x(id text, webhook_id text, event_id text, event text, payload jsonb, origin_ms double precision, leased boolean)
        where exists (select 1 from webhook w where w.id = x.webhook_id)
        on conflict (id) do nothing
        returning id`;
      const fresh = new Set(inserted.map((r) => r.id));
      for (const r of marked) {
        if (!fresh.has(r.id)) continue;
        if (r.leased) mine.push({ id: r.id, webhook_id: r.webhook_id, attempts: 0, payload: r.payload, origin_ms: r.origin_ms, lease_until: lease });
        else this.endpoint(r.webhook_id).released = true;
      }
    }
    for (const m of msgs) m.ack();
    for (const j of mine) this.enqueue(j);
  }

  private endpoint(id: string): Endpoint {
    let e = this.endpoints.get(id);
    if (!e) this.endpoints.set(id, (e = { active: 0, queue: [], failures: 0, openUntil: 0, failingSince: null, released: false, avgMs: 0 }));
    return e;
  }

  /**
   * How many jobs this replica may hold (running + queued) for an endpoint: as many as it can expect
   * to finish within a quarter of the lease at the endpoint's recent pace (concurrency / attempt
   * time), never fewer than QUEUE_CAP_FACTOR × concurrency. A fast receiver under a burst then gets
   * its events leased straight from the stream — one insert and one update per delivery, not an
   * insert as pending, a claim and an update — while a slow one keeps a short queue, so no job
   * outlives its lease waiting here.
   */
  private queueCap(e: Endpoint): number {
    const floor = this.opts.concurrency * QUEUE_CAP_FACTOR;
    if (e.avgMs <= 0) return floor;
    const perSecond = (this.opts.concurrency * 1000) / e.avgMs;
    return Math.max(floor, Math.min(QUEUE_CAP_MAX, Math.floor((perSecond * this.opts.leaseMs) / 4000)));
  }

  /** Run now if the endpoint has room, else queue (or hand back to the table when its queue is long). */
  private enqueue(job: Job): void {
    const e = this.endpoint(job.webhook_id);
    if (e.active < this.opts.concurrency) {
      this.run(job, e);
      return;
    }
    if (e.queue.length + e.active >= this.queueCap(e)) {
      e.released = true;
      this.handBack(job);
      return;
    }
    e.queue.push(job);
  }

  private run(job: Job, e: Endpoint): void {
    e.active++;
    const p = this.attempt(job, e)
      .catch((err) => this.log.error({ delivery: job.id, err: (err as Error).message }, 'delivery bookkeeping failed; its lease will expire and it is retried'))
      .finally(() => {
        e.active--;
        this.inflight.delete(p);
        const next = this.dequeue(e);
        if (next && !this.stopped) this.run(next, e);
        // Work for this endpoint waits in the table: claim more before its queue runs dry.
        if (e.released && e.queue.length < this.opts.concurrency) {
          e.released = false;
          this.kick();
        }
      });
    this.inflight.add(p);
  }

  /**
   * The next queued job whose lease still holds. One whose lease ran out while it waited (the
   * endpoint slowed down) goes back to the table instead: another replica may have taken the row.
   */
  private dequeue(e: Endpoint): Job | undefined {
    const now = Date.now();
    for (let job = e.queue.shift(); job; job = e.queue.shift()) {
      if (job.lease_until > now) return job;
      e.released = true;
      this.handBack(job);
    }
    return undefined;
  }

  private async attempt(job: Job, e: Endpoint): Promise<void> {
    let hook = this.hooks.get(job.webhook_id);
    if (!hook) {
      // A webhook created a moment ago whose announcement has not reached this replica yet (a test
      // delivery can be polled first): read the rows now rather than drop the delivery.
      await this.registry.load();
      hook = this.hooks.get(job.webhook_id);
      if (!hook) return; // deleted: its deliveries went with it
    }
    const t0 = Date.now();
    if (!hook.enabled) {
      await this.sql`update webhook_delivery set status = 'dead', last_error = 'webhook disabled', lease_until = null, updated_at = ${t0} where id = ${job.id}`;
      return;
    }
    if (e.openUntil > t0) {
      // Circuit open: do not knock; come back when it half-opens (the attempt is not counted). The
      // whole queue goes back with it, in one statement (it can be long for a receiver that was fast).
      await this.release([job, ...e.queue.splice(0)], e.openUntil);
      return;
    }
    const body = JSON.stringify(webhookBody(hook.url, job.payload));
    const ts = Math.floor(t0 / 1000);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'Gatehouse-Webhooks/1.0',
      'webhook-id': job.id,
      'webhook-timestamp': String(ts),
      'webhook-signature': signatureHeader(hook.secrets, job.id, ts, body, ts),
    };
    const out = await this.sender.post(hook.url, headers, body);
    const done = Date.now();
    e.avgMs = e.avgMs === 0 ? done - t0 : e.avgMs * 0.9 + (done - t0) * 0.1;
    const attempts = job.attempts + 1;
    const ok = out.status !== null && out.status >= 200 && out.status < 300;
    if (ok) {
      webhookAttempts.inc({ outcome: 'delivered' });
      webhookLatency.observe({ outcome: 'delivered' }, (done - t0) / 1000);
      e.failures = 0;
      e.openUntil = 0;
      // Not awaited: the receiver has answered, so its slot is free for the next attempt while the
      // success is written with others (a crash before it lands only means a repeat after the lease).
      this.markDelivered({ id: job.id, attempts, status: out.status!, latency: Math.max(0, Math.round(done - job.origin_ms)), at: done, origin: job.origin_ms });
      if (e.failingSince !== null || hook.failing_since !== null) {
        e.failingSince = null;
        hook.failing_since = null;
        await this.sql`update webhook set failing_since = null where id = ${hook.id}`;
      }
      return;
    }
    // 429, 408 and 5xx, timeouts and connection errors are worth retrying; another 4xx, a refused
    // address or a redirect loop will not get better.
    const retryable = !out.refused && (out.status === null || out.status === 429 || out.status === 408 || out.status >= 500);
    const delay = retryable ? nextDelay(this.opts.schedule, attempts, out.retryAfterMs) : null;
    const error = out.error ?? `HTTP ${out.status}`;
    const outcome = out.refused ? 'refused' : delay === null ? 'dead' : 'retry';
    webhookAttempts.inc({ outcome });
    webhookLatency.observe({ outcome }, (done - t0) / 1000);
    if (delay === null) {
      await this.sql`
        update webhook_delivery set status = 'dead', attempts = ${attempts}, last_status = ${out.status}, last_error = ${error},
          lease_until = null, next_attempt_at = null, updated_at = ${done} where id = ${job.id}`;
      this.log.warn({ webhook: hook.id, delivery: job.id, attempts, error }, 'webhook delivery dead-lettered');
    } else {
      await this.sql`
        update webhook_delivery set status = 'pending', attempts = ${attempts}, last_status = ${out.status}, last_error = ${error},
          lease_until = null, next_attempt_at = ${done + delay}, updated_at = ${done} where id = ${job.id}`;
      if (delay < this.opts.pollMs) setTimeout(() => this.kick(), delay + 5).unref();
    }
    if (!retryable) return;
    e.failures++;
    if (e.failures >= this.opts.breakerFailures) e.openUntil = done + this.opts.breakerCooldownMs;
    await this.noteFailure(hook, e, done);
  }

  /** Track the failing streak; past the limit, switch the webhook off and say so on the stream. */
  private async noteFailure(hook: LoadedWebhook, e: Endpoint, at: number): Promise<void> {
    if (e.failingSince === null) {
      const [r] = await this.sql<{ failing_since: number }[]>`
        update webhook set failing_since = coalesce(failing_since, ${at / 1000}) where id = ${hook.id} returning failing_since`;
      if (!r) return;
      e.failingSince = Number(r.failing_since) * 1000;
    }
    if (at - e.failingSince < this.opts.disableAfterMs) return;
    const reason = `no successful delivery for ${Math.round((at - e.failingSince) / 3_600_000 * 10) / 10} hours`;
    const [off] = await this.sql<{ id: string }[]>`
      update webhook set enabled = false, disabled_reason = ${reason}, updated_at = ${Math.floor(at / 1000)} where id = ${hook.id} and enabled returning id`;
    if (!off) return;
    hook.enabled = false;
    this.log.warn({ webhook: hook.id, reason }, 'webhook disabled');
    // The registry changed here: the other replicas learn it from the config bucket.
    await this.registry.announce().catch((err) => this.log.warn({ err: (err as Error).message }, 'webhook disabled but not announced yet; the reconciler will'));
    await publishPlatformEvent(this.bus, 'webhook.disabled', {
      subject: { type: 'webhook', id: hook.id },
      data: { webhook_id: hook.id, url: hook.url, failing_since: e.failingSince / 1000, reason },
      message: `Webhook ${hook.name} disabled: ${reason}`,
    }).catch((err) => this.log.warn({ err: (err as Error).message }, 'could not publish webhook.disabled'));
  }

  private delivered: { id: string; attempts: number; status: number; latency: number; at: number; origin: number }[] = [];

  /**
   * Successes are written in batches: everything that succeeded by the next turn of the event loop
   * goes in one UPDATE (arrays unnested: no JSON for Postgres to parse), so a busy endpoint costs one
   * round trip per batch, not per delivery. Tracked in `inflight`, so a graceful stop writes them.
   */
  /**
   * Batched per turn. Only the request this attempt served is marked: a replay or re-send queued
   * meanwhile (new origin_ms, back to pending) must not be swallowed by the late write.
   */
  private markDelivered(d: { id: string; attempts: number; status: number; latency: number; at: number; origin: number }): void {
    if (this.delivered.push(d) > 1) return;
    const p = new Promise<void>((resolve) => setImmediate(resolve))
      .then(async () => {
        const b = this.delivered;
        this.delivered = [];
        await this.sql`
          update webhook_delivery d set status = 'delivered', attempts = x.attempts, last_status = x.status, last_error = null,
            latency_ms = x.latency, delivered_at = x.at, lease_until = null, next_attempt_at = null, updated_at = x.at
          from unnest(${b.map((r) => r.id)}::text[], ${b.map((r) => r.attempts)}::int[], ${b.map((r) => r.status)}::int[],
            ${b.map((r) => r.latency)}::int[], ${b.map((r) => r.at)}::double precision[], ${b.map((r) => r.origin)}::double precision[]) as x(id, attempts, status, latency, at, origin)
          where d.id = x.id and d.origin_ms = x.origin`;
      })
      .catch((err) => this.log.error({ err: (err as Error).message }, 'recording deliveries as delivered failed; their leases will expire and they are sent again'))
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  private handedBack: Job[] = [];
  /** Hand a job back to the table (due now), batched per turn of the event loop. */
  private handBack(job: Job): void {
    if (this.handedBack.push(job) > 1) return;
    setImmediate(() => {
      const jobs = this.handedBack;
      this.handedBack = [];
      void this.release(jobs, Date.now()).catch((err) => this.log.warn({ err: (err as Error).message }, 'handing deliveries back failed; their lease will expire'));
    });
  }

  /**
   * Hand deliveries back to the table, due at `at`. Only rows still under this replica's lease (same
   * lease_until): one whose lease ran out may be another replica's now.
   */
  private async release(jobs: Job[], at: number): Promise<void> {
    await this.sql`
      update webhook_delivery d set status = 'pending', lease_until = null, next_attempt_at = ${at}, updated_at = ${Date.now()}
      from unnest(${jobs.map((j) => j.id)}::text[], ${jobs.map((j) => j.lease_until)}::double precision[]) as x(id, lease_until)
      where d.id = x.id and d.status = 'sending' and d.lease_until = x.lease_until`;
  }

  /** Take due deliveries (retries, replays, tests, expired leases) from the table. */
  kick(): void {
    if (this.stopped) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = this.poll()
      .catch((err) => this.log.warn({ err: (err as Error).message }, 'webhook poll failed; will retry'))
      .finally(() => {
        this.polling = undefined;
        if (this.pollAgain) {
          this.pollAgain = false;
          this.kick();
        }
      });
  }

  private async poll(): Promise<void> {
    for (let round = 0; round < 20; round++) {
      const t = Date.now();
      // Endpoints with a full queue here take nothing more now.
      const busy = [...this.endpoints.entries()].filter(([, e]) => e.queue.length >= this.opts.concurrency).map(([id]) => id);
      // Rows due for them may be left behind: they look again when their queue runs low.
      for (const id of busy) this.endpoint(id).released = true;
      const rows = await this.sql<Job[]>`
        update webhook_delivery d set status = 'sending', lease_until = ${t + this.opts.leaseMs}, updated_at = ${t}
        where d.id in (
          select id from webhook_delivery
          where ((status = 'pending' and next_attempt_at <= ${t}) or (status = 'sending' and lease_until < ${t}))
            and not (webhook_id = any(${busy}))
          order by next_attempt_at limit ${CLAIM_BATCH} for update skip locked)
        returning d.id, d.webhook_id, d.payload, d.attempts, d.origin_ms, d.lease_until`;
      for (const r of rows) this.enqueue({ ...r, origin_ms: Number(r.origin_ms), lease_until: Number(r.lease_until) });
      // Stop when an endpoint is full (what it could not take went back) or nothing more is due;
      // in the first case the endpoints that took work look again as soon as they drain.
      if (rows.length < CLAIM_BATCH) return;
      if (this.handedBack.length > 0) {
        for (const r of rows) this.endpoint(r.webhook_id).released = true;
        return;
      }
    }
  }
}
