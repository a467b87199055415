import { readFileSync } from 'node:fs';
import { ManagedChild, type ChildOptions } from './child.ts';

/**
 * Starting espeak-ng and ffmpeg is most of a short request's time: exec, dynamic linking (ffmpeg maps
 * dozens of codec libraries) and espeak's phoneme data take ~40–300 ms on a busy 2-core machine, while a
 * started process waiting on its stdin answers its first bytes in a few ms. The pool keeps such started
 * processes, one command line (argv + environment) per entry, and hands them out instead of spawning.
 *
 * - Off the request path: replacements are started after the request that took a process has finished
 *   (refill), so their start-up never competes with that request for the CPU.
 * - Only for command lines in use: a command line is refilled once it has been asked for twice within the
 *   last RECENT_KEYS distinct ones, so a one-off voice or speed never leaves a process behind.
 * - Bounded: at most `max` idle processes in all; the oldest is killed to make room.
 * - Never stale: an idle process that dies is dropped (and replaced, unless it died young: no crash loop);
 *   one idle for `maxIdleMs` is killed and replaced by a fresh one. When taken, each is checked with the
 *   kernel (a death Node has not yet been told of, or a stopped process, is killed and skipped).
 * - None leaked: close() kills every idle process; if the worker itself dies, their stdin pipes close and
 *   both programs exit on the empty input.
 */
export interface WarmPoolOptions {
  /** Idle processes kept in all (0 disables the pool). */
  max: number;
  /** An idle process older than this is replaced by a fresh one. */
  maxIdleMs?: number;
}

interface Idle {
  key: string;
  child: ManagedChild;
  born: number;
  timer: NodeJS.Timeout;
  onExit: () => void;
}

export interface CommandLine {
  label: string;
  command: string;
  args: readonly string[];
  options?: ChildOptions;
}

const DEFAULT_MAX_IDLE_MS = 5 * 60_000;
/** A process that dies sooner than this while idle is not replaced: something is wrong with its command line. */
const MIN_HEALTHY_LIFE_MS = 1000;
const RECENT_KEYS = 64;
/**
 * Idle processes kept per command line. Two, so that back-to-back requests take one that had a whole
 * request's time to start (the oldest) while its replacement starts; one would often still be starting.
 */
const PER_KEY = 2;

export class WarmPool {
  readonly max: number;
  private readonly maxIdleMs: number;
  private readonly idle: Idle[] = []; // oldest first
  /** Command lines asked for recently, most recent last (a Map keeps insertion order). */
  private readonly recent = new Map<string, number>();
  private closed = false;
  /** Counters for health output and tests. */
  readonly stats = { hits: 0, misses: 0, started: 0, replaced: 0 };

  constructor(opts: WarmPoolOptions) {
    if (!Number.isInteger(opts.max) || opts.max < 0) throw new RangeError(`WarmPool max must be a non-negative integer, got ${opts.max}`);
    this.max = opts.max;
    this.maxIdleMs = opts.maxIdleMs ?? DEFAULT_MAX_IDLE_MS;
  }

  get size(): number {
    return this.idle.length;
  }

  /** Idle processes (pids), for tests. */
  idlePids(): number[] {
    return this.idle.map((e) => e.child.proc.pid!).filter((pid) => pid !== undefined);
  }

  /** A started process for `line`, owned by the caller from now on: a warm one when there is one, else a new one. */
  take(line: CommandLine): ManagedChild {
    const key = keyOf(line);
    this.remember(key);
    // The oldest first: it has had the longest time to finish starting.
    for (let i = 0; i < this.idle.length; i++) {
      const entry = this.idle[i]!;
      if (entry.key !== key) continue;
      this.idle.splice(i--, 1);
      clearTimeout(entry.timer);
      entry.child.proc.off('exit', entry.onExit);
      if (entry.child.running && entry.child.stdin.writable && waiting(entry.child.proc.pid!)) {
        this.stats.hits++;
        entry.child.adopt();
        return entry.child;
      }
      entry.child.kill();
    }
    this.stats.misses++;
    return new ManagedChild(line.label, line.command, line.args, line.options);
  }

  /**
   * Called once the request that took a process for `line` has finished: if the command line is in use
   * (asked for at least twice lately), tops it up to PER_KEY idle processes. Never throws.
   */
  refill(line: CommandLine): void {
    if (this.closed || this.max === 0) return;
    const key = keyOf(line);
    if ((this.recent.get(key) ?? 0) < 2) return;
    const want = Math.min(PER_KEY, this.max) - this.idle.filter((e) => e.key === key).length;
    for (let i = 0; i < want; i++) this.start(key, line);
  }

  /** Kills every idle process; the pool starts nothing afterwards. */
  close(): void {
    this.closed = true;
    for (const entry of this.idle.splice(0)) {
      clearTimeout(entry.timer);
      entry.child.proc.off('exit', entry.onExit);
      entry.child.kill();
    }
  }

  private remember(key: string): void {
    const count = (this.recent.get(key) ?? 0) + 1;
    this.recent.delete(key);
    this.recent.set(key, count);
    if (this.recent.size > RECENT_KEYS) this.recent.delete(this.recent.keys().next().value!);
  }

  private start(key: string, line: CommandLine): void {
    while (this.idle.length >= this.max) {
      const oldest = this.idle.shift()!;
      clearTimeout(oldest.timer);
      oldest.child.proc.off('exit', oldest.onExit);
      oldest.child.kill();
    }
    const child = new ManagedChild(line.label, line.command, line.args, { ...line.options, idle: true });
    this.stats.started++;
    const born = performance.now();
    const entry: Idle = {
      key,
      child,
      born,
      timer: setTimeout(() => this.replace(entry, line, true), this.maxIdleMs).unref(),
      // Died while idle (killed from outside, out of memory, a broken install): drop it, replace it if it had lived.
      onExit: () => this.replace(entry, line, performance.now() - born >= MIN_HEALTHY_LIFE_MS),
    };
    child.proc.once('exit', entry.onExit);
    this.idle.push(entry);
  }

  private replace(entry: Idle, line: CommandLine, again: boolean): void {
    const index = this.idle.indexOf(entry);
    if (index < 0) return; // already taken or evicted
    this.idle.splice(index, 1);
    clearTimeout(entry.timer);
    entry.child.proc.off('exit', entry.onExit);
    entry.child.kill();
    if (again && !this.closed) {
      this.stats.replaced++;
      this.start(entry.key, line);
    }
  }
}

/** Two requests may share a process only if everything it was started with is the same, environment included. */
function keyOf(line: CommandLine): string {
  return JSON.stringify([line.command, line.args, line.options?.extraOutputs ?? 0, ManagedChild.environment()]);
}

/**
 * What the kernel says right now, which may be ahead of Node's 'exit' event: a process that is dead (a
 * zombie not yet reaped) or stopped (SIGSTOP, a debugger) must not be handed out. Where there is no /proc,
 * Node's own view is all there is.
 */
function waiting(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT' || !existsProc();
  }
  // "pid (comm) S ...": comm may contain spaces and parentheses, the state follows the last ')'.
  const state = stat.charAt(stat.lastIndexOf(')') + 2);
  return state === 'S' || state === 'R' || state === 'D';
}

let procMounted: boolean | undefined;
function existsProc(): boolean {
  try {
    procMounted ??= readFileSync('/proc/self/stat', 'latin1').length > 0;
  } catch {
    procMounted = false;
  }
  return procMounted;
}
