import type { Sql } from 'postgres';
import { DeliverPolicy, type JsMsg } from 'nats';
import { ChatEvent, EVENTS_STREAM } from '@gatehouse/contracts';
import { queueDeliveries, type Bus, type LoadedWebhook } from '@gatehouse/common';

/**
 * Replay for one webhook (`POST /api/events/webhooks/{id}/replay`): reads the EVENTS stream from
 * `since` (epoch seconds) to where it ends now and queues each event the webhook's patterns and
 * targets admit again (same delivery id: a receiver that deduplicates sees a repeat). The webhook
 * counts as enabled for the replay. Answers how many deliveries were queued.
 */
export async function replayStream(bus: Bus, sql: Sql, hooks: readonly LoadedWebhook[], since: number): Promise<number> {
  const hook = hooks.map((h) => ({ ...h, enabled: true }));
  const jsm = await bus.nc.jetstreamManager();
  const stream = bus.bucket(EVENTS_STREAM);
  const info = await jsm.streams.info(stream).catch(() => null);
  if (!info || info.state.messages === 0) return 0;
  const last = info.state.last_seq;
  // An ordered consumer (ephemeral, in order; no subject filter: the stream holds only events).
  const consumer = await bus.js.consumers.get(stream, { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(since * 1000).toISOString() });
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
          count += (await queueDeliveries(sql, ev.data, hook, Date.now(), { reset: true })).length;
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
  return count;
}
