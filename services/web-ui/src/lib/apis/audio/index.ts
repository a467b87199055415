// /api/v1/audio: read-aloud (speech bytes), transcription, the engine's voices and models.
import { api, ApiError, authHeaders, request, type Body, type Reply } from '../client.ts';

export type AudioVoices = Reply<'audio.voices'>;
export type AudioConfig = Reply<'audio.config.get'>;

/** The audio of `input` (the configured engine and model; the voice when given). */
export async function synthesize(body: Body<'audio.speech'>, signal?: AbortSignal): Promise<Blob> {
  const res = await request('POST', '/api/v1/audio/speech', body, { signal, headers: { Accept: 'audio/*' } });
  return res.blob();
}

export const getVoices = (): Promise<AudioVoices> => api.get<AudioVoices>('/api/v1/audio/voices');
export const getAudioConfig = (): Promise<AudioConfig> => api.get<AudioConfig>('/api/v1/audio/config');

/** A recording as text (multipart `file`); throws ApiError with the server's detail (no STT engine: 400). */
export async function transcribe(file: Blob, filename: string): Promise<Reply<'audio.transcriptions'>> {
  const form = new FormData();
  form.append('file', file, filename);
  let res: Response;
  try {
    res = await fetch('/api/v1/audio/transcriptions', { method: 'POST', headers: authHeaders({ Accept: 'application/json' }), body: form, credentials: 'same-origin' });
  } catch {
    throw new ApiError(0, 'Network error: the server could not be reached');
  }
  const data = (await res.json().catch(() => null)) as { detail?: unknown; text?: string } | null;
  if (!res.ok) throw new ApiError(res.status, typeof data?.detail === 'string' ? data.detail : `Transcription failed (HTTP ${res.status})`);
  return data as Reply<'audio.transcriptions'>;
}
