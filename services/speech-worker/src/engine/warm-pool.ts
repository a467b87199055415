import { readFileSync } from 'node:fs';
import { ManagedChild, type ChildOptions } from './child.ts';

/**
 * Starting espeak-ng and ffmpeg is most of a short request's time: exec, dynamic linking (ffmpeg maps
 * dozens of codec libraries) and espeak's phoneme data take ~40–300 ms on a busy 2-core machine, while a
 * started process waiting on its stdin answers its first bytes in a few ms. The pool keeps such started
 * pipelines (espeak-ng → ffmpeg joined by an OS pipe, see startPipeline), one pair of command lines (argv +
 * environment) per entry, and hands them out instead of spawning.
 *
 * - Off the request path: replacements are started after the request that took a pipeline has finished
 *   (refill), and the Synthesizer calls refill only once no synthesis is running (Node's spawn forks the
 *   whole worker, stalling its event loop), so their start-up never competes with a request for the CPU.
 * - Only for command lines in use: a pair is refilled once it has been asked for twice within the last
 *   RECENT_KEYS distinct ones, so a one-off voice or speed never leaves a process behind.
 * - Bounded: at most `max` idle processes in all (two per pipeline); the oldest pipeline is killed to make room.
 * - Never stale: a pipeline with an idle process that dies is dropped (and replaced, unless it died young: no
 *   crash loop); one idle for `maxIdleMs` is killed and replaced by a fresh one. When taken, both processes
 *   are checked with the kernel (a death Node has not yet been told of, or a stopped process: the pipeline
 *   is killed and skipped).
 * - None leaked: close() kills every idle process; if the worker itself dies, espeak-ng's stdin closes, it
 *   exits on the empty input, and ffmpeg on the end of its own.
 */
export interface WarmPoolOptions {
  /** Idle processes kept in all, two per pipeline (below 2 disables the pool). */
  max: number;
  /** An idle pipeline older than this is replaced by a fresh one. */
  maxIdleMs?: number;
}

export interface CommandLine {
  label: string;
  command: string;
  args: readonly string[];
  options?: ChildOptions;
}

/** Two programs joined by an OS pipe: `source`'s stdout is `sink`'s stdin (espeak-ng → ffmpeg). */
export interface PipelineLines {
  source: CommandLine;
  sink: CommandLine;
}

export interface Pipeline {
  source: ManagedChild;
  sink: ManagedChild;
}

interface Idle {
  key: string;
  pipeline: Pipeline;
  born: number;
  timer: NodeJS.Timeout;
  onExit: () => void;
}

const DEFAULT_MAX_IDLE_MS = 5 * 60_000;
/** A pipeline with a process that dies sooner than this while idle is not replaced: something is wrong with its command line. */
const MIN_HEALTHY_LIFE_MS = 1000;
const RECENT_KEYS = 64;
/**
 * Idle pipelines kept per command line. Two, so that back-to-back requests take one that had a whole
 * request's time to start (the oldest) while its replacement starts; one would often still be starting.
 */
const PER_KEY = 2;

/**
 * Starts `lines.source` and `lines.sink` with the first's stdout as the second's stdin. The bytes between
 * them (espeak's PCM, ~45 KB per second of speech) never enter this process: no read, no write, no
 * wake-up of this event loop per chunk, and the sink is fed as fast as the source writes, whatever this
 * process is busy with.
 */
export function startPipeline(lines: PipelineLines, idle = false): Pipeline {
  const source = new ManagedChild(lines.source.label, lines.source.command, lines.source.args, { ...lines.source.options, idle });
  const started = source.proc.pid !== undefined;
  const sink = new ManagedChild(lines.sink.label, lines.sink.command, lines.sink.args, {
    ...lines.sink.options,
    idle,
    stdin: started ? source.stdout : 'ignore',
  });
  // The sink holds the read end now; ours would keep the pipe open after the sink died (the source would
  // block on a full pipe instead of getting EPIPE).
  if (started) source.stdout.destroy();
  return { source, sink };
}

const members = (p: Pipeline): ManagedChild[] => [p.source, p.sink];

export class WarmPool {
  readonly max: number;
  private readonly maxIdleMs: number;
  private readonly idle: Idle[] = []; // oldest first
  /** Command lines asked for recently, most recent last (a Map keeps insertion order). */
  private readonly recent = new Map<string, number>();
  private closed = false;
  /** Counters for health output and tests, in processes (a pipeline is two). */
  readonly stats = { hits: 0, misses: 0, started: 0, replaced: 0 };

  constructor(opts: WarmPoolOptions) {
    if (!Number.isInteger(opts.max) || opts.max < 0) throw new RangeError(`WarmPool max must be a non-negative integer, got ${opts.max}`);
    this.max = opts.max;
    this.maxIdleMs = opts.maxIdleMs ?? DEFAULT_MAX_IDLE_MS;
  }

  /** Idle processes. */
  get size(): number {
    return this.idle.length * 2;
  }

  /** Idle processes (pids), for tests. */
  idlePids(): number[] {
    return this.idle.flatMap((e) => members(e.pipeline).map((c) => c.proc.pid!)).filter((pid) => pid !== undefined);
  }

  /** A started pipeline for `lines`, owned by the caller from now on: a warm one when there is one, else a new one. */
  take(lines: PipelineLines): Pipeline {
    const key = keyOf(lines);
    this.remember(key);
    // The oldest first: it has had the longest time to finish starting.
    for (let i = 0; i < this.idle.length; i++) {
      const entry = this.idle[i]!;
      if (entry.key !== key) continue;
      this.idle.splice(i--, 1);
      clearTimeout(entry.timer);
      const { source, sink } = entry.pipeline;
      for (const child of members(entry.pipeline)) child.proc.off('exit', entry.onExit);
      if (source.running && sink.running && source.stdin?.writable && waiting(source.proc.pid!) && waiting(sink.proc.pid!)) {
        this.stats.hits += 2;
        source.adopt();
        sink.adopt();
        return entry.pipeline;
      }
      for (const child of members(entry.pipeline)) child.kill();
    }
    this.stats.misses += 2;
    return startPipeline(lines);
  }

  /**
   * Called once the request that took a pipeline for `lines` has finished: if the command lines are in use
   * (asked for at least twice lately), tops them up to PER_KEY idle pipelines. Never throws.
   */
  refill(lines: PipelineLines): void {
    if (this.closed || this.max < 2) return;
    const key = keyOf(lines);
    if ((this.recent.get(key) ?? 0) < 2) return;
    const want = Math.min(PER_KEY, Math.floor(this.max / 2)) - this.idle.filter((e) => e.key === key).length;
    for (let i = 0; i < want; i++) this.start(key, lines);
  }

  /** Kills every idle process; the pool starts nothing afterwards. */
  close(): void {
    this.closed = true;
    for (const entry of this.idle.splice(0)) this.drop(entry);
  }

  private remember(key: string): void {
    const count = (this.recent.get(key) ?? 0) + 1;
    this.recent.delete(key);
    this.recent.set(key, count);
    if (this.recent.size > RECENT_KEYS) this.recent.delete(this.recent.keys().next().value!);
  }

  private drop(entry: Idle): void {
    clearTimeout(entry.timer);
    for (const child of members(entry.pipeline)) {
      child.proc.off('exit', entry.onExit);
      child.kill();
    }
  }

  private start(key: string, lines: PipelineLines): void {
    while (this.idle.length > 0 && this.size + 2 > this.max) this.drop(this.idle.shift()!);
    const pipeline = startPipeline(lines, true);
    this.stats.started += 2;
    const born = performance.now();
    const entry: Idle = {
      key,
      pipeline,
      born,
      timer: setTimeout(() => this.replace(entry, lines, true), this.maxIdleMs).unref(),
      // Died while idle (killed from outside, out of memory, a broken install): drop the pipeline, replace it if it had lived.
      onExit: () => this.replace(entry, lines, performance.now() - born >= MIN_HEALTHY_LIFE_MS),
    };
    for (const child of members(pipeline)) child.proc.once('exit', entry.onExit);
    this.idle.push(entry);
  }

  private replace(entry: Idle, lines: PipelineLines, again: boolean): void {
    const index = this.idle.indexOf(entry);
    if (index < 0) return; // already taken or evicted
    this.idle.splice(index, 1);
    this.drop(entry);
    if (again && !this.closed) {
      this.stats.replaced++;
      this.start(entry.key, lines);
    }
  }
}

/** Two requests may share a pipeline only if everything it was started with is the same, environment included. */
function keyOf(lines: PipelineLines): string {
  const line = (l: CommandLine) => [l.command, l.args, l.options?.extraOutputs ?? 0];
  return JSON.stringify([line(lines.source), line(lines.sink), ManagedChild.environment()]);
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
