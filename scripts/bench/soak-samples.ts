import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { MB } from './soak-settings.ts';
import { childrenOf } from './topology.ts';

// The soak's memory / fd samples (one series per process, filled by soak.ts's sampler), the /proc
// and /metrics readers they come from, the statistics the verdict is made of (floor, slope) and the
// full collection taken before an idle sample. Apart from soak.ts: what a sample is and how it is
// judged, with no load or stack in it.

export interface Sample {
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
export const samples = new Map<string, Sample[]>();
export const shared = new Set<string>();
/** The benchmark's own processes: shown, not judged (the client keeps every latency). */
export const RIG = new Set(['fake OpenAI upstream', 'soak client (this process)']);
/** The stack's Postgres backends, summed: private memory (RssAnon), fds, how many (the pools open and close them). */
export const BACKENDS = 'postgres backends of the stack †';
export const addSample = (name: string, s: Sample) => (samples.get(name) ?? samples.set(name, []).get(name)!).push(s);

/** One `name value` of a Prometheus text answer (unlabelled but for the default `service` label). */
export const metric = (text: string, name: string): number | undefined => {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
};
export const status = (pid: number): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const l of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = /^(VmRSS|RssAnon|RssFile|RssShmem):\s+(\d+) kB/.exec(l);
    if (m) out[m[1]!] = Number(m[2]) * 1024;
  }
  return out;
};
export const fdCount = (pid: number): number | undefined => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
};
/** Every descendant of `pid` (the speech worker's espeak-ng and ffmpeg processes). */
export const descendants = (pid: number): number[] => {
  const out: number[] = [];
  const todo = [pid];
  for (let k = 0; todo.length && k < 1000; k++) for (const c of childrenOf(todo.pop()!)) out.push(c), todo.push(c);
  return out;
};

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
export const halfSlope = (ss: Sample[], pick: (s: Sample) => number | undefined, half: number): number => {
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
export const floorOf = (ss: Sample[], pick: (s: Sample) => number | undefined, windowMs: number): Sample[] => {
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
export async function fullGc(pid: number, dir: string): Promise<boolean> {
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
