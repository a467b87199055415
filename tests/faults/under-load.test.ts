import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAIM_BUCKET } from '@gatehouse/contracts';
import { Stack, waitFor, type Edge, type Proc } from '../support/local-stack.ts';
import { startPrivateInfra, type PrivateInfra } from '../../scripts/src/private-infra.ts';
import { chatClient, type Account } from '../integration/chat-fixture.ts';
import { CLIENT_LIMITS, countChatWrites, countPoints, EDGE_LIMITS, fakeLlm, num, type LlmSetup } from './fixture.ts';
import { faceCalls, loop, send, Tally } from './load.ts';

/**
 * Faults under a steady load on all four faces of one edge, two replicas of every worker in each
 * queue group: a worker that answers too slowly (SIGSTOP past the face's limit, then SIGCONT),
 * clients that read a long stream slowly (flow control: no NATS slow-consumer disconnect, no other
 * request affected), clients that disconnect mid-upload (no partial file, no orphaned chunks in
 * the object store), and kill -9 of a worker mid-request, then a new one (the other replica takes
 * over). The load keeps about 300 requests in flight across the four faces (LOOPS). Requests in
 * flight may fail, cleanly (503/504 in the face's format); none hangs; every acknowledged write is
 * found afterwards. Knobs: FAULTS_CONCURRENCY (a multiplier of the load),
 * FAULTS_SLOW_READERS, FAULTS_CUT_UPLOADS.
 */
let infra: PrivateInfra;
let stack: Stack;
let edge: Edge;
let llm: LlmSetup;
let admin: Account;
const replicas: Record<'speech' | 'proxy' | 'vector' | 'chat', Proc[]> = { speech: [], proxy: [], vector: [], chat: [] };
const COLLECTION = 'faults';
const start = {
  speech: () => stack.startWorker(),
  proxy: () => stack.startProxyWorker(llm.env),
  vector: () => stack.startVectorWorker(),
  chat: (first: boolean) => stack.startChatWorker({}, { ingest: first }),
};

beforeAll(async () => {
  infra = await startPrivateInfra();
  stack = new Stack({ ...infra.urls(), startTimeoutMs: 90_000 });
  llm = await fakeLlm();
  // The first chat worker migrates its schema; then everything else starts at once.
  replicas.chat.push(await start.chat(true));
  const [s0, s1, p0, p1, v0, v1, c1] = await Promise.all([start.speech(), start.speech(), start.proxy(), start.proxy(), start.vector(), start.vector(), start.chat(false)]);
  replicas.speech.push(s0, s1);
  replicas.proxy.push(p0, p1);
  replicas.vector.push(v0, v1);
  replicas.chat.push(c1);
  edge = await stack.startEdge({ ...EDGE_LIMITS, ...llm.env });
  admin = await chatClient(() => edge.chatUrl).signup();
  const c = await fetch(`${edge.vectorUrl}/collections/${COLLECTION}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ vectors: { size: 4, distance: 'Cosine' } }) });
  expect(c.status, await c.text()).toBe(200);
}, 240_000);

afterAll(async () => {
  // A stopped worker must be woken to stop.
  for (const p of Object.values(replicas).flat()) if (p.running) p.child.kill('SIGCONT');
  await stack?.close();
  await llm?.close();
  await infra?.close();
}, 60_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Vector point ids, unique across the scenarios (they share one collection). */
let nextId = 1;

/** The private NATS server's count of slow consumers it cut off (its monitoring port). */
const slowConsumers = async () => ((await (await fetch(`http://127.0.0.1:${infra.nats.monitor}/varz`)).json()) as { slow_consumers: number }).slow_consumers;

/**
 * Loops per face of the steady load (× FAULTS_CONCURRENCY): about 300 requests in flight at once,
 * mostly cheap ones — LLM streams from the fake's slow model (~1.5 s each, waiting more than
 * working), reads beside the counted writes on the vector and chat faces, a few syntheses.
 */
const LOOPS = { llm: 160, vectorWrites: 30, vectorReads: 40, chatWrites: 30, chatReads: 40, speech: 4 };
/** Loops of each kind at multiplier `x` (at least one). */
const loopsOf = (k: keyof typeof LOOPS, x: number) => Math.max(1, Math.round(LOOPS[k] * x));
const loopsTotal = (x: number) => (Object.keys(LOOPS) as (keyof typeof LOOPS)[]).reduce((a, k) => a + loopsOf(k, x), 0);

/** Run a steady load on all four faces until `until` resolves, then for `tailMs` more; returns the most requests in flight at once. */
async function steadyLoad(t: Tally, until: Promise<unknown>, tailMs: number, opts: { llmModel?: string; x?: number; inFlight?: { n: number; max: number } } = {}): Promise<number> {
  const x = opts.x ?? num('FAULTS_CONCURRENCY', 1);
  let stopAt = Infinity;
  void until.finally(() => (stopAt = Date.now() + tailMs));
  const stop = () => Date.now() > stopAt;
  const calls = faceCalls(edge, CLIENT_LIMITS, { chatToken: admin.token, collection: COLLECTION, llmModel: opts.llmModel ?? 'fake/slow' });
  const chatOps = [calls.memory, calls.chat, calls.file];
  const next = () => nextId++;
  const f = opts.inFlight ?? { n: 0, max: 0 };
  const track = async (p: Promise<unknown>) => {
    f.max = Math.max(f.max, ++f.n);
    try {
      await p;
    } finally {
      f.n--;
    }
  };
  const n = (k: keyof typeof LOOPS) => loopsOf(k, x);
  await Promise.all([
    loop(n('llm'), stop, 40_000, () => track(send(t, calls.llm()))),
    loop(n('vectorWrites'), stop, 20_000, () => track(send(t, calls.vector(next())))),
    loop(n('vectorReads'), stop, 20_000, () => track(send(t, calls.vectorQuery()))),
    loop(n('chatWrites'), stop, 20_000, (i) => track(send(t, chatOps[i % 3]!(next())))),
    loop(n('chatReads'), stop, 20_000, (i) => track(send(t, calls.chatRead(i)))),
    loop(n('speech'), stop, 2_000, () => track(send(t, calls.speech()))),
  ]);
  return f.max;
}

async function verifyWrites(t: Tally) {
  const ids = [...new Set((t.acked['vector points'] ?? []) as number[])];
  const chat = await countChatWrites(stack, t);
  return { found: { 'vector points': { acked: ids.length, found: await countPoints(edge.vectorUrl, COLLECTION, ids) }, ...chat.found }, lines: chat.lines };
}

describe('slow workers, slow readers, impolite clients', () => {
  it('a worker that answers too slowly: its requests end with a clean 504 at the limit, the other replica serves, no hang', async () => {
    const t = new Tally();
    const stopped: string[] = [];
    const chaos = (async () => {
      await sleep(2000);
      // One replica of every worker freezes for longer than every face's limit, then wakes.
      for (const kind of Object.keys(replicas) as (keyof typeof replicas)[]) {
        const p = replicas[kind][0]!;
        p.child.kill('SIGSTOP');
        stopped.push(`${kind}-worker pid ${p.child.pid}`);
      }
      await sleep(Number(EDGE_LIMITS.CHAT_REQUEST_TIMEOUT_MS) + 4000);
      for (const kind of Object.keys(replicas) as (keyof typeof replicas)[]) replicas[kind][0]!.child.kill('SIGCONT');
    })();
    const most = await steadyLoad(t, chaos, 3000);
    const { found, lines } = await verifyWrites(t);
    const slow = await slowConsumers();
    const text = t.print('a worker that answers too slowly (SIGSTOP past the limits, then SIGCONT)', found, [`stopped: ${stopped.join('; ')} for ${Number(EDGE_LIMITS.CHAT_REQUEST_TIMEOUT_MS) + 4000} ms`, `most requests in flight at once: ${most}`, `NATS slow consumers: ${slow}`, ...lines]);
    expect(t.bad, text).toEqual([]);
    for (const [what, f] of Object.entries(found)) expect(f.found, `${what}: acknowledged vs found\n${text}`).toBe(f.acked);
    // The frozen replicas really held requests: some ended at the limit, cleanly.
    const timedOut = Object.values(t.kinds).reduce((a, k) => a + (k['504 clean'] ?? 0) + (k['200 then error event, clean'] ?? 0), 0);
    expect(timedOut, text).toBeGreaterThan(0);
    for (const p of Object.values(replicas).flat()) expect(p.running).toBe(true);
  }, 240_000);

  it('clients that read a long stream slowly: each gets all of it, nobody else is affected, no slow-consumer disconnect', async () => {
    const t = new Tally();
    const before = await slowConsumers();
    const edgeLog = edge.proc.log().length;
    // ~10,000 words echoed back, one SSE event each: over a megabyte per reply, read at a trickle.
    const words = Array.from({ length: 10_000 }, (_, i) => `w${i}`).join(' ');
    const body = JSON.stringify({ model: 'fake/echo', max_tokens: 64_000, stream: true, messages: [{ role: 'user', content: words }] });
    const readers = num('FAULTS_SLOW_READERS', 6);
    const slowRead = () =>
      new Promise<{ bytes: number; ms: number; complete: boolean; status: number; head: string }>((resolve, reject) => {
        const started = Date.now();
        const req = request(`${edge.proxyUrl}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
          let bytes = 0;
          let sincePause = 0;
          let tail = '';
          let head = '';
          res.on('data', (d: Buffer) => {
            if (head.length < 300) head += d.toString().slice(0, 300);
            bytes += d.length;
            sincePause += d.length;
            tail = (tail + d.toString()).slice(-200);
            // Read 64 KB, then stop reading for a while (~1 MB/s): TCP backpressure all the way to the edge.
            if (sincePause < 64 * 1024) return;
            sincePause = 0;
            res.pause();
            setTimeout(() => res.resume(), 60);
          });
          res.on('end', () => resolve({ bytes, ms: Date.now() - started, complete: tail.includes('event: message_stop'), status: res.statusCode!, head }));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(body);
      });
    // A clean refusal before the first byte (the worker busy past the idle limit at the start, on a
    // loaded machine) is retried once, as the Anthropic SDK retries a 503/504; the retry must then
    // be read whole like the others.
    const readWithRetry = async () => {
      const first = await slowRead();
      return !first.complete && [503, 504].includes(first.status) && first.head.startsWith('{"type":"error"') ? slowRead() : first;
    };
    const slow = Promise.all(Array.from({ length: readers }, readWithRetry));
    const most = await steadyLoad(t, slow, 1000);
    const got = await slow;
    const after = await slowConsumers();
    const reconnects = (edge.proc.log().slice(edgeLog).match(/nats connection status changed/g) ?? []).length;
    const { found, lines } = await verifyWrites(t);
    const text = t.print('slow readers of long LLM streams beside a steady load', found, [
      `slow readers: ${got.map((g) => `${(g.bytes / 1e6).toFixed(1)} MB in ${g.ms} ms${g.complete ? '' : ` INCOMPLETE ${g.status} ${g.head}`}`).join(', ')}`,
      `most requests in flight at once: ${most} (and the slow readers)`,
      `NATS slow consumers: ${before} before, ${after} after; edge NATS reconnects: ${reconnects}`,
      ...lines,
    ]);
    expect(t.bad, text).toEqual([]);
    // Each slow reader gets its whole reply, or (a busy machine) a clean refusal before the first byte.
    expect(got.every((g) => g.complete || ([503, 504].includes(g.status) && g.head.startsWith('{"type":"error"'))), text).toBe(true);
    expect(got.some((g) => g.complete), text).toBe(true);
    expect(after - before, text).toBe(0);
    expect(reconnects, text).toBe(0);
    for (const [what, f] of Object.entries(found)) expect(f.found, `${what}: acknowledged vs found\n${text}`).toBe(f.acked);
  }, 240_000);

  it('clients that disconnect mid-upload: no file, no orphaned chunks, the face keeps serving', async () => {
    const t = new Tally();
    const bus = await stack.busHandle();
    const objStream = `OBJ_${bus.bucket(CLAIM_BUCKET)}`;
    const sql = (await import('./fixture.ts')).chatSql(stack);
    const [{ n: filesBefore }] = (await sql<{ n: number }[]>`select count(*)::int as n from file`) as unknown as [{ n: number }];
    const cuts = num('FAULTS_CUT_UPLOADS', 6);
    const cutUpload = (i: number) =>
      new Promise<number>((resolve) => {
        const boundary = `----faults${i}`;
        const head = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="cut-${i}.txt"\r\ncontent-type: text/plain\r\n\r\n`;
        // Announces 8 MB, sends 3 MB, then the client goes away.
        const req = request(`${edge.chatUrl}/api/v1/files/`, {
          method: 'POST',
          headers: { authorization: `Bearer ${admin.token}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + 8 * 1024 * 1024 + boundary.length + 8) },
        });
        let sent = head.length;
        req.on('error', () => resolve(sent));
        req.on('response', (res) => (res.resume(), resolve(-res.statusCode!)));
        req.write(head);
        const chunk = Buffer.alloc(256 * 1024, 'x');
        const pump = async () => {
          for (let k = 0; k < 12; k++) {
            if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
            sent += chunk.length;
            await sleep(30);
          }
          req.destroy();
          resolve(sent);
        };
        void pump();
      });
    const done = Promise.all(Array.from({ length: cuts }, (_, i) => sleep(i * 300).then(() => cutUpload(i))));
    const most = await steadyLoad(t, done, 1000, { x: 0.5 });
    const sentBytes = await done;
    // The edge noticed each cut and purged what it had stored: no chunk of an upload is left.
    const chunksLeft = async () => {
      const info = await (await bus.nc.jetstreamManager()).streams.info(objStream, { subjects_filter: `$O.${bus.bucket(CLAIM_BUCKET)}.C.>` });
      return Object.values(info.state.subjects ?? {}).reduce((a, n) => a + n, 0);
    };
    let left = -1;
    await waitFor(async () => (left = await chunksLeft()) === 0, 15_000, () => `${left} object-store chunks were left behind`).catch(() => undefined);
    const { found, lines } = await verifyWrites(t);
    const [{ n: filesAfter }] = (await sql<{ n: number }[]>`select count(*)::int as n from file`) as unknown as [{ n: number }];
    await sql.end({ timeout: 5 });
    const acknowledgedFiles = (found as Record<string, { acked: number }>).files?.acked ?? 0;
    const text = t.print('clients that disconnect mid-upload beside a steady load', found, [
      `cut uploads: ${sentBytes.map((b) => (b < 0 ? `answered ${-b}` : `${(b / 1e6).toFixed(1)} MB sent`)).join(', ')}`,
      `file rows: ${filesBefore} before, ${filesAfter} after (${acknowledgedFiles} acknowledged uploads in between); object-store chunks left: ${left}`,
      `most requests in flight at once: ${most} (half the load, and the cut uploads)`,
      ...lines,
    ]);
    expect(t.bad, text).toEqual([]);
    expect(sentBytes.every((b) => b > 0), text).toBe(true);
    expect(filesAfter - filesBefore, text).toBe(acknowledgedFiles);
    expect(left, text).toBe(0);
    for (const [what, f] of Object.entries(found)) expect(f.found, `${what}: acknowledged vs found\n${text}`).toBe(f.acked);
    // The face still takes uploads.
    const calls = faceCalls(edge, CLIENT_LIMITS, { chatToken: admin.token, collection: COLLECTION, llmModel: 'fake/slow' });
    expect(await send(new Tally(), calls.file(9_999_999))).toBe(200);
  }, 240_000);

  it('kill -9 a worker mid-request, then start it again: the other replica takes over, no hang, no acknowledged write lost', async () => {
    const t = new Tally();
    const inFlight = { n: 0, max: 0 };
    const kills: string[] = [];
    const chaos = (async () => {
      await sleep(3000);
      // One replica of every worker, at once, while requests are in flight on all of them.
      const victims = (Object.keys(replicas) as (keyof typeof replicas)[]).map((kind) => [kind, replicas[kind].find((p) => p !== replicas.chat[0]) ?? replicas[kind][0]!] as const);
      for (const [kind, p] of victims) kills.push(`${kind}-worker pid ${p.child.pid}`);
      const inFlightAtKill = inFlight.n;
      await Promise.all(victims.map(([, p]) => p.stop('SIGKILL')));
      kills.push(`with ${inFlightAtKill} requests in flight`);
      await sleep(2000);
      const [s, p, v, c] = await Promise.all([start.speech(), start.proxy(), start.vector(), start.chat(false)]);
      for (const [kind, fresh] of [['speech', s], ['proxy', p], ['vector', v], ['chat', c]] as const) {
        const i = replicas[kind].findIndex((x) => !x.running);
        replicas[kind][i] = fresh;
      }
    })();
    await steadyLoad(t, chaos, 4000, { inFlight });
    const { found, lines } = await verifyWrites(t);
    const text = t.print('kill -9 one replica of every worker under load, then start new ones', found, [`killed: ${kills.join('; ')}`, `most requests in flight at once: ${inFlight.max}`, ...lines]);
    expect(t.bad, text).toEqual([]);
    for (const [what, f] of Object.entries(found)) expect(f.found, `${what}: acknowledged vs found\n${text}`).toBe(f.acked);
    // The load was the one asked for: a few hundred requests in flight across the faces.
    expect(inFlight.max, text).toBeGreaterThanOrEqual(loopsTotal(num('FAULTS_CONCURRENCY', 1)));
    // The faces served after the kill (the survivors took over), and all answer now.
    for (const face of ['speech speech', 'llm messages stream', 'vector upsert', 'vector query', 'chat memories/add', 'chat folders list']) expect(t.kinds[face]?.ok ?? 0, face).toBeGreaterThan(0);
    const calls = faceCalls(edge, CLIENT_LIMITS, { chatToken: admin.token, collection: COLLECTION, llmModel: 'fake/slow' });
    for (const c of [calls.llm(), calls.vector(nextId++), calls.memory(0), calls.speech()]) expect(await send(new Tally(), c)).toBe(200);
  }, 300_000);
});
