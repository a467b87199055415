import type { Readable } from 'node:stream';
import { BusError } from '@gatehouse/common';
import { fail, me, now, ok, opTable, type OpContext } from '../context.ts';
import { saveSettings, type ChatSettings } from '../config/settings.ts';
import { deleteObject, readObject, replyWithBytes } from '../knowledge/object-reply.ts';
import type { AudioSettingKey } from './audio-settings.ts';
import { openaiModels, openaiSpeech, openaiTranscription, openaiVoices, type OpenAIEndpoint } from './openai-engine.ts';
import { modelsOverBus, synthesizeOverBus, voicesOverBus } from './speech-client.ts';

/**
 * Open WebUI 0.10.2's audio router (/api/v1/audio): read-aloud through the configured TTS engine —
 * `gatehouse` (default: this platform's speech gateway over the bus) or `openai` (another
 * OpenAI-compatible server) — transcription through an OpenAI-compatible STT server, the engines'
 * voices and models, and the admin's config of both. Settings live with the chat settings
 * (audio-settings.ts), so a change applies to the next request on every replica.
 */

/** Open WebUI's MAX_FILE_SIZE for transcriptions. */
const MAX_TRANSCRIPTION_BYTES = 25 * 1024 * 1024;
/** Open WebUI's default STT_SUPPORTED_CONTENT_TYPES: any audio, and a browser recording's webm. */
const supportedAudio = (type: string | null): boolean => !!type && (/^audio\//i.test(type) || /^video\/webm\b/i.test(type));
const FILE_NOT_SUPPORTED = "Oops! It seems like the file format you're trying to upload is not supported. Please upload a file with a supported format and try again.";
/**
 * Open WebUI's ERROR_MESSAGES.DEFAULT(err), `[ERROR: <err>]`: how its transcription route words every
 * failure. (The bus worker puts an error's message on one line: it travels in a header.)
 */
const defaultError = (message: string) => `[ERROR: ${message}]`;
export const NO_STT_ENGINE = 'No speech-to-text engine is configured. An admin can set one in Admin Settings → Audio.';

type S = ChatSettings;

function audioConfig(s: S) {
  return {
    tts: {
      OPENAI_API_BASE_URL: s.AUDIO_TTS_OPENAI_API_BASE_URL,
      OPENAI_API_KEY: s.AUDIO_TTS_OPENAI_API_KEY,
      API_KEY: s.AUDIO_TTS_API_KEY,
      ENGINE: s.AUDIO_TTS_ENGINE,
      MODEL: s.AUDIO_TTS_MODEL,
      VOICE: s.AUDIO_TTS_VOICE,
      SPLIT_ON: s.AUDIO_TTS_SPLIT_ON,
      AZURE_SPEECH_REGION: s.AUDIO_TTS_AZURE_SPEECH_REGION,
      AZURE_SPEECH_OUTPUT_FORMAT: s.AUDIO_TTS_AZURE_SPEECH_OUTPUT_FORMAT,
    },
    stt: {
      OPENAI_API_BASE_URL: s.AUDIO_STT_OPENAI_API_BASE_URL,
      OPENAI_API_KEY: s.AUDIO_STT_OPENAI_API_KEY,
      ENGINE: s.AUDIO_STT_ENGINE,
      MODEL: s.AUDIO_STT_MODEL,
      WHISPER_MODEL: s.WHISPER_MODEL,
      DEEPGRAM_API_KEY: s.DEEPGRAM_API_KEY,
    },
  };
}

const ttsEndpoint = (s: S): OpenAIEndpoint => ({ baseUrl: s.AUDIO_TTS_OPENAI_API_BASE_URL, key: s.AUDIO_TTS_OPENAI_API_KEY });
const sttEndpoint = (s: S): OpenAIEndpoint => ({ baseUrl: s.AUDIO_STT_OPENAI_API_BASE_URL, key: s.AUDIO_STT_OPENAI_API_KEY });

/** The engines this platform speaks with; any other stored name (elevenlabs, azure…) is refused plainly. */
function unsupportedTts(engine: string): never {
  if (engine === '') fail(400, "The text-to-speech engine is the browser's own (ENGINE ''): the server has no audio to send.");
  fail(400, `The text-to-speech engine '${engine.slice(0, 100)}' is not available on this server; choose 'gatehouse' or 'openai'.`);
}

async function speech(ctx: OpContext, body: Record<string, unknown>): Promise<{ contentType: string; audio: Readable }> {
  const s = await ctx.settings();
  if (typeof body.input !== 'string' || body.input.trim() === '') fail(400, 'input must not be empty');
  const voice = typeof body.voice === 'object' && body.voice ? (body.voice as { id: string }).id : body.voice;
  // Open WebUI sends the configured model whatever the client named; the client's voice wins when it gave one.
  const payload = { ...body, model: s.AUDIO_TTS_MODEL || body.model || 'tts-1', voice: voice || s.AUDIO_TTS_VOICE || 'alloy' };
  switch (s.AUDIO_TTS_ENGINE) {
    case 'gatehouse':
      return synthesizeOverBus(ctx.blobs.bus, payload, ctx.trace);
    case 'openai':
      return openaiSpeech(ttsEndpoint(s), payload);
    default:
      return unsupportedTts(s.AUDIO_TTS_ENGINE);
  }
}

async function readUpload(ctx: OpContext, object: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of await readObject(ctx.blobs.bus, object)) {
    size += (chunk as Buffer).length;
    if (size > MAX_TRANSCRIPTION_BYTES) fail(400, defaultError(`The file is too large; the limit is ${MAX_TRANSCRIPTION_BYTES / 1024 / 1024}MB.`));
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts);
}

export const audioOps = opTable({
  'audio.config.get': async (_req, ctx) => ok(audioConfig(await ctx.settings())),

  'audio.config.update': async (req, ctx) => {
    const { tts, stt } = req.body;
    const after: Partial<Record<AudioSettingKey, string>> = {
      AUDIO_TTS_OPENAI_API_BASE_URL: tts.OPENAI_API_BASE_URL,
      AUDIO_TTS_OPENAI_API_KEY: tts.OPENAI_API_KEY,
      AUDIO_TTS_API_KEY: tts.API_KEY,
      AUDIO_TTS_ENGINE: tts.ENGINE,
      AUDIO_TTS_MODEL: tts.MODEL,
      AUDIO_TTS_VOICE: tts.VOICE,
      AUDIO_TTS_SPLIT_ON: tts.SPLIT_ON,
      AUDIO_TTS_AZURE_SPEECH_REGION: tts.AZURE_SPEECH_REGION,
      AUDIO_TTS_AZURE_SPEECH_OUTPUT_FORMAT: tts.AZURE_SPEECH_OUTPUT_FORMAT,
      AUDIO_STT_OPENAI_API_BASE_URL: stt.OPENAI_API_BASE_URL,
      AUDIO_STT_OPENAI_API_KEY: stt.OPENAI_API_KEY,
      AUDIO_STT_ENGINE: stt.ENGINE,
      AUDIO_STT_MODEL: stt.MODEL,
      WHISPER_MODEL: stt.WHISPER_MODEL,
      DEEPGRAM_API_KEY: stt.DEEPGRAM_API_KEY,
    };
    const before = await ctx.settings();
    const changed = (Object.keys(after) as AudioSettingKey[]).filter((k) => after[k] !== before[k]);
    if (changed.length) {
      await ctx.sql.begin(async (tx) => {
        await saveSettings(tx, Object.fromEntries(changed.map((k) => [k, after[k]])), now(), ctx.saved);
        // Key names only: the values may be API keys.
        await ctx.emit(tx, 'config.updated', { actor: me(ctx), subject: { type: 'config', id: 'audio' }, data: { keys: changed } });
      });
    }
    return ok(audioConfig({ ...before, ...after } as S));
  },

  'audio.speech': async (req, ctx) => {
    const { contentType, audio } = await speech(ctx, req.body as Record<string, unknown>);
    return replyWithBytes(ctx.blobs.bus, audio, { contentType });
  },

  'audio.transcriptions': async (req, ctx) => {
    const f = req.body;
    try {
      if (!supportedAudio(f.content_type)) fail(400, FILE_NOT_SUPPORTED);
      const s = await ctx.settings();
      if (s.AUDIO_STT_ENGINE !== 'openai') {
        fail(400, defaultError(s.AUDIO_STT_ENGINE === '' ? NO_STT_ENGINE : `The speech-to-text engine '${s.AUDIO_STT_ENGINE.slice(0, 100)}' is not available on this server; choose 'openai'.`));
      }
      const bytes = await readUpload(ctx, f.object);
      try {
        const data = await openaiTranscription(sttEndpoint(s), { bytes, filename: f.filename || 'audio', contentType: f.content_type ?? 'application/octet-stream' }, s.AUDIO_STT_MODEL || 'whisper-1');
        return ok({ ...data, text: String(data.text), filename: f.filename });
      } catch (err) {
        // Open WebUI answers every transcription failure as its 400 with the reason.
        if (err instanceof BusError) fail(400, defaultError(err.message));
        throw err;
      }
    } finally {
      await deleteObject(ctx.blobs.bus, f.object);
    }
  },

  'audio.models': async (_req, ctx) => {
    const s = await ctx.settings();
    if (s.AUDIO_TTS_ENGINE === 'gatehouse') return ok({ models: await modelsOverBus(ctx.blobs.bus, ctx.trace) });
    if (s.AUDIO_TTS_ENGINE === 'openai') return ok({ models: await openaiModels(ttsEndpoint(s)) });
    return ok({ models: [] });
  },

  'audio.voices': async (_req, ctx) => {
    const s = await ctx.settings();
    if (s.AUDIO_TTS_ENGINE === 'gatehouse') return ok({ voices: await voicesOverBus(ctx.blobs.bus, ctx.trace) });
    if (s.AUDIO_TTS_ENGINE === 'openai') return ok({ voices: await openaiVoices(ttsEndpoint(s)) });
    return ok({ voices: [] });
  },
});
