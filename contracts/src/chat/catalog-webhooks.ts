import { z } from 'zod';
import type { HttpRoute } from '../catalog.ts';
import { catalog, DELETE, GET, POST } from './catalog-kit.ts';

const PUT = (url: string): HttpRoute => ({ method: 'PUT', url });

/**
 * The webhook registry (Open WebUI 0.10.2's `/api/events/webhooks`, admin only) and, beyond Open
 * WebUI, its delivery log and control. Webhooks are stored in the chat schema (`webhook`); the
 * webhook dispatcher (services/webhook-dispatcher) reads them and delivers the EVENTS stream.
 */

export const WebhookTarget = z.object({ type: z.enum(['user', 'group']), id: z.string() });

/** Open WebUI's stored webhook (events.py normalize_event_webhook). */
export const Webhook = z.object({
  id: z.string(),
  name: z.string(),
  url: z.string(),
  enabled: z.boolean(),
  events: z.array(z.string()),
  targets: z.array(WebhookTarget).nullable(),
  created_at: z.number().int(),
  updated_at: z.number().int(),
});
export type Webhook = z.infer<typeof Webhook>;

/** What creation answers: the stored webhook and, once, its Standard Webhooks signing secret. */
export const WebhookCreated = Webhook.extend({ secret: z.string() });

/** `POST /api/events/webhooks`. Patterns, targets and the URL are checked by the worker (400). */
export const WebhookForm = z.object({
  name: z.string().nullable().optional(),
  url: z.string(),
  enabled: z.boolean().default(true),
  events: z.array(z.string()).nullable().optional(),
  targets: z.array(z.object({ type: z.string(), id: z.string() })).nullable().optional(),
});
/** `PUT /api/events/webhooks/{id}`: any subset of the fields. */
export const WebhookUpdateForm = z.object({
  name: z.string().nullable().optional(),
  url: z.string().optional(),
  enabled: z.boolean().optional(),
  events: z.array(z.string()).nullable().optional(),
  targets: z.array(z.object({ type: z.string(), id: z.string() })).nullable().optional(),
});

/** A new secret; the previous ones keep signing (and verifying) until `overlap_seconds` pass. */
export const RotateSecretForm = z.object({ overlap_seconds: z.number().int().min(0).max(30 * 24 * 3600).default(24 * 3600) });
export const RotatedSecret = z.object({ secret: z.string(), previous_expires_at: z.number().int() });

export const DeliveryStatus = z.enum(['pending', 'sending', 'delivered', 'dead']);
/** One delivery: one event (or test) to one webhook, every attempt under the same `id` (`webhook-id`). */
export const WebhookDelivery = z.object({
  id: z.string(),
  webhook_id: z.string(),
  event_id: z.string(),
  event: z.string(),
  status: DeliveryStatus,
  attempts: z.number().int(),
  last_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  /** Milliseconds from the event's commit (or the request for a test) to the receiver's 2xx. */
  latency_ms: z.number().int().nullable(),
  next_attempt_at: z.number().nullable(),
  created_at: z.number(),
  updated_at: z.number(),
  delivered_at: z.number().nullable(),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const ReplaySinceForm = z.object({ since: z.number().describe('epoch seconds') });
export const ResendForm = z.object({ ids: z.array(z.string()).optional() });
export const CountReply = z.object({ status: z.literal(true), count: z.number().int() });
export const DeliveryQueued = z.object({ status: z.literal(true), delivery_id: z.string() });

export const WEBHOOKS_OPS = catalog({
  'webhooks.list': { subject: 'chat.webhooks.list', routes: [GET('/api/events/webhooks')], reply: z.array(Webhook), auth: 'admin', events: [] },
  'webhooks.create': { subject: 'chat.webhooks.create', routes: [POST('/api/events/webhooks')], body: WebhookForm, reply: WebhookCreated, auth: 'admin', events: ['config.webhook.updated'] },
  'webhooks.update': { subject: 'chat.webhooks.update', routes: [PUT('/api/events/webhooks/:id')], body: WebhookUpdateForm, reply: Webhook, auth: 'admin', events: ['config.webhook.updated'] },
  'webhooks.delete': { subject: 'chat.webhooks.delete', routes: [DELETE('/api/events/webhooks/:id')], reply: z.object({ status: z.literal(true) }), auth: 'admin', events: ['config.webhook.updated'] },
  'webhooks.rotateSecret': {
    subject: 'chat.webhooks.rotateSecret',
    routes: [POST('/api/events/webhooks/:id/secret/rotate')],
    body: RotateSecretForm,
    reply: RotatedSecret,
    auth: 'admin',
    events: ['config.webhook.updated'],
  },
  'webhooks.test': { subject: 'chat.webhooks.test', routes: [POST('/api/events/webhooks/:id/test')], reply: DeliveryQueued, auth: 'admin', events: [] },
  'webhooks.deliveries': { subject: 'chat.webhooks.deliveries', routes: [GET('/api/events/webhooks/:id/deliveries')], reply: z.array(WebhookDelivery), auth: 'admin', events: [] },
  'webhooks.redeliver': {
    subject: 'chat.webhooks.redeliver',
    routes: [POST('/api/events/webhooks/:id/deliveries/:delivery_id/replay')],
    reply: DeliveryQueued,
    auth: 'admin',
    events: [],
  },
  'webhooks.replay': { subject: 'chat.webhooks.replay', routes: [POST('/api/events/webhooks/:id/replay')], body: ReplaySinceForm, reply: CountReply, auth: 'admin', events: [] },
  'webhooks.deadLetters': { subject: 'chat.webhooks.deadLetters', routes: [GET('/api/events/webhooks/dead-letters')], reply: z.array(WebhookDelivery), auth: 'admin', events: [] },
  'webhooks.resend': { subject: 'chat.webhooks.resend', routes: [POST('/api/events/webhooks/dead-letters/resend')], body: ResendForm, reply: CountReply, auth: 'admin', events: [] },
});
