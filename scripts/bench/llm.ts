import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { LLM_CATALOG } from '@gatehouse/contracts';
import { busRequest, busStream, type Bus } from '@gatehouse/common';
import { enforcedState, flipGate } from '../src/gate-ops.ts';
import { freePort, newKey, type Proc, spawnService, Stack, testDatabaseUrl, type Edge } from '../../tests/support/local-stack.ts';
import { cpuMs, findPid, machineTicks, ms, pct, pp, waitQuiet } from './measure.ts';
import { startFakeProcess } from './fake-process.ts';
import { startEdgeFrom, startFrom, untilServing } from './before.ts';

/**
 * LLM proxy face benchmark. Every figure stands beside its baseline measured in the same run:
 *   1. non-streamed POST /v1/messages (model fake/echo) through HTTP → edge (gate enforced, x-proxy-key)
 *      → NATS → proxy worker → fake OpenAI upstream and back, vs. the equivalent POST /chat/completions
 *      straight to the fake; sequential, interleaved, overhead = median (and p99) of per-pair differences.
 *      Decomposed with the same request sent as a bus stream straight to the worker (no HTTP, no edge)
 *      and a bare bus round trip (llm.models.list, answered from memory by the worker);
 *   2. 100 requests in flight at a time, stack vs. direct: latency and requests/s (the fake's own
 *      saturation throughput is the direct figure), with CPU time per request of every process;
 *   3. streamed: time to the first text content_block_delta vs. the first chunk with delta.content.
 * The fake upstream runs in a child process of its own (as a real upstream would), so the client,
 * the fake, the edge, the worker and NATS are five processes sharing the machine's cores. The machine
 * may be shared with other work too: each measured phase waits (bounded) for a quiet moment, and the
 * run reports how many cores its processes and the whole machine used per phase.
 * Loopback only; every loop is bounded by count and by time; every response must be a complete 200.
 * Env: BENCH_LLM_RUNS (sequential pairs, 2000), BENCH_LLM_STREAM_RUNS (1000), BENCH_LLM_CONC_REQUESTS
 * (per path, 10 000), BENCH_LLM_CONCURRENCY (100), BENCH_LLM_CPU_PROF (directory for CPU profiles),
 * BENCH_LLM_QUIET_MS (longest wait for a quiet machine before each phase, 60 000).
 * BENCH_LLM_STACK=full: the stack as `scripts/start` runs it — one edge serving every face at the
 * default log level, beside every worker (speech, proxy, vector, chat, ingest, webhooks) — instead of
 * an LLM-only edge at `warn` with the proxy worker alone.
 * BENCH_LLM_BEFORE=<checkout>: a second edge + proxy worker started from another checkout (e.g. a
 * worktree of main) in a namespace of its own, measured in the same loops, interleaved with this one
 * and paired with the same direct requests: before/after in one run, on one machine under one load.
 */
const N_SEQ = Number(process.env.BENCH_LLM_RUNS ?? 2000);
const N_STREAM = Number(process.env.BENCH_LLM_STREAM_RUNS ?? 1000);
const N_CONC = Number(process.env.BENCH_LLM_CONC_REQUESTS ?? 10_000);
const CONC = Number(process.env.BENCH_LLM_CONCURRENCY ?? 100);
const CONC_ROUNDS = 2; // per path: direct, stack, direct, stack — each round N_CONC / 2 requests, at most ROUND_MS
const PHASE_MS = 180_000; // a sequential phase stops here even if its count is not reached
const ROUND_MS = 20_000; // a concurrent round stops here
const REQUEST_MS = Number(process.env.BENCH_LLM_REQUEST_MS ?? 10_000); // one request
const WATCHDOG_MS = 840_000; // the whole run
const QUIET_MS = Number(process.env.BENCH_LLM_QUIET_MS ?? 60_000);
const FULL = process.env.BENCH_LLM_STACK === 'full';
const BEFORE = process.env.BENCH_LLM_BEFORE;

const PROMPT = 'Say hello to the benchmark, briefly.';
const EXPECTED = `echo: ${PROMPT}`;

interface Target {
  host: string;
  port: number;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Does this SSE `data:` payload carry the first token? */
  firstToken?: (data: string) => boolean;
  /** Throws unless the complete answer is the expected one. */
  check: (body: string) => void;
}

interface Result {
  total: number;
  /** Time to the first token (streamed targets only). */
  first: number;
}

const anthropicFirst = (data: string) => {
  if (!data.includes('"content_block_delta"')) return false;
  const e = JSON.parse(data) as { type?: string; delta?: { type?: string; text?: string } };
  return e.type === 'content_block_delta' && e.delta?.type === 'text_delta' && !!e.delta.text;
};
const openaiFirst = (data: string) => {
  if (data === '[DONE]') return false;
  const c = JSON.parse(data) as { choices?: { delta?: { content?: string | null } }[] };
  return !!c.choices?.[0]?.delta?.content;
};

/** One request on a keep-alive agent; resolves when the whole body has arrived. */
function send(t: Target, agent: Agent): Promise<Result> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = 0;
    let pending = '';
    const parts: string[] = [];
    const req = request(
      { host: t.host, port: t.port, path: t.path, method: 'POST', agent, headers: { ...t.headers, 'content-length': Buffer.byteLength(t.body) } },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          parts.push(d);
          if (!t.firstToken || first) return;
          // Parse the SSE events as they stream, only until the first token is seen.
          pending += d;
          let cut: number;
          while (!first && (cut = pending.indexOf('\n\n')) >= 0) {
            const event = pending.slice(0, cut);
            pending = pending.slice(cut + 2);
            for (const line of event.split('\n')) {
              if (line.startsWith('data:') && t.firstToken(line.slice(5).trim())) {
                first = performance.now() - t0;
                break;
              }
            }
          }
        });
        res.on('end', () => {
          const total = performance.now() - t0;
          const body = parts.join('');
          if (res.statusCode !== 200) return reject(new Error(`${t.path} answered ${res.statusCode}: ${body.slice(0, 300)}`));
          try {
            t.check(body);
            if (t.firstToken && !first) throw new Error('no token in the stream');
          } catch (err) {
            return reject(new Error(`${t.path}: ${(err as Error).message}: ${body.slice(0, 300)}`));
          }
          resolve({ total, first });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(REQUEST_MS, () => req.destroy(new Error(`${t.host}:${t.port}${t.path}: no answer within ${REQUEST_MS} ms`)));
    req.on('error', reject);
    req.end(t.body);
  });
}

const agent = (maxSockets: number) => new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });

/** Bounded sequential loop: at most `n` iterations and `limitMs`. Returns iterations done. */
async function loop(n: number, limitMs: number, label: string, fn: (i: number) => Promise<void>): Promise<number> {
  const deadline = performance.now() + limitMs;
  let i = 0;
  for (; i < n && performance.now() < deadline; i++) await fn(i);
  if (i < n) console.error(`[bench] ${label}: stopped by the ${limitMs} ms limit after ${i} of ${n}`);
  return i;
}

/** `conc` requests in flight until `n` are done or `limitMs` passed; latencies and requests/s. */
async function concurrent(t: Target, n: number, conc: number, limitMs: number): Promise<{ lat: number[]; elapsed: number }> {
  const ag = agent(conc);
  const lat: number[] = [];
  let issued = 0;
  const t0 = performance.now();
  const deadline = t0 + limitMs;
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (issued < n && performance.now() < deadline) {
        issued++;
        lat.push((await send(t, ag)).total);
      }
    }),
  );
  const elapsed = performance.now() - t0;
  ag.destroy();
  if (lat.length < n) console.error(`[bench] concurrent ${t.path}: stopped by the ${limitMs} ms limit after ${lat.length} of ${n}`);
  return { lat, elapsed };
}

const rows: string[][] = [];
const row = (...c: string[]) => rows.push(c);
const lines: string[] = [];

const stack = new Stack();
const beforeStack = BEFORE ? new Stack() : undefined;
const beforeProcs: Proc[] = [];
const upstreamKey = newKey();
const proxyKey = newKey();
const dir = mkdtempSync(join(tmpdir(), 'bench-llm-'));
let fake: Awaited<ReturnType<typeof startFakeProcess>> | undefined;
const cleanup = async () => {
  await Promise.allSettled(beforeProcs.map((p) => p.stop()));
  await beforeStack?.close();
  await stack.close();
  await fake?.stop();
  rmSync(dir, { recursive: true, force: true });
};
const watchdog = setTimeout(() => {
  console.error(`[bench] watchdog: the run took over ${WATCHDOG_MS} ms; stopping`);
  void cleanup().finally(() => process.exit(2));
}, WATCHDOG_MS);
watchdog.unref();

const started = performance.now();
const loadAtStart = loadavg();
try {
  fake = await startFakeProcess('openai', upstreamKey);
  const fakeUrl = new URL(fake.url);
  // The config file names the environment variable; the key itself only lives in the environment.
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      providers: { fake: { type: 'openai', baseUrl: fake.url, apiKeyEnv: 'BENCH_FAKE_OPENAI_KEY', models: ['echo'] } },
      timeoutMs: REQUEST_MS,
      // One retry: an idle keep-alive socket the fake closes just as the worker reuses it ("socket hang up")
      // is the race every keep-alive client has; the normal path never retries.
      retries: { max: 1 },
    }),
  );
  // BENCH_LLM_CPU_PROF=<dir>: the edge and the worker write V8 CPU profiles (<pid>.cpuprofile) there when they stop
  // (diagnosis only; the profiler's own cost shows in the figures). Node 20 refuses --cpu-prof in NODE_OPTIONS,
  // so a preloaded module drives the inspector instead.
  const prof: Record<string, string> = {};
  if (process.env.BENCH_LLM_CPU_PROF) {
    const preload = join(dir, 'cpu-prof.mjs');
    writeFileSync(
      preload,
      `import { Session } from 'node:inspector';
       import { writeFileSync } from 'node:fs';
       const s = new Session();
       s.connect();
       s.post('Profiler.enable');
       s.post('Profiler.setSamplingInterval', { interval: 200 });
       s.post('Profiler.start');
       process.on('exit', () => s.post('Profiler.stop', (err, r) => {
         if (!err) writeFileSync(${JSON.stringify(process.env.BENCH_LLM_CPU_PROF)} + '/' + process.pid + '.cpuprofile', JSON.stringify(r.profile));
       }));`,
    );
    prof.NODE_OPTIONS = `--import ${pathToFileURL(preload).href}`;
  }
  // The worker stays at info: it logs nothing per request, and start-up is detected by its info line.
  const workerEnv = { LLMPROXY_CONFIG: config, BENCH_FAKE_OPENAI_KEY: upstreamKey, ...prof };
  // Full: the edge as scripts/start runs it (every face, default log level); else an LLM-only edge at warn.
  const edgeEnv = FULL ? { LLMPROXY_CONFIG: config, ...prof } : { LLMPROXY_CONFIG: config, LOG_LEVEL: 'warn', ...prof };
  const worker = spawnService('proxy-worker', 'services/proxy-worker/src/main.ts', stack.env(workerEnv));
  stack.workers.push(worker);
  for (const deadline = performance.now() + 180_000; !worker.log().includes('proxy worker serving'); ) {
    if (!worker.running || performance.now() > deadline) throw new Error(`the proxy worker did not start:\n${worker.log().slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const others: Proc[] = [];
  if (FULL) {
    // Every other worker of scripts/start, in this stack's namespace (idle, as beside a user's LLM traffic).
    // Started side by side with a generous start-up limit (a busy machine starts six tsx processes slowly).
    const vectorEnv = stack.env({ DATABASE_URL: testDatabaseUrl(), VECTOR_SCHEMA: `vector_${stack.ns}` });
    const chatEnv = stack.chatEnv();
    await stack.migrate('vector', vectorEnv);
    await stack.migrate('chat', chatEnv);
    const specs: [string, string, Record<string, string | undefined>, string][] = [
      ['speech-worker', 'services/speech-worker/src/main.ts', stack.env(), 'speech worker serving'],
      ['vector-worker', 'services/vector-worker/src/main.ts', vectorEnv, 'vector worker serving'],
      ['chat-worker', 'services/chat-worker/src/main.ts', chatEnv, 'chat worker serving'],
      ['ingest-worker', 'services/ingest-worker/src/main.ts', chatEnv, 'ingest worker serving'],
      ['webhook-dispatcher', 'services/webhook-dispatcher/src/main.ts', chatEnv, 'webhook dispatcher serving'],
    ];
    for (const [name, entry, env] of specs) {
      const p = spawnService(name, entry, env);
      stack.workers.push(p);
      others.push(p);
    }
    const deadline = performance.now() + 180_000;
    while (!specs.every(([, , , ready], i) => others[i]!.log().includes(ready))) {
      const dead = others.find((p) => !p.running);
      if (dead || performance.now() > deadline) throw new Error(`${dead?.name ?? 'a worker'} did not start:\n${(dead ?? others[0]!).log().slice(0, 2000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  // As Stack.startEdge, with a start-up limit a busy machine can meet.
  const edgePorts = { port: await freePort(), proxyPort: await freePort(), vectorPort: await freePort(), chatPort: await freePort(), vectorGrpcPort: await freePort() };
  const edgeProc = spawnService(
    'edge',
    'services/edge/src/main.ts',
    stack.env({
      EDGE_HOST: '127.0.0.1',
      SPEECH_PORT: String(edgePorts.port),
      PROXY_PORT: String(edgePorts.proxyPort),
      VECTOR_PORT: String(edgePorts.vectorPort),
      VECTOR_GRPC_PORT: String(edgePorts.vectorGrpcPort),
      CHAT_PORT: String(edgePorts.chatPort),
      REDIS_URL: process.env.REDIS_URL,
      WEBUI_SECRET_KEY_FILE: join(dir, 'webui-secret-key'),
      ...edgeEnv,
    }),
  );
  const edge: Edge = {
    proc: edgeProc,
    ...edgePorts,
    url: `http://127.0.0.1:${edgePorts.port}`,
    proxyUrl: `http://127.0.0.1:${edgePorts.proxyPort}`,
    vectorUrl: `http://127.0.0.1:${edgePorts.vectorPort}`,
    chatUrl: `http://127.0.0.1:${edgePorts.chatPort}`,
  };
  stack.edges.push(edge);
  for (const deadline = performance.now() + 180_000; (await fetch(`${edge.proxyUrl}/health`).then((r) => r.status, () => 0)) !== 200; ) {
    if (!edgeProc.running || performance.now() > deadline) throw new Error(`the edge did not start:\n${edgeProc.log().slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const bus: Bus = await stack.busHandle();
  const flip = await flipGate(await stack.store(), 'llm', enforcedState([proxyKey], 'bench'));
  if (flip.lagging.length || flip.applied.length !== 1) throw new Error(`gate flip: applied ${flip.applied.length}, lagging ${flip.lagging.join(',')}`);

  // The same edge + proxy worker from another checkout, same environment, a namespace of its own.
  let beforeUrl: URL | undefined;
  const beforePids: Record<string, number | undefined> = {};
  if (BEFORE && beforeStack) {
    const start = (name: string, entry: string, env: Record<string, string | undefined>) => startFrom(BEFORE, name, entry, beforeStack.env(env), beforeProcs);
    const w = start('proxy-worker (before)', 'services/proxy-worker/src/main.ts', workerEnv);
    const before = await startEdgeFrom(BEFORE, 'edge (before)', 'llm', beforeStack.env({ ...edgeEnv, REDIS_URL: process.env.REDIS_URL, WEBUI_SECRET_KEY_FILE: join(dir, 'before-webui-secret-key') }), beforeProcs);
    const e = before.edge;
    beforeUrl = new URL(before.url);
    await untilServing([[w, 'proxy worker serving']], e, `${before.url}/health`);
    const f2 = await flipGate(await beforeStack.store(), 'llm', enforcedState([proxyKey], 'bench'));
    if (f2.lagging.length || f2.applied.length !== 1) throw new Error(`before gate flip: applied ${f2.applied.length}`);
    beforePids.edgeBefore = e.child.pid;
    beforePids.workerBefore = w.child.pid;
  }
  const edgeUrl = new URL(edge.proxyUrl);
  console.error(`[bench] stack ${edgeUrl.host}${beforeUrl ? `, before ${beforeUrl.host}` : ''}, direct ${fakeUrl.host}`);

  const anthropicBody = (stream: boolean) => JSON.stringify({ model: 'fake/echo', max_tokens: 64, messages: [{ role: 'user', content: PROMPT }], ...(stream ? { stream: true } : {}) });
  // What the worker sends upstream for the request above (translate/request.ts).
  const openaiBody = (stream: boolean) =>
    JSON.stringify({ model: 'echo', messages: [{ role: 'user', content: PROMPT }], max_tokens: 64, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) });
  const edgeHeaders = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-proxy-key': proxyKey };
  const fakeHeaders = { 'content-type': 'application/json', authorization: `Bearer ${upstreamKey}` };
  const viaEdge = (stream: boolean, url = edgeUrl): Target => ({
    host: url.hostname,
    port: Number(url.port),
    path: '/v1/messages',
    headers: edgeHeaders,
    body: anthropicBody(stream),
    ...(stream ? { firstToken: anthropicFirst } : {}),
    check: stream
      ? (b) => {
          if (!b.includes('event: message_stop')) throw new Error('stream without message_stop');
        }
      : (b) => {
          const m = JSON.parse(b) as { type?: string; content?: { text?: string }[] };
          if (m.type !== 'message' || m.content?.[0]?.text !== EXPECTED) throw new Error('unexpected message');
        },
  });
  const direct = (stream: boolean): Target => ({
    host: fakeUrl.hostname,
    port: Number(fakeUrl.port),
    path: `${fakeUrl.pathname}/chat/completions`,
    headers: fakeHeaders,
    body: openaiBody(stream),
    ...(stream ? { firstToken: openaiFirst } : {}),
    check: stream
      ? (b) => {
          if (!b.includes('data: [DONE]')) throw new Error('stream without [DONE]');
        }
      : (b) => {
          const c = JSON.parse(b) as { choices?: { message?: { content?: string } }[] };
          if (c.choices?.[0]?.message?.content !== EXPECTED) throw new Error('unexpected completion');
        },
  });
  /** The same request as a bus stream straight to the worker: no HTTP, no edge. */
  const raw = anthropicBody(false);
  const viaBus = async (): Promise<number> => {
    const t0 = performance.now();
    let status = 0;
    let text = '';
    const dec = new TextDecoder();
    for await (const f of busStream(bus, LLM_CATALOG.messages, { raw, headers: {}, proxyKeyVerified: true, requestId: 'bench' }, { idleTimeoutMs: REQUEST_MS })) {
      if (f.kind === 'meta') status = f.meta.status;
      else if (f.kind === 'chunk') text += dec.decode(f.data, { stream: true });
    }
    const total = performance.now() - t0;
    if (status !== 200 || !text.includes(EXPECTED)) throw new Error(`bus stream answered ${status}: ${text.slice(0, 300)}`);
    return total;
  };
  const busPing = async (): Promise<number> => {
    const t0 = performance.now();
    const r = await busRequest(bus, LLM_CATALOG.listModels, {});
    const total = performance.now() - t0;
    if (!r.data.some((m) => m.id === 'fake/echo')) throw new Error('llm.models.list without fake/echo');
    return total;
  };

  // CPU time of every process of ours (the client is this process) and of the whole machine, to tell how much
  // of the machine the run had: other work on the machine shows as machine time that is not ours.
  const pids: Record<string, number | undefined> = { edge: edge.proc.child.pid, worker: worker.child.pid, nats: findPid('nats-server'), fake: fake.child.pid, ...beforePids };
  if (FULL) pids.otherWorkers = undefined; // summed below
  const otherCpu = () => others.reduce((a, p) => a + cpuMs(p.child.pid), 0);
  const cpuSnap = (): Record<string, number> => {
    const own = process.cpuUsage();
    const m = machineTicks();
    return { ...Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, k === 'otherWorkers' ? otherCpu() : cpuMs(p)])), client: (own.user + own.system) / 1000, machineBusy: m.busy, machineTotal: m.total };
  };
  const procs = (c: Record<string, number>) => Object.entries(c).filter(([k, v]) => !k.startsWith('machine') && Number.isFinite(v));
  const delta = (a: Record<string, number>, b: Record<string, number>) => Object.fromEntries(Object.keys(b).map((k) => [k, b[k]! - a[k]!]));
  const cores = (cpu: Record<string, number>, elapsed: number) =>
    `ours ${(procs(cpu).reduce((a, [, v]) => a + v, 0) / elapsed).toFixed(2)}, machine ${((cpu.machineBusy! / cpu.machineTotal!) * availableParallelism()).toFixed(2)} of ${availableParallelism()}`;
  const phaseLoad: string[] = [];

  const seqEdge = agent(1);
  const seqDirect = agent(1);
  const seqBefore = agent(1);
  const nonStreamEdge = viaEdge(false);
  const nonStreamDirect = direct(false);
  const streamEdge = viaEdge(true);
  const streamDirect = direct(true);
  const nonStreamBefore = beforeUrl ? viaEdge(false, beforeUrl) : undefined;
  const streamBefore = beforeUrl ? viaEdge(true, beforeUrl) : undefined;
  const B = BEFORE ? ' — before (BENCH_LLM_BEFORE)' : '';

  // Warm-up: JIT, connection pools and buffers in all five processes, on every path measured below.
  const warm0 = performance.now();
  await loop(500, 60_000, 'warm-up sequential', async () => {
    await send(nonStreamDirect, seqDirect);
    await send(nonStreamEdge, seqEdge);
    await send(streamDirect, seqDirect);
    await send(streamEdge, seqEdge);
    if (nonStreamBefore) await send(nonStreamBefore, seqBefore);
    if (streamBefore) await send(streamBefore, seqBefore);
    await viaBus();
    await busPing();
  });
  await concurrent(nonStreamDirect, 2000, CONC, 10_000);
  await concurrent(nonStreamEdge, 2000, CONC, 10_000);
  if (nonStreamBefore) await concurrent(nonStreamBefore, 2000, CONC, 10_000);
  const warmS = (performance.now() - warm0) / 1000;

  /** Run the paths of one iteration in a rotating order, so none always follows another. */
  const rotate = async <T,>(i: number, steps: (() => Promise<T>)[]): Promise<T[]> => {
    const out = new Array<T>(steps.length);
    for (let k = 0; k < steps.length; k++) {
      const j = (i + k) % steps.length;
      out[j] = await steps[j]!();
    }
    return out;
  };

  // 1. Sequential, non-streamed. Each iteration runs every path once, the stack and direct requests
  // in a rotating order; the bus paths follow.
  const seq = { edge: [] as number[], direct: [] as number[], before: [] as number[], bus: [] as number[], ping: [] as number[] };
  await waitQuiet('sequential', QUIET_MS);
  const t1 = performance.now();
  const c1 = cpuSnap();
  const n1 = await loop(N_SEQ, PHASE_MS, 'sequential', async (i) => {
    const steps = [() => send(nonStreamDirect, seqDirect), () => send(nonStreamEdge, seqEdge)];
    if (nonStreamBefore) steps.push(() => send(nonStreamBefore, seqBefore));
    const [d, e, b] = await rotate(i, steps);
    seq.direct.push(d!.total);
    seq.edge.push(e!.total);
    if (b) seq.before.push(b.total);
    seq.bus.push(await viaBus());
    seq.ping.push(await busPing());
  });
  const t1s = (performance.now() - t1) / 1000;
  phaseLoad.push(`sequential ${cores(delta(c1, cpuSnap()), t1s * 1000)}`);
  const d1 = seq.edge.map((x, i) => x - seq.direct[i]!);
  const dBus = seq.bus.map((x, i) => x - seq.direct[i]!);
  const dEdge = seq.edge.map((x, i) => x - seq.bus[i]!);
  row('POST /v1/messages non-streamed, sequential (HTTP → edge → NATS → worker → fake)', pp(seq.edge), pp(seq.direct), ms(pct(d1, 50)), `n=${n1} paired; p99 of paired Δ ${ms(pct(d1, 99))}; baseline: POST /chat/completions straight to the fake`);
  if (seq.before.length) {
    const d0 = seq.before.map((x, i) => x - seq.direct[i]!);
    row(`… the same${B}`, pp(seq.before), pp(seq.direct), ms(pct(d0, 50)), `n=${n1} paired; p99 of paired Δ ${ms(pct(d0, 99))}; same loop, same direct requests`);
  }
  row('… same request as a bus stream straight to the worker (no HTTP, no edge)', pp(seq.bus), pp(seq.direct), ms(pct(dBus, 50)), `n=${n1} paired; p99 of paired Δ ${ms(pct(dBus, 99))}; worker + 2 bus legs`);
  row('… edge share (HTTP + Fastify + validation + gate + bus client)', pp(seq.edge), pp(seq.bus), ms(pct(dEdge, 50)), `n=${n1} paired; p99 of paired Δ ${ms(pct(dEdge, 99))}; baseline: the bus stream above`);
  row('bare bus round trip (llm.models.list, answered from memory)', pp(seq.ping), '-', '-', `n=${n1}; request + reply through NATS, no upstream`);

  // 3. Streamed time to first token, sequential and paired the same way.
  const st = { edgeFirst: [] as number[], directFirst: [] as number[], edgeTotal: [] as number[], directTotal: [] as number[], beforeFirst: [] as number[], beforeTotal: [] as number[] };
  await waitQuiet('streamed', QUIET_MS);
  const t3 = performance.now();
  const c3 = cpuSnap();
  const n3 = await loop(N_STREAM, PHASE_MS, 'streamed', async (i) => {
    const steps = [() => send(streamDirect, seqDirect), () => send(streamEdge, seqEdge)];
    if (streamBefore) steps.push(() => send(streamBefore, seqBefore));
    const [d, e, b] = await rotate(i, steps);
    st.directFirst.push(d!.first);
    st.directTotal.push(d!.total);
    st.edgeFirst.push(e!.first);
    st.edgeTotal.push(e!.total);
    if (b) {
      st.beforeFirst.push(b.first);
      st.beforeTotal.push(b.total);
    }
  });
  const t3s = (performance.now() - t3) / 1000;
  phaseLoad.push(`streamed ${cores(delta(c3, cpuSnap()), t3s * 1000)}`);
  const d3 = st.edgeFirst.map((x, i) => x - st.directFirst[i]!);
  const d3t = st.edgeTotal.map((x, i) => x - st.directTotal[i]!);
  row('streamed, time to first text content_block_delta', pp(st.edgeFirst), pp(st.directFirst), ms(pct(d3, 50)), `n=${n3} paired; p99 of paired Δ ${ms(pct(d3, 99))}; baseline: first chunk with delta.content, direct`);
  if (st.beforeFirst.length) {
    const d0 = st.beforeFirst.map((x, i) => x - st.directFirst[i]!);
    row(`… the same${B}`, pp(st.beforeFirst), pp(st.directFirst), ms(pct(d0, 50)), `n=${n3} paired; p99 of paired Δ ${ms(pct(d0, 99))}`);
  }
  row('streamed, whole stream (message_stop / [DONE])', pp(st.edgeTotal), pp(st.directTotal), ms(pct(d3t, 50)), `n=${n3} paired; p99 of paired Δ ${ms(pct(d3t, 99))}`);
  if (st.beforeTotal.length) {
    const d0 = st.beforeTotal.map((x, i) => x - st.directTotal[i]!);
    row(`… the same${B}`, pp(st.beforeTotal), pp(st.directTotal), ms(pct(d0, 50)), `n=${n3} paired; p99 of paired Δ ${ms(pct(d0, 99))}`);
  }

  // 2 and 4. 100 in flight, alternating direct and stack rounds; CPU time of every process per round.
  type Acc = { lat: number[]; elapsed: number; cpu: Record<string, number> };
  const conc: Record<'edge' | 'direct' | 'before', Acc> = {
    edge: { lat: [], elapsed: 0, cpu: {} },
    direct: { lat: [], elapsed: 0, cpu: {} },
    before: { lat: [], elapsed: 0, cpu: {} },
  };
  const concTargets: ['direct' | 'edge' | 'before', Target][] = [['direct', nonStreamDirect], ['edge', nonStreamEdge]];
  if (nonStreamBefore) concTargets.push(['before', nonStreamBefore]);
  const t2 = performance.now();
  for (let r = 0; r < CONC_ROUNDS; r++) {
    for (const [which, target] of r % 2 ? [...concTargets].reverse() : concTargets) {
      await waitQuiet(`${CONC} in flight, ${which}`, QUIET_MS);
      const before = cpuSnap();
      const res = await concurrent(target, Math.ceil(N_CONC / CONC_ROUNDS), CONC, ROUND_MS);
      const after = cpuSnap();
      const acc = conc[which];
      acc.lat.push(...res.lat);
      acc.elapsed += res.elapsed;
      for (const k of Object.keys(after)) acc.cpu[k] = (acc.cpu[k] ?? 0) + (after[k]! - before[k]!);
    }
  }
  const t2s = (performance.now() - t2) / 1000;
  const rps = (c: { lat: number[]; elapsed: number }) => (c.lat.length / c.elapsed) * 1000;
  row(
    `POST /v1/messages non-streamed, ${CONC} in flight`,
    pp(conc.edge.lat),
    pp(conc.direct.lat),
    ms(pct(conc.edge.lat, 50) - pct(conc.direct.lat, 50)),
    `n=${conc.edge.lat.length} / ${conc.direct.lat.length}, ${CONC_ROUNDS} alternating rounds each; difference of medians (not paired)`,
  );
  if (conc.before.lat.length) {
    row(`… the same${B}`, pp(conc.before.lat), pp(conc.direct.lat), ms(pct(conc.before.lat, 50) - pct(conc.direct.lat, 50)), `n=${conc.before.lat.length}`);
  }
  row(
    `requests/s at saturation (${CONC} in flight)`,
    `${rps(conc.edge).toFixed(0)} req/s`,
    `${rps(conc.direct).toFixed(0)} req/s`,
    '-',
    `stack vs. the fake's own saturation (direct); ${((conc.edge.elapsed + conc.direct.elapsed) / 1000).toFixed(1)} s in all`,
  );
  if (conc.before.lat.length) row(`… the same${B}`, `${rps(conc.before).toFixed(0)} req/s`, `${rps(conc.direct).toFixed(0)} req/s`, '-', `${(conc.before.elapsed / 1000).toFixed(1)} s`);
  // Only the processes that served the round count (the other stack's idle edge and worker are left out).
  const served: Record<string, string[]> = { edge: ['edgeBefore', 'workerBefore'], before: ['edge', 'worker'], direct: [] };
  const perReq = (c: Acc, skip: string[] = []) =>
    procs(c.cpu)
      .filter(([k]) => !skip.includes(k))
      .map(([k, v]) => `${k} ${(v / c.lat.length).toFixed(3)}`)
      .join(', ');
  const sumCpu = (c: Acc, skip: string[] = []) => procs(c.cpu).filter(([k]) => !skip.includes(k)).reduce((a, [, v]) => a + v, 0) / c.lat.length;
  phaseLoad.push(`${CONC} in flight, stack ${cores(conc.edge.cpu, conc.edge.elapsed)}`, `${CONC} in flight, direct ${cores(conc.direct.cpu, conc.direct.elapsed)}`);
  lines.push(
    `CPU ms per request at ${CONC} in flight, stack: ${perReq(conc.edge, served.edge)} (sum ${sumCpu(conc.edge, served.edge).toFixed(3)} → ${((availableParallelism() * 1000) / sumCpu(conc.edge, served.edge)).toFixed(0)} req/s if every core were ours)`,
  );
  if (conc.before.lat.length) {
    lines.push(`CPU ms per request at ${CONC} in flight, before: ${perReq(conc.before, served.before)} (sum ${sumCpu(conc.before, served.before).toFixed(3)})`);
  }
  lines.push(`CPU ms per request at ${CONC} in flight, direct: ${perReq(conc.direct, ['edge', 'worker', 'edgeBefore', 'workerBefore'])} (sum ${sumCpu(conc.direct, ['edge', 'worker', 'edgeBefore', 'workerBefore']).toFixed(3)})`);
  lines.push(`cores busy during the phases (ours = the processes above): ${phaseLoad.join('; ')}`);
  lines.push(`phases: warm-up ${warmS.toFixed(1)} s, sequential ${t1s.toFixed(1)} s, streamed ${t3s.toFixed(1)} s, concurrent ${t2s.toFixed(1)} s; whole run ${((performance.now() - started) / 1000).toFixed(1)} s`);
  lines.push(`mode: ${FULL ? 'full (scripts/start: every face on the edge, default log level, every worker)' : 'bench (edge at LOG_LEVEL=warn, proxy worker alone)'}${BEFORE ? `; before = ${BEFORE}` : ''}; load average at the start ${loadAtStart.map((x) => x.toFixed(2)).join(' ')}, at the end ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  // Anything the edge (warn) or the worker said beyond the worker's start-up line.
  for (const [name, log] of [['edge', edge.proc.log()], ['proxy worker', worker.log()]] as const) {
    const said = log
      .split('\n')
      .filter((l) => l.trim() && !l.includes('proxy worker serving'))
      .join('\n');
    if (said) console.error(`[bench] the ${name} said:\n${said.slice(0, 2000)}`);
  }
  seqEdge.destroy();
  seqDirect.destroy();
  seqBefore.destroy();
} finally {
  await cleanup();
  clearTimeout(watchdog);
}

const header = ['measurement', 'p50 / p99', 'baseline p50 / p99', 'overhead p50', 'notes'];
const table = [header, header.map(() => '---'), ...rows];
console.log(table.map((r) => `| ${r.join(' | ')} |`).join('\n'));
console.log('');
for (const l of lines) console.log(l);
