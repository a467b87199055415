import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { newKey, testDatabaseUrl } from '../../tests/support/local-stack.ts';
import { startFakeProcess } from './fake-process.ts';
import { findPid, pgBackendsOf } from './measure.ts';
import { asStarted, type Topology } from './topology.ts';
// The parts of the soak, each a module of its own: settings, the load (closed and open loop), the
// samples and their statistics, what is sent (set-up and targets), the report. This file starts
// the stack, runs the phases in order and samples throughout.
import { closedAll, type FaceStats, newStats, openAll } from './soak-load.ts';
import { report } from './soak-report.ts';
import { addSample, BACKENDS, descendants, fdCount, fullGc, metric, samples, shared, status } from './soak-samples.ts';
import { FACES, type Face, FIXED_RATES, FULL_GC, MINUTES, SAMPLE_S, SAT_CONC, SAT_S, say, WARM_S, WATCHDOG_MS } from './soak-settings.ts';
import { prepare } from './soak-targets.ts';

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
  const targets = await prepare(t, { proxyKey, vectorKey });
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

report({ started, load0, soakStats, rates, sat, soakMs, loadDuring, notes });
