import { z } from 'zod';
import { requestContract, streamContract, type CatalogEntry } from './catalog.ts';

/** OpenAI's response formats; the worker's engine produces every one at 24 kHz mono. */
export const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

export const SPEECH_INPUT_MAX = 4096;

function charCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * `POST /v1/audio/speech` body, as OpenAI defines it. Unknown fields are dropped (clients such as
 * Open WebUI send extras). `voice` may also be the newer `{ id }` object form.
 */
export const SpeechRequest = z.object({
  model: z.string({ error: 'model is required and must be a string' }).min(1, 'model must not be empty'),
  // Lengths count characters (code points) as OpenAI does, not UTF-16 units: an emoji is one.
  input: z
    .string({ error: 'input is required and must be a string' })
    .refine((s) => s.trim().length > 0, 'input must not be empty')
    .refine((s) => charCount(s) <= SPEECH_INPUT_MAX, {
      error: (iss) =>
        `Expected a string with maximum length ${SPEECH_INPUT_MAX}, but got a string with length ${charCount(iss.input as string)} instead.`,
      params: { code: 'string_above_max_length' },
    }),
  voice: z
    .union([z.string().min(1), z.object({ id: z.string().min(1) }).transform((v) => v.id)], {
      error: 'voice is required: a voice name such as "alloy" or an object {"id": "..."}',
    })
    .pipe(z.string()),
  response_format: z
    .enum(SPEECH_FORMATS, { error: `response_format must be one of ${SPEECH_FORMATS.join(', ')}` })
    .default('mp3'),
  speed: z
    .number({ error: 'speed must be a number between 0.25 and 4.0' })
    .min(0.25, 'speed must be at least 0.25')
    .max(4, 'speed must be at most 4.0')
    .default(1),
  instructions: z
    .string()
    .refine((s) => charCount(s) <= SPEECH_INPUT_MAX, 'instructions must be at most 4096 characters')
    .optional(),
  stream_format: z.enum(['audio', 'sse'], { error: 'stream_format must be "audio" or "sse"' }).default('audio'),
});
export type SpeechRequest = z.infer<typeof SpeechRequest>;

export const SpeechStreamMeta = z.object({
  contentType: z.string(),
  format: z.enum(SPEECH_FORMATS),
  engine: z.enum(['espeak-ng', 'upstream']),
});

export const SpeechUsage = z.object({
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative(),
});

export const SpeechStreamEnd = z.object({
  bytes: z.number().int().nonnegative(),
  usage: SpeechUsage,
});

export const SpeechModel = z.object({
  id: z.string(),
  object: z.literal('model'),
  created: z.number().int(),
  owned_by: z.string(),
});

export const SpeechModelList = z.object({ object: z.literal('list'), data: z.array(SpeechModel) });

export const SpeechVoiceList = z.object({
  voices: z.array(z.object({ id: z.string(), name: z.string(), language: z.string().optional() })),
});

const Empty = z.object({}).strict();

/**
 * The speech face's catalog: operation → bus contract (subject written out in full), its HTTP
 * routes and the JSON body the edge validates. The edge registers its routes from it and the
 * speech worker's handler table is typed against it.
 */
export const SPEECH_CATALOG = {
  /** Streamed: meta (content type), audio chunks as produced, end (bytes, usage). */
  synthesize: {
    ...streamContract('speech.audio.synthesize', 1, SpeechRequest, SpeechStreamMeta, SpeechStreamEnd),
    routes: [{ method: 'POST', url: '/v1/audio/speech' }],
    body: SpeechRequest,
  },
  /** `/v1/models/:id` is the same list, filtered by the edge. */
  listModels: {
    ...requestContract('speech.models.list', 1, Empty, SpeechModelList),
    routes: [
      { method: 'GET', url: '/v1/models' },
      { method: 'GET', url: '/v1/models/:id' },
    ],
  },
  listVoices: { ...requestContract('speech.voices.list', 1, Empty, SpeechVoiceList), routes: [{ method: 'GET', url: '/v1/audio/voices' }] },
} as const satisfies Record<string, Omit<CatalogEntry, 'reply'>>;
