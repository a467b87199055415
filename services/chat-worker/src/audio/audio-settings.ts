import { z } from 'zod';

/**
 * The audio settings, stored with the other chat settings (config/settings.ts spreads them in) under
 * the names of the environment variables Open WebUI reads for them, which seed them until an admin
 * saves the Audio page. Open WebUI's TTS engine '' is the browser's own speech; here the default is
 * `gatehouse`, this platform's speech gateway over the bus. Its STT engine '' is a local Whisper
 * model this platform does not have, so '' means no transcription engine.
 */
export const AUDIO_SETTINGS = {
  AUDIO_TTS_ENGINE: z.string().default('gatehouse'),
  AUDIO_TTS_MODEL: z.string().default('tts-1'),
  AUDIO_TTS_VOICE: z.string().default('alloy'),
  AUDIO_TTS_OPENAI_API_BASE_URL: z.string().default('https://api.openai.com/v1'),
  AUDIO_TTS_OPENAI_API_KEY: z.string().default(''),
  AUDIO_TTS_API_KEY: z.string().default(''),
  AUDIO_TTS_SPLIT_ON: z.string().default('punctuation'),
  AUDIO_TTS_AZURE_SPEECH_REGION: z.string().default('eastus'),
  AUDIO_TTS_AZURE_SPEECH_OUTPUT_FORMAT: z.string().default('audio-24khz-160kbitrate-mono-mp3'),
  AUDIO_STT_ENGINE: z.string().default(''),
  AUDIO_STT_MODEL: z.string().default(''),
  AUDIO_STT_OPENAI_API_BASE_URL: z.string().default('https://api.openai.com/v1'),
  AUDIO_STT_OPENAI_API_KEY: z.string().default(''),
  WHISPER_MODEL: z.string().default('base'),
  DEEPGRAM_API_KEY: z.string().default(''),
};

export type AudioSettingKey = keyof typeof AUDIO_SETTINGS;
export const AUDIO_ENV_SEEDS = Object.keys(AUDIO_SETTINGS) as AudioSettingKey[];
