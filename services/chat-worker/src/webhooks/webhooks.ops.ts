import { randomUUID } from 'node:crypto';
import { DeliverPolicy, type JsMsg } from 'nats';
import {
  ChatEvent,
  EVENT_SCHEMA_VERSION,
  EVENTS_STREAM,
  OWUI_ERRORS,
  type WebhookDelivery,
} from '@gatehouse/contracts';
import {
  checkWebhookUrl,
  loadWebhooks,
  newWebhookSecret,
  patternProblem,
  queueDeliveries,
  UrlRefused,
  announceFrom,
  loadRegistryValue,
  WEBHOOKS_CONFIG_GROUP,
  WEBHOOKS_DUE_SUBJECT,
  webhookRows,
  webhookView,
  type Bus,
  type ConfigStore,
  type Logger,
  type StoredSecret,
  type WebhookRow,
} from '@gatehouse/common';
import { fail, me, now, ok, opTable, type OpContext, type Tx } from '../context.ts';
import type { Sql } from 'postgres';

/**
 * The webhook registry (Open WebUI 0.10.2 main.py L2047-2155: `/api/events/webhooks`, admin only,
 * 400 on a bad pattern, target or URL, 404 on an unknown id, `config.webhook.updated` on every
 * change) and the delivery log the dispatcher (services/webhook-dispatcher) writes: recent
 * deliveries, a test, replay of one delivery or of the stream since a time, dead letters re-sent.
 * Beyond Open WebUI each webhook has a Standard Webhooks signing secret, answered once at creation
 * (and by a rotation, which keeps the old one signing for an overlap).
 */
export interface WebhookOpsOptions {
  /** ENABLE_LOCAL_WEB_FETCH: private and loopback receivers allowed. */
  allowLocal: boolean;
  bus: Bus;
  /** The config bucket: every registry change is announced there as group `webhooks` (docs/config.md). */
  config: ConfigStore;
  /** Who announces (`chat-worker <instance>`), for the envelope's `by`. */
  by: string;
  log: Logger;
}

type Target = { type: 'user' | 'group'; id: string };

async function checkFields(db: Sql | Tx, f: { url?: string; events?: string[] | null; targets?: { type: string; id: string }[] | null }, allowLocal: boolean) {
  if (f.url !== undefined) {
    try {
      await checkWebhookUrl(f.url.trim(), allowLocal);
    } catch (err) {
      if (err instanceof UrlRefused) fail(400, err.message);
      throw err;
    }
  }
  if (f.events) {
    if (!f.events.length) fail(400, 'At least one event pattern is required');
    for (const p of f.events) {
      const why = patternProblem(p);
      if (why) fail(400, why);
    }
  }
  if (f.targets) {
    for (const t of f.targets) {
      if (t.type !== 'user' && t.type !== 'group') fail(400, `Invalid webhook target type: ${t.type}`);
      const [found] = t.type === 'user' ? await db`select 1 from "user" where id = ${t.id}` : await db`select 1 from "group" where id = ${t.id}`;
      if (!found) fail(400, `Unknown webhook target ${t.type}: ${t.id}`);
    }
  }
}

const MAX_DELIVERIES = 200;

function deliveryView(r: Record<string, unknown>): WebhookDelivery {
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: r.id as string,
    webhook_id: r.webhook_id as string,
    event_id: r.event_id as string,
    event: r.event as string,
    status: r.status as WebhookDelivery['status'],
    attempts: Number(r.attempts),
    last_status: n(r.last_status),
    last_error: (r.last_error as string | null) ?? null,
    latency_ms: n(r.latency_ms),
    next_attempt_at: n(r.next_attempt_at) === null ? null : Number(r.next_attempt_at) / 1000,
    created_at: Number(r.created_at) / 1000,
    updated_at: Number(r.updated_at) / 1000,
    delivered_at: n(r.delivered_at) === null ? null : Number(r.delivered_at) / 1000,
  };
}
const DELIVERY_COLUMNS = ['id', 'webhook_id', 'event_id', 'event', 'status', 'attempts', 'last_status', 'last_error', 'latency_ms', 'next_attempt_at', 'created_at', 'updated_at', 'delivered_at'];

async function existing(db: Sql | Tx, id: string | undefined): Promise<WebhookRow> {
  const [row] = await webhookRows(db, id ?? '');
  return row ?? fail(404, OWUI_ERRORS.notFound);
}

/** Legacy `WEBHOOK_URL` → webhook `default` receiving every event (0.10's migrate_legacy_webhook_config), once. */
export async function migrateLegacyWebhook(sql: Sql, url: string | undefined, at: number): Promise<boolean> {
  if (!url?.trim()) return false;
  const secrets: StoredSecret[] = [{ secret: newWebhookSecret(), expires_at: null }];
  const rows = await sql`
    insert into webhook (id, name, url, enabled, events, targets, secrets, created_at, updated_at)
    values ('default', 'Default webhook', ${url.trim()}, true, ${sql.json(['*'])}, null, ${sql.json(secrets as never)}, ${at}, ${at})
    on conflict (id) do nothing returning id`;
  return rows.length > 0;
}

export function webhooksOps(opts: WebhookOpsOptions) {
  // After a change committed, the registry's new state is announced in the config bucket; every
  // dispatcher replica follows the group and reads the rows when its revision moves. The answer
  // waits for the announcement; if NATS refuses it, the change stands (it committed) and the
  // reconcilers (keepAnnounced, chat workers and dispatchers) announce it within CONFIG_RECONCILE_MS.
  const announce = async (sql: Sql) => {
    try {
      const rec = await announceFrom(opts.config, WEBHOOKS_CONFIG_GROUP, () => loadRegistryValue(sql), opts.by);
      if (rec) opts.log.info({ group: WEBHOOKS_CONFIG_GROUP, revision: rec.revision }, `config ${WEBHOOKS_CONFIG_GROUP}: saved here, announced as revision ${rec.revision}`);
    } catch (err) {
      opts.log.warn({ err }, 'webhook registry saved but not announced yet; the reconciler will');
    }
  };
  // Deliveries queued here are due now: wake the dispatchers rather than leave them to their poll.
  const due = () => {
    try {
      opts.bus.nc.publish(opts.bus.subject(WEBHOOKS_DUE_SUBJECT));
    } catch (err) {
      opts.log.warn({ err: (err as Error).message }, 'could not wake the webhook dispatchers; their poll will find the deliveries');
    }
  };
  const changed = (tx: Tx, ctx: OpContext, w: WebhookRow, action: 'created' | 'updated' | 'deleted' | 'secret_rotated') =>
    ctx.emit(tx, 'config.webhook.updated', { actor: me(ctx), subject: { type: 'webhook', id: w.id }, data: { action, name: w.name, url: w.url, enabled: w.enabled } });

  return opTable({
    'webhooks.list': async (_req, ctx) => ok((await webhookRows(ctx.sql)).map(webhookView)),

    'webhooks.create': async (req, ctx) => {
      const form = req.body;
      await checkFields(ctx.sql, form, opts.allowLocal);
      const at = now();
      const secret = newWebhookSecret();
      const row = await ctx.sql.begin(async (tx) => {
        const [r] = await tx<WebhookRow[]>`
          insert into webhook (id, name, url, enabled, events, targets, secrets, created_at, updated_at)
          values (${randomUUID()}, ${form.name?.trim() || 'Webhook'}, ${form.url.trim()}, ${form.enabled}, ${tx.json(form.events ?? ['*'])},
            ${form.targets ? tx.json(form.targets as Target[]) : null}, ${tx.json([{ secret, expires_at: null }] as never)}, ${at}, ${at})
          returning *`;
        await changed(tx, ctx, r!, 'created');
        return r!;
      });
      await announce(ctx.sql);
      return ok({ ...webhookView(row), secret });
    },

    'webhooks.update': async (req, ctx) => {
      const form = req.body;
      await checkFields(ctx.sql, form, opts.allowLocal);
      const row = await ctx.sql.begin(async (tx) => {
        const [cur] = await tx<WebhookRow[]>`select * from webhook where id = ${req.params.id ?? ''} for update`;
        if (!cur) fail(404, OWUI_ERRORS.notFound);
        const next = {
          name: form.name === undefined ? cur.name : form.name?.trim() || 'Webhook',
          url: form.url === undefined ? cur.url : form.url.trim(),
          enabled: form.enabled ?? cur.enabled,
          events: form.events === undefined || form.events === null ? cur.events : form.events,
          targets: form.targets === undefined ? cur.targets : (form.targets as Target[] | null),
        };
        // Switching a webhook back on forgets the failing streak that disabled it.
        const reenabled = next.enabled && !cur.enabled;
        const [r] = await tx<WebhookRow[]>`
          update webhook set name = ${next.name}, url = ${next.url}, enabled = ${next.enabled}, events = ${tx.json(next.events)},
            targets = ${next.targets ? tx.json(next.targets) : null}, updated_at = ${now()},
            failing_since = ${reenabled ? null : cur.failing_since}, disabled_reason = ${reenabled ? null : cur.disabled_reason}
          where id = ${cur.id} returning *`;
        await changed(tx, ctx, r!, 'updated');
        return r!;
      });
      await announce(ctx.sql);
      return ok(webhookView(row));
    },

    'webhooks.delete': async (req, ctx) => {
      await ctx.sql.begin(async (tx) => {
        const [cur] = await tx<WebhookRow[]>`delete from webhook where id = ${req.params.id ?? ''} returning *`;
        if (!cur) fail(404, OWUI_ERRORS.notFound);
        await changed(tx, ctx, cur, 'deleted');
      });
      await announce(ctx.sql);
      return ok({ status: true as const });
    },

    'webhooks.rotateSecret': async (req, ctx) => {
      const form = req.body;
      const secret = newWebhookSecret();
      const until = now() + form.overlap_seconds;
      await ctx.sql.begin(async (tx) => {
        const [cur] = await tx<WebhookRow[]>`select * from webhook where id = ${req.params.id ?? ''} for update`;
        if (!cur) fail(404, OWUI_ERRORS.notFound);
        // The current secret keeps signing until the overlap ends; older ones keep their own end.
        const kept = cur.secrets.filter((s) => s.expires_at === null || s.expires_at > now()).map((s) => ({ secret: s.secret, expires_at: s.expires_at === null ? until : Math.min(s.expires_at, until) }));
        const secrets = [{ secret, expires_at: null }, ...kept];
        const [r] = await tx<WebhookRow[]>`update webhook set secrets = ${tx.json(secrets as never)}, updated_at = ${now()} where id = ${cur.id} returning *`;
        await changed(tx, ctx, r!, 'secret_rotated');
      });
      await announce(ctx.sql);
      return ok({ secret, previous_expires_at: until });
    },

    'webhooks.test': async (req, ctx) => {
      const w = await existing(ctx.sql, req.params.id);
      const user = me(ctx);
      const ev: ChatEvent = {
        schema: EVENT_SCHEMA_VERSION,
        id: randomUUID(),
        event: 'webhook.test',
        resource: 'webhook',
        operation: 'test',
        created_at: now(),
        instance_id: 'webhook-test',
        version: EVENT_SCHEMA_VERSION,
        source: 'api',
        actor: { id: user.id, name: user.name, email: user.email, role: user.role, created_at: user.created_at, updated_at: user.updated_at, type: 'user' },
        subject: { type: 'webhook', id: w.id },
        data: { webhook_id: w.id, name: w.name },
        message: 'Test event from Gatehouse',
      };
      const hooks = (await loadWebhooks(ctx.sql)).filter((h) => h.id === w.id);
      const [queued] = await queueDeliveries(ctx.sql, ev, hooks, Date.now(), { force: true });
      due();
      return ok({ status: true as const, delivery_id: queued!.id });
    },

    'webhooks.deliveries': async (req, ctx) => {
      const w = await existing(ctx.sql, req.params.id);
      const status = req.query.status;
      if (status !== undefined && !['pending', 'sending', 'delivered', 'dead'].includes(status)) fail(400, `Invalid status: ${status}`);
      const limit = Math.min(Math.max(Number(req.query.limit ?? 50) || 50, 1), MAX_DELIVERIES);
      const rows = status
        ? await ctx.sql`select ${ctx.sql(DELIVERY_COLUMNS)} from webhook_delivery where webhook_id = ${w.id} and status = ${status} order by created_at desc limit ${limit}`
        : await ctx.sql`select ${ctx.sql(DELIVERY_COLUMNS)} from webhook_delivery where webhook_id = ${w.id} order by created_at desc limit ${limit}`;
      return ok(rows.map(deliveryView));
    },

    'webhooks.redeliver': async (req, ctx) => {
      const w = await existing(ctx.sql, req.params.id);
      const t = Date.now();
      const [r] = await ctx.sql<{ id: string }[]>`
        update webhook_delivery set status = 'pending', attempts = 0, next_attempt_at = ${t}, lease_until = null, origin_ms = ${t}, updated_at = ${t}, last_error = null
        where id = ${req.params.delivery_id ?? ''} and webhook_id = ${w.id} returning id`;
      if (!r) fail(404, OWUI_ERRORS.notFound);
      due();
      return ok({ status: true as const, delivery_id: r.id });
    },

    'webhooks.replay': async (req, ctx) => {
      const form = req.body;
      const w = await existing(ctx.sql, req.params.id);
      // Read the stream from `since` to where it ends now; each event the webhook's patterns and
      // targets admit is queued again (same delivery id: a receiver that deduplicates sees a repeat).
      const hook = (await loadWebhooks(ctx.sql)).filter((h) => h.id === w.id).map((h) => ({ ...h, enabled: true }));
      const jsm = await opts.bus.nc.jetstreamManager();
      const stream = opts.bus.bucket(EVENTS_STREAM);
      const info = await jsm.streams.info(stream).catch(() => null);
      if (!info || info.state.messages === 0) return ok({ status: true as const, count: 0 });
      const last = info.state.last_seq;
      // An ordered consumer (ephemeral, in order; no subject filter: the stream holds only events).
      const consumer = await opts.bus.js.consumers.get(stream, { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(form.since * 1000).toISOString() });
      let count = 0;
      const seen = new Set<string>();
      let done = false;
      for (let guard = 0; guard < 10_000 && !done; guard++) {
        const batch = await consumer.fetch({ max_messages: 500, expires: 2000 });
        let got = 0;
        for await (const m of batch as AsyncIterable<JsMsg>) {
          got++;
          if (m.seq <= last) {
            const ev = ChatEvent.safeParse(m.json());
            if (ev.success && !seen.has(ev.data.id)) {
              seen.add(ev.data.id);
              count += (await queueDeliveries(ctx.sql, ev.data, hook, Date.now(), { reset: true })).length;
            }
          }
          // Stop at the end the stream had when the replay began (or the end, if it shrank meanwhile).
          if (m.seq >= last || m.info.pending === 0) {
            done = true;
            break;
          }
        }
        if (got === 0) done = true;
      }
      await consumer.delete().catch(() => undefined);
      if (count) due();
      return ok({ status: true as const, count });
    },

    'webhooks.deadLetters': async (req, ctx) => {
      const limit = Math.min(Math.max(Number(req.query.limit ?? 100) || 100, 1), MAX_DELIVERIES);
      const rows = await ctx.sql`select ${ctx.sql(DELIVERY_COLUMNS)} from webhook_delivery where status = 'dead' order by updated_at desc limit ${limit}`;
      return ok(rows.map(deliveryView));
    },

    'webhooks.resend': async (req, ctx) => {
      const form = req.body;
      const t = Date.now();
      const rows = form.ids
        ? await ctx.sql`update webhook_delivery set status = 'pending', attempts = 0, next_attempt_at = ${t}, origin_ms = ${t}, updated_at = ${t}, last_error = null
            where status = 'dead' and id = any(${form.ids}) returning id`
        : await ctx.sql`update webhook_delivery set status = 'pending', attempts = 0, next_attempt_at = ${t}, origin_ms = ${t}, updated_at = ${t}, last_error = null
            where status = 'dead' returning id`;
      if (rows.length) due();
      return ok({ status: true as const, count: rows.length });
    },
  });
}
