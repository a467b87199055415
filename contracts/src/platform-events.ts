import { z } from 'zod';

/**
 * Events the platform's other faces put on the chat platform's `EVENTS` stream (events.ts), in the
 * same envelope, for webhook subscribers: gate flips (the operator CLI), vector collections (the
 * vector worker) and the webhook dispatcher's own. Kept apart from CHAT_EVENTS because no chat
 * operation emits them. Each is published with its event id as `Nats-Msg-Id`.
 */
export const PLATFORM_EVENTS = {
  /** A face's gate now requires keys (`enforced`) or admits everyone (`opened`); `who` ran the flip. */
  'gate.enforced': z.object({ face: z.string(), revision: z.number().int(), who: z.string() }),
  'gate.opened': z.object({ face: z.string(), revision: z.number().int(), who: z.string() }),
  'collection.created': z.object({ collection: z.string(), face: z.literal('vector'), dimension: z.number().int().optional() }),
  'collection.deleted': z.object({ collection: z.string(), face: z.literal('vector') }),
  /** The dispatcher switched a webhook off after its receiver failed for longer than the limit. */
  'webhook.disabled': z.object({ webhook_id: z.string(), url: z.string(), failing_since: z.number(), reason: z.string() }),
} as const satisfies Record<`${string}.${string}`, z.ZodType<Record<string, unknown>>>;

export type PlatformEventName = keyof typeof PLATFORM_EVENTS;
export const isPlatformEventName = (name: string): name is PlatformEventName => Object.hasOwn(PLATFORM_EVENTS, name);
