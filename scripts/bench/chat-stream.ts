import { randomBytes, randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { chatCompletionsContract, llmConnectionContracts } from '@gatehouse/contracts';
import { openBusStream, type Bus } from '@gatehouse/common';
import { type Proc, Stack } from '../../tests/support/local-stack.ts';
import { cpuMs, findPid, ms, pct, pp, waitQuiet } from './measure.ts';
import { startFakeProcess } from './fake-process.ts';
import { startEdgeFrom, startFrom, untilServing } from './before.ts';

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
 * - stored chats (`chat_id`, as Open WebUI's client sends it: `id`, `parent_id`, `user_message`): a
 *   new chat per request (made untimed just before it), TTFT and total paired with the direct request;
 *   the turn is written to Postgres, so this is a real client's first token.
 * Memory injection is off for the stack requests (`features.memory: false`): this measures the
 * path, not prompt building. Loopback only; loops bounded by count and time; a watchdog ends the run.
 * Env: BENCH_CHAT_STREAM_RUNS (300), BENCH_CHAT_STREAM_WORDS (200), BENCH_CHAT_STREAM_CONCURRENCY (16),
 * BENCH_CHAT_STREAM_HOP_RUNS (100), BENCH_CHAT_STREAM_SLICES (6: the throughput phase alternates stack and
 * direct in this many slices each, so a change in load hits both alike), BENCH_CHAT_STREAM_STORED_RUNS
 * (100; 0 skips the phase), BENCH_CHAT_STREAM_BEFORE=<checkout>: a second proxy worker + chat worker +
 * edge started from another checkout (e.g. a worktree of main; a namespace and schema of its own),
 * asked in every loop beside this one — interleaved, paired with the same direct requests.
 */
const RUNS = Number(process.env.BENCH_CHAT_STREAM_RUNS ?? 300);
const WORDS = Number(process.env.BENCH_CHAT_STREAM_WORDS ?? 200);
const CONC = Number(process.env.BENCH_CHAT_STREAM_CONCURRENCY ?? 16);
const HOP_RUNS = Number(process.env.BENCH_CHAT_STREAM_HOP_RUNS ?? 100);
const SLICES = Number(process.env.BENCH_CHAT_STREAM_SLICES ?? 6);
const STORED_RUNS = Number(process.env.BENCH_CHAT_STREAM_STORED_RUNS ?? 100);
const BEFORE = process.env.BENCH_CHAT_STREAM_BEFORE;
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
const beforeStack = BEFORE ? new Stack() : undefined;
const beforeProcs: Proc[] = [];
const upstreamKey = randomBytes(24).toString('base64url');
const fake = await startFakeProcess('openai', upstreamKey);
try {
  const proxyEnv = { OPENAI_API_BASE_URLS: fake.url, OPENAI_API_KEYS: upstreamKey, ENABLE_OLLAMA_API: 'false' };
  const proxyWorker = await stack.startProxyWorker(proxyEnv);
  const chatWorker = await stack.startChatWorker({}, { ingest: false });
  const edge = await stack.startEdge({ EDGE_FACES: 'chat', LOG_LEVEL: 'warn' });

  /** A chat face under test: this checkout's, or the before checkout's. */
  interface Face {
    name: string;
    url: string;
    token: string;
    userId: string;
    pids: { edge?: number; chat?: number; proxy?: number };
  }
  const signUp = async (url: string, ns: string) => {
    const up = await fetch(`${url}/api/v1/auths/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Bench', email: `bench-${ns}@bench.test`, password: randomBytes(12).toString('base64url') }),
    });
    if (up.status !== 200) throw new Error(`sign-up at ${url} answered ${up.status}: ${await up.text()}`);
    return (await up.json()) as { token: string; id: string };
  };
  const mine = await signUp(edge.chatUrl, stack.ns);
  const faces: Face[] = [{ name: 'stack', url: edge.chatUrl, token: mine.token, userId: mine.id, pids: { edge: edge.proc.child.pid, chat: chatWorker.child.pid, proxy: proxyWorker.child.pid } }];

  // The same three services from another checkout, same environment, a namespace and schema of their own.
  if (BEFORE && beforeStack) {
    const start = (name: string, entry: string, env: Record<string, string | undefined>) => startFrom(BEFORE, name, entry, beforeStack.env(env), beforeProcs);
    const chatEnv = beforeStack.chatEnv({});
    await beforeStack.migrate('chat', chatEnv);
    const pw = start('proxy-worker-before', 'services/proxy-worker/src/main.ts', proxyEnv);
    const cw = start('chat-worker-before', 'services/chat-worker/src/main.ts', chatEnv);
    const { edge: e, url } = await startEdgeFrom(BEFORE, 'edge-before', 'chat', beforeStack.env({
      EDGE_FACES: 'chat',
      LOG_LEVEL: 'warn',
      REDIS_URL: stack.redisUrl,
      WEBUI_SECRET_KEY_FILE: join(tmpdir(), `gatehouse-${beforeStack.ns}-webui-secret-key`),
    }), beforeProcs);
    await untilServing([[pw, 'proxy worker serving'], [cw, 'chat worker serving']], e, `${url}/health`);
    const them = await signUp(url, beforeStack.ns);
    faces.push({ name: 'before', url, token: them.token, userId: them.id, pids: { edge: e.child.pid, chat: cw.child.pid, proxy: pw.child.pid } });
    say(`before (${BEFORE}) at ${url}`);
  }
  const bus: Bus = await stack.busHandle();

  const messages = [{ role: 'user', content: PROMPT }];
  const direct: Target = {
    url: new URL(`${fake.url}/chat/completions`),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${upstreamKey}` },
    body: JSON.stringify({ model: 'echo', stream: true, messages }),
  };
  const viaFace = (f: Face): Target => ({
    url: new URL(`${f.url}/api/chat/completions`),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${f.token}` },
    body: JSON.stringify({ model: 'echo', stream: true, messages, features: { memory: false } }),
  });
  /** A new chat (untimed), and the request Open WebUI's client sends for its first turn. */
  const storedTurn = async (f: Face): Promise<Target> => {
    const r = await fetch(`${f.url}/api/v1/chats/new`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${f.token}` },
      body: JSON.stringify({ chat: { title: 'Bench', models: ['echo'], history: { messages: {}, currentId: null } } }),
    });
    if (r.status !== 200) throw new Error(`new chat at ${f.url} answered ${r.status}`);
    const chatId = ((await r.json()) as { id: string }).id;
    const [u, a] = [randomUUID(), randomUUID()];
    return {
      ...viaFace(f),
      body: JSON.stringify({
        model: 'echo',
        stream: true,
        chat_id: chatId,
        id: a,
        parent_id: u,
        user_message: { id: u, parentId: null, childrenIds: [], role: 'user', content: PROMPT, timestamp: Math.floor(Date.now() / 1000), models: ['echo'] },
        messages,
        features: { memory: false },
      }),
    };
  };
  const agent = new Agent({ keepAlive: true, maxSockets: CONC });
  const arms: { name: string; target: Target; face?: Face }[] = [{ name: 'direct', target: direct }, ...faces.map((f) => ({ name: f.name, target: viaFace(f), face: f }))];

  // Warm-up: JIT, pools, sockets, the registry's model list.
  for (let i = 0; i < 20; i++) for (const a of arms) await stream(a.target, agent);
  await waitQuiet('sequential', 10_000, say);
  /** Per arm, one result per round; the arms take turns going first, so drift in the load hits all alike. */
  const seq: Result[][] = arms.map(() => []);
  const t0 = performance.now();
  for (let i = 0; i < RUNS && performance.now() - t0 < PHASE_MS; i++) {
    for (let k = 0; k < arms.length; k++) {
      const j = (i + k) % arms.length;
      seq[j]!.push(await stream(arms[j]!.target, agent));
    }
  }
  const d = seq[0]!;
  for (const [j, rs] of seq.entries()) if (rs[0]!.chunks !== d[0]!.chunks) throw new Error(`chunk counts differ: ${arms[j]!.name} ${rs[0]!.chunks}, direct ${d[0]!.chunks}`);

  // Stored chats: a new chat per request, made before the round; the arms take turns as above.
  const stored: Result[][] = arms.map(() => []);
  if (STORED_RUNS > 0) {
    for (let i = 0; i < 5; i++) for (const f of faces) await stream(await storedTurn(f), agent);
    await waitQuiet('stored', 10_000, say);
    const ts = performance.now();
    for (let i = 0; i < STORED_RUNS && performance.now() - ts < PHASE_MS; i++) {
      const targets = [direct, ...(await Promise.all(faces.map(storedTurn)))];
      for (let k = 0; k < arms.length; k++) {
        const j = (i + k) % arms.length;
        stored[j]!.push(await stream(targets[j]!, agent));
      }
    }
    for (const [j, rs] of stored.entries()) if (rs[0]!.chunks !== d[0]!.chunks) throw new Error(`stored: ${arms[j]!.name} ${rs[0]!.chunks} content chunks, direct ${d[0]!.chunks}`);
  }

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
  // Hop by hop (this checkout): upstream, proxy worker over the bus, chat worker over the bus, the edge; in turn.
  const viaProxy = () => openBusStream(bus, llmConnectionContracts.chat, { model: 'echo', body: { messages }, stream: true }, { idleTimeoutMs: REQUEST_MS });
  const viaChat = () =>
    openBusStream(
      bus,
      chatCompletionsContract,
      {
        identity: { userId: mine.id, jti: 'bench', expiresAt: null },
        params: {},
        query: {},
        body: { model: 'echo', stream: true, messages, features: { memory: false } },
        client: { ip: '127.0.0.1', userAgent: 'bench' },
      },
      { idleTimeoutMs: REQUEST_MS },
    );
  const layers = ['upstream', 'proxy worker (bus)', 'chat worker (bus)', 'edge (HTTP)'] as const;
  const ask = [() => stream(direct, agent), () => busAnswer(viaProxy, false), () => busAnswer(viaChat, true), () => stream(arms[1]!.target, agent)];
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
  // Throughput in SLICES rounds of one slice per arm (which goes first rotates too), so a change in
  // the machine's load during the phase hits every arm alike; their times are summed. CPU of each
  // process of a face's path per answer, over that face's slices only: what the chunk rate costs,
  // whatever the load. nats-server and the fake are shared or outside the stack: reported beside
  // it (nats-server also serves anyone else's traffic).
  const natsPid = findPid('nats-server');
  type Used = { edge: number; chat: number; proxy: number; nats: number; fake: number; client: number };
  const used: Used[] = arms.map(() => ({ edge: 0, chat: 0, proxy: 0, nats: 0, fake: 0, client: 0 }));
  const total = arms.map(() => ({ secs: 0, n: 0, chunks: 0, reads: 0 }));
  const per = Math.max(CONC, Math.ceil(RUNS / SLICES));
  for (let i = 0; i < SLICES; i++) {
    for (let k = 0; k < arms.length; k++) {
      const j = (i + k) % arms.length;
      const p = arms[j]!.face?.pids ?? {};
      const at = () => ({ edge: cpuMs(p.edge), chat: cpuMs(p.chat), proxy: cpuMs(p.proxy), nats: cpuMs(natsPid), fake: cpuMs(fake.child.pid) });
      const cpu0 = at();
      const client0 = process.cpuUsage();
      const r = await concSlice(arms[j]!.target, per);
      const clientUs = process.cpuUsage(client0);
      const cpu1 = at();
      for (const key of ['edge', 'chat', 'proxy', 'nats', 'fake'] as const) used[j]![key] += cpu1[key] - cpu0[key];
      used[j]!.client += (clientUs.user + clientUs.system) / 1000;
      for (const key of ['secs', 'n', 'chunks', 'reads'] as const) total[j]![key] += r[key];
    }
  }
  const rate = (t: (typeof total)[number]) => ({ rps: t.n / t.secs, cps: t.chunks / t.secs, n: t.n, reads: t.reads / Math.max(1, t.n) });
  const rates = total.map(rate);

  const B = BEFORE ? ` (before = ${BEFORE})` : '';
  console.log(`\nChat face streaming: ${d.length} paired rounds, ${d[0]!.chunks} content chunks per answer; ${CONC} in flight for throughput${B}\n`);
  console.log('| measurement | face | chat face p50 / p99 | upstream direct p50 / p99 | added p50 / p99 |');
  console.log('|---|---|---|---|---|');
  for (let j = 1; j < arms.length; j++) {
    const s = seq[j]!;
    const perChunk = s.map((r, i) => (r.total - r.ttft - (d[i]!.total - d[i]!.ttft)) / r.chunks);
    console.log(`| time to first token | ${arms[j]!.name} | ${pp(s.map((r) => r.ttft))} | ${pp(d.map((r) => r.ttft))} | ${pp(s.map((r, i) => r.ttft - d[i]!.ttft))} |`);
    console.log(`| whole answer | ${arms[j]!.name} | ${pp(s.map((r) => r.total))} | ${pp(d.map((r) => r.total))} | ${pp(s.map((r, i) => r.total - d[i]!.total))} |`);
    console.log(`| per chunk after the first | ${arms[j]!.name} | — | — | ${ms(pct(perChunk, 50))} / ${ms(pct(perChunk, 99))} |`);
  }
  if (STORED_RUNS > 0) {
    const sd = stored[0]!;
    for (let j = 1; j < arms.length; j++) {
      const s = stored[j]!;
      console.log(`| stored chat (${s.length}): time to first token | ${arms[j]!.name} | ${pp(s.map((r) => r.ttft))} | ${pp(sd.map((r) => r.ttft))} | ${pp(s.map((r, i) => r.ttft - sd[i]!.ttft))} |`);
      console.log(`| stored chat: whole answer | ${arms[j]!.name} | ${pp(s.map((r) => r.total))} | ${pp(sd.map((r) => r.total))} | ${pp(s.map((r, i) => r.total - sd[i]!.total))} |`);
    }
  }
  for (let j = 1; j < arms.length; j++) {
    const cs = rates[j]!;
    const cd = rates[0]!;
    console.log(`| ${CONC} streams in flight | ${arms[j]!.name} | ${cs.rps.toFixed(0)} answers/s, ${cs.cps.toFixed(0)} chunks/s | ${cd.rps.toFixed(0)} answers/s, ${cd.cps.toFixed(0)} chunks/s | ${(cs.rps / cd.rps).toFixed(2)}× |`);
  }
  console.log(`\nWhere the time goes (${hops[0]!.length} rounds, the four in turn; a layer's share is the paired difference from the layer below, p50):\n`);
  console.log('| layer | TTFT p50 | share of TTFT | whole answer p50 | share of the answer | chunk frames (bus) or socket reads (HTTP) per answer, p50 |');
  console.log('|---|---|---|---|---|---|');
  for (const [j, rs] of hops.entries()) {
    const below = j ? hops[j - 1]! : undefined;
    const dT = below ? ms(pct(rs.map((r, i) => r.ttft - below[i]!.ttft), 50)) : '—';
    const dA = below ? ms(pct(rs.map((r, i) => r.total - below[i]!.total), 50)) : '—';
    console.log(`| ${layers[j]} | ${ms(pct(rs.map((r) => r.ttft), 50))} | ${dT} | ${ms(pct(rs.map((r) => r.total), 50))} | ${dA} | ${pct(rs.map((r) => r.reads), 50).toFixed(0)} |`);
  }
  console.log('');
  for (let j = 0; j < arms.length; j++) {
    console.log(`Client socket reads per answer, ${arms[j]!.name}: sequential p50 ${pct(seq[j]!.map((r) => r.reads), 50).toFixed(0)}; ${CONC} in flight mean ${rates[j]!.reads.toFixed(1)}`);
  }
  console.log('');
  for (let j = 1; j < arms.length; j++) {
    const n = Math.max(1, rates[j]!.n);
    const u = used[j]!;
    console.log(
      `CPU per streamed answer (${CONC} in flight), ${arms[j]!.name}: edge ${(u.edge / n).toFixed(2)} ms, chat worker ${(u.chat / n).toFixed(2)} ms, proxy worker ${(u.proxy / n).toFixed(2)} ms; beside them nats-server ${(u.nats / n).toFixed(2)} ms, fake upstream ${(u.fake / n).toFixed(2)} ms, this client ${(u.client / n).toFixed(2)} ms`,
    );
  }
  console.log(`\nload average at the end ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  agent.destroy();
} finally {
  await Promise.all(beforeProcs.map((p) => p.stop()));
  // Connected, so close() also deletes the before namespace's streams and buckets on the shared server.
  if (beforeProcs.length) await beforeStack?.busHandle().catch(() => undefined);
  await beforeStack?.close();
  await stack.close();
  await fake.stop();
}
