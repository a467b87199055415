import type { CommandLine } from './warm-pool.ts';

export const ESPEAK_BIN = 'espeak-ng';

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
 * (s16le mono 22050 Hz; on a pipe its RIFF/data sizes are placeholders) that ffmpeg reads (encoder.ts).
 */
export function espeakCommand(voice: string, wpm: number): CommandLine {
  return { label: 'espeak-ng', command: ESPEAK_BIN, args: espeakArgs(voice, wpm) };
}
