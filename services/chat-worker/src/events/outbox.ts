import { randomUUID } from 'node:crypto';
import {
  CHAT_EVENTS,
  EVENT_SCHEMA_VERSION,
  eventSubject,
  sanitiseEventData,
  type ChatEvent,
  type ChatEventData,
  type ChatEventName,
} from '@gatehouse/contracts';
import type { Tx, UserRow } from '../context.ts';

/** One event for the outbox, named by the catalog (contracts/src/chat/events.ts). */
export interface EventOf<N extends ChatEventName> {
  actor: UserRow | null;
  subject: { type: string; id: string | null } | null;
  data: ChatEventData<N>;
  /** How the change came about: `api` (default), `password` (sign-in), `system`… */
  source?: string;
  message?: string | null;
}

/** What handlers call: a catalog name, and data of that event's shape (checked before writing). */
export type Emit = <N extends ChatEventName>(tx: Tx, event: N, e: EventOf<N>) => Promise<void>;

/** The envelope's input as it is written, unchecked (the wire-level tests write arbitrary data). */
export interface EventInput {
  /** `<resource>.<operation>`, Open WebUI's event name (e.g. `memory.created`). */
  event: string;
  actor: UserRow | null;
  subject: { type: string; id: string | null } | null;
  data: Record<string, unknown>;
  source?: string;
  message?: string | null;
}

/**
 * Writes events into the outbox inside the caller's transaction, in Open WebUI's envelope with
 * secrets stripped, and pokes the relay (NOTIFY is delivered at commit, and not at all on
 * rollback — exactly when there is something to publish).
 */
export class Outbox {
  constructor(
    private readonly instanceId: string,
    private readonly channel: string,
  ) {}

  /** A catalog event: its data must match the event's schema (a mismatch is a bug: it throws, the change rolls back). */
  readonly emitChecked: Emit = async (tx, event, e) => {
    const r = CHAT_EVENTS[event].safeParse(e.data);
    if (!r.success) throw new Error(`${event}: data does not match the event catalog (${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')})`);
    // The data as given, not zod's copy: key order is what the emit site wrote.
    await this.emit(tx, { ...e, event, data: e.data as Record<string, unknown> });
  };

  async emit(tx: Tx, e: EventInput): Promise<void> {
    const dot = e.event.indexOf('.');
    const ev: ChatEvent = {
      schema: EVENT_SCHEMA_VERSION,
      id: randomUUID(),
      event: e.event,
      resource: e.event.slice(0, dot),
      operation: e.event.slice(dot + 1),
      created_at: Math.floor(Date.now() / 1000),
      instance_id: this.instanceId,
      version: EVENT_SCHEMA_VERSION,
      source: e.source ?? 'api',
      actor: e.actor && {
        id: e.actor.id,
        name: e.actor.name,
        email: e.actor.email,
        role: e.actor.role,
        created_at: e.actor.created_at,
        updated_at: e.actor.updated_at,
        type: 'user',
      },
      subject: e.subject,
      data: sanitiseEventData(e.data) as Record<string, unknown>,
      message: e.message ?? null,
    };
    await tx`insert into outbox (event_id, subject, event) values (${ev.id}, ${eventSubject(ev.event)}, ${tx.json(ev as never)})`;
    await tx`select pg_notify(${this.channel}, '')`;
  }
}
