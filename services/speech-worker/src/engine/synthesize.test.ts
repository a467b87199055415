import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { activeChildProcesses } from './child.ts';
import { parseEngineConfig } from './config.ts';
import { SpeechInputError, SynthesisError, SynthesisTimeoutError } from './errors.ts';
import { AUDIO_FORMATS, type AudioFormat } from './formats.ts';
import { Synthesizer, type SynthesisRequest } from './synthesize.ts';
import { collect, decodeToS16le, eventually, opusInputSampleRate, probe, processExists, SENTENCE_200, textOfLength } from './test-helpers.ts';

const EXPECTED: Record<AudioFormat, { codec: string; container: string }> = {
  mp3: { codec: 'mp3', container: 'mp3' },
  opus: { codec: 'opus', container: 'ogg' },
  aac: { codec: 'aac', container: 'aac' },
  flac: { codec: 'flac', container: 'flac' },
  wav: { codec: 'pcm_s16le', container: 'wav' },
  pcm: { codec: 'pcm_s16le', container: 's16le' },
};

const DEFAULT_LIMITS = parseEngineConfig({});
let synth = new Synthesizer(DEFAULT_LIMITS);

afterEach(() => {
  // Tests below change limits; every test starts from the defaults again.
  synth.close();
  synth = new Synthesizer(DEFAULT_LIMITS);
});

async function expectNoChildrenLeft(pids: number[]): Promise<void> {
  expect(await eventually(() => activeChildProcesses().length === 0, 5000)).toBe(true);
  for (const pid of pids) expect(await processExists(pid)).toBe(false); // neither running nor a zombie
}

describe('synthesize: every format decodes', () => {
  it.each(AUDIO_FORMATS)('%s: valid, 24 kHz mono, sane length', { timeout: 30_000 }, async (format) => {
    const audio = await collect(synth.synthesize({ text: SENTENCE_200, voice: 'en-us', format, speed: 1 }));
    const info = await probe(audio, format);
    expect(info.codec).toBe(EXPECTED[format].codec);
    expect(info.formatName).toBe(EXPECTED[format].container);
    expect(info.channels).toBe(1);
    if (format === 'opus') {
      // Opus always decodes at 48 kHz; the stream records what it was encoded from.
      expect(info.sampleRate).toBe(48000);
      expect(opusInputSampleRate(audio)).toBe(24000);
    } else {
      expect(info.sampleRate).toBe(24000);
    }
    expect(info.decodedSeconds).toBeGreaterThan(8);
    expect(info.decodedSeconds).toBeLessThan(16);
    // Container-reported length must agree where the container states one (ADTS only estimates it from
    // the bitrate).
    if (format !== 'aac') {
      expect(info.duration).toBeDefined();
      expect(Math.abs(info.duration! - info.decodedSeconds)).toBeLessThan(0.25);
    }
  });

  it('wav carries real sizes that match what ffprobe reads', { timeout: 30_000 }, async () => {
    const wav = await collect(synth.synthesize({ text: SENTENCE_200, voice: 'en-us', format: 'wav', speed: 1 }));
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.toString('ascii', 8, 16)).toBe('WAVEfmt ');
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.toString('ascii', 36, 40)).toBe('data');
    const dataBytes = wav.readUInt32LE(40);
    expect(dataBytes).toBe(wav.length - 44);
    expect(wav.readUInt32LE(24)).toBe(24000);
    const info = await probe(wav, 'wav');
    expect(info.duration).toBeCloseTo(dataBytes / 2 / 24000, 3);
    expect(info.decodedSeconds).toBeCloseTo(dataBytes / 2 / 24000, 3);
  });

  it('flac carries its real length and the MD5 of its samples in STREAMINFO', { timeout: 30_000 }, async () => {
    const flac = await collect(synth.synthesize({ text: SENTENCE_200, voice: 'en-us', format: 'flac', speed: 1.3 }));
    expect(flac.toString('ascii', 0, 4)).toBe('fLaC');
    const samples = decodeToS16le(flac);
    const totalSamples = Number(flac.readBigUInt64BE(18) & ((1n << 36n) - 1n));
    expect(totalSamples).toBe((await samples).length / 2);
    expect(flac.subarray(26, 42).toString('hex')).toBe(createHash('md5').update(await samples).digest('hex'));
    const info = await probe(flac, 'flac');
    expect(info.duration).toBeCloseTo(totalSamples / 24000, 3);
  });

  it('pcm is headerless s16le whose size matches its decoded length', { timeout: 30_000 }, async () => {
    const pcm = await collect(synth.synthesize({ text: SENTENCE_200, voice: 'en-us', format: 'pcm', speed: 1 }));
    expect(pcm.toString('ascii', 0, 4)).not.toBe('RIFF');
    expect(pcm.length % 2).toBe(0);
    const info = await probe(pcm, 'pcm');
    expect(info.decodedSeconds).toBeCloseTo(pcm.length / 2 / 24000, 3);
  });
});

describe('synthesize: streaming', () => {
  it('yields mp3 while ffmpeg is still encoding', { timeout: 30_000 }, async () => {
    const text = textOfLength(2000);
    const t0 = performance.now();
    let chunks = 0;
    let firstAt = 0;
    let ffmpegRunningAtFirstChunk = false;
    const parts: Buffer[] = [];
    for await (const chunk of synth.synthesize({ text, voice: 'en-us', format: 'mp3', speed: 1 })) {
      if (chunks === 0) {
        firstAt = performance.now() - t0;
        const ffmpeg = activeChildProcesses().find((p) => p.spawnfile === 'ffmpeg');
        ffmpegRunningAtFirstChunk = ffmpeg !== undefined && ffmpeg.exitCode === null && ffmpeg.signalCode === null;
      }
      chunks++;
      parts.push(chunk);
    }
    const total = performance.now() - t0;
    console.info(`mp3 2000 chars: first chunk ${firstAt.toFixed(0)} ms, last ${total.toFixed(0)} ms, ${chunks} chunks`);
    expect(chunks).toBeGreaterThan(1);
    expect(ffmpegRunningAtFirstChunk).toBe(true);
    // The pieces form one valid stream, not concatenated files.
    const info = await probe(Buffer.concat(parts), 'mp3');
    expect(info.decodedSeconds).toBeGreaterThan(80);
    expect(activeChildProcesses()).toHaveLength(0);
  });
});

describe('synthesize: speed', () => {
  it('2.0 is at most 0.6× and 0.25 at least 3× the length of 1.0', { timeout: 60_000 }, async () => {
    const length = async (speed: number) =>
      (await probe(await collect(synth.synthesize({ text: SENTENCE_200, voice: 'en-us', format: 'pcm', speed })), 'pcm')).decodedSeconds;
    const [normal, fast, slow, fastest] = await Promise.all([length(1), length(2), length(0.25), length(4)]);
    console.info(`durations: speed 1 ${normal.toFixed(2)} s, 2 ${fast.toFixed(2)} s, 0.25 ${slow.toFixed(2)} s, 4 ${fastest.toFixed(2)} s`);
    expect(fast).toBeLessThanOrEqual(0.6 * normal);
    expect(fast).toBeGreaterThanOrEqual(0.4 * normal);
    expect(slow).toBeGreaterThanOrEqual(3 * normal);
    expect(slow).toBeLessThanOrEqual(5 * normal);
    expect(fastest).toBeLessThanOrEqual(0.35 * normal);
  });
});

describe('synthesize: input checks happen before any process starts', () => {
  const cases: [string, Partial<SynthesisRequest>, string][] = [
    ['empty text', { text: '' }, 'input'],
    ['whitespace and controls only', { text: ' \n\t\u0000\u0007 ' }, 'input'],
    ['too long', { text: 'a'.repeat(4097) }, 'input'],
    ['unknown voice', { voice: 'nope' }, 'voice'],
    ['speed too low', { speed: 0.2 }, 'speed'],
    ['speed NaN', { speed: Number.NaN }, 'speed'],
    ['bad format', { format: 'ogg' as AudioFormat }, 'response_format'],
  ];
  it.each(cases)('%s → SpeechInputError', async (_name, change, param) => {
    const req = { text: 'hello', voice: 'en-us', format: 'mp3' as const, speed: 1, ...change };
    const error = await collect(synth.synthesize(req)).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(SpeechInputError);
    expect((error as SpeechInputError).param).toBe(param);
    expect(activeChildProcesses()).toHaveLength(0);
  });

  it('accepts OpenAI voice names directly', { timeout: 20_000 }, async () => {
    const audio = await collect(synth.synthesize({ text: 'Hello there.', voice: 'Nova', format: 'mp3', speed: 1 }));
    expect(audio.length).toBeGreaterThan(1000);
  });
});

describe('synthesize: abort, early return, failures', () => {
  it('abort mid-stream kills both children and rejects with the reason', { timeout: 30_000 }, async () => {
    const controller = new AbortController();
    const iterator = synth.synthesize({ text: textOfLength(4000), voice: 'en-us', format: 'aac', speed: 0.5, signal: controller.signal })[
      Symbol.asyncIterator
    ]();
    const first = await iterator.next();
    expect(first.done).toBe(false);
    const children = activeChildProcesses();
    expect(children.map((p) => p.spawnfile).sort()).toEqual(['espeak-ng', 'ffmpeg']);
    const pids = children.map((p) => p.pid!);

    controller.abort(new Error('client went away'));
    const rest = await (async () => {
      for (let i = 0; i < 100_000; i++) if ((await iterator.next()).done) return 'done';
      return 'still going';
    })().catch((err: unknown) => err);
    expect((rest as Error).message).toBe('client went away');
    for (const child of children) expect(child.exitCode !== null || child.signalCode !== null).toBe(true);
    await expectNoChildrenLeft(pids);
    expect(synth.load().active).toBe(0);
  });

  it('a consumer that stops iterating (break → return()) kills both children', { timeout: 30_000 }, async () => {
    let pids: number[] = [];
    for await (const _chunk of synth.synthesize({ text: textOfLength(4000), voice: 'en-us', format: 'mp3', speed: 0.5 })) {
      pids = activeChildProcesses().map((p) => p.pid!);
      break;
    }
    expect(pids).toHaveLength(2);
    await expectNoChildrenLeft(pids);
    expect(synth.load().active).toBe(0);
  });

  it('an already aborted signal starts nothing', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await collect(synth.synthesize({ text: 'hi', voice: 'en-us', format: 'mp3', speed: 1, signal: controller.signal })).catch(
      (err: unknown) => err,
    );
    expect((error as Error).name).toBe('AbortError');
    expect(activeChildProcesses()).toHaveLength(0);
  });

  it('espeak-ng exiting non-zero becomes a SynthesisError with its stderr', { timeout: 20_000 }, async () => {
    const saved = process.env.ESPEAK_DATA_PATH;
    // Real espeak-ng pointed at an empty data directory (a missing one makes it fall back to the default).
    const emptyDir = await mkdtemp(join(tmpdir(), 'espeak-data-'));
    process.env.ESPEAK_DATA_PATH = emptyDir;
    try {
      const error = await collect(synth.synthesize({ text: 'hello', voice: 'en-us', format: 'mp3', speed: 1 })).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(SynthesisError);
      expect(error).not.toBeInstanceOf(SpeechInputError);
      expect((error as Error).message).toMatch(/espeak-ng exited with code 1: .*phontab/);
    } finally {
      if (saved === undefined) delete process.env.ESPEAK_DATA_PATH;
      else process.env.ESPEAK_DATA_PATH = saved;
      await rm(emptyDir, { recursive: true, force: true });
    }
    expect(activeChildProcesses()).toHaveLength(0);
  });

  it('a missing program becomes a SynthesisError, not a crash', { timeout: 20_000 }, async () => {
    const saved = process.env.PATH;
    process.env.PATH = '/nonexistent-bin';
    try {
      const error = await collect(synth.synthesize({ text: 'hello', voice: 'en-us', format: 'flac', speed: 1 })).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(SynthesisError);
      expect((error as Error).message).toMatch(/could not be started.*ENOENT/);
    } finally {
      process.env.PATH = saved;
    }
    expect(activeChildProcesses()).toHaveLength(0);
  });

  it('the time limit kills a long synthesis', { timeout: 30_000 }, async () => {
    synth = new Synthesizer({ maxConcurrency: 2, synthTimeoutMs: 150 });
    let pids: number[] = [];
    const error = await (async () => {
      for await (const _chunk of synth.synthesize({ text: textOfLength(4000), voice: 'en-us', format: 'aac', speed: 0.25 })) {
        if (pids.length === 0) pids = activeChildProcesses().map((p) => p.pid!);
      }
    })().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(SynthesisTimeoutError);
    await expectNoChildrenLeft(pids);
  });
});

describe('synthesize: concurrency cap', () => {
  it('queues pipelines beyond the cap instead of starting them', { timeout: 60_000 }, async () => {
    synth = new Synthesizer({ maxConcurrency: 1, synthTimeoutMs: 60_000 });
    let maxChildren = 0;
    let maxActive = 0;
    const watch = setInterval(() => {
      maxChildren = Math.max(maxChildren, activeChildProcesses().length);
      maxActive = Math.max(maxActive, synth.load().active);
    }, 2);
    const order: number[] = [];
    try {
      await Promise.all(
        [0, 1, 2, 3].map(async (i) => {
          await collect(synth.synthesize({ text: SENTENCE_200, voice: 'en-us', format: 'mp3', speed: 1 }));
          order.push(i);
        }),
      );
    } finally {
      clearInterval(watch);
    }
    expect(maxChildren).toBeLessThanOrEqual(2); // one espeak-ng + one ffmpeg
    expect(maxActive).toBe(1);
    expect(order).toEqual([0, 1, 2, 3]); // FIFO
  });
});
