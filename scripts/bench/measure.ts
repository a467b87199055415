import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Measurement helpers shared by the benchmarks (percentiles, CPU accounting, a quiet machine). */

/** Nearest-rank percentile; NaN for no samples. */
export const pct = (xs: number[], p: number): number => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
export const ms = (x: number) => `${x.toFixed(2)} ms`;
/** `p50 / p99` of a sample, in ms. */
export const pp = (xs: number[]) => `${ms(pct(xs, 50))} / ${ms(pct(xs, 99))}`;

/** CPU time (user + system) of a process so far, in ms; Linux /proc, 100 ticks per second. */
export function cpuMs(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return NaN;
  }
}

/** Busy and total CPU time of the whole machine so far, in ticks (/proc/stat: idle and iowait are not busy). */
export function machineTicks(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - f[3]! - f[4]!, total };
}

/** The pid of a process by its command name (`nats-server`, `postgres`), if one runs. */
export function findPid(comm: string): number | undefined {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() === comm) return Number(d);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/**
 * The machine is shared (other people's builds and tests): before a measured phase, wait up to
 * `limitMs` for half a second in which it is nearly idle. Proceeds either way, and says so.
 */
export async function waitQuiet(label: string, limitMs: number, say: (s: string) => void = (s) => console.error(`[bench] ${s}`)): Promise<void> {
  const deadline = performance.now() + limitMs;
  while (performance.now() < deadline) {
    const a = machineTicks();
    await new Promise((r) => setTimeout(r, 500));
    const b = machineTicks();
    if (((b.busy - a.busy) / (b.total - a.total)) * availableParallelism() < 0.25) return;
  }
  say(`${label}: the machine stayed busy for ${limitMs} ms; measuring anyway`);
}

/**
 * The Postgres backends serving a client process: its TCP sockets (/proc/<pid>/fd → socket inodes →
 * /proc/net/tcp{,6}) whose remote port is `pgPort`, matched to `pg_stat_activity.client_port`.
 * Returns the backends' pids (so their CPU can be read from /proc: same machine).
 */
export async function pgBackendsOf(pid: number, query: (ports: number[]) => Promise<number[]>, pgPort = 5432): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const row of text.split('\n').slice(1)) {
      const f = row.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9]!)) continue;
      const local = parseInt(f[1]!.split(':')[1]!, 16);
      const remote = parseInt(f[2]!.split(':')[1]!, 16);
      if (remote === pgPort) ports.push(local);
    }
  }
  return ports.length ? query(ports) : [];
}
