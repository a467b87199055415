import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { flipGate, enforcedState } from '../src/gate-ops.ts';
import { newKey, testDatabaseUrl } from '../../tests/support/local-stack.ts';
import { startFakeProcess } from './fake-process.ts';
import { errorKind, keepAlive, send, type HttpTarget, setupCall as call } from './load.ts';
import { findPid, pct, pgBackendsOf } from './measure.ts';
import { asStarted, childrenOf, type Topology } from './topology.ts';

/**
 * Soak: the stack as `scripts/start` runs it (scripts/src/run-stack.ts, every service, topology.ts
 * `asStarted`), all four faces loaded at once at half their saturation for BENCH_SOAK_MINUTES,
 * every answer checked; memory and file descriptors of every process sampled throughout, then a
 * table per process and a verdict: flat or not.
 *
 * 1. Saturation (unless BENCH_SOAK_RATE_<FACE> gives every face's rate): after a warm-up, all four
 *    faces closed-loop at once, BENCH_SOAK_SAT_CONCURRENCY in flight each (speech: a quarter of it),
 *    for BENCH_SOAK_SAT_SECONDS; each face's req/s there is its saturation *beside the others* — the
 *    faces share the machine's cores, so four faces each at half of its saturation alone would ask
 *    for twice the machine. The soak rate of a face is half that figure.
 * 2. Soak: open loop at a fixed rate per face (a request is sent when due whether or not earlier ones
 *    have answered; at most BENCH_SOAK_MAX_IN_FLIGHT per face in flight, a request due beyond that is
 *    counted as the error `client cap`), for BENCH_SOAK_MINUTES (default 10; 1 to try it).
 * 3. Every BENCH_SOAK_SAMPLE_SECONDS (5): each service's `/metrics` (run-stack.ts gives each its
 *    own METRICS_PORT: process_resident_memory_bytes, nodejs_heap_size_used_bytes,
 *    process_open_fds); /proc for the runner, the fake upstream, nats-server, redis-server, the
 *    Postgres postmaster and the stack's Postgres backends (private memory, RssAnon: a backend's
 *    RSS also counts the shared buffers it has touched), and this client.
 *
 * Requests (every answer checked): speech POST /v1/audio/speech (mp3, non-empty); LLM POST
 * /v1/messages fake/echo, every other one streamed (the echo's text, the stream's end); vector
 * POST …/points/query on BENCH_SOAK_POINTS 384-dim points (the query's own point first, 10
 * points), every fourth a PUT …/points?wait=true of one point in a fixed range of 500 ids (writes
 * without growing the collection); chat GET /api/v1/folders/ (the caller's 20 folders), every fourth
 * a POST /api/v1/memories/add (its id and content back; each adds an outbox event that the relay
 * publishes).
 *
 * Two samples are taken with no load running: before the soak (after the warm-up and saturation
 * phases, so pools are open) and after it (once everything in flight has ended). Before each, every
 * service makes a full collection: the services run with --heapsnapshot-signal=SIGWINCH and a heap
 * snapshot begins with one (the file is deleted); heap used is then the live set. Without it a
 * quiet worker's old space grows for many minutes between major collections, which looks like a leak.
 *
 * Verdict, per process: flat when over the second half the slope (least squares) of the RSS floor
 * (the lowest sample of each minute: a leak raises it, the collector's sawtooth moves only the
 * peaks) is below BENCH_SOAK_MAX_SLOPE_MB (1 MB/min); the heap after a full collection at the end is
 * at most BENCH_SOAK_MAX_HEAP_GROWTH_MB (2) above the start (without the collections,
 * BENCH_SOAK_FULL_GC=0: the heap floor's slope below half BENCH_SOAK_MAX_SLOPE_MB); and open fds at
 * the end at most BENCH_SOAK_MAX_FD_GROWTH (5) above the start (the Postgres backends' sum: at most
 * 5 per backend above half-time — each opens relation files as it first needs them and keeps them,
 * a cache that fills in the first minutes). The run is clean when no request
 * failed. nats-server, redis-server and Postgres serve the whole machine: their figures include
 * whatever else ran meanwhile.
 * Env: BENCH_SOAK_MINUTES (10), BENCH_SOAK_RATE_SPEECH / _LLM / _VECTOR / _CHAT (req/s; default half
 * the saturation), BENCH_SOAK_SAT_CONCURRENCY (32), BENCH_SOAK_SAT_SECONDS (15),
 * BENCH_SOAK_MAX_IN_FLIGHT (256 per face), BENCH_SOAK_SAMPLE_SECONDS (5), BENCH_SOAK_MAX_SLOPE_MB (1),
 * BENCH_SOAK_MAX_HEAP_GROWTH_MB (2), BENCH_SOAK_FULL_GC (1), BENCH_SOAK_MAX_FD_GROWTH (5),
 * BENCH_SOAK_POINTS (1000), BENCH_SOAK_USERS (8),
 * BENCH_SOAK_SAMPLES_OUT (a file for every sample, JSON).
 */
const FACES = ['speech', 'llm', 'vector', 'chat'] as const;
type Face = (typeof FACES)[number];
const MINUTES = Number(process.env.BENCH_SOAK_MINUTES ?? 10);
const SAMPLE_S = Number(process.env.BENCH_SOAK_SAMPLE_SECONDS ?? 5);
const SAT_CONC = Number(process.env.BENCH_SOAK_SAT_CONCURRENCY ?? 32);
const SAT_S = Number(process.env.BENCH_SOAK_SAT_SECONDS ?? 15);
const MAX_IN_FLIGHT = Number(process.env.BENCH_SOAK_MAX_IN_FLIGHT ?? 256);
const MAX_SLOPE = Number(process.env.BENCH_SOAK_MAX_SLOPE_MB ?? 1);
const MAX_FD_GROWTH = Number(process.env.BENCH_SOAK_MAX_FD_GROWTH ?? 5);
const POINTS = Number(process.env.BENCH_SOAK_POINTS ?? 1000);
const USERS = Number(process.env.BENCH_SOAK_USERS ?? 8);
const FIXED_RATES = Object.fromEntries(FACES.map((f) => [f, Number(process.env[`BENCH_SOAK_RATE_${f.toUpperCase()}`] ?? NaN)])) as Record<Face, number>;
const FOLDERS = 20;
const DIM = 384;
const UPSERT_IDS = 500;
const WARM_S = 5;
const MAX_HEAP_GROWTH = Number(process.env.BENCH_SOAK_MAX_HEAP_GROWTH_MB ?? 2);
const FULL_GC = process.env.BENCH_SOAK_FULL_GC !== '0';
const WATCHDOG_MS = (MINUTES * 60 + 20 * 60) * 1000;
if (!(MINUTES > 0) || !(SAMPLE_S > 0)) throw new Error('BENCH_SOAK_MINUTES and BENCH_SOAK_SAMPLE_SECONDS must be positive');

const say = (s: string) => console.error(`[soak] ${s}`);
const PROMPT = 'Say hello to the soak, briefly.';
const EXPECTED = `echo: ${PROMPT}`;
const MB = 1024 * 1024;

/** Seeded random unit vectors (mulberry32 + Box-Muller), rounded as a client sends them. */
function vectors(n: number, seed: number): number[][] {
  let a = seed;
  const r = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: n }, () => {
    const v = Array.from({ length: DIM }, () => Math.sqrt(-2 * Math.log(r() || 1e-12)) * Math.cos(2 * Math.PI * r()));
    const norm = Math.hypot(...v);
    return v.map((x) => Number((x / norm).toFixed(6)));
  });
}

/** A port that is free now (bind and release). */
const canBind = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
/** The first of `n` consecutive free loopback ports (run-stack.ts gives its services METRICS_PORT + i). */
async function freeRun(n: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    let ok = true;
    for (let i = 0; i < n && ok; i++) ok = await canBind(base + i);
    if (ok) return base;
  }
  throw new Error(`no ${n} consecutive free ports`);
}

// ---- sampling ----------------------------------------------------------------------------------

interface Sample {
  t: number; // ms since the soak began
  rss: number; // bytes
  heap?: number; // bytes
  fds?: number;
  extra?: string;
  /** Taken with no load running (before the soak, and after it once everything in flight ended): not in the slopes. */
  idle?: boolean;
  /** Taken right after a full collection (a heap snapshot on SIGWINCH: the edge's close-with-grace stops on SIGUSR2): heap used is the live set. */
  afterGc?: boolean;
}
const samples = new Map<string, Sample[]>();
const shared = new Set<string>();
/** The benchmark's own processes: shown, not judged (the client keeps every latency). */
const RIG = new Set(['fake OpenAI upstream', 'soak client (this process)']);
/** The stack's Postgres backends, summed: private memory (RssAnon), fds, how many (the pools open and close them). */
const BACKENDS = 'postgres backends of the stack †';
const addSample = (name: string, s: Sample) => (samples.get(name) ?? samples.set(name, []).get(name)!).push(s);

/** One `name value` of a Prometheus text answer (unlabelled but for the default `service` label). */
const metric = (text: string, name: string): number | undefined => {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
};
const status = (pid: number): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const l of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = /^(VmRSS|RssAnon|RssFile|RssShmem):\s+(\d+) kB/.exec(l);
    if (m) out[m[1]!] = Number(m[2]) * 1024;
  }
  return out;
};
const fdCount = (pid: number): number | undefined => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
};
/** Every descendant of `pid` (the speech worker's espeak-ng and ffmpeg processes). */
const descendants = (pid: number): number[] => {
  const out: number[] = [];
  const todo = [pid];
  for (let k = 0; todo.length && k < 1000; k++) for (const c of childrenOf(todo.pop()!)) out.push(c), todo.push(c);
  return out;
};

// ---- load --------------------------------------------------------------------------------------

interface FaceStats {
  sent: number;
  ok: number;
  errors: Record<string, number>;
  firstErrors: string[];
  /** Latencies (ms) by minute of the soak. */
  byMinute: number[][];
  inFlight: number;
  maxInFlight: number;
}
const newStats = (): FaceStats => ({ sent: 0, ok: 0, errors: {}, firstErrors: [], byMinute: [], inFlight: 0, maxInFlight: 0 });
const fail = (s: FaceStats, kind: string, detail: string) => {
  s.errors[kind] = (s.errors[kind] ?? 0) + 1;
  if (s.firstErrors.length < 5) s.firstErrors.push(`${kind}: ${detail.slice(0, 300)}`);
};

/** Closed loop on every face at once (saturation beside the others); errors are counted, not thrown. */
async function closedAll(targets: Record<Face, HttpTarget>, conc: Record<Face, number>, seconds: number, offset: Record<Face, number>): Promise<Record<Face, { n: number; rps: number; stats: FaceStats }>> {
  const out = {} as Record<Face, { n: number; rps: number; stats: FaceStats }>;
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    FACES.map(async (f) => {
      const stats = newStats();
      const ag = keepAlive(conc[f]);
      let i = offset[f];
      await Promise.all(
        Array.from({ length: conc[f] }, async () => {
          for (let k = 0; k < 1_000_000 && performance.now() < deadline; k++) {
            stats.sent++;
            try {
              await send(targets[f], i++, ag);
              stats.ok++;
            } catch (err) {
              fail(stats, errorKind(err), (err as Error).message);
            }
          }
        }),
      );
      ag.destroy();
      offset[f] = i;
      out[f] = { n: stats.ok, rps: (stats.ok / (performance.now() - t0)) * 1000, stats };
    }),
  );
  return out;
}

/**
 * Open loop: request k of a face is due at k / rate seconds; a timer sends whatever is due (so a
 * slow answer never delays the next request), at most MAX_IN_FLIGHT per face at once.
 */
async function openAll(targets: Record<Face, HttpTarget>, rates: Record<Face, number>, ms: number, offset: Record<Face, number>, stats: Record<Face, FaceStats>): Promise<void> {
  const agents = Object.fromEntries(FACES.map((f) => [f, keepAlive(MAX_IN_FLIGHT)])) as Record<Face, ReturnType<typeof keepAlive>>;
  const t0 = performance.now();
  const pending = new Set<Promise<void>>();
  const issued = Object.fromEntries(FACES.map((f) => [f, 0])) as Record<Face, number>;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      const elapsed = Math.min(now - t0, ms);
      for (const f of FACES) {
        const s = stats[f];
        const due = Math.floor((elapsed / 1000) * rates[f]);
        for (; issued[f] < due; issued[f]++) {
          s.sent++;
          if (s.inFlight >= MAX_IN_FLIGHT) {
            fail(s, 'client cap', `${MAX_IN_FLIGHT} in flight at ${((now - t0) / 1000).toFixed(1)} s`);
            continue;
          }
          s.inFlight++;
          s.maxInFlight = Math.max(s.maxInFlight, s.inFlight);
          const minute = Math.floor((now - t0) / 60_000);
          const p = send(targets[f], offset[f]++, agents[f]).then(
            (lat) => {
              s.ok++;
              (s.byMinute[minute] ??= []).push(lat);
            },
            (err) => fail(s, errorKind(err), (err as Error).message),
          );
          const q = p.finally(() => {
            s.inFlight--;
            pending.delete(q);
          });
          pending.add(q);
        }
      }
      if (now - t0 >= ms) return resolve();
      setTimeout(tick, 5);
    };
    tick();
  });
  // What is still in flight ends by load.ts' request limit (10 s).
  await Promise.allSettled([...pending]);
  for (const a of Object.values(agents)) a.destroy();
}

// ---- statistics --------------------------------------------------------------------------------

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return NaN;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) (sxy += (xs[i]! - mx) * (ys[i]! - my)), (sxx += (xs[i]! - mx) ** 2);
  return sxx ? sxy / sxx : NaN;
}
/** MB per minute over the second half of the soak. */
const halfSlope = (ss: Sample[], pick: (s: Sample) => number | undefined, half: number): number => {
  const pts = ss.filter((s) => !s.idle && s.t >= half && pick(s) !== undefined);
  return slope(
    pts.map((s) => s.t / 60_000),
    pts.map((s) => pick(s)! / MB),
  );
};
/**
 * The floor of a series: its lowest sample in each window under load. A leak raises the floor; the
 * collector's sawtooth (a major collection every few minutes in a busy worker) moves only the peaks.
 */
const floorOf = (ss: Sample[], pick: (s: Sample) => number | undefined, windowMs: number): Sample[] => {
  const w = new Map<number, Sample>();
  for (const s of ss) {
    if (pick(s) === undefined || s.idle) continue;
    const k = Math.floor(s.t / windowMs);
    const cur = w.get(k);
    if (!cur || pick(s)! < pick(cur)!) w.set(k, s);
  }
  return [...w.values()];
};

/**
 * A full collection in a service, from outside: it runs with --heapsnapshot-signal=SIGWINCH, and a
 * heap snapshot starts with a full GC. Waits for the snapshot file to be complete, then deletes it.
 */
async function fullGc(pid: number, dir: string): Promise<boolean> {
  const mine = () => readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot') && f.includes(`.${pid}.`));
  for (const f of mine()) rmSync(join(dir, f), { force: true });
  try {
    process.kill(pid, 'SIGWINCH');
  } catch {
    return false; // gone: the caller says so
  }
  let size = -1;
  let still = 0;
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 250));
    try {
      process.kill(pid, 0);
    } catch {
      return false;
    }
    const f = mine()[0];
    if (!f) continue;
    const now = statSync(join(dir, f)).size;
    still = now === size && now > 0 ? still + 1 : 0;
    size = now;
    if (still >= 4) {
      rmSync(join(dir, f), { force: true });
      return true;
    }
  }
  return false;
}

// ---- run ---------------------------------------------------------------------------------------

const upstreamKey = newKey();
const proxyKey = newKey();
const vectorKey = newKey();
const dir = mkdtempSync(join(tmpdir(), 'bench-soak-'));
const heapDir = join(dir, 'heap');
let topo: Topology | undefined;
let fake: Awaited<ReturnType<typeof startFakeProcess>> | undefined;
const sql = postgres(testDatabaseUrl(), { max: 1, onnotice: () => undefined });
const cleanup = async () => {
  await topo?.close().catch((err: unknown) => say(`closing the stack: ${(err as Error).message}`));
  await fake?.stop();
  await sql.end({ timeout: 5 }).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
};
const watchdog = setTimeout(() => {
  say(`watchdog: the run took over ${WATCHDOG_MS} ms; stopping`);
  void cleanup().finally(() => process.exit(2));
}, WATCHDOG_MS);
watchdog.unref();
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void cleanup().finally(() => process.exit(130)));


/** Gates, data, users; one target per face, each a mix of its requests. */
async function prepare(t: Topology): Promise<Record<Face, HttpTarget>> {
  const store = await t.stack.store();
  for (const [face, key] of [['llm', proxyKey], ['vector', vectorKey]] as const) {
    const flip = await flipGate(store, face, enforcedState([key], 'bench-soak'));
    if (flip.lagging.length || flip.applied.length !== 1) throw new Error(`${face} gate flip applied on ${flip.applied.length} edges`);
  }
  const l = t.listeners[0]!;
  const vh = { 'api-key': vectorKey };
  const points = vectors(POINTS, 20261127);
  const queryBodies = points.map((v) => JSON.stringify({ query: v, limit: 10 }));
  const upserts = vectors(UPSERT_IDS, 7);
  await call(l.vectorPort, 'PUT', '/collections/soak', vh, { vectors: { size: DIM, distance: 'Cosine' } });
  for (let b = 0; b < points.length; b += 250) {
    await call(l.vectorPort, 'PUT', '/collections/soak/points?wait=true', vh, { points: points.slice(b, b + 250).map((vector, k) => ({ id: b + k, vector, payload: { n: b + k } })) });
  }
  const admin = (await call(l.chatPort, 'POST', '/api/v1/auths/signup', {}, { name: 'Soak Admin', email: `admin-${t.stack.ns}@bench.test`, password: newKey() })) as { token: string };
  const users: string[] = [];
  for (let u = 0; u < USERS; u++) {
    const r = (await call(l.chatPort, 'POST', '/api/v1/auths/add', { authorization: `Bearer ${admin.token}` }, { name: `User ${u}`, email: `u${u}-${t.stack.ns}@bench.test`, password: newKey(), role: 'user' })) as { token: string };
    users.push(r.token);
    for (let f = 0; f < FOLDERS; f++) await call(l.chatPort, 'POST', '/api/v1/folders/', { authorization: `Bearer ${r.token}` }, { name: `u${u} folder ${f}` });
  }
  const json = { 'content-type': 'application/json' };
  const speechBody = JSON.stringify({ model: 'tts-1', voice: 'alloy', input: 'The soak goes on.', response_format: 'mp3' });
  const llmBody = (stream: boolean) => JSON.stringify({ model: 'fake/echo', max_tokens: 64, stream, messages: [{ role: 'user', content: PROMPT }] });
  const llmBodies = [llmBody(false), llmBody(true)];
  return {
    speech: {
      host: '127.0.0.1',
      port: l.speechPort,
      method: 'POST',
      request: () => ({ path: '/v1/audio/speech', headers: json, body: speechBody }),
      check: (b) => {
        if (b.length < 100) throw new Error(`${b.length} bytes of audio`);
      },
    },
    llm: {
      host: '127.0.0.1',
      port: l.proxyPort,
      method: 'POST',
      request: (i) => ({ path: '/v1/messages', headers: { ...json, 'anthropic-version': '2023-06-01', 'x-proxy-key': proxyKey }, body: llmBodies[i % 2] }),
      check: (b, i) => {
        if (i % 2 === 0) {
          const m = JSON.parse(b) as { type?: string; content?: { text?: string }[] };
          if (m.type !== 'message' || m.content?.[0]?.text !== EXPECTED) throw new Error('unexpected message');
          return;
        }
        if (!b.includes('event: message_stop')) throw new Error('stream without message_stop');
        let text = '';
        for (const line of b.split('\n')) {
          if (!line.startsWith('data: ')) continue;
          const e = JSON.parse(line.slice(6)) as { type?: string; delta?: { type?: string; text?: string } };
          if (e.type === 'content_block_delta' && e.delta?.type === 'text_delta') text += e.delta.text;
        }
        if (text !== EXPECTED) throw new Error(`streamed text ${JSON.stringify(text.slice(0, 80))}`);
      },
    },
    vector: {
      host: '127.0.0.1',
      port: l.vectorPort,
      method: 'POST',
      request: (i) =>
        i % 4 === 3
          ? { method: 'PUT', path: '/collections/soak/points?wait=true', headers: { ...json, ...vh }, body: JSON.stringify({ points: [{ id: 100_000 + (i % UPSERT_IDS), vector: upserts[i % UPSERT_IDS], payload: { i } }] }) }
          : { path: '/collections/soak/points/query', headers: { ...json, ...vh }, body: queryBodies[i % queryBodies.length] },
      check: (b, i) => {
        const r = JSON.parse(b) as { status?: string; result?: { status?: string; points?: { id: unknown; score: number }[] } };
        if (r.status !== 'ok') throw new Error('status not ok');
        if (i % 4 === 3) {
          if (r.result?.status !== 'completed') throw new Error('upsert not completed');
          return;
        }
        const p = r.result?.points;
        if (!p || p.length !== 10) throw new Error('not 10 points');
        if (p[0]!.id !== i % queryBodies.length || p[0]!.score < 0.999) throw new Error(`the query's own point ${i % queryBodies.length} is not first`);
      },
    },
    chat: {
      host: '127.0.0.1',
      port: l.chatPort,
      method: 'GET',
      request: (i) =>
        i % 4 === 3
          ? { method: 'POST', path: '/api/v1/memories/add', headers: { ...json, authorization: `Bearer ${users[i % users.length]!}` }, body: JSON.stringify({ content: `soak memory ${i}` }) }
          : { path: '/api/v1/folders/', headers: { authorization: `Bearer ${users[i % users.length]!}` } },
      check: (b, i) => {
        if (i % 4 === 3) {
          const m = JSON.parse(b) as { id?: unknown; content?: string };
          if (typeof m.id !== 'string' || m.content !== `soak memory ${i}`) throw new Error('not the memory sent');
          return;
        }
        const fs = JSON.parse(b) as { name?: string }[];
        const u = i % users.length;
        if (!Array.isArray(fs) || fs.length !== FOLDERS || !fs.every((f) => f.name?.startsWith(`u${u} folder `))) throw new Error(`not the ${FOLDERS} folders of user ${u}`);
      },
    },
  };
}

const started = performance.now();
const load0 = loadavg();
const soakStats = Object.fromEntries(FACES.map((f) => [f, newStats()])) as Record<Face, FaceStats>;
const notes: string[] = [];
let rates = {} as Record<Face, number>;
let sat: Record<Face, { n: number; rps: number; stats: FaceStats }> | undefined;
let soakMs = 0;
const loadDuring: number[] = [];
let logLinesBefore = 0;
try {
  fake = await startFakeProcess('openai', upstreamKey);
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ providers: { fake: { type: 'openai', baseUrl: fake.url, apiKeyEnv: 'BENCH_FAKE_OPENAI_KEY', models: ['echo'] } }, timeoutMs: 10_000, retries: { max: 0 } }));
  const metricsBase = await freeRun(7);
  const t0 = performance.now();
  mkdirSync(heapDir, { recursive: true });
  topo = await asStarted(
    { config, keyEnv: { BENCH_FAKE_OPENAI_KEY: upstreamKey } },
    { METRICS_PORT: String(metricsBase), ...(FULL_GC ? { NODE_OPTIONS: `--heapsnapshot-signal=SIGWINCH --diagnostic-dir=${heapDir}` } : {}) },
  );
  const t = topo;
  const targets = await prepare(t);
  say(`stack up and filled in ${((performance.now() - t0) / 1000).toFixed(1)} s: namespace ${t.stack.ns}, ${t.procs.map((p) => `${p.role} ${p.pid}`).join(', ')}; metrics on ${metricsBase}…${metricsBase + 6}`);

  // Services and their metrics ports (run-stack.ts: the edge on METRICS_PORT, then the workers in this order).
  const ORDER = ['edge', 'speech-worker', 'proxy-worker', 'vector-worker', 'chat-worker', 'ingest-worker', 'webhooks'];
  const services = ORDER.map((role, k) => ({ role, port: metricsBase + k, pid: t.procs.find((p) => p.role === role)!.pid }));
  const runnerPid = t.procs.find((p) => p.role === 'runner')!.pid;
  const others: { name: string; pid: number | undefined; shared?: boolean }[] = [
    { name: 'runner (run-stack.ts)', pid: runnerPid },
    { name: 'fake OpenAI upstream', pid: fake.child.pid },
    { name: 'nats-server', pid: findPid('nats-server'), shared: true },
    { name: 'redis-server', pid: findPid('redis-server'), shared: true },
    { name: 'postgres (postmaster)', pid: Number(readFileSync(join(String((await sql<{ setting: string }[]>`select setting from pg_settings where name = 'data_directory'`)[0]!.setting), 'postmaster.pid'), 'utf8').split('\n')[0]), shared: true },
  ];
  for (const o of others) if (o.shared) shared.add(o.name);
  const backendsOf = async (): Promise<number[]> =>
    (await Promise.all(services.map((s) => pgBackendsOf(s.pid, async (ports) => (await sql<{ pid: number }[]>`select pid from pg_stat_activity where client_port = any(${ports})`).map((r) => r.pid)).catch(() => [])))).flat();

  let soakT0 = 0;
  const sampleOnce = async (idle = false, afterGc = false) => {
    const at = performance.now() - soakT0;
    await Promise.all(
      services.map(async (s) => {
        try {
          const r = await fetch(`http://127.0.0.1:${s.port}/metrics`, { signal: AbortSignal.timeout(5000) });
          const text = await r.text();
          const rss = metric(text, 'process_resident_memory_bytes');
          if (r.status !== 200 || rss === undefined) throw new Error(`metrics answered ${r.status}`);
          const extra = s.role === 'speech-worker' ? `${descendants(s.pid).length} child processes` : undefined;
          addSample(s.role, { t: at, rss, heap: metric(text, 'nodejs_heap_size_used_bytes'), fds: metric(text, 'process_open_fds'), extra, idle, afterGc });
        } catch (err) {
          // A scrape that fails is a finding too; /proc still tells memory and fds.
          notes.push(`${s.role}: /metrics failed at ${(at / 1000).toFixed(0)} s: ${(err as Error).message}`);
          try {
            addSample(s.role, { t: at, rss: status(s.pid).VmRSS!, fds: fdCount(s.pid), idle });
          } catch {
            // gone
          }
        }
      }),
    );
    for (const o of others) {
      if (!o.pid) continue;
      try {
        addSample(o.name, { t: at, rss: status(o.pid).VmRSS!, fds: fdCount(o.pid), idle });
      } catch {
        // gone
      }
    }
    const backends = await backendsOf().catch(() => []);
    let anon = 0;
    let fds = 0;
    for (const pid of backends) {
      try {
        anon += status(pid).RssAnon ?? 0;
        fds += fdCount(pid) ?? 0;
      } catch {
        // gone meanwhile
      }
    }
    addSample(BACKENDS, { t: at, rss: anon, fds, extra: `${backends.length} backends`, idle });
    const mu = process.memoryUsage();
    addSample('soak client (this process)', { t: at, rss: mu.rss, heap: mu.heapUsed, fds: fdCount(process.pid), idle });
    loadDuring.push(loadavg()[0]!);
  };
  /** The idle sample: after a full collection in every service (one at a time), when FULL_GC. */
  const idleSample = async () => {
    let gc = FULL_GC;
    for (const s of FULL_GC ? services : []) {
      if (!(await fullGc(s.pid, heapDir))) {
        notes.push(`${s.role}: no heap snapshot within 120 s (no full collection)`);
        gc = false;
      }
    }
    await sampleOnce(true, gc);
    if (!gc && FULL_GC) say(`a full collection failed; the runner said:\n${t.log().slice(-3000)}`);
  };

  // 1. Saturation, all four faces at once.
  const offset = Object.fromEntries(FACES.map((f) => [f, 0])) as Record<Face, number>;
  const conc = Object.fromEntries(FACES.map((f) => [f, f === 'speech' ? Math.max(1, Math.round(SAT_CONC / 4)) : SAT_CONC])) as Record<Face, number>;
  if (FACES.every((f) => FIXED_RATES[f] > 0)) {
    rates = { ...FIXED_RATES };
    say(`rates from BENCH_SOAK_RATE_*: ${FACES.map((f) => `${f} ${rates[f]}/s`).join(', ')}`);
    // A warm-up all the same: pools and JIT reach their working size before the first sample.
    await closedAll(targets, conc, WARM_S, offset);
    await new Promise((r) => setTimeout(r, 3000));
  } else {
    await closedAll(targets, conc, WARM_S, offset);
    sat = await closedAll(targets, conc, SAT_S, offset);
    rates = Object.fromEntries(FACES.map((f) => [f, FIXED_RATES[f] > 0 ? FIXED_RATES[f] : Math.max(1, Math.round(sat![f].rps / 2))])) as Record<Face, number>;
    say(`saturation, all faces at once for ${SAT_S} s: ${FACES.map((f) => `${f} ${sat![f].rps.toFixed(0)} req/s at ${conc[f]} in flight`).join(', ')} → soak rates ${FACES.map((f) => `${f} ${rates[f]}/s`).join(', ')}`);
    for (const f of FACES) if (Object.keys(sat[f].stats.errors).length) notes.push(`saturation: ${f} errors ${JSON.stringify(sat[f].stats.errors)}; first: ${sat[f].stats.firstErrors[0]}`);
    // Let what the saturation phase left behind settle before the first sample.
    await new Promise((r) => setTimeout(r, 3000));
  }

  // 2. Soak, sampling all along.
  soakMs = MINUTES * 60_000;
  logLinesBefore = t.log().split('\n').length;
  // The collections take a few seconds per service: the soak's clock starts after them.
  soakT0 = performance.now();
  await idleSample();
  soakT0 = performance.now();
  for (const ss of samples.values()) for (const x of ss) x.t = 0;
  let sampling = true;
  const sampler = (async () => {
    for (let k = 1; sampling && k < 100_000; k++) {
      const wait = soakT0 + k * SAMPLE_S * 1000 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (!sampling) break;
      await sampleOnce();
    }
  })();
  const progress = setInterval(() => {
    const m = (performance.now() - soakT0) / 60_000;
    say(`${m.toFixed(1)} min: ${FACES.map((f) => `${f} ${soakStats[f].ok} ok, ${Object.values(soakStats[f].errors).reduce((a, b) => a + b, 0)} failed, ${soakStats[f].inFlight} in flight`).join('; ')}; load ${loadavg()[0]!.toFixed(2)}`);
  }, 60_000);
  await openAll(targets, rates, soakMs, offset, soakStats);
  clearInterval(progress);
  // The last sample with no load, as the first: after everything in flight has ended and a pause.
  sampling = false;
  await sampler;
  await new Promise((r) => setTimeout(r, 3000));
  await idleSample();
  const said = t.log().split('\n').slice(logLinesBefore).filter((l) => /\b(WARN|ERROR|FATAL)\b/.test(l));
  notes.push(`the stack logged ${said.length} warning/error lines during the soak${said.length ? `, e.g. ${said.slice(0, 3).join(' | ').slice(0, 600)}` : ''}; the runner printed ${(t.log().length / 1024).toFixed(0)} KiB in the whole run`);
  const gone = t.procs.filter((p) => {
    try {
      process.kill(p.pid, 0);
      return false;
    } catch {
      return true;
    }
  });
  if (gone.length) notes.push(`PROCESSES OF THE STACK EXITED during the run: ${gone.map((p) => p.role).join(', ')}`);
} finally {
  await cleanup();
  clearTimeout(watchdog);
}

// ---- report ------------------------------------------------------------------------------------

const load1 = loadavg();
const mb = (b: number | undefined) => (b === undefined || Number.isNaN(b) ? '–' : (b / MB).toFixed(1));
const sl = (x: number) => (Number.isNaN(x) ? '–' : `${x >= 0 ? '+' : ''}${x.toFixed(2)}`);
const half = soakMs / 2;
console.log(`\nSoak: ${MINUTES} min, the stack as scripts/start runs it, all four faces at once; ${availableParallelism()} cores`);
console.log(`load average (1 min) during the soak: min ${Math.min(...loadDuring).toFixed(2)}, median ${pct(loadDuring, 50).toFixed(2)}, max ${Math.max(...loadDuring).toFixed(2)}; 1/5/15 min at start ${load0.map((x) => x.toFixed(2)).join(' / ')}, at end ${load1.map((x) => x.toFixed(2)).join(' / ')}\n`);
if (sat) {
  console.log(`| face | saturation, all faces at once (req/s) | in flight | soak rate (req/s) |`);
  console.log('|---|---|---|---|');
  for (const f of FACES) console.log(`| ${f} | ${sat[f].rps.toFixed(0)} | ${f === 'speech' ? Math.max(1, Math.round(SAT_CONC / 4)) : SAT_CONC} | ${rates[f]} |`);
  console.log('');
}
console.log(`| face | rate asked | sent | ok | achieved | errors by kind | most in flight |`);
console.log('|---|---|---|---|---|---|---|');
for (const f of FACES) {
  const s = soakStats[f];
  const errs = Object.entries(s.errors).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
  console.log(`| ${f} | ${rates[f]}/s | ${s.sent} | ${s.ok} | ${((s.ok / soakMs) * 1000).toFixed(1)}/s | ${errs} | ${s.maxInFlight} |`);
}
console.log(`\np50 / p99 per face per minute (ms)\n`);
console.log(`| minute | ${FACES.join(' | ')} |`);
console.log(`|---|${FACES.map(() => '---').join('|')}|`);
for (let m = 0; m < Math.ceil(MINUTES); m++) {
  console.log(`| ${m + 1} | ${FACES.map((f) => { const l = soakStats[f].byMinute[m] ?? []; return l.length ? `${pct(l, 50).toFixed(1)} / ${pct(l, 99).toFixed(1)}` : '–'; }).join(' | ')} |`);
}
const floorMs = Math.min(60_000, soakMs / 10);
console.log(
  `\nMemory and file descriptors, sampled every ${SAMPLE_S} s. Start and end: with no load running (before the soak, after it)${FULL_GC ? ', each service right after a full collection (heap: its live set)' : ''}; half-time and max: under load. Slopes (MB/min): least squares over the second half, fitted to the floor of each ${floorMs / 1000} s window (its lowest sample)\n`,
);
console.log('| process | RSS start / end / max (MB) | RSS floor slope | heap used start / end (MB) | heap floor slope | fds start / half-time / end / max | verdict |');
console.log('|---|---|---|---|---|---|---|');
const flatRule = `flat: RSS floor slope < ${MAX_SLOPE} MB/min over the second half (under load); heap ${FULL_GC ? `after a full collection at the end ≤ at the start + ${MAX_HEAP_GROWTH} MB (where both were collected; else the heap floor slope < ${MAX_SLOPE / 2} MB/min)` : `floor slope < ${MAX_SLOPE / 2} MB/min`}; fds at the end ≤ fds at the start + ${MAX_FD_GROWTH} (both with no load running; the Postgres backends: ≤ at half-time + ${MAX_FD_GROWTH} per backend)`;
let allFlat = true;
for (const [name, ss] of samples) {
  if (!ss.length) continue;
  const first = ss[0]!;
  const last = ss[ss.length - 1]!;
  const rssSlope = halfSlope(floorOf(ss, (s) => s.rss, floorMs), (s) => s.rss, half);
  const heapSlope = halfSlope(floorOf(ss, (s) => s.heap, floorMs), (s) => s.heap, half);
  const collected = first.afterGc && last.afterGc && first.heap !== undefined && last.heap !== undefined;
  const heapGrew = collected ? last.heap! > first.heap! + MAX_HEAP_GROWTH * MB : heapSlope >= MAX_SLOPE / 2;
  const maxRss = Math.max(...ss.map((s) => s.rss));
  const fdsKnown = ss.filter((s) => s.fds !== undefined).map((s) => s.fds!);
  const mid = ss.find((s) => s.t >= half && s.fds !== undefined) ?? first;
  // A summed row (the Postgres backends) allows as much per process it sums: each backend opens
  // relation files lazily (and keeps up to max_files_per_process), so the first ones it needs
  // later in the run add a few.
  // Their descriptors are a cache (up to max_files_per_process each): judged from half-time, where it
  // has filled, to the end.
  const summed = Number(/^(\d+) backends$/.exec(first.extra ?? '')?.[1] ?? 0) || 0;
  const fdsFrom = summed ? mid : first;
  const fdsGrew = fdsFrom.fds !== undefined && last.fds !== undefined && last.fds > fdsFrom.fds + MAX_FD_GROWTH * Math.max(1, summed);
  const flat = !(rssSlope >= MAX_SLOPE) && !heapGrew && !fdsGrew;
  if (!flat && !shared.has(name) && !RIG.has(name)) allFlat = false;
  const extra = last.extra ? ` (${first.extra} → ${last.extra})` : '';
  console.log(
    `| ${name}${shared.has(name) ? ' *' : RIG.has(name) ? ' ‡' : ''}${extra} | ${mb(first.rss)} / ${mb(last.rss)} / ${mb(maxRss)} | ${sl(rssSlope)} | ${mb(first.heap)} / ${mb(last.heap)}${collected ? ' (collected)' : ''} | ${sl(heapSlope)} | ${first.fds ?? '–'} / ${mid.fds ?? '–'} / ${last.fds ?? '–'} / ${fdsKnown.length ? Math.max(...fdsKnown) : '–'} | ${flat ? 'flat' : 'NOT FLAT'} |`,
  );
}
if (process.env.BENCH_SOAK_SAMPLES_OUT) {
  writeFileSync(process.env.BENCH_SOAK_SAMPLES_OUT, JSON.stringify({ minutes: MINUTES, rates, samples: Object.fromEntries(samples) }));
  console.log(`samples written to ${process.env.BENCH_SOAK_SAMPLES_OUT}`);
}
const errors = FACES.reduce((a, f) => a + Object.values(soakStats[f].errors).reduce((x, y) => x + y, 0), 0);
console.log(`\n* shared with the rest of the machine (other people's tests use the same nats-server, redis-server and Postgres).`);
console.log(`‡ the benchmark's own, not judged (the client keeps every latency it measured).`);
console.log(`† the sum over the backends connected to the stack's services at each sample: private memory (RssAnon; a backend's RSS also counts the shared buffers it touched) and fds.`);
console.log(`Rule — ${flatRule}.${MINUTES < 4 ? ` A ${MINUTES}-minute run is a trial: its slopes mostly show warm-up, not a leak.` : ''}`);
for (const f of FACES) for (const e of soakStats[f].firstErrors) console.log(`first errors, ${f}: ${e}`);
for (const n of notes) console.log(n);
console.log(`\nVerdict: ${allFlat ? 'flat' : 'NOT FLAT'} (the stack's own processes and their Postgres backends), ${errors === 0 ? 'no error' : `${errors} requests failed`}; whole run ${((performance.now() - started) / 1000).toFixed(0)} s`);
process.exitCode = allFlat && errors === 0 ? 0 : 1;
