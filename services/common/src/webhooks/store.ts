import { createHash } from 'node:crypto';
import type { Sql, TransactionSql } from 'postgres';
import type { ChatEvent, Webhook } from '@gatehouse/contracts';
import { webhookMatches, type MatchableWebhook } from './match.ts';
import type { StoredSecret } from './sign.ts';

/**
 * The webhook tables (infra/migrations/chat/0010_webhooks.sql), shared by the chat worker (the
 * registry, the delivery log, replay) and the dispatcher (matching, delivery). `sql` is a pool
 * whose search_path is the chat schema.
 */
type Db = Sql | TransactionSql;

export interface WebhookRow {
  id: string;
  name: string;
  url: string;
  enabled: boolean;
  events: string[];
  targets: { type: 'user' | 'group'; id: string }[] | null;
  secrets: StoredSecret[];
  failing_since: number | null;
  disabled_reason: string | null;
  created_at: number;
  updated_at: number;
}

export interface LoadedWebhook extends WebhookRow, MatchableWebhook {}

/** The stored shape Open WebUI answers (no secrets, no bookkeeping). */
export function webhookView(w: WebhookRow): Webhook {
  return { id: w.id, name: w.name, url: w.url, enabled: w.enabled, events: w.events, targets: w.targets, created_at: Number(w.created_at), updated_at: Number(w.updated_at) };
}

export async function webhookRows(db: Db, id?: string): Promise<WebhookRow[]> {
  const rows = id === undefined ? await db<WebhookRow[]>`select * from webhook order by created_at, id` : await db<WebhookRow[]>`select * from webhook where id = ${id}`;
  return rows.map((r) => ({ ...r, created_at: Number(r.created_at), updated_at: Number(r.updated_at) }));
}

/** Every webhook, with its targets resolved to user ids (group members read now). */
export async function loadWebhooks(db: Db): Promise<LoadedWebhook[]> {
  const rows = await webhookRows(db);
  const groupIds = [...new Set(rows.flatMap((r) => (r.targets ?? []).filter((t) => t.type === 'group').map((t) => t.id)))];
  const members = new Map<string, string[]>();
  if (groupIds.length) {
    for (const m of await db<{ group_id: string; user_id: string }[]>`select group_id, user_id from group_member where group_id = any(${groupIds})`) {
      members.set(m.group_id, [...(members.get(m.group_id) ?? []), m.user_id]);
    }
  }
  return rows.map((r) => ({
    ...r,
    targetsEmpty: Array.isArray(r.targets) && r.targets.length === 0,
    targetUsers: r.targets === null ? null : new Set(r.targets.flatMap((t) => (t.type === 'user' ? [t.id] : (members.get(t.id) ?? [])))),
  }));
}

/** One delivery's id (`webhook-id`): the same for a (webhook, event) pair however often it is matched. */
export function deliveryId(webhookId: string, eventId: string): string {
  return `msg_${createHash('sha256').update(`${webhookId}\n${eventId}`).digest('base64url').slice(0, 27)}`;
}

/**
 * Record a delivery of `ev` to each matching webhook (pending, due now). Idempotent per
 * (webhook, event); with `reset`, an existing one is queued again (replay). Returns the ids queued.
 */
export async function queueDeliveries(db: Db, ev: ChatEvent, hooks: readonly LoadedWebhook[], originMs: number, opts: { reset?: boolean; force?: boolean } = {}): Promise<{ id: string; webhook_id: string }[]> {
  const matched = hooks.filter((h) => (opts.force ? true : webhookMatches(h, ev)));
  if (!matched.length) return [];
  const nowMs = Date.now();
  const rows = matched.map((h) => ({
    id: deliveryId(h.id, ev.id),
    webhook_id: h.id,
    event_id: ev.id,
    event: ev.event,
    payload: ev,
    origin_ms: originMs,
  }));
  const inserted = opts.reset
    ? await db<{ id: string; webhook_id: string }[]>`
        insert into webhook_delivery (id, webhook_id, event_id, event, payload, origin_ms, next_attempt_at, created_at, updated_at)
        select x.id, x.webhook_id, x.event_id, x.event, x.payload, x.origin_ms, ${nowMs}, ${nowMs}, ${nowMs}
        from jsonb_to_recordset(${db.json(rows as never)}) as x(id text, webhook_id text, event_id text, event text, payload jsonb, origin_ms double precision)
        on conflict (id) do update set status = 'pending', attempts = 0, next_attempt_at = ${nowMs}, lease_until = null,
          origin_ms = ${nowMs}, updated_at = ${nowMs}, last_error = null
        returning id, webhook_id`
    : await db<{ id: string; webhook_id: string }[]>`
        insert into webhook_delivery (id, webhook_id, event_id, event, payload, origin_ms, next_attempt_at, created_at, updated_at)
        select x.id, x.webhook_id, x.event_id, x.event, x.payload, x.origin_ms, ${nowMs}, ${nowMs}, ${nowMs}
        from jsonb_to_recordset(${db.json(rows as never)}) as x(id text, webhook_id text, event_id text, event text, payload jsonb, origin_ms double precision)
        on conflict (id) do nothing
        returning id, webhook_id`;
  return inserted;
}

/**
 * Core NATS subject (namespaced with `bus.subject`) on which the chat worker says "deliveries are due
 * now" after it queues some itself (a test, a replay, a re-send): every dispatcher looks in the table
 * at once instead of at its next poll. Best effort — a lost message only means the poll takes them.
 */
export const WEBHOOKS_DUE_SUBJECT = 'webhooks.due';

/** The webhook registry's key in the config bucket (docs/config.md). */
export const WEBHOOKS_CONFIG_GROUP = 'webhooks';

/**
 * What the `webhooks` group announces: per webhook its id, whether it is on, and a fingerprint
 * (SHA-256) of everything delivery depends on — url, patterns, targets, secrets, name.
 *
 * Why not the rows themselves: the secrets. The webhook table sits behind Postgres's password; the
 * config bucket is readable by any NATS client, and NATS runs without accounts here (compose), so
 * the bucket is not as protected as the table. A fingerprint still changes with every change that
 * matters (a rotated secret too), so the group's revision moves exactly when the registry does;
 * on a new revision a dispatcher reads the rows from Postgres (the source of truth) and only then
 * reports the revision as applied. The dispatchers' own bookkeeping (`failing_since`) is left out:
 * it changes with every failed attempt and would announce for nothing.
 */
export interface WebhookRegistryValue {
  v: 1;
  hooks: { id: string; enabled: boolean; fingerprint: string }[];
}

export function registryValue(rows: readonly WebhookRow[]): WebhookRegistryValue {
  const fp = (r: WebhookRow) =>
    createHash('sha256')
      .update(JSON.stringify([r.name, r.url, r.enabled, r.events, r.targets, r.secrets]))
      .digest('hex');
  return { v: 1, hooks: rows.map((r) => ({ id: r.id, enabled: r.enabled, fingerprint: fp(r) })) };
}

/** The registry's announced value as Postgres holds it now (for `announceFrom` / `keepAnnounced`). */
export async function loadRegistryValue(db: Db): Promise<WebhookRegistryValue> {
  return registryValue(await webhookRows(db));
}
