import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { flipGate, enforcedState } from '../src/gate-ops.ts';
import { newKey, testDatabaseUrl } from '../../tests/support/local-stack.ts';
import { startFakeProcess } from './fake-process.ts';
import { closedLoop, keepAlive, send, type HttpTarget, setupCall as call } from './load.ts';
import { cpuMs, findPid, machineTicks, ms, pct, pgBackendsOf, waitQuiet } from './measure.ts';
import { asStarted, replicas, type LlmSetup, type Topology } from './topology.ts';

/**
 * Scale-out benchmark: the same three requests against three stacks, started one after the other
 * (three at once would exhaust the shared Postgres's connections), each in a namespace of its own
 * (topology.ts):
 *   `1+1`   one edge and one worker per face — the per-face benchmarks' topology (edge at warn);
 *   `2+2`   two edges and two workers per face, the workers of a face in its NATS queue group; the
 *           client spreads its connections evenly over both edges' ports, as a load balancer would;
 *   `start` the stack as `scripts/start` runs it: scripts/src/run-stack.ts with every service, the
 *           default log level (info) and its logs pretty-printed by the runner.
 * Faces: `llm` POST /v1/messages (model fake/echo, non-streamed, x-proxy-key, gate enforced) → proxy
 * worker → a fake OpenAI upstream in a process of its own, shared by the three stacks;
 * `vector` POST /collections/scale/points/query {query, limit: 10} (api-key, gate enforced) on a
 * collection of BENCH_SCALE_POINTS random 384-dim points, the query being one of the points (its
 * own id must come first); `chat` GET /api/v1/folders/ with a session token (BENCH_SCALE_USERS users,
 * 20 folders each; the answer must be the caller's 20 folders).
 * Per stack, per round, per face: requests/s with CONC in flight (saturation), with
 * the CPU time per request of every process (edges, the face's workers, the stack's other
 * processes, Postgres backends of the stack's workers, nats-server, redis-server, the fake, this
 * client); then p50/p99 latency with LAT_CONC in flight. nats-server, redis-server and Postgres are
 * shared with the rest of the machine: their figures include whatever else ran meanwhile.
 * Loopback only; every loop is bounded by count and time; every answer is checked; a watchdog ends the run.
 * Env: BENCH_SCALE_MODES (1+1,2+2,start), BENCH_SCALE_FACES (llm,vector,chat), BENCH_SCALE_CONCURRENCY (64),
 * BENCH_SCALE_LATENCY_CONCURRENCY (16), BENCH_SCALE_REQUESTS (per saturation round, 3000),
 * BENCH_SCALE_LATENCY_REQUESTS (per latency round, 1500), BENCH_SCALE_ROUNDS (2), BENCH_SCALE_POINTS (1000),
 * BENCH_SCALE_USERS (8), BENCH_SCALE_QUIET_MS (wait for a quiet machine before a phase, 5000).
 */
const MODES = (process.env.BENCH_SCALE_MODES ?? '1+1,2+2,start').split(',').map((s) => s.trim());
const FACES = (process.env.BENCH_SCALE_FACES ?? 'llm,vector,chat').split(',').map((s) => s.trim()) as Face[];
const CONC = Number(process.env.BENCH_SCALE_CONCURRENCY ?? 64);
const LAT_CONC = Number(process.env.BENCH_SCALE_LATENCY_CONCURRENCY ?? 16);
const N_SAT = Number(process.env.BENCH_SCALE_REQUESTS ?? 3000);
const N_LAT = Number(process.env.BENCH_SCALE_LATENCY_REQUESTS ?? 1500);
const ROUNDS = Number(process.env.BENCH_SCALE_ROUNDS ?? 2);
const POINTS = Number(process.env.BENCH_SCALE_POINTS ?? 1000);
const USERS = Number(process.env.BENCH_SCALE_USERS ?? 8);
const QUIET_MS = Number(process.env.BENCH_SCALE_QUIET_MS ?? 5000);
const FOLDERS = 20;
const DIM = 384;
const ROUND_MS = 20_000; // one measured round stops here even if its count is not reached
const WARM_MS = 15_000;
const WATCHDOG_MS = 1_500_000;

type Face = 'llm' | 'vector' | 'chat';
const WORKER: Record<Face, string> = { llm: 'proxy-worker', vector: 'vector-worker', chat: 'chat-worker' };
const FACE_LABEL: Record<Face, string> = { llm: 'LLM POST /v1/messages', vector: 'vector query (unfiltered)', chat: 'chat folder list' };
for (const m of MODES) if (!['1+1', '2+2', 'start'].includes(m)) throw new Error(`BENCH_SCALE_MODES: unknown mode ${m}`);
for (const f of FACES) if (!(f in WORKER)) throw new Error(`BENCH_SCALE_FACES: unknown face ${f}`);

const say = (s: string) => console.error(`[bench] ${s}`);
const PROMPT = 'Say hello to the benchmark, briefly.';
const EXPECTED = `echo: ${PROMPT}`;

/** Seeded random unit vectors (mulberry32 + Box-Muller), rounded as a client sends them. */
function vectors(n: number): number[][] {
  let a = 20261127;
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

const upstreamKey = newKey();
const proxyKey = newKey();
const vectorKey = newKey();
const dir = mkdtempSync(join(tmpdir(), 'bench-scale-'));
const topologies: Topology[] = [];
let fake: Awaited<ReturnType<typeof startFakeProcess>> | undefined;
const sql = postgres(testDatabaseUrl(), { max: 1, onnotice: () => undefined });
const cleanup = async () => {
  await Promise.allSettled(topologies.map((t) => t.close()));
  await fake?.stop();
  await sql.end({ timeout: 5 }).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
};
const watchdog = setTimeout(() => {
  say(`watchdog: the run took over ${WATCHDOG_MS} ms; stopping`);
  void cleanup().finally(() => process.exit(2));
}, WATCHDOG_MS);
watchdog.unref();
// Ctrl-C: stop the stack's processes (the `start` runner's services run in process groups of their own).
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void cleanup().finally(() => process.exit(130)));


/** Gates, data and users of one stack; returns each face's targets, one per listener. */
async function prepare(topo: Topology, points: number[][], queryBodies: string[]): Promise<Record<Face, HttpTarget[]>> {
  const store = await topo.stack.store();
  for (const [face, key] of [['llm', proxyKey], ['vector', vectorKey]] as const) {
    const flip = await flipGate(store, face, enforcedState([key], 'bench-scale'));
    if (flip.lagging.length || flip.applied.length !== topo.listeners.length) throw new Error(`${topo.mode}: ${face} gate flip applied on ${flip.applied.length} of ${topo.listeners.length} edges`);
  }
  const first = topo.listeners[0]!;
  const vh = { 'api-key': vectorKey };
  await call(first.vectorPort, 'PUT', '/collections/scale', vh, { vectors: { size: DIM, distance: 'Cosine' } });
  for (let b = 0; b < points.length; b += 250) {
    const batch = points.slice(b, b + 250).map((vector, k) => ({ id: b + k, vector, payload: { n: b + k } }));
    await call(first.vectorPort, 'PUT', '/collections/scale/points?wait=true', vh, { points: batch });
  }
  const admin = (await call(first.chatPort, 'POST', '/api/v1/auths/signup', {}, { name: 'Scale Admin', email: `admin-${topo.stack.ns}@bench.test`, password: newKey() })) as { token: string };
  const users: { token: string }[] = [];
  for (let u = 0; u < USERS; u++) {
    const r = (await call(first.chatPort, 'POST', '/api/v1/auths/add', { authorization: `Bearer ${admin.token}` }, { name: `User ${u}`, email: `u${u}-${topo.stack.ns}@bench.test`, password: newKey(), role: 'user' })) as { token: string };
    users.push({ token: r.token });
    for (let f = 0; f < FOLDERS; f++) await call(first.chatPort, 'POST', '/api/v1/folders/', { authorization: `Bearer ${r.token}` }, { name: `u${u} folder ${f}` });
  }

  const llm = (port: number): HttpTarget => ({
    host: '127.0.0.1',
    port,
    method: 'POST',
    request: () => ({
      path: '/v1/messages',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-proxy-key': proxyKey },
      body: JSON.stringify({ model: 'fake/echo', max_tokens: 64, messages: [{ role: 'user', content: PROMPT }] }),
    }),
    check: (b) => {
      const m = JSON.parse(b) as { type?: string; content?: { text?: string }[] };
      if (m.type !== 'message' || m.content?.[0]?.text !== EXPECTED) throw new Error('unexpected message');
    },
  });
  const vector = (port: number): HttpTarget => ({
    host: '127.0.0.1',
    port,
    method: 'POST',
    request: (i) => ({ path: '/collections/scale/points/query', headers: { 'content-type': 'application/json', ...vh }, body: queryBodies[i % queryBodies.length] }),
    check: (b, i) => {
      const r = JSON.parse(b) as { status?: string; result?: { points?: { id: unknown; score: number }[] } };
      const p = r.result?.points;
      if (r.status !== 'ok' || !p || p.length !== 10) throw new Error('not 10 points');
      if (p[0]!.id !== i % queryBodies.length || p[0]!.score < 0.999) throw new Error(`the query's own point ${i % queryBodies.length} is not first`);
      for (let k = 1; k < p.length; k++) if (p[k]!.score > p[k - 1]!.score) throw new Error('scores not in descending order');
    },
  });
  // Open WebUI's folder list has no user id: each user's folder names carry its index instead.
  const chat = (port: number): HttpTarget => ({
    host: '127.0.0.1',
    port,
    method: 'GET',
    request: (i) => ({ path: '/api/v1/folders/', headers: { authorization: `Bearer ${users[i % users.length]!.token}` } }),
    check: (b, i) => {
      const fs = JSON.parse(b) as { name?: string }[];
      const u = i % users.length;
      if (!Array.isArray(fs) || fs.length !== FOLDERS || !fs.every((f) => f.name?.startsWith(`u${u} folder `))) throw new Error(`not the ${FOLDERS} folders of user ${u}`);
    },
  });
  // Every listener answers before measuring (a load balancer's health check).
  const targets = { llm: topo.listeners.map((l) => llm(l.proxyPort)), vector: topo.listeners.map((l) => vector(l.vectorPort)), chat: topo.listeners.map((l) => chat(l.chatPort)) };
  const ag = keepAlive(1);
  for (const ts of Object.values(targets)) for (const t of ts) await send(t, 0, ag);
  ag.destroy();
  return targets;
}

interface Acc {
  n: number;
  elapsed: number;
  satLat: number[];
  lat: number[];
  cpu: Record<string, number>;
  machineBusy: number;
  machineTotal: number;
  stoppedByTime: number;
}

const started = performance.now();
const load0 = loadavg();
const results = new Map<string, Acc>();
const notes: string[] = [];
/** What a stack said beyond start-up: warnings and errors (the edges of 1+1 and 2+2 log at warn); the runner's log volume. */
function noteLogs(t: Topology): void {
  const lines = t.log().split('\n');
  const said = lines.filter((l) => /\b(WARN|ERROR|FATAL)\b|"level":(40|50|60)/.test(l));
  if (said.length) notes.push(`${t.mode} logged ${said.length} warning/error lines, e.g. ${said.slice(0, 3).join(' | ').slice(0, 600)}`);
  if (t.mode === 'start') notes.push(`start: the runner printed ${(t.log().length / 1024).toFixed(0)} KiB of log in the whole run (${lines.length} lines)`);
}
try {
  fake = await startFakeProcess('openai', upstreamKey);
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({ providers: { fake: { type: 'openai', baseUrl: fake.url, apiKeyEnv: 'BENCH_FAKE_OPENAI_KEY', models: ['echo'] } }, timeoutMs: 10_000, retries: { max: 0 } }),
  );
  const llm: LlmSetup = { config, keyEnv: { BENCH_FAKE_OPENAI_KEY: upstreamKey } };
  const points = vectors(POINTS);
  const queryBodies = points.map((v) => JSON.stringify({ query: v, limit: 10 }));

  const natsPid = findPid('nats-server');
  const redisPid = findPid('redis-server');
  const backendsOf = async (t: Topology): Promise<number[]> => {
    const all = await Promise.all(t.procs.map((p) => pgBackendsOf(p.pid, async (ports) => (await sql<{ pid: number }[]>`select pid from pg_stat_activity where client_port = any(${ports})`).map((r) => r.pid)).catch(() => [])));
    return all.flat();
  };
  /** CPU so far (ms) of every process group taking part in `face` on stack `t`; `pg`: its workers' Postgres backends. */
  const snapshot = (t: Topology, face: Face, pg: number[]): Record<string, number> => {
    const sum = (pids: number[]) => pids.reduce((a, p) => a + (cpuMs(p) || 0), 0);
    const own = process.cpuUsage();
    const m = machineTicks();
    const by = (pred: (role: string) => boolean) => sum(t.procs.filter((p) => pred(p.role)).map((p) => p.pid));
    return {
      edge: by((r) => r === 'edge'),
      worker: by((r) => r === WORKER[face]),
      runner: by((r) => r === 'runner'),
      'other services': by((r) => r !== 'edge' && r !== WORKER[face] && r !== 'runner'),
      postgres: sum(pg),
      nats: cpuMs(natsPid),
      redis: cpuMs(redisPid),
      ...(face === 'llm' ? { fake: cpuMs(fake!.child.pid) } : {}),
      client: (own.user + own.system) / 1000,
      machineBusy: m.busy,
      machineTotal: m.total,
    };
  };

  // One stack at a time: three side by side would open ~100 Postgres connections (10 per vector and
  // chat worker pool, 10 for the webhook dispatcher), the shared server's max_connections, and the
  // last stack's workers would answer 500 for want of a connection.
  for (const mode of MODES) {
    const t0 = performance.now();
    const t = mode === 'start' ? await asStarted(llm) : await replicas(mode === '2+2' ? 2 : 1, llm);
    topologies.push(t);
    try {
      const targets = await prepare(t, points, queryBodies);
      say(`${mode}: namespace ${t.stack.ns}, ${t.procs.length} processes (${t.procs.map((p) => p.role).join(', ')}), up and filled in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      // Warm-up: JIT, pools, keep-alive paths of every face.
      for (const face of FACES) await closedLoop(targets[face], 4 * CONC, CONC, WARM_MS);
      const loadBefore = loadavg()[0]!;
      for (let r = 0; r < ROUNDS; r++) {
        for (const face of FACES) {
          const key = `${mode}|${face}`;
          const acc = results.get(key) ?? { n: 0, elapsed: 0, satLat: [], lat: [], cpu: {}, machineBusy: 0, machineTotal: 0, stoppedByTime: 0 };
          results.set(key, acc);
          await waitQuiet(`${mode} ${face} ${CONC} in flight`, QUIET_MS, say);
          // The same backends before and after (the pools are full after the warm-up at the same concurrency).
          const pg = await backendsOf(t);
          const c0 = snapshot(t, face, pg);
          const sat = await closedLoop(targets[face], N_SAT, CONC, ROUND_MS);
          const c1 = snapshot(t, face, pg);
          acc.n += sat.lat.length;
          acc.elapsed += sat.elapsed;
          acc.satLat.push(...sat.lat);
          acc.stoppedByTime += sat.stoppedByTime ? 1 : 0;
          for (const k of Object.keys(c1)) if (!k.startsWith('machine')) acc.cpu[k] = (acc.cpu[k] ?? 0) + (c1[k]! - c0[k]!);
          acc.machineBusy += c1.machineBusy! - c0.machineBusy!;
          acc.machineTotal += c1.machineTotal! - c0.machineTotal!;
          await waitQuiet(`${mode} ${face} ${LAT_CONC} in flight`, QUIET_MS, say);
          const lat = await closedLoop(targets[face], N_LAT, LAT_CONC, ROUND_MS);
          acc.lat.push(...lat.lat);
          acc.stoppedByTime += lat.stoppedByTime ? 1 : 0;
          say(`round ${r + 1}/${ROUNDS} ${face} ${mode}: ${((sat.lat.length / sat.elapsed) * 1000).toFixed(0)} req/s at ${CONC}, p50 ${ms(pct(lat.lat, 50))} at ${LAT_CONC}`);
        }
      }
      notes.push(`${mode}: load average (1 min) ${loadBefore.toFixed(2)} before its rounds, ${loadavg()[0]!.toFixed(2)} after; measured ${((performance.now() - t0) / 1000).toFixed(0)} s after start-up`);
    } catch (err) {
      const said = t.log().split('\n').filter((l) => /\b(WARN|ERROR|FATAL)\b|"level":(40|50|60)/.test(l));
      say(`${mode} failed; what its processes said at warn and above:\n${said.slice(-20).join('\n').slice(0, 6000)}`);
      throw err;
    } finally {
      noteLogs(t);
      topologies.splice(topologies.indexOf(t), 1);
      await t.close();
    }
  }
} finally {
  await cleanup();
  clearTimeout(watchdog);
}

const load1 = loadavg();
const rps = (a: Acc) => (a.n / a.elapsed) * 1000;
const rows: string[] = [];
for (const face of FACES) {
  const base = results.get(`1+1|${face}`);
  for (const mode of MODES) {
    const a = results.get(`${mode}|${face}`);
    if (!a) continue;
    const procs = Object.entries(a.cpu).filter(([k, v]) => v > 0 && !(k === 'runner' && mode !== 'start'));
    const perReq = procs.map(([k, v]) => `${k} ${(v / a.n).toFixed(3)}`).join(', ');
    const sum = procs.reduce((s, [, v]) => s + v, 0) / a.n;
    // Cores the listed processes used vs. the whole machine: on a shared machine the scheduler splits the
    // cores among every runnable process, so a stack with more processes can get a larger share.
    const cores = `${((sum * a.n) / a.elapsed).toFixed(2)} / ${((a.machineBusy / a.machineTotal) * availableParallelism()).toFixed(2)}`;
    rows.push(
      `| ${FACE_LABEL[face]} | ${mode} | ${rps(a).toFixed(0)}${base && base !== a ? ` (${(rps(a) / rps(base)).toFixed(2)}×)` : ''} | ${ms(pct(a.satLat, 50))} / ${ms(pct(a.satLat, 99))} | ${ms(pct(a.lat, 50))} / ${ms(pct(a.lat, 99))} | ${perReq} | ${sum.toFixed(3)} | ${cores} |`,
    );
  }
}
console.log(`\nScale out: ${MODES.join(' vs ')}, one stack after the other; ${ROUNDS} rounds per face on each; ${availableParallelism()} cores\n`);
console.log(`| face | mode | req/s at ${CONC} in flight | p50 / p99 at ${CONC} | p50 / p99 at ${LAT_CONC} in flight | CPU ms per request at ${CONC} in flight, by process | sum | cores busy: these processes / machine |`);
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
console.log('');
const incomplete = [...results.values()].reduce((s, a) => s + a.stoppedByTime, 0);
if (incomplete) console.log(`${incomplete} phases stopped by the ${ROUND_MS} ms limit before their count`);
for (const n of notes) console.log(n);
console.log(`load average (1/5/15 min): start ${load0.map((x) => x.toFixed(2)).join(' / ')}, end ${load1.map((x) => x.toFixed(2)).join(' / ')}; whole run ${((performance.now() - started) / 1000).toFixed(0)} s`);
