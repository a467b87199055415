import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { z } from 'zod';
import { SPEECH_CATALOG } from '@gatehouse/contracts';
import { busRequest, busStream, type Bus } from '@gatehouse/common';
import { ffmpegArgs } from '../../services/speech-worker/src/engine/encoder.ts';
import { espeakArgs } from '../../services/speech-worker/src/engine/espeak.ts';
import { enforcedState, flipGate, openState } from '../src/gate-ops.ts';
import { newKey, type Proc, spawnService, Stack } from '../../tests/support/local-stack.ts';
import { cpuMs, ms, pct, pp } from './measure.ts';

/**
 * Speech face benchmark. Every figure stands beside its baseline measured in the same run:
 *   1. 200-character synthesis (mp3): time to first byte and total, interleaved in one loop, through
 *      - the stack (HTTP → edge → NATS → worker → espeak-ng | ffmpeg) with its warm pool (the default),
 *      - the same stack with SPEECH_WARM_PROCESSES=0 (a process spawned per request, no pool),
 *      - the bus straight to the pooled worker (no HTTP, no edge),
 *      - espeak-ng | ffmpeg spawned directly per request ("direct, cold": the historical baseline),
 *      - espeak-ng | ffmpeg started ahead and fed then ("direct, warm": the same head start the pool
 *        gives the stack, so stack − direct warm is the stack's own cost),
 *      - with BENCH_SPEECH_BEFORE=<checkout>, the same warm-pool worker + edge started from another
 *        checkout (e.g. a worktree of main), in a namespace of its own: before/after in the same loop;
 *      both direct paths join the two programs with an OS pipe (`espeak-ng | ffmpeg`, as a shell does)
 *      and read ffmpeg's output, the least work a synthesis can be;
 *      every answer is checked against the direct one (same bytes), and a flac answer through the
 *      stack must carry its length (ffprobe);
 *   2. GET /v1/models through the edge with the gate enforced vs. open, and vs. the same bus
 *      request sent straight to the worker (no HTTP, no gate);
 *   3. gate flip propagation: flipGate (what scripts/gate enforce|open does after start-up)
 *      until every live edge (two) reports the revision applied.
 * Loopback only; every loop is bounded by count.
 */
const N_SYNTH = Number(process.env.BENCH_SYNTH_RUNS ?? 100);
const N_MODELS = Number(process.env.BENCH_MODELS_RUNS ?? 1000);
const N_FLIPS = Number(process.env.BENCH_FLIPS ?? 100);
/** Quiet time before every measured synthesis: the pool's refill (and direct-warm's start) happen here, off the clock. */
const GAP_MS = Number(process.env.BENCH_SYNTH_GAP_MS ?? 250);
const BEFORE = process.env.BENCH_SPEECH_BEFORE;
const TEXT =
  'The quick brown fox jumps over the lazy dog while the morning sun climbs slowly above the hills, ' +
  'and a gentle wind carries the smell of fresh bread from the village bakery down to the river below.';
const sleep = (msec: number) => new Promise((resolve) => setTimeout(resolve, msec));

interface Timing {
  ttfb: number;
  total: number;
  bytes: Buffer;
}

/** espeak-ng | ffmpeg with the engine's own argv (alloy = en-us+m3, speed 1 = 175 wpm), joined by an OS pipe. */
function startDirect() {
  const espeak = spawn('espeak-ng', espeakArgs('en-us+m3', 175), { stdio: ['pipe', 'pipe', 'ignore'] });
  const ffmpeg = spawn('ffmpeg', ffmpegArgs('mp3', []), { stdio: [espeak.stdout, 'pipe', 'ignore'] });
  espeak.stdout.destroy(); // ffmpeg holds the read end
  return { espeak, ffmpeg };
}

/**
 * Direct synthesis: cold (spawned once the clock runs) or on `warm` processes started earlier (the loop
 * starts them when the pool starts its own: right after the previous request through the stack).
 */
async function direct(warm?: ReturnType<typeof startDirect>): Promise<Timing> {
  await sleep(GAP_MS);
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const { espeak, ffmpeg } = warm ?? startDirect();
    let ttfb = 0;
    const out: Buffer[] = [];
    ffmpeg.stdout.on('data', (d: Buffer) => {
      ttfb ||= performance.now() - t0;
      out.push(d);
    });
    ffmpeg.on('exit', (code) => (code === 0 ? resolve({ ttfb, total: performance.now() - t0, bytes: Buffer.concat(out) }) : reject(new Error(`ffmpeg ${code}`))));
    espeak.stdin.end(TEXT);
  });
}

function http(url: string, path: string, opts: { method?: string; body?: string; key?: string } = {}): Promise<{ ttfb: number; total: number; status: number; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const t0 = performance.now();
    let ttfb = 0;
    const headers: Record<string, string> = {};
    if (opts.body) headers['content-type'] = 'application/json';
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    const req = request({ host: u.hostname, port: u.port, path, method: opts.method ?? 'GET', headers, agent: keepAlive }, (res) => {
      const out: Buffer[] = [];
      res.on('data', (d: Buffer) => {
        ttfb ||= performance.now() - t0;
        out.push(d);
      });
      res.on('end', () => resolve({ ttfb, total: performance.now() - t0, status: res.statusCode ?? 0, bytes: Buffer.concat(out) }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}
import { Agent } from 'node:http';
import { startEdgeFrom, startFrom, untilServing } from './before.ts';
const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });

const rows: string[][] = [];
const row = (...c: string[]) => rows.push(c);

/** The same request as a bus stream straight to the worker (no HTTP, no edge). */
async function viaBus(bus: Bus, body: z.input<typeof SPEECH_CATALOG.synthesize.request>): Promise<Timing> {
  await sleep(GAP_MS);
  const t0 = performance.now();
  let ttfb = 0;
  const out: Buffer[] = [];
  for await (const f of busStream(bus, SPEECH_CATALOG.synthesize, body)) {
    if (f.kind !== 'chunk') continue;
    ttfb ||= performance.now() - t0;
    out.push(Buffer.from(f.data));
  }
  return { ttfb, total: performance.now() - t0, bytes: Buffer.concat(out) };
}

/** CPU ms the given processes spent inside measured windows, summed (Linux /proc, 10 ms ticks). */
class CpuWindows {
  readonly spent: number[];
  constructor(readonly pids: (number | undefined)[]) {
    this.spent = pids.map(() => 0);
  }
  async around<T>(fn: () => Promise<T>): Promise<T> {
    const before = this.pids.map(cpuMs);
    const result = await fn();
    this.pids.forEach((pid, i) => (this.spent[i]! += cpuMs(pid) - before[i]!));
    return result;
  }
}

async function viaHttp(url: string, body: string, cpu?: CpuWindows): Promise<Timing> {
  await sleep(GAP_MS);
  const send = () => http(url, '/v1/audio/speech', { method: 'POST', body });
  const r = await (cpu ? cpu.around(send) : send());
  if (r.status !== 200) throw new Error(`synthesis answered ${r.status}: ${r.bytes.toString().slice(0, 200)}`);
  return r;
}

/** CPU time (user + system) of a process's reaped children so far, in ms (/proc cutime + cstime). */
function childrenCpuMs(pid: number | undefined): number {
  if (!pid) return NaN;
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/** ffprobe's view of a file's length (N/A when the container does not say). */
function probedSeconds(audio: Buffer, ext: string): number {
  const dir = mkdtempSync(join(tmpdir(), 'bench-speech-'));
  try {
    writeFileSync(join(dir, `a.${ext}`), audio);
    const out = execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', join(dir, `a.${ext}`)]).toString().trim();
    return Number(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const stack = new Stack();
const coldStack = new Stack();
const beforeStack = new Stack();
const beforeProcs: Proc[] = [];
try {
  await stack.startWorker();
  const edges = [await stack.startEdge({ LOG_LEVEL: 'warn' }), await stack.startEdge({ LOG_LEVEL: 'warn' })];
  const edge = edges[0]!;
  const bus = await stack.busHandle();
  const store = await stack.store();
  // "Before": the same worker with the pool off, in a namespace of its own.
  const coldWorker = spawnService('speech-worker', 'services/speech-worker/src/main.ts', coldStack.env({ SPEECH_WARM_PROCESSES: '0' }));
  coldStack.workers.push(coldWorker);
  for (let i = 0; i < 400 && !coldWorker.log().includes('speech worker serving'); i++) await sleep(50);
  const coldEdge = await coldStack.startEdge({ LOG_LEVEL: 'warn' });
  // "Before" of a change: the same worker and edge from another checkout, same environment, a namespace of their own.
  let beforeUrl: string | undefined;
  let beforeBus: Bus | undefined;
  const beforePids: (number | undefined)[] = [];
  if (BEFORE) {
    const start = (name: string, entry: string, env: Record<string, string | undefined>) => startFrom(BEFORE, name, entry, beforeStack.env(env), beforeProcs);
    const w = start('speech-worker (before)', 'services/speech-worker/src/main.ts', {});
    const before = await startEdgeFrom(BEFORE, 'edge (before)', 'speech', beforeStack.env({
      LOG_LEVEL: 'warn',
      REDIS_URL: process.env.REDIS_URL,
      WEBUI_SECRET_KEY_FILE: join(tmpdir(), `gatehouse-${beforeStack.ns}-webui-secret-key`),
    }), beforeProcs);
    const e = before.edge;
    beforeUrl = before.url;
    await untilServing([[w, 'speech worker serving']], e, `${beforeUrl}/health`);
    beforePids.push(e.child.pid, w.child.pid);
    beforeBus = await beforeStack.busHandle();
  }
  const request = { model: 'tts-1', voice: 'alloy', input: TEXT, response_format: 'mp3' as const };
  const body = JSON.stringify(request);

  // Warm up every path (JIT, page cache, worker start, the pool's first refills).
  for (let i = 0; i < 5; i++) {
    await direct();
    await direct(startDirect());
    await viaHttp(coldEdge.url, body);
    await viaBus(bus, request);
    await viaHttp(edge.url, body);
    if (beforeUrl && beforeBus) {
      await viaBus(beforeBus, request);
      await viaHttp(beforeUrl, body);
    }
  }
  const flac = await http(edge.url, '/v1/audio/speech', { method: 'POST', body: JSON.stringify({ ...request, response_format: 'flac' }) });
  const flacSeconds = probedSeconds(flac.bytes, 'flac');
  if (flac.status !== 200 || !(flacSeconds > 5 && flacSeconds < 20)) throw new Error(`flac through the stack: ${flac.status}, ffprobe duration ${flacSeconds}`);

  // 1. Synthesis, interleaved so every path sees the same machine load; each after the same quiet gap.
  const paths = {
    directCold: [] as Timing[],
    cold: [] as Timing[],
    directWarm: [] as Timing[],
    bus: [] as Timing[],
    stack: [] as Timing[],
    ...(beforeUrl ? { busBefore: [] as Timing[], before: [] as Timing[] } : {}),
  } as Record<'directCold' | 'cold' | 'directWarm' | 'bus' | 'stack', Timing[]> & { busBefore?: Timing[]; before?: Timing[] };
  const loadBefore = loadavg();
  // CPU of edge and worker counted only while a request of theirs runs: over a whole round, their idle
  // timers and GC would be charged to the request. espeak-ng/ffmpeg: the worker's reaped children, per request.
  const cpuPool = new CpuWindows([edge.proc.child.pid, stack.workers[0]!.child.pid]);
  const cpuCold = new CpuWindows([coldEdge.proc.child.pid, coldWorker.child.pid]);
  const cpuBefore = new CpuWindows(beforePids);
  const childrenBefore = [childrenCpuMs(stack.workers[0]!.child.pid), childrenCpuMs(coldWorker.child.pid)];
  // Whole-loop CPU of the pooled workers (after, before): everything they did for their requests,
  // replacements started after a request's window included; each serves 2 requests per round.
  const loopPids = [stack.workers[0]!.child.pid, ...(beforePids.length ? [beforePids[1]] : [])];
  const loopCpuBefore = loopPids.map(cpuMs);
  let warm = startDirect();
  for (let i = 0; i < N_SYNTH; i++) {
    paths.directCold.push(await direct());
    paths.cold.push(await viaHttp(coldEdge.url, body, cpuCold));
    paths.directWarm.push(await direct(warm));
    if (beforeBus && paths.before && paths.busBefore) {
      // Before and after mirrored each round (bus A, bus B, stack A, stack B, then B first), so each
      // stack request follows its own worker's previous request (and refill) by the same distance.
      const a = [async () => paths.bus.push(await viaBus(bus, request)), async () => paths.stack.push(await viaHttp(edge.url, body, cpuPool))];
      const b = [async () => paths.busBefore!.push(await viaBus(beforeBus, request)), async () => paths.before!.push(await viaHttp(beforeUrl!, body, cpuBefore))];
      const [x, y] = i % 2 ? [b, a] : [a, b];
      for (const step of [x[0]!, y[0]!, x[1]!, y[1]!]) await step();
    } else {
      paths.bus.push(await viaBus(bus, request));
      paths.stack.push(await viaHttp(edge.url, body, cpuPool));
    }
    warm = startDirect();
    const expected = paths.directCold[i]!.bytes;
    for (const [name, xs] of Object.entries(paths)) {
      if (!xs[i]!.bytes.equals(expected)) throw new Error(`run ${i}: ${name} answered ${xs[i]!.bytes.length} bytes, not the ${expected.length} of espeak-ng | ffmpeg`);
    }
  }
  warm.espeak.kill();
  warm.ffmpeg.kill();
  const loadAfter = loadavg();
  const children = [childrenCpuMs(stack.workers[0]!.child.pid), childrenCpuMs(coldWorker.child.pid)].map((x, i) => (x - childrenBefore[i]!) / N_SYNTH);
  const per = (x: number) => `${(x / N_SYNTH).toFixed(2)} ms`;
  const loopCpu = loopPids.map((pid, i) => (cpuMs(pid) - loopCpuBefore[i]!) / (2 * N_SYNTH));
  console.error(`worker CPU per request over the whole loop (bus and stack requests, replacements included): after ${loopCpu[0]!.toFixed(1)} ms${loopCpu.length > 1 ? `, before ${loopCpu[1]!.toFixed(1)} ms` : ''}`);
  const perRequest = [
    `pool: edge ${per(cpuPool.spent[0]!)}, worker ${per(cpuPool.spent[1]!)}, espeak-ng + ffmpeg ${(children[0]! / 2).toFixed(1)} ms`,
    `pool off: edge ${per(cpuCold.spent[0]!)}, worker ${per(cpuCold.spent[1]!)}, espeak-ng + ffmpeg ${children[1]!.toFixed(1)} ms`,
    ...(beforeUrl ? [`before (${BEFORE}): edge ${per(cpuBefore.spent[0]!)}, worker ${per(cpuBefore.spent[1]!)}`] : []),
  ];
  console.error(`CPU per synthesis: ${perRequest.join('; ')}`);
  const compare = (label: string, a: Timing[], b: Timing[], note: string) => {
    for (const [what, pick] of [['TTFB', (x: Timing) => x.ttfb], ['total', (x: Timing) => x.total]] as const) {
      const s = a.map(pick);
      const d = b.map(pick);
      // Overhead as the median of paired differences (each run minus its partner of the same round):
      // process start-up noise on a 2-core machine swamps a difference of medians.
      const diffs = s.map((x, i) => x - d[i]!);
      row(`${label}, ${what}`, pp(s), pp(d), ms(pct(diffs, 50)), `n=${N_SYNTH} paired; ${note}`);
    }
  };
  compare('speech 200 chars mp3 (warm pool)', paths.stack, paths.directCold, 'baseline: espeak-ng → ffmpeg spawned directly');
  compare('… pool off (SPEECH_WARM_PROCESSES=0, before)', paths.cold, paths.directCold, 'baseline: espeak-ng → ffmpeg spawned directly');
  compare('… warm pool vs. direct, warm', paths.stack, paths.directWarm, 'baseline: espeak-ng → ffmpeg started when the pool starts its own, then fed');
  compare('… bus → worker share (no HTTP/edge)', paths.bus, paths.directWarm, 'baseline: direct, warm');
  compare('… edge share (HTTP + edge)', paths.stack, paths.bus, 'baseline: the bus stream above');
  if (paths.before) {
    compare('… before (BENCH_SPEECH_BEFORE), warm pool vs. direct, warm', paths.before, paths.directWarm, 'baseline: direct, warm');
    compare('… before, bus → worker share', paths.busBefore!, paths.directWarm, 'baseline: direct, warm');
    compare('… after vs. before, bus → worker (paired)', paths.bus, paths.busBefore!, `baseline: ${BEFORE}`);
    compare('… after vs. before, warm pool through the stack (paired)', paths.stack, paths.before, `baseline: ${BEFORE}`);
  }
  row('flac through the stack, ffprobe duration', `${flacSeconds.toFixed(3)} s`, '-', '-', `${flac.bytes.length} bytes; STREAMINFO carries total samples and MD5`);
  console.error(`load average before/after the synthesis loop: ${loadBefore.map((x) => x.toFixed(2)).join(' ')} / ${loadAfter.map((x) => x.toFixed(2)).join(' ')}`);

  // 2. Gate overhead on GET /v1/models: open vs enforced, and the bus request alone.
  const key = newKey();
  const sample = async (fn: () => Promise<number>) => {
    for (let i = 0; i < 50; i++) await fn();
    const xs: number[] = [];
    for (let i = 0; i < N_MODELS; i++) xs.push(await fn());
    return xs;
  };
  const busOnly = await sample(async () => {
    const t0 = performance.now();
    await busRequest(bus, SPEECH_CATALOG.listModels, {});
    return performance.now() - t0;
  });
  await flipGate(store, 'speech', openState('bench'));
  const open = await sample(async () => (await http(edge.url, '/v1/models')).total);
  await flipGate(store, 'speech', enforcedState([key], 'bench'));
  const enforced = await sample(async () => {
    const r = await http(edge.url, '/v1/models', { key });
    if (r.status !== 200) throw new Error(`enforced /v1/models answered ${r.status}`);
    return r.total;
  });
  const refused = await sample(async () => (await http(edge.url, '/v1/models')).total);
  row('GET /v1/models, gate enforced (right key)', `${ms(pct(enforced, 50))} / ${ms(pct(enforced, 99))}`, `${ms(pct(open, 50))} / ${ms(pct(open, 99))}`, ms(pct(enforced, 50) - pct(open, 50)), `n=${N_MODELS}, baseline: gate open`);
  row('GET /v1/models, gate open (HTTP + edge)', `${ms(pct(open, 50))} / ${ms(pct(open, 99))}`, `${ms(pct(busOnly, 50))} / ${ms(pct(busOnly, 99))}`, ms(pct(open, 50) - pct(busOnly, 50)), `n=${N_MODELS}, baseline: bus request to the worker`);
  row('GET /v1/models refused (401, no key)', `${ms(pct(refused, 50))} / ${ms(pct(refused, 99))}`, `${ms(pct(open, 50))} / ${ms(pct(open, 99))}`, ms(pct(refused, 50) - pct(open, 50)), `n=${N_MODELS}, never reaches the bus`);

  // 3. Flip propagation to every live edge.
  const flips: number[] = [];
  for (let i = 0; i < N_FLIPS; i++) {
    const state = i % 2 ? openState('bench') : enforcedState([key], 'bench');
    const t0 = performance.now();
    const r = await flipGate(store, 'speech', state);
    flips.push(performance.now() - t0);
    if (r.lagging.length || r.applied.length !== edges.length) throw new Error(`flip ${i}: applied ${r.applied.length}, lagging ${r.lagging.join(',')}`);
  }
  row('gate flip → all 2 edges applied', `${ms(pct(flips, 50))} / ${ms(pct(flips, 99))}`, '-', '-', `n=${N_FLIPS}, target p99 < 100 ms`);
} finally {
  await Promise.all(beforeProcs.map((p) => p.stop()));
  await stack.close();
  await coldStack.close();
  await beforeStack.close();
}

const header = ['measurement', 'p50 / p99', 'baseline p50 / p99', 'overhead p50', 'notes'];
const table = [header, header.map(() => '---'), ...rows];
console.log(table.map((r) => `| ${r.join(' | ')} |`).join('\n'));
