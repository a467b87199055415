import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { SpeechRequest, speechContracts } from '@gatehouse/contracts';
import { busRequest, busStream, BusError, type Bus } from '@gatehouse/common';
import { openaiError } from './openai-errors.ts';

export interface SpeechRouteDeps {
  /** The bus, or undefined while NATS is not connected (requests then get 503). */
  bus: () => Bus | undefined;
  /** Longest silence allowed between two frames of a synthesis stream. */
  streamIdleMs: number;
}

function busOr503(deps: SpeechRouteDeps): Bus {
  const bus = deps.bus();
  if (!bus) throw new BusError(503, 'the speech gateway is not connected to its bus; try again shortly');
  return bus;
}

export function speechRoutes(app: FastifyInstance, deps: SpeechRouteDeps): void {
  app.get('/v1/models', async (req) => busRequest(busOr503(deps), speechContracts.listModels, {}, { requestId: req.id }));

  app.get<{ Params: { id: string } }>('/v1/models/:id', async (req, reply) => {
    const list = await busRequest(busOr503(deps), speechContracts.listModels, {}, { requestId: req.id });
    const model = list.data.find((m) => m.id === req.params.id);
    if (model) return model;
    const e = openaiError(404, `The model '${req.params.id}' does not exist`, { param: 'model', code: 'model_not_found' });
    return reply.code(e.status).send(e.body);
  });

  app.get('/v1/audio/voices', async (req) => busRequest(busOr503(deps), speechContracts.listVoices, {}, { requestId: req.id }));

  app.post('/v1/audio/speech', async (req, reply) => {
    const parsed = SpeechRequest.safeParse(req.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const param = issue?.path.join('.') || null;
      const custom = issue?.code === 'custom' ? (issue.params as { code?: string } | undefined)?.code : undefined;
      const code = custom ?? 'invalid_value';
      const e = openaiError(400, issue?.message ?? 'Invalid request', { param, code });
      return reply.code(e.status).send(e.body);
    }
    const body = parsed.data;
    const frames = busStream(busOr503(deps), speechContracts.synthesize, body, {
      idleTimeoutMs: deps.streamIdleMs,
      signal: req.signal,
      requestId: req.id,
    });
    // Wait for the meta frame before answering, so a refusal from the worker (unknown voice…)
    // still becomes a proper JSON error rather than a broken audio stream.
    const first = await frames.next();
    if (first.done || first.value.kind !== 'meta') {
      await frames.return(undefined);
      throw new BusError(502, 'the speech worker answered without a content type');
    }
    const meta = first.value.meta;
    if (body.stream_format === 'sse') {
      reply.header('content-type', 'text/event-stream').header('cache-control', 'no-cache');
      return reply.send(Readable.from(sseEvents(frames)));
    }
    reply.header('content-type', meta.contentType);
    return reply.send(Readable.from(audioChunks(frames)));
  });
}

async function* audioChunks(frames: AsyncGenerator<{ kind: string; data?: Uint8Array }>): AsyncGenerator<Buffer> {
  for await (const f of frames) if (f.kind === 'chunk' && f.data) yield Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength);
}

/** OpenAI's speech SSE: `speech.audio.delta` with base64 audio, then `speech.audio.done` with usage. */
async function* sseEvents(
  frames: AsyncGenerator<{ kind: string; data?: Uint8Array; end?: { usage: unknown } }>,
): AsyncGenerator<string> {
  for await (const f of frames) {
    if (f.kind === 'chunk' && f.data) {
      yield `data: ${JSON.stringify({ type: 'speech.audio.delta', audio: Buffer.from(f.data).toString('base64') })}\n\n`;
    } else if (f.kind === 'end' && f.end) {
      yield `data: ${JSON.stringify({ type: 'speech.audio.done', usage: f.end.usage })}\n\n`;
    }
  }
}
