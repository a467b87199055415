import type { CommandLine } from './warm-pool.ts';

export const ESPEAK_BIN = 'espeak-ng';
/** What `espeak-ng --stdout` writes: a WAV header of this size, then s16le mono PCM at this rate. */
export const ESPEAK_HEADER_BYTES = 44;
export const ESPEAK_SAMPLE_RATE = 22050;

/**
 * argv for one synthesis. Text is written to stdin, never passed as an argument, so it can never be read as
 * an option ("-v xx" in the input is spoken). No `-m`: SSML stays off, markup is read as text.
 * `-b 1` pins the input encoding to UTF-8 whatever the locale.
 */
export function espeakArgs(voice: string, wpm: number): string[] {
  return ['--stdout', '-b', '1', '-v', voice, '-s', String(wpm)];
}

/**
 * The espeak-ng process for one voice and rate; the text goes to its stdin, and its stdout is a WAV stream
 * that ffmpeg reads straight from the pipe (encoder.ts).
 */
export function espeakCommand(voice: string, wpm: number): CommandLine {
  return { label: 'espeak-ng', command: ESPEAK_BIN, args: espeakArgs(voice, wpm) };
}
