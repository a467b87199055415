import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { EVENT_SCHEMA_VERSION, OWUI_ERRORS, type ChatEvent } from '@gatehouse/contracts';
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
import { fail, me, now, ok, opTable, type OpContext, type OpRequest, type Tx, type UserRow } from '../context.ts';
import {
  deadLetters,
  deleteWebhook,
  insertWebhook,
  lockWebhook,
  recentDeliveries,
  redeliver,
  resendDead,
  saveSecrets,
  targetExists,
  updateWebhook,
  webhookById,
  type Target,
  type WebhookFields,
} from './webhooks.store.ts';
import { replayStream } from './replay.ts';

export { migrateLegacyWebhook } from './webhooks.store.ts';

/**
 * The webhook registry (Open WebUI 0.10.2 main.py L2047-2155: `/api/events/webhooks`, admin only,
 * 400 on a bad pattern, target or URL, 404 on an unknown id, `config.webhook.updated` on every
 * change) and the delivery log the dispatcher (services/webhook-dispatcher) writes: recent
 * deliveries, a test, replay of one delivery or of the stream since a time, dead letters re-sent.
 * Beyond Open WebUI each webhook has a Standard Webhooks signing secret, answered once at creation
 * (and by a rotation, which keeps the old one signing for an overlap). SQL: webhooks.store.ts.
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
      if (!(await targetExists(db, t as Target))) fail(400, `Unknown webhook target ${t.type}: ${t.id}`);
    }
  }
}

const MAX_DELIVERIES = 200;

/** A `limit` query parameter: a number from 1 to MAX_DELIVERIES, `fallback` when absent or not a number. */
const limitOf = (raw: string | undefined, fallback: number) => Math.min(Math.max(Number(raw ?? fallback) || fallback, 1), MAX_DELIVERIES);

async function existing(db: Sql | Tx, id: string | undefined): Promise<WebhookRow> {
  return (await webhookById(db, id ?? '')) ?? fail(404, OWUI_ERRORS.notFound);
}

/** The fields of a new webhook: a blank name is `Webhook`, no patterns means every event. */
function createdFields(form: OpRequest<'webhooks.create'>['body']): WebhookFields {
  return { name: form.name?.trim() || 'Webhook', url: form.url.trim(), enabled: form.enabled, events: form.events ?? ['*'], targets: (form.targets as Target[] | null | undefined) ?? null };
}

/** `cur` with the fields the update names; the rest stay. */
function updatedFields(cur: WebhookRow, form: OpRequest<'webhooks.update'>['body']): WebhookFields {
  return {
    name: form.name === undefined ? cur.name : form.name?.trim() || 'Webhook',
    url: form.url === undefined ? cur.url : form.url.trim(),
    enabled: form.enabled ?? cur.enabled,
    events: form.events === undefined || form.events === null ? cur.events : form.events,
    targets: form.targets === undefined ? (cur.targets as Target[] | null) : (form.targets as Target[] | null),
  };
}

/** A new secret first; the current ones keep signing until the overlap ends (older ones keep their own end). */
function rotatedSecrets(cur: WebhookRow, secret: string, until: number): StoredSecret[] {
  const kept = cur.secrets.filter((s) => s.expires_at === null || s.expires_at > now()).map((s) => ({ secret: s.secret, expires_at: s.expires_at === null ? until : Math.min(s.expires_at, until) }));
  return [{ secret, expires_at: null }, ...kept];
}

/** The event `POST /api/events/webhooks/{id}/test` sends, in the envelope every delivery has. */
function testEvent(user: UserRow, w: WebhookRow): ChatEvent {
  return {
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
}

/**
 * After a change committed, the registry's new state is announced in the config bucket; every
 * dispatcher replica follows the group and reads the rows when its revision moves. The answer
 * waits for the announcement; if NATS refuses it, the change stands (it committed) and the
 * reconcilers (keepAnnounced, chat workers and dispatchers) announce it within CONFIG_RECONCILE_MS.
 */
async function announce(opts: WebhookOpsOptions, sql: Sql): Promise<void> {
  try {
    const rec = await announceFrom(opts.config, WEBHOOKS_CONFIG_GROUP, () => loadRegistryValue(sql), opts.by);
    if (rec) opts.log.info({ group: WEBHOOKS_CONFIG_GROUP, revision: rec.revision }, `config ${WEBHOOKS_CONFIG_GROUP}: saved here, announced as revision ${rec.revision}`);
  } catch (err) {
    opts.log.warn({ err }, 'webhook registry saved but not announced yet; the reconciler will');
  }
}

/** Deliveries queued here are due now: wake the dispatchers rather than leave them to their poll. */
function wakeDispatchers(opts: WebhookOpsOptions): void {
  try {
    opts.bus.nc.publish(opts.bus.subject(WEBHOOKS_DUE_SUBJECT));
  } catch (err) {
    opts.log.warn({ err: (err as Error).message }, 'could not wake the webhook dispatchers; their poll will find the deliveries');
  }
}

const changed = (tx: Tx, ctx: OpContext, w: WebhookRow, action: 'created' | 'updated' | 'deleted' | 'secret_rotated') =>
  ctx.emit(tx, 'config.webhook.updated', { actor: me(ctx), subject: { type: 'webhook', id: w.id }, data: { action, name: w.name, url: w.url, enabled: w.enabled } });

/** The registry: list, create, update, delete, secret rotation; every change announced (`announce`). */
function registryOps(opts: WebhookOpsOptions) {
  return opTable({
    'webhooks.list': async (_req, ctx) => ok((await webhookRows(ctx.sql)).map(webhookView)),

    'webhooks.create': async (req, ctx) => {
      await checkFields(ctx.sql, req.body, opts.allowLocal);
      const secret = newWebhookSecret();
      const row = await ctx.sql.begin(async (tx) => {
        const r = await insertWebhook(tx, createdFields(req.body), secret, now());
        await changed(tx, ctx, r, 'created');
        return r;
      });
      await announce(opts, ctx.sql);
      return ok({ ...webhookView(row), secret });
    },

    'webhooks.update': async (req, ctx) => {
      await checkFields(ctx.sql, req.body, opts.allowLocal);
      const row = await ctx.sql.begin(async (tx) => {
        const cur = (await lockWebhook(tx, req.params.id ?? '')) ?? fail(404, OWUI_ERRORS.notFound);
        const next = updatedFields(cur, req.body);
        // Switching a webhook back on forgets the failing streak that disabled it.
        const r = await updateWebhook(tx, cur, next, next.enabled && !cur.enabled, now());
        await changed(tx, ctx, r, 'updated');
        return r;
      });
      await announce(opts, ctx.sql);
      return ok(webhookView(row));
    },

    'webhooks.delete': async (req, ctx) => {
      await ctx.sql.begin(async (tx) => {
        const cur = (await deleteWebhook(tx, req.params.id ?? '')) ?? fail(404, OWUI_ERRORS.notFound);
        await changed(tx, ctx, cur, 'deleted');
      });
      await announce(opts, ctx.sql);
      return ok({ status: true as const });
    },

    'webhooks.rotateSecret': async (req, ctx) => {
      const secret = newWebhookSecret();
      const until = now() + req.body.overlap_seconds;
      await ctx.sql.begin(async (tx) => {
        const cur = (await lockWebhook(tx, req.params.id ?? '')) ?? fail(404, OWUI_ERRORS.notFound);
        const r = await saveSecrets(tx, cur.id, rotatedSecrets(cur, secret, until), now());
        await changed(tx, ctx, r, 'secret_rotated');
      });
      await announce(opts, ctx.sql);
      return ok({ secret, previous_expires_at: until });
    },
  });
}

/** The delivery log: a test event, recent deliveries, one re-delivered, a replay, dead letters re-sent. */
function deliveryOps(opts: WebhookOpsOptions) {
  return opTable({
    'webhooks.test': async (req, ctx) => {
      const w = await existing(ctx.sql, req.params.id);
      const hooks = (await loadWebhooks(ctx.sql)).filter((h) => h.id === w.id);
      const [queued] = await queueDeliveries(ctx.sql, testEvent(me(ctx), w), hooks, Date.now(), { force: true });
      wakeDispatchers(opts);
      return ok({ status: true as const, delivery_id: queued!.id });
    },

    'webhooks.deliveries': async (req, ctx) => {
      const w = await existing(ctx.sql, req.params.id);
      const status = req.query.status;
      if (status !== undefined && !['pending', 'sending', 'delivered', 'dead'].includes(status)) fail(400, `Invalid status: ${status}`);
      return ok(await recentDeliveries(ctx.sql, w.id, status, limitOf(req.query.limit, 50)));
    },

    'webhooks.redeliver': async (req, ctx) => {
      const w = await existing(ctx.sql, req.params.id);
      const id = (await redeliver(ctx.sql, req.params.delivery_id ?? '', w.id, Date.now())) ?? fail(404, OWUI_ERRORS.notFound);
      wakeDispatchers(opts);
      return ok({ status: true as const, delivery_id: id });
    },

    'webhooks.replay': async (req, ctx) => {
      const w = await existing(ctx.sql, req.params.id);
      const hooks = (await loadWebhooks(ctx.sql)).filter((h) => h.id === w.id);
      const count = await replayStream(opts.bus, ctx.sql, hooks, req.body.since);
      if (count) wakeDispatchers(opts);
      return ok({ status: true as const, count });
    },

    'webhooks.deadLetters': async (req, ctx) => ok(await deadLetters(ctx.sql, limitOf(req.query.limit, 100))),

    'webhooks.resend': async (req, ctx) => {
      const count = await resendDead(ctx.sql, req.body.ids, Date.now());
      if (count) wakeDispatchers(opts);
      return ok({ status: true as const, count });
    },
  });
}

export function webhooksOps(opts: WebhookOpsOptions) {
  return { ...registryOps(opts), ...deliveryOps(opts) };
}
