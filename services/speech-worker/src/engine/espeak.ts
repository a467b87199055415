import { Transform, type TransformCallback } from 'node:stream';
import type { CommandLine } from './warm-pool.ts';

export const ESPEAK_BIN = 'espeak-ng';
/** What `espeak-ng --stdout` produces after its header: s16le mono at this rate. */
export const ESPEAK_SAMPLE_RATE = 22050;
const WAV_HEADER_BYTES = 44;

/**
 * argv for one synthesis. Text is written to stdin, never passed as an argument, so it can never be read as
 * an option ("-v xx" in the input is spoken). No `-m`: SSML stays off, markup is read as text.
 * `-b 1` pins the input encoding to UTF-8 whatever the locale.
 */
export function espeakArgs(voice: string, wpm: number): string[] {
  return ['--stdout', '-b', '1', '-v', voice, '-s', String(wpm)];
}

/** The espeak-ng process for one voice and rate; the text goes to its stdin, and its stdout is a WAV stream (see {@link stripWavHeader}). */
export function espeakCommand(voice: string, wpm: number): CommandLine {
  return { label: 'espeak-ng', command: ESPEAK_BIN, args: espeakArgs(voice, wpm) };
}

/**
 * Drops espeak's 44-byte WAV header. Its RIFF/data sizes are placeholders (0x7FFFF024/0x7FFFF000) because
 * espeak writes to a pipe, so the header is useless; everything after it is raw s16le 22050 Hz mono.
 * Checks the "RIFF" magic so that a changed espeak output format fails loudly instead of as noise.
 */
export function stripWavHeader(): Transform {
  let header: Buffer | null = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      if (header === null) return callback(null, chunk);
      header = Buffer.concat([header, chunk]);
      if (header.length < WAV_HEADER_BYTES) return callback();
      if (header.toString('ascii', 0, 4) !== 'RIFF') {
        return callback(new Error('espeak-ng output does not start with a RIFF header'));
      }
      const rest = header.subarray(WAV_HEADER_BYTES);
      header = null;
      callback(null, rest.length > 0 ? rest : undefined);
    },
  });
}
