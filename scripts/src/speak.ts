import { readFileSync, writeFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';

/**
 * Client helper, as OpenAI text-to-speech clients do it: text in, audio file out, through the speech face
 * with the official OpenAI client. The key comes from TTS_GATEWAY_API_KEY, falling back to
 * TTSMODEL_API_KEY; with neither, no key is sent (an open gate needs none).
 */
const USAGE = `Usage: scripts/speak TEXT|- OUTFILE [--voice alloy] [--model tts-1] [--speed 1] [--url URL]
  The format follows OUTFILE's extension (mp3, opus, aac, flac, wav, pcm). "-" reads the text from standard input.
  Env: TTS_GATEWAY_API_KEY (else TTSMODEL_API_KEY), TTS_GATEWAY_URL (default http://127.0.0.1:\${TTS_GATEWAY_PORT:-8196})`;

const FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    voice: { type: 'string', default: 'alloy' },
    model: { type: 'string', default: 'tts-1' },
    speed: { type: 'string', default: '1' },
    url: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
const [textArg, out] = positionals;
if (values.help || !textArg || !out) {
  console.error(USAGE);
  process.exit(values.help ? 0 : 2);
}
const format = extname(out).slice(1).toLowerCase() as (typeof FORMATS)[number];
if (!FORMATS.includes(format)) {
  console.error(`speak: cannot tell the format from "${out}"; use one of .${FORMATS.join(', .')}`);
  process.exit(2);
}
const text = textArg === '-' ? readFileSync(0, 'utf8') : textArg;
const base = values.url ?? process.env.TTS_GATEWAY_URL ?? `http://127.0.0.1:${process.env.TTS_GATEWAY_PORT || 8196}`;
const apiKey = process.env.TTS_GATEWAY_API_KEY || process.env.TTSMODEL_API_KEY || 'no-key';

const client = new OpenAI({ baseURL: `${base.replace(/\/$/, '')}/v1`, apiKey, maxRetries: 1 });
try {
  const res = await client.audio.speech.create({
    model: values.model!,
    voice: values.voice as 'alloy',
    input: text,
    response_format: format,
    speed: Number(values.speed),
  });
  const audio = Buffer.from(await res.arrayBuffer());
  writeFileSync(out, audio);
  console.error(`speak: wrote ${audio.length} bytes of ${format} to ${out}`);
} catch (err) {
  if (err instanceof OpenAI.APIError) {
    console.error(`speak: ${err.status ?? ''} ${err.message}`);
    if (err.status === 401) console.error('speak: set TTS_GATEWAY_API_KEY (or TTSMODEL_API_KEY) to the speech key');
  } else console.error(`speak: ${(err as Error).message}`);
  process.exit(1);
}
