import { pipeline } from 'node:stream';
import type { EngineConfig } from './config.ts';
import type { ChildExit, ManagedChild } from './child.ts';
import { coalesce } from './coalesce.ts';
import { startEncoder } from './encoder.ts';
import { SpeechInputError, SynthesisError, SynthesisTimeoutError } from './errors.ts';
import { startEspeak, stripWavHeader } from './espeak.ts';
import { AUDIO_FORMATS, isAudioFormat, OUTPUT_SAMPLE_RATE, type AudioFormat } from './formats.ts';
import { Limiter, type Release } from './limiter.ts';
import { MAX_SPEED, MIN_SPEED, planSpeed, type SpeedPlan } from './speed.ts';
import { prepareInput } from './text.ts';
import { resolveVoice } from './voices.ts';
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
 * by main): a concurrency cap shared by every call on this instance and a time limit per call.
 */
export class Synthesizer {
  private readonly limiter: Limiter;
  private readonly timeoutMs: number;

  constructor(limits: Pick<EngineConfig, 'maxConcurrency' | 'synthTimeoutMs'>) {
    this.limiter = new Limiter(limits.maxConcurrency);
    this.timeoutMs = limits.synthTimeoutMs;
  }

  /** Pipelines running and waiting, for health/metrics. */
  load(): { active: number; waiting: number; max: number } {
    return { active: this.limiter.active, waiting: this.limiter.waiting, max: this.limiter.max };
  }

  /**
   * Speaks `text` and yields the encoded audio as ffmpeg produces it: one espeak-ng → ffmpeg pipeline per call,
   * one valid container per call. Every error surfaces from iteration, never from this call:
   * SpeechInputError (before any process starts), the signal's reason on abort, SynthesisError when a
   * program fails or the time limit passes. Errors after the first bytes mean the output is truncated.
   * `wav` is the one buffered format: a streamed WAV cannot carry its real sizes, so it is yielded whole.
   */
  synthesize(req: SynthesisRequest): AsyncIterable<Buffer> {
    return run(req, this.limiter, this.timeoutMs);
  }
}

async function* run(req: SynthesisRequest, slots: Limiter, timeoutMs: number): AsyncGenerator<Buffer, void, undefined> {
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

  const release = await slots.acquire(signal);
  try {
    yield* runPipeline({ text, voice, format: req.format, plan: planSpeed(req.speed), signal, timeoutMs, release });
  } finally {
    release();
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
}

/** How long cleanup waits for SIGKILLed children to be reaped before giving up (they always are, in practice). */
const REAP_WAIT_MS = 5000;
const MAX_WAV_DATA_BYTES = 0xffffffff - 36;
/** Output batching (see coalesce.ts): ~16 KiB per chunk, never held back more than 40 ms. */
const BATCH = { minBytes: 16 * 1024, maxWaitMs: 40 };

async function* runPipeline(spec: PipelineSpec): AsyncGenerator<Buffer, void, undefined> {
  // The client may have left while we waited for a slot; an abort listener added now would never fire.
  spec.signal?.throwIfAborted();
  const espeak = startEspeak(spec.text, spec.voice, spec.plan.wpm);
  const ffmpeg = startEncoder(spec.format, spec.plan.atempo);
  const children = [espeak, ffmpeg];
  const output = ffmpeg.stdout;

  // The first reason to stop wins; later ones (e.g. EPIPE caused by the kill itself) are consequences.
  let failure: unknown;
  const stop = (reason: unknown): void => {
    failure ??= reason;
    for (const child of children) child.kill();
    output.destroy(); // wakes the reader even when ffmpeg's stdout is blocked
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

  let pipeError: Error | undefined;
  pipeline(espeak.stdout, stripWavHeader(), ffmpeg.stdin, (err) => {
    if (!err) return;
    pipeError = err;
    // EPIPE and premature close mean one side died; its exit status explains why. Anything else (a bad
    // espeak header) is a failure of its own.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EPIPE' && code !== 'ERR_STREAM_PREMATURE_CLOSE') {
      stop(new SynthesisError('audio pipe between espeak-ng and ffmpeg failed', err.message));
    }
  });

  try {
    const buffered: Buffer[] = [];
    let bufferedBytes = 0;
    try {
      for await (const chunk of coalesce(output, BATCH)) {
        if (failure !== undefined) break;
        if (spec.format !== 'wav') {
          yield chunk;
          continue;
        }
        buffered.push(chunk);
        bufferedBytes += chunk.length;
        if (bufferedBytes > MAX_WAV_DATA_BYTES) stop(new SynthesisError('wav output exceeds the 4 GiB RIFF limit'));
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
    for (const [child, exit] of [[ffmpeg, ffmpegExit], [espeak, espeakExit]] as const) {
      if (!succeeded(exit)) throw new SynthesisError(child.describeExit(exit), child.stderrSummary() || exit.spawnError?.message);
    }
    if (pipeError) throw new SynthesisError('audio pipe between espeak-ng and ffmpeg failed', pipeError.message);

    if (spec.format === 'wav') yield Buffer.concat([wavHeader(bufferedBytes, OUTPUT_SAMPLE_RATE), ...buffered], 44 + bufferedBytes);
  } finally {
    clearTimeout(timer);
    spec.signal?.removeEventListener('abort', onAbort);
    // Reached on success, error, abort and on a consumer's early return(): nothing may outlive the request.
    for (const child of children) child.kill();
    output.destroy();
    await reaped(children);
    spec.release();
  }
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
