import { randomUUID } from 'node:crypto';
import { EVENT_SCHEMA_VERSION, eventSubject, sanitiseEventData, type ChatEvent } from '@gatehouse/contracts';
import type { Tx, UserRow } from '../context.ts';

export interface EventInput {
  /** `<resource>.<operation>`, Open WebUI's event name (e.g. `memory.created`). */
  event: string;
  actor: UserRow | null;
  subject: { type: string; id: string | null } | null;
  data: Record<string, unknown>;
  /** How the change came about: `api` (default), `password` (sign-in), `system`… */
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
