import { z } from 'zod';

/**
 * Domain events of the chat platform, in Open WebUI 0.10.2's envelope (its events.py). Each is
 * written to the worker's outbox in the transaction that makes the change, and the outbox relay
 * publishes it on `events.<resource>.<operation>` into the JetStream stream below, with the
 * event id as `Nats-Msg-Id` so a relay that crashes between publish and bookkeeping cannot
 * publish it twice. The webhook dispatcher (a later issue) consumes that stream.
 */
export const EVENTS_STREAM = 'EVENTS';
/** Subjects the stream holds (before the namespace prefix). */
export const EVENTS_SUBJECTS = 'events.>';
/** JetStream's de-duplication window for `Nats-Msg-Id`; a relay retry within it is dropped. */
export const EVENTS_DUPLICATE_WINDOW_MS = 10 * 60 * 1000;
export const EVENT_SCHEMA_VERSION = '0.10.2';

export const EventActor = z.object({
  id: z.string(),
  name: z.string().nullable(),
  email: z.string().nullable(),
  role: z.string().nullable(),
  created_at: z.number().nullable(),
  updated_at: z.number().nullable(),
  type: z.literal('user'),
});

export const ChatEvent = z.object({
  schema: z.string(),
  id: z.string(),
  /** `<resource>.<operation>`, e.g. `memory.created`, `auth.login`, `folder.access_updated`. */
  event: z.string(),
  resource: z.string(),
  operation: z.string(),
  created_at: z.number().int(),
  instance_id: z.string(),
  version: z.string(),
  source: z.string(),
  actor: EventActor.nullable(),
  subject: z.object({ type: z.string(), id: z.string().nullable() }).nullable(),
  data: z.record(z.string(), z.unknown()),
  message: z.string().nullable(),
});
export type ChatEvent = z.infer<typeof ChatEvent>;

/** The bus subject of an event name: `memory.created` → `events.memory.created`. */
export function eventSubject(event: string): string {
  return `events.${event}`;
}

/** Keys Open WebUI drops from event payloads, and the suffixes it treats the same way. */
const SECRET_KEYS = new Set([
  'password', 'hashed_password', 'password_hash', 'new_password', 'token', 'access_token', 'refresh_token', 'id_token',
  'api_key', 'secret', 'key', 'authorization', 'cookie', 'webhook_token',
]);
const SECRET_SUFFIXES = ['_token', '_secret', '_api_key', '_key'];
const MAX_STRING = 1000;

/** Strip secrets and truncate long strings, recursively (Open WebUI's sanitisation). */
export function sanitiseEventData(value: unknown): unknown {
  if (typeof value === 'string') return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value;
  if (Array.isArray(value)) return value.map(sanitiseEventData);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const lower = k.toLowerCase();
      if (SECRET_KEYS.has(lower) || SECRET_SUFFIXES.some((s) => lower.endsWith(s))) continue;
      out[k] = sanitiseEventData(v);
    }
    return out;
  }
  return value;
}
