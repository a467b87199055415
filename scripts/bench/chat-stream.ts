import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { chatCompletionsContract, llmConnectionContracts } from '@gatehouse/contracts';
import { openBusStream, type Bus } from '@gatehouse/common';
import { Stack } from '../src/local-stack.ts';
import { cpuMs, findPid, ms, pct, pp, waitQuiet } from './measure.ts';
import { startFakeProcess } from './fake-process.ts';

/**
 * Chat face streaming benchmark: time to first token and per-chunk overhead of
 * `POST /api/chat/completions` (HTTP → edge → NATS → chat worker → NATS → proxy worker → upstream,
 * and the chunks all the way back as SSE) against the same request sent straight to the upstream,
 * in the same run. The upstream is the fake OpenAI server (its own process) whose `echo` model
 * streams one chunk per word of the prompt, as fast as it can write them, so any time between
 * chunks beyond the direct path's is the stack's.
 * - sequential, paired (direct and stack alternate): TTFT (first `delta.content`), total, and the
 *   per-chunk overhead ((stack total − stack TTFT) − (direct total − direct TTFT)) / content chunks;
 * - CONC streams in flight: completions/s and chunks/s (stack and direct in alternating slices).
 * - where the time goes, hop by hop (sequential, the four in turn): the same answer asked of the
 *   upstream, of the proxy worker over the bus (`llm.connections.chat`, from this process), of the
 *   chat worker over the bus (`chat.completions.create`) and of the edge; each difference is one
 *   process's share (its work plus the bus hop in front of it).
 * Memory injection is off for the stack requests (`features.memory: false`): this measures the
 * path, not prompt building. Loopback only; loops bounded by count and time; a watchdog ends the run.
 * Env: BENCH_CHAT_STREAM_RUNS (300), BENCH_CHAT_STREAM_WORDS (200), BENCH_CHAT_STREAM_CONCURRENCY (16),
 * BENCH_CHAT_STREAM_HOP_RUNS (100), BENCH_CHAT_STREAM_SLICES (6: the throughput phase alternates stack and
 * direct in this many slices each, so a change in load hits both alike).
 */
const RUNS = Number(process.env.BENCH_CHAT_STREAM_RUNS ?? 300);
const WORDS = Number(process.env.BENCH_CHAT_STREAM_WORDS ?? 200);
const CONC = Number(process.env.BENCH_CHAT_STREAM_CONCURRENCY ?? 16);
const HOP_RUNS = Number(process.env.BENCH_CHAT_STREAM_HOP_RUNS ?? 100);
const SLICES = Number(process.env.BENCH_CHAT_STREAM_SLICES ?? 6);
const PHASE_MS = 120_000;
const REQUEST_MS = 30_000;
const watchdog = setTimeout(() => {
  console.error('[bench] watchdog: the run took longer than 12 minutes; stopping');
  process.exit(2);
}, 12 * 60_000);
watchdog.unref();
const say = (s: string) => console.error(`[bench] ${s}`);

const VOCAB = 'lighthouse harbour tide compass lantern orchard meadow granite violin saffron glacier ember'.split(' ');
const PROMPT = Array.from({ length: WORDS }, (_, i) => VOCAB[i % VOCAB.length]).join(' ');

interface Target {
  url: URL;
  headers: Record<string, string>;
  body: string;
}
interface Result {
  ttft: number;
  total: number;
  chunks: number;
  /** Socket reads it took the client (how many writes the server's chunks came in, at most). */
  reads: number;
}

/** One streamed request; counts content chunks and notes when the first one arrived. */
function stream(t: Target, agent: Agent): Promise<Result> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let ttft = 0;
    let chunks = 0;
    let reads = 0;
    let pending = '';
    let done = false;
    const req = request(
      { host: t.url.hostname, port: t.url.port, path: t.url.pathname, method: 'POST', agent, headers: { ...t.headers, 'content-length': Buffer.byteLength(t.body) } },
      (res) => {
        if (res.statusCode !== 200) {
          let b = '';
          res.on('data', (d) => (b += d));
          res.on('end', () => reject(new Error(`${t.url.pathname} answered ${res.statusCode}: ${b.slice(0, 300)}`)));
          return;
        }
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          reads++;
          pending += d;
          let cut: number;
          while ((cut = pending.indexOf('\n\n')) >= 0) {
            const event = pending.slice(0, cut);
            pending = pending.slice(cut + 2);
            const data = event.startsWith('data: ') ? event.slice(6) : '';
            if (data === '[DONE]') done = true;
            else if (/"content": ?"/.test(data)) {
              const c = JSON.parse(data) as { choices?: { delta?: { content?: string } }[] };
              if (c.choices?.[0]?.delta?.content) {
                chunks++;
                if (!ttft) ttft = performance.now() - t0;
              }
            }
          }
        });
        res.on('end', () => (done ? resolve({ ttft, total: performance.now() - t0, chunks, reads }) : reject(new Error('stream ended without [DONE]'))));
        res.on('error', reject);
      },
    );
    req.setTimeout(REQUEST_MS, () => req.destroy(new Error(`no answer within ${REQUEST_MS} ms`)));
    req.on('error', reject);
    req.end(t.body);
  });
}

/** One streamed answer asked over the bus: TTFT at the first frame holding non-empty content. */
async function busAnswer(open: () => ReturnType<typeof openBusStream>, sse: boolean): Promise<Result> {
  const t0 = performance.now();
  const s = open();
  let ttft = 0;
  let chunks = 0;
  let reads = 0;
  let pending = '';
  const seen = (data: string) => {
    const c = JSON.parse(data) as { choices?: { delta?: { content?: string } }[] };
    if (c.choices?.[0]?.delta?.content) {
      chunks++;
      if (!ttft) ttft = performance.now() - t0;
    }
  };
  try {
    for (let f = await s.next(); f; f = s.ended ? undefined : await s.next()) {
      if (f.kind !== 'chunk') continue;
      reads++;
      const text = Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength).toString('utf8');
      if (!sse) {
        seen(text);
        continue;
      }
      pending += text;
      let cut: number;
      while ((cut = pending.indexOf('\n\n')) >= 0) {
        const event = pending.slice(0, cut);
        pending = pending.slice(cut + 2);
        const data = event.startsWith('data: ') ? event.slice(6) : '';
        if (/"content": ?"/.test(data)) seen(data);
      }
    }
  } finally {
    s.close();
  }
  return { ttft, total: performance.now() - t0, chunks, reads };
}

const stack = new Stack();
const upstreamKey = randomBytes(24).toString('base64url');
const fake = await startFakeProcess('openai', upstreamKey);
try {
  const proxyWorker = await stack.startProxyWorker({ OPENAI_API_BASE_URLS: fake.url, OPENAI_API_KEYS: upstreamKey, ENABLE_OLLAMA_API: 'false' });
  const chatWorker = await stack.startChatWorker({}, { ingest: false });
  const edge = await stack.startEdge({ EDGE_FACES: 'chat', LOG_LEVEL: 'warn' });
  const up = await fetch(`${edge.chatUrl}/api/v1/auths/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Bench', email: `bench-${stack.ns}@bench.test`, password: randomBytes(12).toString('base64url') }),
  });
  const signedUp = (await up.json()) as { token: string; id: string };
  const token = signedUp.token;
  const bus: Bus = await stack.busHandle();

  const messages = [{ role: 'user', content: PROMPT }];
  const direct: Target = {
    url: new URL(`${fake.url}/chat/completions`),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${upstreamKey}` },
    body: JSON.stringify({ model: 'echo', stream: true, messages }),
  };
  const viaStack: Target = {
    url: new URL(`${edge.chatUrl}/api/chat/completions`),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ model: 'echo', stream: true, messages, features: { memory: false } }),
  };
  const agent = new Agent({ keepAlive: true, maxSockets: CONC });

  // Warm-up: JIT, pools, sockets, the registry's model list.
  for (let i = 0; i < 20; i++) {
    await stream(direct, agent);
    await stream(viaStack, agent);
  }
  await waitQuiet('sequential', 10_000, say);
  const d: Result[] = [];
  const s: Result[] = [];
  const t0 = performance.now();
  for (let i = 0; i < RUNS && performance.now() - t0 < PHASE_MS; i++) {
    // Alternate which goes first, so drift in the machine's load hits both alike.
    if (i % 2) {
      d.push(await stream(direct, agent));
      s.push(await stream(viaStack, agent));
    } else {
      s.push(await stream(viaStack, agent));
      d.push(await stream(direct, agent));
    }
  }
  if (s[0]!.chunks !== d[0]!.chunks) throw new Error(`chunk counts differ: stack ${s[0]!.chunks}, direct ${d[0]!.chunks}`);
  const perChunk = s.map((r, i) => (r.total - r.ttft - (d[i]!.total - d[i]!.ttft)) / r.chunks);
  const ttftAdded = s.map((r, i) => r.ttft - d[i]!.ttft);

  /** `count` answers with CONC in flight: seconds taken, answers, chunks, client socket reads. */
  const concSlice = async (t: Target, count: number) => {
    let next = 0;
    let chunks = 0;
    let reads = 0;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: CONC }, async () => {
        while (next < count && performance.now() - start < PHASE_MS) {
          next++;
          // Read the result first: `chunks += await …` would add to the value read before the await.
          const r = await stream(t, agent);
          chunks += r.chunks;
          reads += r.reads;
        }
      }),
    );
    return { secs: (performance.now() - start) / 1000, n: next, chunks, reads };
  };
  // Hop by hop: upstream, proxy worker over the bus, chat worker over the bus, the edge; in turn.
  const viaProxy = () => openBusStream(bus, llmConnectionContracts.chat, { model: 'echo', body: { messages }, stream: true }, { idleTimeoutMs: REQUEST_MS });
  const viaChat = () =>
    openBusStream(
      bus,
      chatCompletionsContract,
      {
        identity: { userId: signedUp.id, jti: 'bench', expiresAt: null },
        params: {},
        query: {},
        body: { model: 'echo', stream: true, messages, features: { memory: false } },
        client: { ip: '127.0.0.1', userAgent: 'bench' },
      },
      { idleTimeoutMs: REQUEST_MS },
    );
  const layers = ['upstream', 'proxy worker (bus)', 'chat worker (bus)', 'edge (HTTP)'] as const;
  const ask = [() => stream(direct, agent), () => busAnswer(viaProxy, false), () => busAnswer(viaChat, true), () => stream(viaStack, agent)];
  for (let i = 0; i < 10; i++) for (const a of ask) await a();
  await waitQuiet('hops', 10_000, say);
  const hops: Result[][] = layers.map(() => []);
  const th = performance.now();
  for (let i = 0; i < HOP_RUNS && performance.now() - th < PHASE_MS; i++) {
    for (let k = 0; k < ask.length; k++) {
      const j = (i + k) % ask.length;
      hops[j]!.push(await ask[j]!());
    }
  }
  for (const [j, rs] of hops.entries()) if (rs[0]!.chunks !== d[0]!.chunks) throw new Error(`${layers[j]}: ${rs[0]!.chunks} content chunks, upstream ${d[0]!.chunks}`);

  await waitQuiet('concurrent', 10_000, say);
  // Throughput in SLICES alternating slices of stack and direct (which goes first alternates too), so
  // a change in the machine's load during the phase hits both alike; their times are summed.
  // CPU of each process of the path per answer, over the stack's slices only: what the chunk rate
  // costs, whatever the load. nats-server and the fake are shared or outside the stack: reported
  // beside it (nats-server also serves anyone else's traffic).
  const pids = { edge: edge.proc.child.pid, chat: chatWorker.child.pid, proxy: proxyWorker.child.pid, nats: findPid('nats-server'), fake: fake.child.pid };
  const used = { edge: 0, chat: 0, proxy: 0, nats: 0, fake: 0, client: 0 };
  const total = { d: { secs: 0, n: 0, chunks: 0, reads: 0 }, s: { secs: 0, n: 0, chunks: 0, reads: 0 } };
  const per = Math.max(CONC, Math.ceil(RUNS / SLICES));
  for (let i = 0; i < SLICES; i++) {
    for (const which of i % 2 ? (['s', 'd'] as const) : (['d', 's'] as const)) {
      if (which === 'd') {
        const r = await concSlice(direct, per);
        for (const k of ['secs', 'n', 'chunks', 'reads'] as const) total.d[k] += r[k];
        continue;
      }
      const cpu0 = { edge: cpuMs(pids.edge), chat: cpuMs(pids.chat), proxy: cpuMs(pids.proxy), nats: cpuMs(pids.nats), fake: cpuMs(pids.fake), client: process.cpuUsage() };
      const r = await concSlice(viaStack, per);
      const clientUs = process.cpuUsage(cpu0.client);
      for (const k of ['edge', 'chat', 'proxy', 'nats', 'fake'] as const) used[k] += cpuMs(pids[k]) - cpu0[k];
      used.client += (clientUs.user + clientUs.system) / 1000;
      for (const k of ['secs', 'n', 'chunks', 'reads'] as const) total.s[k] += r[k];
    }
  }
  const rate = (t: typeof total.d) => ({ rps: t.n / t.secs, cps: t.chunks / t.secs, n: t.n, reads: t.reads / Math.max(1, t.n) });
  const cd = rate(total.d);
  const cs = rate(total.s);
  const n = Math.max(1, cs.n);
  const cpu = { edge: used.edge / n, chat: used.chat / n, proxy: used.proxy / n, nats: used.nats / n, fake: used.fake / n, client: used.client / n };

  console.log(`\nChat face streaming: ${s.length} paired runs, ${s[0]!.chunks} content chunks per answer; ${CONC} in flight for throughput\n`);
  console.log('| measurement | chat face p50 / p99 | upstream direct p50 / p99 | added p50 / p99 |');
  console.log('|---|---|---|---|');
  console.log(`| time to first token | ${pp(s.map((r) => r.ttft))} | ${pp(d.map((r) => r.ttft))} | ${pp(ttftAdded)} |`);
  console.log(`| whole answer | ${pp(s.map((r) => r.total))} | ${pp(d.map((r) => r.total))} | ${pp(s.map((r, i) => r.total - d[i]!.total))} |`);
  console.log(`| per chunk after the first | — | — | ${ms(pct(perChunk, 50))} / ${ms(pct(perChunk, 99))} |`);
  console.log(`| ${CONC} streams in flight | ${cs.rps.toFixed(0)} answers/s, ${cs.cps.toFixed(0)} chunks/s | ${cd.rps.toFixed(0)} answers/s, ${cd.cps.toFixed(0)} chunks/s | ${(cs.rps / cd.rps).toFixed(2)}× |`);
  console.log(`\nWhere the time goes (${hops[0]!.length} rounds, the four in turn; a layer's share is the paired difference from the layer below, p50):\n`);
  console.log('| layer | TTFT p50 | share of TTFT | whole answer p50 | share of the answer | chunk frames (bus) or socket reads (HTTP) per answer, p50 |');
  console.log('|---|---|---|---|---|---|');
  for (const [j, rs] of hops.entries()) {
    const below = j ? hops[j - 1]! : undefined;
    const dT = below ? ms(pct(rs.map((r, i) => r.ttft - below[i]!.ttft), 50)) : '—';
    const dA = below ? ms(pct(rs.map((r, i) => r.total - below[i]!.total), 50)) : '—';
    console.log(`| ${layers[j]} | ${ms(pct(rs.map((r) => r.ttft), 50))} | ${dT} | ${ms(pct(rs.map((r) => r.total), 50))} | ${dA} | ${pct(rs.map((r) => r.reads), 50).toFixed(0)} |`);
  }
  console.log(`\nClient socket reads per answer: sequential p50 ${pct(s.map((r) => r.reads), 50).toFixed(0)} (direct ${pct(d.map((r) => r.reads), 50).toFixed(0)}); ${CONC} in flight mean ${cs.reads.toFixed(1)} (direct ${cd.reads.toFixed(1)})`);
  console.log(`\nCPU per streamed answer (${CONC} in flight): edge ${cpu.edge.toFixed(2)} ms, chat worker ${cpu.chat.toFixed(2)} ms, proxy worker ${cpu.proxy.toFixed(2)} ms; beside them nats-server ${cpu.nats.toFixed(2)} ms, fake upstream ${cpu.fake.toFixed(2)} ms, this client ${cpu.client.toFixed(2)} ms`);
  agent.destroy();
} finally {
  await stack.close();
  await fake.stop();
}
