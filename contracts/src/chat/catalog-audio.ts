import { z } from 'zod';
import { catalog, GET, POST } from './catalog-kit.ts';
import * as F from './forms.ts';
import * as R from './replies.ts';

/**
 * The chat platform's audio (Open WebUI 0.10.2's routers/audio.py under /api/v1/audio), spread into
 * CHAT_CATALOG (catalog.ts). Read-aloud is bytes (`R.Bytes`: the worker streams the audio into the
 * object store and the edge sends it with its content type); a transcription is the edge's multipart
 * `upload` duty (the `file` part streamed into the object store, the worker gets `FileUploadForm`).
 * The default speech engine is this platform's own speech gateway, reached by the chat worker over
 * the bus (services/chat-worker/src/audio/speech-client.ts; docs/chat.md says why its gate does not apply).
 */

/** Open WebUI's TTSConfigForm: the engine's keys; the ones this platform has no engine for are kept as given. */
export const TtsConfig = z.object({
  OPENAI_API_BASE_URL: z.string(),
  OPENAI_API_KEY: z.string(),
  API_KEY: z.string().default(''),
  ENGINE: z.string(),
  MODEL: z.string(),
  VOICE: z.string(),
  SPLIT_ON: z.string().default('punctuation'),
  AZURE_SPEECH_REGION: z.string().default(''),
  AZURE_SPEECH_OUTPUT_FORMAT: z.string().default(''),
});
/** Open WebUI's STTConfigForm. ENGINE '' is Open WebUI's local Whisper, which this platform does not have: no engine. */
export const SttConfig = z.object({
  OPENAI_API_BASE_URL: z.string(),
  OPENAI_API_KEY: z.string(),
  ENGINE: z.string(),
  MODEL: z.string(),
  WHISPER_MODEL: z.string().default('base'),
  DEEPGRAM_API_KEY: z.string().default(''),
});
/** `POST /config/update`: both sections, as Open WebUI's AudioConfigUpdateForm. */
export const AudioConfigForm = z.object({ tts: TtsConfig, stt: SttConfig });
export const AudioConfig = z.object({ tts: TtsConfig, stt: SttConfig });

/**
 * `POST /speech`: OpenAI's speech body. Open WebUI reads it as raw JSON and forwards it, so every
 * field but `input` is optional here (the configured model and voice fill the gaps) and extras pass.
 */
export const AudioSpeechForm = z
  .object({
    input: z.string(),
    model: z.string().optional(),
    voice: z.union([z.string(), z.object({ id: z.string() }).loose()]).optional(),
    response_format: z.string().optional(),
    speed: z.number().optional(),
    instructions: z.string().optional(),
  })
  .loose();

export const AudioVoices = z.object({ voices: z.array(z.object({ id: z.string(), name: z.string() })) });
export const AudioModels = z.object({ models: z.array(z.object({ id: z.string() }).loose()) });
/** The transcription endpoint's JSON (at least `text`), as Open WebUI answers it, with the stored file's name. */
export const AudioTranscription = z.object({ text: z.string() }).loose();

export const AUDIO_OPS = catalog({
  'audio.config.get': { subject: 'chat.audio.config.get', routes: [GET('/api/v1/audio/config')], reply: AudioConfig, auth: 'admin', events: [] },
  'audio.config.update': {
    subject: 'chat.audio.config.update',
    routes: [POST('/api/v1/audio/config/update')],
    body: AudioConfigForm,
    reply: AudioConfig,
    auth: 'admin',
    events: ['config.updated'],
  },
  'audio.speech': { subject: 'chat.audio.speech', routes: [POST('/api/v1/audio/speech')], body: AudioSpeechForm, reply: R.Bytes, auth: 'verified', events: [] },
  'audio.transcriptions': {
    subject: 'chat.audio.transcriptions',
    routes: [POST('/api/v1/audio/transcriptions')],
    body: F.FileUploadForm,
    reply: AudioTranscription,
    auth: 'verified',
    events: [],
    edge: { handler: 'upload' },
  },
  'audio.models': { subject: 'chat.audio.models', routes: [GET('/api/v1/audio/models')], reply: AudioModels, auth: 'verified', events: [] },
  'audio.voices': { subject: 'chat.audio.voices', routes: [GET('/api/v1/audio/voices')], reply: AudioVoices, auth: 'verified', events: [] },
});
