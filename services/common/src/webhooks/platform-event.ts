import { randomUUID } from 'node:crypto';
import { headers as natsHeaders } from 'nats';
import { EVENT_SCHEMA_VERSION, EVENTS_STREAM, PLATFORM_EVENTS, eventSubject, type ChatEvent, type PlatformEventName } from '@gatehouse/contracts';
import type { z } from 'zod';
import type { Bus } from '../bus/connect.ts';

/**
 * Publish one of PLATFORM_EVENTS (gate flips, vector collections, webhook health) on the `EVENTS`
 * stream, in Open WebUI's envelope, with its id as `Nats-Msg-Id` (a retried publish is dropped by
 * the stream's duplicate window). When the stream does not exist (no chat platform has run in
 * this namespace, so nobody can subscribe) it is skipped; returns whether it was stored.
 */
export async function publishPlatformEvent<N extends PlatformEventName>(
  bus: Bus,
  name: N,
  e: { data: z.input<(typeof PLATFORM_EVENTS)[N]>; subject: { type: string; id: string | null } | null; source?: string; message?: string | null; instanceId?: string },
): Promise<boolean> {
  const data = PLATFORM_EVENTS[name].parse(e.data) as Record<string, unknown>;
  const dot = name.indexOf('.');
  const ev: ChatEvent = {
    schema: EVENT_SCHEMA_VERSION,
    id: randomUUID(),
    event: name,
    resource: name.slice(0, dot),
    operation: name.slice(dot + 1),
    created_at: Math.floor(Date.now() / 1000),
    instance_id: e.instanceId ?? 'platform',
    version: EVENT_SCHEMA_VERSION,
    source: e.source ?? 'system',
    actor: null,
    subject: e.subject,
    data,
    message: e.message ?? null,
  };
  const h = natsHeaders();
  h.set('Content-Type', 'application/json');
  try {
    await bus.js.publish(bus.subject(eventSubject(name)), JSON.stringify(ev), { msgID: ev.id, expect: { streamName: bus.bucket(EVENTS_STREAM) }, headers: h, timeout: 2000 });
    return true;
  } catch (err) {
    const m = (err as Error).message ?? '';
    if (/no responders|503|stream not found|expected stream/i.test(m)) return false;
    throw err;
  }
}
