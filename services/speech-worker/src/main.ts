import { z } from 'zod';
import { SPEECH_CATALOG } from '@gatehouse/contracts';
import { BusError, connectBus, createLogger, DEFAULT_NATS_URL, parseEnv, serveCatalog, serveUntilSignalled, startWorker, serveMetricsFromEnv } from '@gatehouse/common';
import {
  contentTypeFor,
  listModels,
  listVoices,
  parseEngineConfig,
  resolveVoice,
  SpeechInputError,
  SynthesisTimeoutError,
  synthesizeUpstream,
  Synthesizer,
  UpstreamError,
} from './engine/index.ts';

/**
 * Speech worker: a NATS service in queue group `speech`. Run N copies to share the load; each
 * runs espeak-ng + ffmpeg per request (the engine caps its own concurrency and keeps a few of them
 * started ahead of time).
 */
const env = parseEnv(
  // Read once, here: the engine's variables (SPEECH_*, and the upstream keys they name) are checked
  // with the rest, and the synthesizer gets its limits from this, never from process.env itself.
  z.looseObject({ NATS_URL: z.string().default(DEFAULT_NATS_URL) }).transform((e, ctx) => {
    try {
      return { NATS_URL: e.NATS_URL, engine: parseEngineConfig(e as NodeJS.ProcessEnv) };
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  }),
);
const log = createLogger('speech-worker');
// Prometheus metrics on METRICS_PORT when set (common/src/metrics.ts).
await serveMetricsFromEnv('speech-worker', log);
const { engine } = env;
const models = listModels(engine);
const synth = new Synthesizer(engine);

const bus = await connectBus({ url: env.NATS_URL, name: 'speech-worker', log });
const worker = await startWorker(bus, { name: 'speech', version: '1.0.0', description: 'OpenAI-compatible text-to-speech' });

// OpenAI: "sse is not supported for tts-1 or tts-1-hd".
const NO_SSE = new Set(['tts-1', 'tts-1-hd']);

serveCatalog(worker, SPEECH_CATALOG, {
  listModels: async () => ({
    object: 'list' as const,
    data: models.map((m) => ({ id: m.id, object: 'model' as const, created: m.created, owned_by: m.owned_by })),
  }),

  listVoices: async () => ({
    voices: (await listVoices()).map((v) => ({ id: v.id, name: v.name, ...(v.language ? { language: v.language } : {}) })),
  }),

  synthesize: async (req, out, ctx) => {
    const model = models.find((m) => m.id === req.model);
    if (!model) {
      throw new BusError(400, `Model '${req.model}' is not available. Available models: ${models.map((m) => m.id).join(', ')}.`, {
        param: 'model',
        code: 'model_not_found',
      });
    }
    if (req.stream_format === 'sse' && NO_SSE.has(model.id)) {
      throw new BusError(400, `stream_format 'sse' is not supported for ${model.id}.`, { param: 'stream_format', code: 'invalid_value' });
    }
    const usage = { input_tokens: Math.ceil(req.input.length / 4), output_tokens: 0, total_tokens: Math.ceil(req.input.length / 4) };
    let bytes = 0;

    if (model.engine === 'upstream') {
      const upstream = engine.upstreams.get(model.id);
      if (!upstream) throw new BusError(500, `model ${model.id} has no upstream configuration`);
      try {
        const res = await synthesizeUpstream(upstream, req, ctx.signal);
        out.meta({ contentType: res.contentType, format: req.response_format, engine: 'upstream' });
        for await (const buf of res.body) {
          out.chunk(buf);
          bytes += buf.byteLength;
        }
      } catch (err) {
        if (err instanceof UpstreamError) throw new BusError(err.status >= 500 ? 502 : err.status, err.message, { code: 'upstream_error' });
        throw err;
      }
      out.end({ bytes, usage });
      return;
    }

    const voice = await resolveVoice(req.voice);
    if (!voice) {
      throw new BusError(400, `Voice '${req.voice}' is not available. GET /v1/audio/voices lists the voices.`, {
        param: 'voice',
        code: 'invalid_value',
      });
    }
    const audio = synth.synthesize({ text: req.input, voice, format: req.response_format, speed: req.speed, signal: ctx.signal })[
      Symbol.asyncIterator
    ]();
    try {
      // The engine reports bad input from its first step: take it before answering with meta, so a
      // client mistake is still a plain 400 and not a broken audio stream.
      let next = await audio.next();
      out.meta({ contentType: contentTypeFor(req.response_format), format: req.response_format, engine: 'espeak-ng' });
      for (; !next.done; next = await audio.next()) {
        out.chunk(next.value);
        bytes += next.value.byteLength;
      }
    } catch (err) {
      if (err instanceof SpeechInputError) throw new BusError(400, err.message, { param: err.param, code: 'invalid_value' });
      if (err instanceof SynthesisTimeoutError) throw new BusError(504, err.message, { code: 'synthesis_timeout' });
      throw err;
    } finally {
      await audio.return?.();
    }
    out.end({ bytes, usage });
  },
});

await serveUntilSignalled(bus, worker, 'speech worker', { models: models.map((m) => m.id), warmProcesses: engine.warmProcesses }, async () => synth.close());
