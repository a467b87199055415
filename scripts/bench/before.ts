import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Proc } from '../src/local-stack.ts';

/**
 * One service of another checkout (`dir`, e.g. a worktree of main) for a benchmark's before arm
 * (`BENCH_…_BEFORE`): `node --import tsx <dir>/<entry>` in `dir` with exactly `env` (plus PATH and
 * HOME; LOG_LEVEL info unless `env` says otherwise), a CPU profile in BENCH_CPU_PROF_DIR/<name> when
 * that is set. The process goes into `procs`, which the caller stops.
 */
export function startFrom(dir: string, name: string, entry: string, env: Record<string, string | undefined>, procs: Proc[]): Proc {
  const prof = process.env.BENCH_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_CPU_PROF_DIR, name)}`] : [];
  const child = spawn(process.execPath, [...prof, '--import', 'tsx', join(dir, entry)], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const p = new Proc(name, child);
  procs.push(p);
  return p;
}
