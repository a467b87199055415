import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { headers as natsHeaders } from 'nats';
import { EVENT_SCHEMA_VERSION, EVENTS_STREAM, eventSubject, type ChatEvent } from '@gatehouse/contracts';
import { Stack, waitFor, type Edge, type Proc } from '../support/local-stack.ts';
import { chatClient, chatDb, type Account } from './chat-fixture.ts';
import { Receiver } from './webhook-receiver.ts';

/**
 * The dispatcher's batch path (throughput): events leased straight from the stream in one
 * insert per batch, acknowledged after it commits; deliveries queued by the chat worker (test,
 * replay) wake the dispatchers without waiting for their poll; and a crash between the batch's
 * commit and its acknowledgement — the message comes again, and the delivery is neither lost nor
 * sent or logged twice.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack, 3);
const { call, signup } = chatClient(() => edge.chatUrl);
const receivers: Receiver[] = [];
let admin: Account;

const BASE_ENV = { ENABLE_LOCAL_WEB_FETCH: 'true', WEBHOOK_RETRY_SCHEDULE: '50ms,100ms', WEBHOOK_CONCURRENCY: '2', WEBHOOK_TIMEOUT_MS: '5000' };
// No poll within any test's time: whatever is delivered was found without it.
const NO_POLL = { ...BASE_ENV, WEBHOOK_POLL_MS: '600000', WEBHOOK_LEASE_MS: '60000' };

const receiver = async () => {
  const r = await new Receiver().start();
  receivers.push(r);
  return r;
};
const hook = async (url: string, events: string[]) => {
  const r = await call('/api/events/webhooks', admin, 'POST', { url, events });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { id: string };
};
const remove = async (id: string) => expect((await call(`/api/events/webhooks/${id}`, admin, 'DELETE')).body).toEqual({ status: true });
const event = (name: string): ChatEvent => ({
  schema: EVENT_SCHEMA_VERSION,
  id: randomUUID(),
  event: name,
  resource: 'group',
  operation: 'created',
  created_at: Math.floor(Date.now() / 1000),
  instance_id: 'test',
  version: EVENT_SCHEMA_VERSION,
  source: 'api',
  actor: null,
  subject: { type: 'group', id: randomUUID() },
  data: {},
  message: null,
});
/** Wait (bounded) until dispatcher `d` runs the registry's current revision (else the events match nothing). */
const applied = async (d: Proc) => {
  let last: any;
  await waitFor(
    async () => {
      last = (await call('/api/v1/configs/status', admin)).body;
      const g = last?.groups?.webhooks;
      const mine = (last?.replicas ?? []).find((x: any) => x.service === 'webhook-dispatcher' && x.pid === d.child.pid);
      return !!g && mine?.applied?.webhooks?.revision === g.revision;
    },
    10_000,
    () => `the dispatcher does not run the registry's revision: ${JSON.stringify(last)}`,
  );
};
const stopDispatcher = async (d: Proc, signal: NodeJS.Signals) => {
  await d.stop(signal);
  stack.workers.splice(stack.workers.indexOf(d), 1);
};

beforeAll(async () => {
  await stack.startChatWorker({ ENABLE_LOCAL_WEB_FETCH: 'true' }, { ingest: false });
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
  for (const r of receivers) await r.stop();
});

describe('webhook dispatcher: batches, leases and wake-ups', () => {
  it('a test and a replay are delivered at once, without the poll', async () => {
    const d = await stack.startWebhookDispatcher(NO_POLL);
    const r = await receiver();
    const w = await hook(r.url, ['group.created']);
    const t = await call(`/api/events/webhooks/${w.id}/test`, admin, 'POST');
    expect(t.status).toBe(200);
    await r.until(() => r.got.length === 1, 'test delivered (woken, not polled)');
    const again = await call(`/api/events/webhooks/${w.id}/deliveries/${t.body.delivery_id}/replay`, admin, 'POST');
    expect(again.status).toBe(200);
    await r.until(() => r.got.length === 2, 'replay delivered (woken, not polled)');
    expect(r.got.map((g) => g.headers['webhook-id'])).toEqual([t.body.delivery_id, t.body.delivery_id]);
    await remove(w.id);
    await stopDispatcher(d, 'SIGTERM');
  });

  it('a burst far beyond the endpoint’s concurrency: every event delivered once, one log row each', async () => {
    const d = await stack.startWebhookDispatcher(NO_POLL);
    const r = await receiver();
    const w = await hook(r.url, ['group.created']);
    await applied(d);
    const bus = await stack.busHandle();
    const h = natsHeaders();
    h.set('Content-Type', 'application/json');
    const events = Array.from({ length: 600 }, () => event('group.created'));
    for (let i = 0; i < events.length; i += 100) {
      await Promise.all(events.slice(i, i + 100).map((ev) => bus.js.publish(bus.subject(eventSubject(ev.event)), JSON.stringify(ev), { msgID: ev.id, expect: { streamName: bus.bucket(EVENTS_STREAM) }, headers: h })));
    }
    await r.until(() => new Set(r.events().map((e) => e.id)).size === events.length, 'all 600 delivered', 60_000);
    const ids = r.events().map((e) => e.id);
    expect(ids.length).toBe(events.length);
    expect(new Set(ids)).toEqual(new Set(events.map((e) => e.id)));
    await waitFor(async () => (await db`select 1 from webhook_delivery where webhook_id = ${w.id} and status <> 'delivered'`).length === 0, 10_000, () => 'rows not all marked delivered');
    const rows = await db<{ n: number; attempts: number }[]>`select count(*)::int as n, max(attempts)::int as attempts from webhook_delivery where webhook_id = ${w.id}`;
    expect(rows[0]).toEqual({ n: events.length, attempts: 1 });
    await remove(w.id);
    await stopDispatcher(d, 'SIGTERM');
  });

  it('an open circuit sends its queue back to the table, uncounted, and delivers it once the cooldown ends', async () => {
    const d = await stack.startWebhookDispatcher({ ...BASE_ENV, WEBHOOK_CONCURRENCY: '1', WEBHOOK_RETRY_SCHEDULE: '1m', WEBHOOK_BREAKER_FAILURES: '2', WEBHOOK_BREAKER_COOLDOWN_MS: '3000', WEBHOOK_POLL_MS: '200' });
    const r = await receiver();
    r.behave = (n) => ({ status: n <= 2 ? 500 : 200 });
    const w = await hook(r.url, ['group.created']);
    await applied(d);
    const bus = await stack.busHandle();
    const events = Array.from({ length: 10 }, () => event('group.created'));
    await Promise.all(events.map((ev) => bus.js.publish(bus.subject(eventSubject(ev.event)), JSON.stringify(ev), { msgID: ev.id, expect: { streamName: bus.bucket(EVENTS_STREAM) } })));
    // Two failures open the circuit: the other eight wait in the table, due when it half-opens, no attempt counted.
    await waitFor(
      async () => (await db`select 1 from webhook_delivery where webhook_id = ${w.id} and status = 'pending' and attempts = 0 and next_attempt_at > ${Date.now()}`).length === 8,
      15_000,
      () => 'the queue was not sent back while the circuit is open',
    );
    expect(r.got).toHaveLength(2);
    await r.until(() => r.completed === 10, 'the eight delivered after the cooldown');
    await waitFor(async () => (await db`select 1 from webhook_delivery where webhook_id = ${w.id} and status = 'sending'`).length === 0, 10_000, () => 'successes not written');
    const rows = await db<{ status: string; attempts: number; n: number }[]>`select status, attempts, count(*)::int as n from webhook_delivery where webhook_id = ${w.id} group by 1, 2 order by 1`;
    expect(rows).toEqual([{ status: 'delivered', attempts: 1, n: 8 }, { status: 'pending', attempts: 1, n: 2 }]);
    await remove(w.id);
    await stopDispatcher(d, 'SIGTERM');
  });

  it('killed after its batch committed but before it acknowledged: the message comes again, delivered once, logged once', async () => {
    const env = { ...BASE_ENV, WEBHOOK_POLL_MS: '200', WEBHOOK_LEASE_MS: '1500' };
    const doomed = await stack.startWebhookDispatcher(env);
    const r = await receiver();
    const w = await hook(r.url, ['group.created']);
    await applied(doomed);
    // Hold the webhook row: the batch's insert (its foreign key takes a share lock on it) waits.
    const lock = await db.reserve();
    try {
      await lock`begin`;
      await lock`select id from webhook where id = ${w.id} for update`;
      const pid = (await lock<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid;
      const ev = event('group.created');
      const bus = await stack.busHandle();
      const pa = await bus.js.publish(bus.subject(eventSubject(ev.event)), JSON.stringify(ev), { msgID: ev.id, expect: { streamName: bus.bucket(EVENTS_STREAM) } });
      let blocked: unknown;
      await waitFor(async () => (blocked = await db`select pid, query, state, wait_event_type from pg_stat_activity where ${pid}::int = any(pg_blocking_pids(pid))`).length > 0, 15_000, () => 'the dispatcher’s insert never waited on the lock');
      // Frozen with its insert pending: once the lock goes the insert commits, but the process cannot ack.
      doomed.child.kill('SIGSTOP');
      await lock`rollback`;
      await waitFor(async () => (await db`select 1 from webhook_delivery where event_id = ${ev.id}`).length === 1, 10_000, () => `the batch never committed: ${JSON.stringify(blocked)}`);
      await stopDispatcher(doomed, 'SIGKILL');
      expect(r.got).toHaveLength(0);
      const jsm = await bus.nc.jetstreamManager();
      const consumer = () => jsm.consumers.info(bus.bucket(EVENTS_STREAM), 'webhook-dispatcher');
      const before = await consumer();
      expect(before.ack_floor.stream_seq).toBeLessThan(pa.seq);

      const next = await stack.startWebhookDispatcher(env);
      // The leased row: taken by the new dispatcher once the dead one's lease ran out.
      await r.until(() => r.completed === 1, 'delivered by the next dispatcher');
      // The unacknowledged message: redelivered by JetStream after its ack wait (30 s), recorded
      // again (a no-op: same delivery id) and acknowledged.
      await waitFor(
        async () => {
          const ci = await consumer();
          return ci.delivered.consumer_seq > before.delivered.consumer_seq && ci.ack_floor.stream_seq >= pa.seq && ci.num_ack_pending === 0;
        },
        50_000,
        () => 'the unacknowledged message was not redelivered and acknowledged',
      );
      // Nothing else entered the stream meanwhile: that later delivery was this message again.
      expect((await jsm.streams.info(bus.bucket(EVENTS_STREAM))).state.last_seq).toBe(pa.seq);
      const rows = await db<{ id: string; status: string; attempts: number }[]>`select id, status, attempts from webhook_delivery where event_id = ${ev.id}`;
      expect(rows).toEqual([{ id: expect.stringMatching(/^msg_/), status: 'delivered', attempts: 1 }]);
      expect(r.got.map((g) => g.headers['webhook-id'])).toEqual([rows[0]!.id]);
      await stopDispatcher(next, 'SIGTERM');
    } finally {
      lock.release();
    }
  }, 120_000);
});
