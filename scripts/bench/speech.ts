import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { SPEECH_CATALOG } from '@gatehouse/contracts';
import { busRequest } from '@gatehouse/common';
import { enforcedState, flipGate, openState } from '../src/gate-ops.ts';
import { newKey, Stack } from '../src/local-stack.ts';
import { ms, pct } from './measure.ts';

/**
 * Speech face benchmark. Every figure stands beside its baseline measured in the same run:
 *   1. 200-character synthesis (mp3): time to first byte and total, through the stack
 *      (HTTP → edge → NATS → worker → espeak-ng | ffmpeg) vs. espeak-ng | ffmpeg spawned directly;
 *   2. GET /v1/models through the edge with the gate enforced vs. open, and vs. the same bus
 *      request sent straight to the worker (no HTTP, no gate);
 *   3. gate flip propagation: flipGate (what scripts/gate enforce|open does after start-up)
 *      until every live edge (two) reports the revision applied.
 * Loopback only; every loop is bounded by count.
 */
const N_SYNTH = Number(process.env.BENCH_SYNTH_RUNS ?? 100);
const N_MODELS = Number(process.env.BENCH_MODELS_RUNS ?? 1000);
const N_FLIPS = Number(process.env.BENCH_FLIPS ?? 100);
const TEXT =
  'The quick brown fox jumps over the lazy dog while the morning sun climbs slowly above the hills, ' +
  'and a gentle wind carries the smell of fresh bread from the village bakery down to the river below.';


/** espeak-ng | ffmpeg exactly as the engine runs them (same voice, rate and encoder arguments). */
function direct(): Promise<{ ttfb: number; total: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let ttfb = 0;
    const espeak = spawn('espeak-ng', ['--stdout', '-v', 'en-us+m3', '-s', '175'], { stdio: ['pipe', 'pipe', 'ignore'] });
    const ffmpeg = spawn(
      'ffmpeg',
      ['-hide_banner', '-loglevel', 'error', '-f', 's16le', '-ar', '22050', '-ac', '1', '-i', 'pipe:0', '-ar', '24000', '-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3', '-flush_packets', '1', 'pipe:1'],
      { stdio: ['pipe', 'pipe', 'ignore'] },
    );
    let skipped = 0;
    espeak.stdout.on('data', (d: Buffer) => {
      // espeak's WAV header (44 bytes) is dropped, as the engine does.
      if (skipped < 44) {
        const cut = Math.min(44 - skipped, d.length);
        skipped += cut;
        d = d.subarray(cut);
      }
      if (d.length) ffmpeg.stdin.write(d);
    });
    espeak.stdout.on('end', () => ffmpeg.stdin.end());
    ffmpeg.stdout.on('data', () => (ttfb ||= performance.now() - t0));
    ffmpeg.on('exit', (code) => (code === 0 ? resolve({ ttfb, total: performance.now() - t0 }) : reject(new Error(`ffmpeg ${code}`))));
    espeak.stdin.end(TEXT);
  });
}

function http(url: string, path: string, opts: { method?: string; body?: string; key?: string } = {}): Promise<{ ttfb: number; total: number; status: number }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const t0 = performance.now();
    let ttfb = 0;
    const headers: Record<string, string> = {};
    if (opts.body) headers['content-type'] = 'application/json';
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    const req = request({ host: u.hostname, port: u.port, path, method: opts.method ?? 'GET', headers, agent: keepAlive }, (res) => {
      res.on('data', () => (ttfb ||= performance.now() - t0));
      res.on('end', () => resolve({ ttfb, total: performance.now() - t0, status: res.statusCode ?? 0 }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}
import { Agent } from 'node:http';
const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });

const rows: string[][] = [];
const row = (...c: string[]) => rows.push(c);

const stack = new Stack();
try {
  await stack.startWorker();
  const edges = [await stack.startEdge({ LOG_LEVEL: 'warn' }), await stack.startEdge({ LOG_LEVEL: 'warn' })];
  const edge = edges[0]!;
  const bus = await stack.busHandle();
  const store = await stack.store();
  const body = JSON.stringify({ model: 'tts-1', voice: 'alloy', input: TEXT, response_format: 'mp3' });

  // Warm up both paths (JIT, page cache, worker start).
  for (let i = 0; i < 5; i++) {
    await direct();
    await http(edge.url, '/v1/audio/speech', { method: 'POST', body });
  }

  // 1. Synthesis, interleaved so both paths see the same machine load.
  const viaStack: { ttfb: number; total: number }[] = [];
  const viaDirect: { ttfb: number; total: number }[] = [];
  for (let i = 0; i < N_SYNTH; i++) {
    viaDirect.push(await direct());
    const r = await http(edge.url, '/v1/audio/speech', { method: 'POST', body });
    if (r.status !== 200) throw new Error(`synthesis answered ${r.status}`);
    viaStack.push(r);
  }
  for (const [label, pick] of [['TTFB', (x: { ttfb: number }) => x.ttfb], ['total', (x: { total: number }) => x.total]] as const) {
    const s = viaStack.map(pick);
    const d = viaDirect.map(pick);
    // Overhead as the median of paired differences (each stack run minus the direct run just
    // before it): process start-up noise on a 2-core machine swamps a difference of medians.
    const diffs = s.map((x, i) => x - d[i]!);
    row(`speech 200 chars mp3, ${label}`, `${ms(pct(s, 50))} / ${ms(pct(s, 99))}`, `${ms(pct(d, 50))} / ${ms(pct(d, 99))}`, ms(pct(diffs, 50)), `n=${N_SYNTH} paired, baseline: espeak-ng → ffmpeg spawned directly`);
  }

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
  await stack.close();
}

const header = ['measurement', 'p50 / p99', 'baseline p50 / p99', 'overhead p50', 'notes'];
const table = [header, header.map(() => '---'), ...rows];
console.log(table.map((r) => `| ${r.join(' | ')} |`).join('\n'));
