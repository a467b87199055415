import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { headers as natsHeaders } from 'nats';
import postgres from 'postgres';
import { EVENT_SCHEMA_VERSION, EVENTS_STREAM, eventSubject, type ChatEvent } from '@gatehouse/contracts';
import { newKey, Stack, testDatabaseUrl } from '../../tests/support/local-stack.ts';
import { cpuMs, findPid, machineTicks, ms, pct, pgBackendsOf, waitQuiet } from './measure.ts';

/**
 * Webhook benchmark: chat worker (outbox relay), one webhook dispatcher and a chat-only edge in one
 * stack, a receiver in this process (loopback, answers 200 at once), one webhook subscribed to
 * `group.created`.
 * 1. Latency: LATENCY_EVENTS events, one at a time, each written to the outbox in its own
 *    transaction exactly as a chat operation writes one (insert + NOTIFY); measured from the
 *    commit's return to the receiver's arrival of that event (same clock: both in this process).
 *    This is the whole path: relay → EVENTS stream → dispatcher (record, lease) → signed POST.
 * 2. Saturation: SAT_EVENTS events published straight into the stream as fast as JetStream takes
 *    them (the relay is not what is measured here), counted from the first publish to the last
 *    arrival: deliveries per second of one dispatcher to one endpoint (WEBHOOK_CONCURRENCY in flight).
 * 3. Baseline: the receiver's own capacity in the same run — SAT_EVENTS POSTs of the same body
 *    from this process with the same concurrency and a keep-alive agent.
 * During the saturation phase, the CPU time of each party per delivery: the dispatcher(s), the
 * Postgres backends serving them (their sockets matched to pg_stat_activity), nats-server, this
 * process (publisher and receiver), and the whole machine.
 * Env: BENCH_WEBHOOK_LATENCY_EVENTS (500), BENCH_WEBHOOK_SAT_EVENTS (10000), BENCH_WEBHOOK_CONCURRENCY (64),
 * BENCH_WEBHOOK_DISPATCHERS (1: replicas sharing the durable consumer), BENCH_WEBHOOK_PROFILE (a
 * directory: the dispatchers run with `--cpu-prof` and write their profiles there when stopped).
 */
const LATENCY_EVENTS = Number(process.env.BENCH_WEBHOOK_LATENCY_EVENTS ?? 500);
const SAT_EVENTS = Number(process.env.BENCH_WEBHOOK_SAT_EVENTS ?? 10_000);
const CONCURRENCY = Number(process.env.BENCH_WEBHOOK_CONCURRENCY ?? 64);
const DISPATCHERS = Math.min(8, Math.max(1, Number(process.env.BENCH_WEBHOOK_DISPATCHERS ?? 1)));
const PROFILE_DIR = process.env.BENCH_WEBHOOK_PROFILE;
const watchdog = setTimeout(() => {
  console.error('[bench] watchdog: the run took longer than 10 minutes; stopping');
  process.exit(2);
}, 10 * 60_000);
watchdog.unref();
const say = (s: string) => console.error(`[bench] ${s}`);
const line = (label: string, xs: number[]) => `${label.padEnd(56)} p50 ${ms(pct(xs, 50)).padStart(10)}  p99 ${ms(pct(xs, 99)).padStart(10)}  max ${ms(Math.max(...xs)).padStart(10)}  (n=${xs.length})`;

/** Arrival time of each event id; waiters for a count. */
const arrivals = new Map<string, number>();
let received = 0;
let waiters: { n: number; resolve: () => void }[] = [];
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const t = performance.now();
    res.writeHead(200).end();
    if (req.headers['x-bench-baseline']) return;
    received++;
    try {
      const id = (JSON.parse(Buffer.concat(chunks).toString()) as { id: string }).id;
      if (!arrivals.has(id)) arrivals.set(id, t);
      arrivalWaiters.get(id)?.();
      arrivalWaiters.delete(id);
    } catch {
      // not an event
    }
    waiters = waiters.filter((w) => (received >= w.n ? (w.resolve(), false) : true));
  });
});
receiver.keepAliveTimeout = 30_000;
const untilReceived = (n: number, limitMs: number) =>
  new Promise<void>((resolve, reject) => {
    if (received >= n) return resolve();
    const t = setTimeout(() => reject(new Error(`only ${received} of ${n} deliveries within ${limitMs} ms`)), limitMs);
    waiters.push({ n, resolve: () => (clearTimeout(t), resolve()) });
  });

/** Wait (bounded) until the event with this id has arrived (it may already have). */
const arrivalWaiters = new Map<string, () => void>();
function untilArrived(id: string, limitMs: number): Promise<void> {
  if (arrivals.has(id)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => (arrivalWaiters.delete(id), reject(new Error(`event ${id} not delivered within ${limitMs} ms`))), limitMs);
    arrivalWaiters.set(id, () => (clearTimeout(t), resolve()));
  });
}

const event = (i: number): ChatEvent => ({
  schema: EVENT_SCHEMA_VERSION,
  id: randomUUID(),
  event: 'group.created',
  resource: 'group',
  operation: 'created',
  created_at: Math.floor(Date.now() / 1000),
  instance_id: 'bench',
  version: EVENT_SCHEMA_VERSION,
  source: 'api',
  actor: null,
  subject: { type: 'group', id: `g${i}` },
  data: { name: `Group ${i}` },
  message: null,
});

await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
const stack = new Stack();
const sql = postgres(testDatabaseUrl(), { max: 2, onnotice: () => undefined, connection: { search_path: `chat_${stack.ns}, public` } });
try {
  await stack.startChatWorker({ ENABLE_LOCAL_WEB_FETCH: 'true' }, { ingest: false });
  const dispatchers = [];
  for (let i = 0; i < DISPATCHERS; i++) {
    dispatchers.push(await stack.startWebhookDispatcher({ ENABLE_LOCAL_WEB_FETCH: 'true', WEBHOOK_CONCURRENCY: String(CONCURRENCY) }, PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : []));
  }
  const pids = dispatchers.map((d) => d.child.pid!);
  const backendsOf = async () =>
    (await Promise.all(pids.map((pid) => pgBackendsOf(pid, async (ports) => (await sql<{ pid: number }[]>`select pid from pg_stat_activity where client_port = any(${ports})`).map((r) => r.pid))))).flat();
  const edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  const call = async (path: string, token: string | undefined, body: unknown) => {
    const r = await fetch(edge.chatUrl + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    return (await r.json()) as Record<string, any>;
  };
  const admin = await call('/api/v1/auths/signup', undefined, { name: 'Admin', email: `admin-${stack.ns}@example.com`, password: newKey() });
  await call('/api/events/webhooks', admin.token, { url, events: ['group.created'] });
  // Warm-up: connections, caches, JIT.
  for (let i = 0; i < 50; i++) await call('/api/v1/groups/create', admin.token, { name: `warm ${i}`, description: '' });
  await untilReceived(50, 20_000);

  // 1. committed → delivered, one event at a time.
  await waitQuiet('latency', 20_000, say);
  const lat: number[] = [];
  for (let i = 0; i < LATENCY_EVENTS; i++) {
    const ev = event(i);
    // Timed as COMMIT is sent (the end of the transaction's body): the delivery can reach this
    // process's receiver before the commit's own answer does, so "after the commit returned"
    // would sometimes be after the arrival.
    let committed = 0;
    await sql.begin(async (tx) => {
      await tx`insert into outbox (event_id, subject, event) values (${ev.id}, ${eventSubject(ev.event)}, ${tx.json(ev as never)})`;
      await tx`select pg_notify(${`chat_${stack.ns}_outbox`}, '')`;
      committed = performance.now();
    });
    await untilArrived(ev.id, 10_000).catch(async (err) => {
      // Where the event is: outbox (published?), delivery row (status, attempts, error).
      const [o] = await sql`select published_at from outbox where event_id = ${ev.id}`;
      const [d] = await sql`select status, attempts, last_error, lease_until, next_attempt_at, created_at from webhook_delivery where event_id = ${ev.id}`;
      console.error(`[bench] missing event ${i}: outbox ${JSON.stringify(o)} delivery ${JSON.stringify(d)} now ${Date.now()}`);
      throw err;
    });
    lat.push(arrivals.get(ev.id)! - committed);
  }

  // 2. saturation: straight into the stream.
  await waitQuiet('saturation', 20_000, say);
  const bus = await stack.busHandle();
  const natsPid = findPid('nats-server');
  const backends0 = await backendsOf();
  const cpu0 = { disp: pids.map(cpuMs), pg: new Map(backends0.map((p) => [p, cpuMs(p)])), nats: cpuMs(natsPid), self: process.cpuUsage(), machine: machineTicks() };
  const start = received;
  const t0 = performance.now();
  const h = natsHeaders();
  h.set('Content-Type', 'application/json');
  const inflight: Promise<unknown>[] = [];
  for (let i = 0; i < SAT_EVENTS; i++) {
    const ev = event(i);
    inflight.push(bus.js.publish(bus.subject(eventSubject(ev.event)), JSON.stringify(ev), { msgID: ev.id, expect: { streamName: bus.bucket(EVENTS_STREAM) }, headers: h }));
    if (inflight.length >= 500) await Promise.all(inflight.splice(0));
  }
  await Promise.all(inflight);
  const published = performance.now();
  await untilReceived(start + SAT_EVENTS, 300_000);
  const t1 = performance.now();
  const rate = (SAT_EVENTS / (t1 - t0)) * 1000;
  // CPU per delivery (µs) of each party during the saturation phase.
  const backends1 = [...new Set([...backends0, ...(await backendsOf())])];
  const selfCpu = process.cpuUsage(cpu0.self);
  const machine1 = machineTicks();
  const perDelivery = (msTotal: number) => `${((msTotal * 1000) / SAT_EVENTS).toFixed(0)} µs`;
  const cpuSplit = {
    dispatchers: perDelivery(pids.map(cpuMs).reduce((a, c, i) => a + c - cpu0.disp[i]!, 0)),
    postgres: `${perDelivery(backends1.reduce((a, p) => a + cpuMs(p) - (cpu0.pg.get(p) ?? 0), 0))} (${backends1.length} backends)`,
    nats: perDelivery(cpuMs(natsPid) - cpu0.nats),
    bench: perDelivery((selfCpu.user + selfCpu.system) / 1000),
    machine: perDelivery((machine1.busy - cpu0.machine.busy) * 10),
  };

  // 3. the receiver's own capacity, same body, same concurrency.
  await waitQuiet('baseline', 20_000, say);
  const body = JSON.stringify(event(0));
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const post = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-bench-baseline': '1' } }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end(body);
    });
  let next = 0;
  const b0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next++ < SAT_EVENTS) await post();
  }));
  const baseRate = (SAT_EVENTS / (performance.now() - b0)) * 1000;
  agent.destroy();

  console.log(`webhooks: ${DISPATCHERS} dispatcher${DISPATCHERS > 1 ? 's' : ''}, 1 endpoint, WEBHOOK_CONCURRENCY ${CONCURRENCY}; loopback receiver answering 200`);
  console.log(line('event committed (outbox) → delivered', lat));
  console.log(`${'saturation: deliveries/s (stream → receiver)'.padEnd(56)} ${rate.toFixed(0)}/s  (${SAT_EVENTS} events; published in ${ms(published - t0)}, all delivered after ${ms(t1 - t0)})`);
  console.log(`${'baseline: the receiver’s own capacity (direct POSTs)'.padEnd(56)} ${baseRate.toFixed(0)}/s`);
  console.log(`${'CPU per delivery at saturation'.padEnd(56)} dispatcher ${cpuSplit.dispatchers}, its Postgres ${cpuSplit.postgres}, nats-server ${cpuSplit.nats}, bench (publisher + receiver) ${cpuSplit.bench}; machine ${cpuSplit.machine} of 2 cores`);
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_delivery where status = 'delivered'`;
  console.log(`${'delivery rows recorded as delivered'.padEnd(56)} ${row!.n}`);
} catch (err) {
  // What the dispatcher and the chat worker (its relay) said about it (warnings and errors only).
  for (const w of stack.workers) for (const l of w.log().split('\n')) if (/"level":(40|50|60)/.test(l)) console.error(l);
  throw err;
} finally {
  await sql.end({ timeout: 5 });
  await stack.close();
  receiver.close();
}
