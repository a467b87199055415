import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import type { WebhookDelivery } from '@gatehouse/contracts';
import { newWebhookSecret, webhookRows, type StoredSecret, type WebhookRow } from '@gatehouse/common';
import type { Tx } from '../context.ts';

/**
 * The webhook registry's SQL (tables `webhook` and `webhook_delivery`; the rows' reader and view
 * are @gatehouse/common's, shared with services/webhook-dispatcher): the handlers in
 * webhooks.ops.ts decide, these statements write and read.
 */

export type Target = { type: 'user' | 'group'; id: string };

/** A webhook's fields as stored (the handler has already merged the form into the current row). */
export interface WebhookFields {
  name: string;
  url: string;
  enabled: boolean;
  events: string[];
  targets: Target[] | null;
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

/** Whether a webhook target (a user or a group) exists. */
export async function targetExists(db: Sql | Tx, t: Target): Promise<boolean> {
  const [found] = t.type === 'user' ? await db`select 1 from "user" where id = ${t.id}` : await db`select 1 from "group" where id = ${t.id}`;
  return !!found;
}

/** The webhook `id`, or undefined. */
export async function webhookById(db: Sql | Tx, id: string): Promise<WebhookRow | undefined> {
  const [row] = await webhookRows(db, id);
  return row;
}

export async function insertWebhook(tx: Tx, f: WebhookFields, secret: string, at: number): Promise<WebhookRow> {
  const [r] = await tx<WebhookRow[]>`
    insert into webhook (id, name, url, enabled, events, targets, secrets, created_at, updated_at)
    values (${randomUUID()}, ${f.name}, ${f.url}, ${f.enabled}, ${tx.json(f.events)},
      ${f.targets ? tx.json(f.targets) : null}, ${tx.json([{ secret, expires_at: null }] as never)}, ${at}, ${at})
    returning *`;
  return r!;
}

/** The row `id`, locked until `tx` ends. */
export async function lockWebhook(tx: Tx, id: string): Promise<WebhookRow | undefined> {
  const [cur] = await tx<WebhookRow[]>`select * from webhook where id = ${id} for update`;
  return cur;
}

/** Writes `f` over `cur`; `reenabled` clears the failing streak that disabled it. */
export async function updateWebhook(tx: Tx, cur: WebhookRow, f: WebhookFields, reenabled: boolean, at: number): Promise<WebhookRow> {
  const [r] = await tx<WebhookRow[]>`
    update webhook set name = ${f.name}, url = ${f.url}, enabled = ${f.enabled}, events = ${tx.json(f.events)},
      targets = ${f.targets ? tx.json(f.targets) : null}, updated_at = ${at},
      failing_since = ${reenabled ? null : cur.failing_since}, disabled_reason = ${reenabled ? null : cur.disabled_reason}
    where id = ${cur.id} returning *`;
  return r!;
}

export async function deleteWebhook(tx: Tx, id: string): Promise<WebhookRow | undefined> {
  const [cur] = await tx<WebhookRow[]>`delete from webhook where id = ${id} returning *`;
  return cur;
}

export async function saveSecrets(tx: Tx, id: string, secrets: StoredSecret[], at: number): Promise<WebhookRow> {
  const [r] = await tx<WebhookRow[]>`update webhook set secrets = ${tx.json(secrets as never)}, updated_at = ${at} where id = ${id} returning *`;
  return r!;
}

const DELIVERY_COLUMNS = ['id', 'webhook_id', 'event_id', 'event', 'status', 'attempts', 'last_status', 'last_error', 'latency_ms', 'next_attempt_at', 'created_at', 'updated_at', 'delivered_at'];

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

/** A webhook's latest deliveries, newest first, optionally of one status. */
export async function recentDeliveries(db: Sql, webhookId: string, status: string | undefined, limit: number): Promise<WebhookDelivery[]> {
  const rows = status
    ? await db`select ${db(DELIVERY_COLUMNS)} from webhook_delivery where webhook_id = ${webhookId} and status = ${status} order by created_at desc limit ${limit}`
    : await db`select ${db(DELIVERY_COLUMNS)} from webhook_delivery where webhook_id = ${webhookId} order by created_at desc limit ${limit}`;
  return rows.map(deliveryView);
}

/** Every webhook's dead deliveries, the latest given up first. */
export async function deadLetters(db: Sql, limit: number): Promise<WebhookDelivery[]> {
  const rows = await db`select ${db(DELIVERY_COLUMNS)} from webhook_delivery where status = 'dead' order by updated_at desc limit ${limit}`;
  return rows.map(deliveryView);
}

/** One delivery of webhook `webhookId` due again now, from its first attempt; its id, or undefined. */
export async function redeliver(db: Sql, deliveryId: string, webhookId: string, t: number): Promise<string | undefined> {
  const [r] = await db<{ id: string }[]>`
    update webhook_delivery set status = 'pending', attempts = 0, next_attempt_at = ${t}, lease_until = null, origin_ms = ${t}, updated_at = ${t}, last_error = null
    where id = ${deliveryId} and webhook_id = ${webhookId} returning id`;
  return r?.id;
}

/** Dead deliveries (those of `ids`, or all) due again now; how many. */
export async function resendDead(db: Sql, ids: string[] | null | undefined, t: number): Promise<number> {
  const rows = ids
    ? await db`update webhook_delivery set status = 'pending', attempts = 0, next_attempt_at = ${t}, origin_ms = ${t}, updated_at = ${t}, last_error = null
        where status = 'dead' and id = any(${ids}) returning id`
    : await db`update webhook_delivery set status = 'pending', attempts = 0, next_attempt_at = ${t}, origin_ms = ${t}, updated_at = ${t}, last_error = null
        where status = 'dead' returning id`;
  return rows.length;
}
