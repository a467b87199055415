import type { EngineConfig } from './config.ts';
import type { ChildExit, ManagedChild } from './child.ts';
import { coalesce } from './coalesce.ts';
import { encoderCommand, FLAC_PCM_FD } from './encoder.ts';
import { SpeechInputError, SynthesisError, SynthesisTimeoutError } from './errors.ts';
import { espeakCommand } from './espeak.ts';
import { FlacSummary } from './flac.ts';
import { AUDIO_FORMATS, isAudioFormat, OUTPUT_SAMPLE_RATE, type AudioFormat } from './formats.ts';
import { Limiter, type Release } from './limiter.ts';
import { MAX_SPEED, MIN_SPEED, planSpeed, type SpeedPlan } from './speed.ts';
import { prepareInput } from './text.ts';
import { resolveVoice } from './voices.ts';
import { WarmPool, type PipelineLines } from './warm-pool.ts';
import { wavHeader } from './wav.ts';

export interface SynthesisRequest {
  text: string;
  /** An espeak-ng spec as returned by resolveVoice (validated again here). */
  voice: string;
  format: AudioFormat;
  /** OpenAI speed, 0.25..4. */
  speed: number;
  /** Abort when the client goes away: both processes are killed and iteration rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * The espeak-ng → ffmpeg synthesizer with its limits (from parseEngineConfig, read once at start-up
 * by main): a concurrency cap shared by every call on this instance, a time limit per call, and a pool of
 * started processes (warm-pool.ts) when `warmProcesses` > 0. close() kills the pool's idle processes.
 */
export class Synthesizer {
  private readonly limiter: Limiter;
  private readonly timeoutMs: number;
  private readonly pool: WarmPool;
  /** Pipelines to replace once no synthesis is running (see refillWhenIdle). */
  private readonly toRefill: PipelineLines[] = [];
  private refillTimer: NodeJS.Timeout | undefined;

  constructor(limits: Pick<EngineConfig, 'maxConcurrency' | 'synthTimeoutMs'> & Partial<Pick<EngineConfig, 'warmProcesses'>>) {
    this.limiter = new Limiter(limits.maxConcurrency);
    this.timeoutMs = limits.synthTimeoutMs;
    this.pool = new WarmPool({ max: limits.warmProcesses ?? 0 });
  }

  /** Pipelines running and waiting, for health/metrics. */
  load(): { active: number; waiting: number; max: number } {
    return { active: this.limiter.active, waiting: this.limiter.waiting, max: this.limiter.max };
  }

  /** The warm pool: idle processes and its counters. */
  warm(): { idle: number; max: number; idlePids: number[] } & WarmPool['stats'] {
    return { idle: this.pool.size, max: this.pool.max, idlePids: this.pool.idlePids(), ...this.pool.stats };
  }

  /** Kills the idle warm processes (requests in flight finish on their own). */
  close(): void {
    clearTimeout(this.refillTimer);
    this.refillTimer = undefined;
    this.toRefill.length = 0;
    this.pool.close();
  }

  /**
   * Speaks `text` and yields the encoded audio as ffmpeg produces it: one espeak-ng → ffmpeg pipeline per call,
   * one valid container per call. Every error surfaces from iteration, never from this call:
   * SpeechInputError (before any process starts), the signal's reason on abort, SynthesisError when a
   * program fails or the time limit passes. Errors after the first bytes mean the output is truncated.
   * `wav` and `flac` are buffered: a streamed WAV cannot carry its real sizes, nor a streamed FLAC its length
   * and MD5, so they are yielded whole with a correct header.
   */
  synthesize(req: SynthesisRequest): AsyncIterable<Buffer> {
    return run(req, this.limiter, this.timeoutMs, this.pool, this.refillWhenIdle);
  }

  /**
   * Replacements for the pipelines a request used start REFILL_DELAY_MS after it ended, and only once no
   * synthesis is running (at the latest REFILL_MAX_WAIT_MS later). Node's spawn forks this whole process
   * synchronously: 10–100 ms per process on a 2-core VM with the worker's ~140 MB (page tables), during
   * which its event loop stands still and one core is busy. Started at once, that stalled every other
   * request's stream and competed with the request's own last frames on their way to the client.
   */
  private readonly refillWhenIdle = (lines: PipelineLines): void => {
    if (this.pool.max < 2) return;
    this.toRefill.push(lines);
    const since = performance.now();
    const check = (): void => {
      this.refillTimer = undefined;
      if (this.limiter.active > 0 && performance.now() - since < REFILL_MAX_WAIT_MS) {
        this.refillTimer = setTimeout(check, REFILL_DELAY_MS).unref();
        return;
      }
      for (const next of this.toRefill.splice(0)) this.pool.refill(next);
    };
    // unref: replacements are not worth keeping a process alive for.
    this.refillTimer ??= setTimeout(check, REFILL_DELAY_MS).unref();
  };
}

/** See Synthesizer.refillWhenIdle. */
const REFILL_DELAY_MS = 20;
const REFILL_MAX_WAIT_MS = 1000;

async function* run(
  req: SynthesisRequest,
  slots: Limiter,
  timeoutMs: number,
  pool: WarmPool,
  refill: (lines: PipelineLines) => void,
): AsyncGenerator<Buffer, void, undefined> {
  const { signal } = req;
  signal?.throwIfAborted();
  const text = prepareInput(req.text);
  if (!isAudioFormat(req.format)) {
    throw new SpeechInputError(`response_format must be one of ${AUDIO_FORMATS.join(', ')}`, 'response_format');
  }
  if (typeof req.speed !== 'number' || !Number.isFinite(req.speed) || req.speed < MIN_SPEED || req.speed > MAX_SPEED) {
    throw new SpeechInputError(`speed must be a number from ${MIN_SPEED} to ${MAX_SPEED}`, 'speed');
  }
  const voice = await resolveVoice(req.voice);
  if (voice === null) throw new SpeechInputError(`Unknown voice ${JSON.stringify(req.voice)}`, 'voice');

  const plan = planSpeed(req.speed);
  let release = await slots.acquire(signal);
  try {
    let started = false;
    try {
      for await (const chunk of runPipeline({ text, voice, format: req.format, plan, signal, timeoutMs, release, pool, refill })) {
        started = true;
        yield chunk;
      }
    } catch (err) {
      if (!(err instanceof StaleWarmProcess) || started) throw err instanceof StaleWarmProcess ? err.cause : err;
      // A warm process died (or was killed) after the kernel last said it was waiting: if nothing has reached
      // the consumer yet, the request runs again on processes started for it. (A dead espeak-ng can let
      // ffmpeg write a header first; that request fails, as it would have with any process dying.)
      release();
      release = await slots.acquire(signal);
      yield* runPipeline({ text, voice, format: req.format, plan, signal, timeoutMs, release, pool: COLD, refill: () => {} });
    }
  } finally {
    release();
  }
}

/** Spawns for every request and keeps nothing: the retry after a stale warm process. */
const COLD = new WarmPool({ max: 0 });

/** A pipeline failed because a process from the warm pool was dead before it produced anything. */
class StaleWarmProcess extends Error {
  constructor(override readonly cause: SynthesisError) {
    super(cause.message);
  }
}

interface PipelineSpec {
  text: string;
  voice: string;
  format: AudioFormat;
  plan: SpeedPlan;
  signal: AbortSignal | undefined;
  timeoutMs: number;
  release: Release;
  pool: WarmPool;
  /** Called once the request is over, with the command lines it used (replacements start later, when idle). */
  refill: (lines: PipelineLines) => void;
}

/** How long cleanup waits for SIGKILLed children to be reaped before giving up (they always are, in practice). */
const REAP_WAIT_MS = 5000;
const MAX_WAV_DATA_BYTES = 0xffffffff - 36;
/** Output batching (see coalesce.ts): ~16 KiB per chunk, never held back more than 40 ms. */
const BATCH = { minBytes: 16 * 1024, maxWaitMs: 40 };

async function* runPipeline(spec: PipelineSpec): AsyncGenerator<Buffer, void, undefined> {
  // The client may have left while we waited for a slot; an abort listener added now would never fire.
  spec.signal?.throwIfAborted();
  // espeak-ng's WAV goes straight to ffmpeg through an OS pipe (warm-pool.ts startPipeline): this process
  // only writes the text and reads the encoded audio.
  const lines = { source: espeakCommand(spec.voice, spec.plan.wpm), sink: encoderCommand(spec.format, spec.plan.atempo) };
  const { source: espeak, sink: ffmpeg } = spec.pool.take(lines);
  espeak.stdin!.end(spec.text, 'utf8');
  const children = [espeak, ffmpeg];
  const output = ffmpeg.stdout;
  // wav and flac are buffered: their headers need what only the end knows (see wav.ts, flac.ts).
  const whole = spec.format === 'wav' || spec.format === 'flac';
  const flac = spec.format === 'flac' ? new FlacSummary() : undefined;
  const flacPcm = flac ? ffmpeg.output(FLAC_PCM_FD) : undefined;
  const flacPcmDone = flac && flacPcm ? summarize(flacPcm, flac) : undefined;
  flacPcmDone?.catch(() => {}); // awaited below on success; a failure is explained by the exit status

  // The first reason to stop wins; later ones (e.g. EPIPE caused by the kill itself) are consequences.
  let failure: unknown;
  const stop = (reason: unknown): void => {
    failure ??= reason;
    for (const child of children) child.kill();
    output.destroy(); // wakes the reader even when ffmpeg's stdout is blocked
    flacPcm?.destroy();
    // A consumer that never resumes must not keep the slot; it frees once both processes are gone, so
    // killed pipelines never overlap the next ones.
    void Promise.all(children.map((child) => child.exited)).then(spec.release);
  };
  const onAbort = (): void => stop(spec.signal?.reason);
  spec.signal?.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(
    () => stop(new SynthesisTimeoutError(`speech synthesis exceeded its ${spec.timeoutMs} ms time limit`)),
    spec.timeoutMs,
  );

  try {
    const buffered: Buffer[] = [];
    let bufferedBytes = 0;
    try {
      for await (const chunk of coalesce(output, BATCH)) {
        if (failure !== undefined) break;
        if (!whole) {
          yield chunk;
          continue;
        }
        buffered.push(chunk);
        bufferedBytes += chunk.length;
        if (bufferedBytes > MAX_WAV_DATA_BYTES) stop(new SynthesisError(`${spec.format} output exceeds the 4 GiB limit`));
      }
    } catch (err) {
      throw failure ?? err;
    }
    if (failure !== undefined) throw failure;

    // ffmpeg closed its output. If it failed, espeak may be blocked writing to it: stop espeak before waiting.
    const ffmpegExit = await ffmpeg.exited;
    if (!succeeded(ffmpegExit)) espeak.kill();
    const espeakExit = await espeak.exited;
    if (failure !== undefined) throw failure;
    const exits = [[espeak, espeakExit], [ffmpeg, ffmpegExit]] as const;
    // Killed by a signal that neither we nor the pipe sent: a warm one died while waiting in the pool.
    const killedOutside = ([child, exit]: (typeof exits)[number]) => exit.signal !== null && exit.signal !== 'SIGPIPE' && !child.proc.killed;
    // The failure that explains the others: a warm process killed from outside (the request runs again);
    // else one that failed on its own, espeak-ng first (ffmpeg then fails on the input it did not get); else
    // one killed (SIGPIPE: its reader had died; or by us, above).
    const blamed =
      exits.find((e) => e[0].warm && killedOutside(e)) ?? exits.find(([, exit]) => !succeeded(exit) && exit.signal === null) ?? exits.find(([, exit]) => !succeeded(exit));
    if (blamed) {
      const [child, exit] = blamed;
      const error = new SynthesisError(child.describeExit(exit), child.stderrSummary() || exit.spawnError?.message);
      throw child.warm && killedOutside(blamed) ? new StaleWarmProcess(error) : error;
    }

    if (spec.format === 'wav') yield Buffer.concat([wavHeader(bufferedBytes, OUTPUT_SAMPLE_RATE), ...buffered], 44 + bufferedBytes);
    if (flac) {
      let patched: Buffer;
      try {
        await flacPcmDone;
        patched = flac.patch(Buffer.concat(buffered, bufferedBytes));
      } catch (err) {
        throw new SynthesisError('could not complete the flac header', (err as Error).message);
      }
      yield patched;
    }
  } finally {
    clearTimeout(timer);
    spec.signal?.removeEventListener('abort', onAbort);
    // Reached on success, error, abort and on a consumer's early return(): nothing may outlive the request.
    for (const child of children) child.kill();
    output.destroy();
    flacPcm?.destroy();
    await reaped(children);
    spec.release();
    // Replacements start once this request is done, never while it runs (a program that could not be started
    // at all is not retried), and not at once (Synthesizer.refillWhenIdle).
    if (espeak.proc.pid !== undefined && ffmpeg.proc.pid !== undefined) spec.refill(lines);
  }
}

async function summarize(pcm: AsyncIterable<Buffer>, summary: FlacSummary): Promise<void> {
  for await (const chunk of pcm) summary.update(chunk);
}

function succeeded(exit: ChildExit): boolean {
  return exit.code === 0 && !exit.spawnError;
}

/** Waits (bounded) until the kernel has reaped the children, so no zombie remains once iteration is over. */
async function reaped(children: ManagedChild[]): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(children.map((child) => child.exited)),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, REAP_WAIT_MS);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}
