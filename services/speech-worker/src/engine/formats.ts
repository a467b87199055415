/** The six `response_format` values of OpenAI's POST /v1/audio/speech. */
export type AudioFormat = 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';

export const AUDIO_FORMATS: readonly AudioFormat[] = Object.freeze(['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm']);

/** Every format leaves the engine at OpenAI's rate, so `pcm` means the same thing as upstream OpenAI. */
export const OUTPUT_SAMPLE_RATE = 24000;

const CONTENT_TYPES: Record<AudioFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus', // Ogg-encapsulated Opus, as OpenAI serves it
  aac: 'audio/aac', // ADTS stream, the only AAC framing that can be streamed without a seekable muxer
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm', // raw s16le, 24 kHz, mono, no header
};

export function isAudioFormat(value: unknown): value is AudioFormat {
  return typeof value === 'string' && (AUDIO_FORMATS as readonly string[]).includes(value);
}

export function contentTypeFor(format: AudioFormat): string {
  return CONTENT_TYPES[format];
}
