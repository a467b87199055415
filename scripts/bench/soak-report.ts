import { writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { pct } from './measure.ts';
import type { FaceStats } from './soak-load.ts';
import { floorOf, halfSlope, RIG, samples, shared } from './soak-samples.ts';
import { FACES, type Face, FULL_GC, MAX_FD_GROWTH, MAX_HEAP_GROWTH, MAX_SLOPE, MB, MINUTES, SAMPLE_S, SAT_CONC } from './soak-settings.ts';

// The soak's report and verdict, printed after the stack has stopped: saturation and rates, the
// requests per face, latency per minute, and per process the memory / fd table judged flat or not.
// Apart from soak.ts so the run reads as set-up → load → samples, and the rule is in one place.

/** What the run measured, handed over once it has ended. */
export type SoakResult = {
  started: number;
  load0: number[];
  soakStats: Record<Face, FaceStats>;
  rates: Record<Face, number>;
  sat: Record<Face, { n: number; rps: number; stats: FaceStats }> | undefined;
  soakMs: number;
  loadDuring: number[];
  notes: string[];
};

/** Prints the report and sets the exit code: 0 when every process of the stack is flat and no request failed. */
export function report({ started, load0, soakStats, rates, sat, soakMs, loadDuring, notes }: SoakResult): void {
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
}
