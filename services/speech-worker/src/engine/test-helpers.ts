// Shared by the *.test.ts files beside it: real ffprobe/ffmpeg checks of what the engine produced.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AudioFormat } from './formats.ts';

const run = promisify(execFile);

/** 200 characters of plain English. */
export const SENTENCE_200 =
  'The quick brown fox jumps over the lazy dog while five boxing wizards jump quickly. ' +
  'Pack my box with five dozen liquor jugs, then watch the sun set slowly below the hills as we walk home together, ok.';

export function textOfLength(chars: number): string {
  let text = '';
  for (let i = 0; text.length < chars; i++) text += (i ? ' ' : '') + SENTENCE_200;
  return text.slice(0, chars);
}

export async function collect(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

export interface Probe {
  codec: string;
  sampleRate: number;
  channels: number;
  formatName: string;
  /** What ffprobe reports from the container; undefined when it cannot tell (streamed FLAC has no length). */
  duration: number | undefined;
  /** Length of the audio after a full decode: the ground truth for every format. */
  decodedSeconds: number;
}

const RAW_INPUT = ['-f', 's16le', '-ar', '24000', '-ac', '1'];

/** ffprobe + full ffmpeg decode of `audio`, written to a temp file (raw pcm is described to both). */
export async function probe(audio: Buffer, format: AudioFormat): Promise<Probe> {
  const dir = await mkdtemp(join(tmpdir(), 'speech-probe-'));
  try {
    const file = join(dir, `out.${format === 'pcm' ? 'raw' : format}`);
    await writeFile(file, audio);
    const raw = format === 'pcm' ? RAW_INPUT : [];
    const { stdout } = await run(
      'ffprobe',
      ['-v', 'error', ...raw, '-show_entries', 'stream=codec_name,sample_rate,channels', '-show_entries', 'format=format_name,duration', '-of', 'json', file],
      { timeout: 20_000 },
    );
    const info = JSON.parse(stdout) as {
      streams: { codec_name: string; sample_rate: string; channels: number }[];
      format: { format_name: string; duration?: string };
    };
    const stream = info.streams[0];
    if (!stream || info.streams.length !== 1) throw new Error(`expected one audio stream, got ${stdout}`);
    // Decoding the whole file proves it is valid end to end and gives an exact length.
    const decoded = await run('ffmpeg', ['-v', 'error', ...raw, '-i', file, '-f', 's16le', '-ac', '1', '-ar', '24000', 'pipe:1'], {
      timeout: 30_000,
      encoding: 'buffer',
      maxBuffer: 256 * 1024 * 1024,
    });
    if (decoded.stderr.length > 0) throw new Error(`ffmpeg decode reported: ${decoded.stderr.toString()}`);
    return {
      codec: stream.codec_name,
      sampleRate: Number(stream.sample_rate),
      channels: stream.channels,
      formatName: info.format.format_name,
      duration: info.format.duration === undefined ? undefined : Number(info.format.duration),
      decodedSeconds: decoded.stdout.length / 2 / 24000,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The samples of an encoded file as s16le, decoded by ffmpeg from stdin. */
export async function decodeToS16le(audio: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = execFile('ffmpeg', ['-v', 'error', '-i', 'pipe:0', '-f', 's16le', 'pipe:1'], { encoding: 'buffer', maxBuffer: 256 * 1024 * 1024, timeout: 30_000 }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    );
    child.stdin!.end(audio);
  });
}

/** The "input sample rate" field of an Ogg Opus OpusHead packet (decoders always run Opus at 48 kHz). */
export function opusInputSampleRate(ogg: Buffer): number {
  const at = ogg.indexOf('OpusHead');
  if (at < 0) throw new Error('no OpusHead packet');
  return ogg.readUInt32LE(at + 12);
}

/** True while the kernel still has a process entry (running or zombie) for `pid`. */
export async function processExists(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Polls `check` every 20 ms for at most `ms`; returns its last answer. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 5000): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
