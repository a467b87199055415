import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { childEnvironment } from './config.ts';

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the program could not be started at all (e.g. ENOENT). */
  spawnError?: Error;
}

/** Keep only the end of stderr: the last lines say why a program failed, and memory stays bounded. */
const STDERR_TAIL_BYTES = 4096;

// Every process the engine has started for a request and not yet reaped (idle warm processes join when a
// request takes them, see warm-pool.ts). Exposed through activeChildProcesses() so that tests can prove
// nothing outlives a request, and so a shutdown hook can kill what is left.
const active = new Set<ChildProcess>();

export interface ChildOptions {
  /** Output pipes beyond stdout, as fds 3, 4, …; see {@link ManagedChild.output}. */
  extraOutputs?: number;
  /** Started ahead of a request by the warm pool: counted as active only once {@link ManagedChild.adopt}ed. */
  idle?: boolean;
  /**
   * Standard input read straight from another child's stdout (an OS pipe between the two programs: no
   * byte of it passes through this process), or nothing ('ignore') when that child could not be started.
   */
  stdin?: Readable | 'ignore';
}

export function activeChildProcesses(): ChildProcess[] {
  return [...active];
}

/**
 * A child process with its exit captured as a promise and stderr reduced to a tail. Started with an argv
 * array (never a shell) and a minimal environment: espeak-ng and ffmpeg need nothing from ours, and our
 * environment may hold upstream API keys.
 */
export class ManagedChild {
  readonly proc: ChildProcess;
  readonly exited: Promise<ChildExit>;
  private stderrTail = '';

  constructor(
    readonly label: string,
    command: string,
    args: readonly string[],
    options: ChildOptions = {},
  ) {
    const extra = Array.from({ length: options.extraOutputs ?? 0 }, () => 'pipe' as const);
    this.proc = spawn(command, args, { stdio: [options.stdin ?? 'pipe', 'pipe', 'pipe', ...extra], env: ManagedChild.environment(), shell: false });
    const proc = this.proc;
    if (!options.idle) active.add(proc);
    // A pipe to a dead process reports EPIPE/ECONNRESET; the exit status says what happened, so these
    // errors are expected and must not surface as unhandled 'error' events.
    for (const stream of proc.stdio) stream?.on('error', () => {});
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (text: string) => {
      this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_BYTES);
    });
    this.exited = new Promise<ChildExit>((resolve) => {
      let spawnError: Error | undefined;
      proc.once('error', (err) => {
        spawnError = err;
        // A process that never started emits no 'close' on every Node version; settle here as well.
        if (proc.pid === undefined) {
          active.delete(proc);
          resolve({ code: null, signal: null, spawnError: err });
        }
      });
      // 'close' (not 'exit') so that stderr is complete when the status is read.
      proc.once('close', (code, signal) => {
        active.delete(proc);
        resolve({ code, signal, ...(spawnError ? { spawnError } : {}) });
      });
    });
  }

  /** The environment every child gets (a minimal one, see above; config.ts childEnvironment). */
  static environment(): NodeJS.ProcessEnv {
    return childEnvironment();
  }

  /** True once the warm pool handed this process, started ahead of time, to a request. */
  warm = false;

  /** A warm process handed to a request: from now on it counts as the request's (see activeChildProcesses). */
  adopt(): void {
    this.warm = true;
    if (this.proc.exitCode === null && this.proc.signalCode === null) active.add(this.proc);
  }

  /** Extra output pipe `fd` (3, 4, …) asked for with `extraOutputs`. */
  output(fd: number): Readable {
    return this.proc.stdio[fd] as Readable;
  }

  // stdio is 'pipe' (stdin unless given), so Node always creates these streams (even when the spawn fails).
  /** Undefined when stdin was given at start (see {@link ChildOptions.stdin}). */
  get stdin(): Writable | undefined {
    return this.proc.stdin ?? undefined;
  }

  get stdout(): Readable {
    return this.proc.stdout!;
  }

  get running(): boolean {
    return this.proc.pid !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** SIGKILL: both programs hold no state worth flushing once the request is gone. */
  kill(): void {
    if (this.running) this.proc.kill('SIGKILL');
  }

  /** The last few stderr lines, on one line, for an error message. */
  stderrSummary(maxChars = 600): string {
    const lines = this.stderrTail
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
    const summary = lines.slice(-5).join(' | ');
    return summary.length > maxChars ? '…' + summary.slice(-maxChars) : summary;
  }

  describeExit(exit: ChildExit): string {
    if (exit.spawnError) return `${this.label} could not be started (${exit.spawnError.message})`;
    if (exit.signal) return `${this.label} was killed by ${exit.signal}`;
    return `${this.label} exited with code ${exit.code}`;
  }
}
