import type { CommandLine } from './warm-pool.ts';
import { ESPEAK_HEADER_BYTES, ESPEAK_SAMPLE_RATE } from './espeak.ts';
import { OUTPUT_SAMPLE_RATE, type AudioFormat } from './formats.ts';

export const FFMPEG_BIN = 'ffmpeg';

// Per-format codec and container. Every muxer here can write to a pipe without seeking back, so the
// output is one valid stream from its first byte. wav is produced as raw PCM: its header is added by
// the engine once the real size is known (see wav.ts).
const OUTPUT_ARGS: Record<AudioFormat, readonly string[]> = {
  mp3: ['-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3'],
  opus: ['-c:a', 'libopus', '-b:a', '32k', '-f', 'ogg'],
  aac: ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'],
  flac: ['-c:a', 'flac', '-f', 'flac'],
  wav: ['-c:a', 'pcm_s16le', '-f', 's16le'],
  pcm: ['-c:a', 'pcm_s16le', '-f', 's16le'],
};

/** The pipe that carries flac's samples a second time, for its header (see flac.ts). */
export const FLAC_PCM_FD = 3;

/**
 * argv that turns espeak's WAV stream on stdin into `format` at 24 kHz mono on stdout: its 44-byte header
 * is skipped (on a pipe its sizes are placeholders) and the rest read as the raw PCM it is. (`-f wav`
 * gives the same bytes, but its first output comes 50–60 ms later: the wav demuxer reads further ahead.)
 * For flac, the same samples (same filters, same deterministic resampler) also go to fd 3 as raw s16le.
 */
export function ffmpegArgs(format: AudioFormat, atempo: readonly number[]): string[] {
  const filters = atempo.map((factor) => `atempo=${factor}`);
  const resample = [...(filters.length > 0 ? ['-af', filters.join(',')] : []), '-ar', String(OUTPUT_SAMPLE_RATE), '-ac', '1'];
  return [
    '-hide_banner', '-loglevel', 'error', '-nostats',
    '-skip_initial_bytes', String(ESPEAK_HEADER_BYTES), '-f', 's16le', '-ar', String(ESPEAK_SAMPLE_RATE), '-ac', '1', '-i', 'pipe:0',
    ...resample,
    // No encoder/tool tags: clients get audio, not our ffmpeg version.
    '-map_metadata', '-1',
    ...OUTPUT_ARGS[format],
    // Hand every muxed packet to the pipe at once instead of filling an I/O buffer first: earlier first bytes.
    '-flush_packets', '1',
    'pipe:1',
    ...(format === 'flac' ? [...resample, ...OUTPUT_ARGS.pcm, `pipe:${FLAC_PCM_FD}`] : []),
  ];
}

export function encoderCommand(format: AudioFormat, atempo: readonly number[]): CommandLine {
  return {
    label: 'ffmpeg',
    command: FFMPEG_BIN,
    args: ffmpegArgs(format, atempo),
    ...(format === 'flac' ? { options: { extraOutputs: FLAC_PCM_FD - 2 } } : {}),
  };
}
