import { Readable } from 'node:stream';
import type { FastifyInstance, RouteHandlerMethod } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { SPEECH_CATALOG, SpeechModel, SpeechModelList } from '@gatehouse/contracts';
import { busRequest, openBusStream, type Bus, type StreamFrame } from '@gatehouse/common';
import { catalogRouteSchema, type RouteDocs } from '../../kit/api-docs.ts';
import { bearerToken, callerOf, framesOf, holdSlot, readMeta, relayChunks, requireBus, withDeadline, type StreamSlots } from '../../kit/index.ts';
import { openaiError } from './openai-errors.ts';

export interface SpeechRouteDeps {
  /** The bus, or undefined while NATS is not connected (requests then get 503). */
  bus: () => Bus | undefined;
  /** Longest silence allowed between two frames of a synthesis stream. */
  streamIdleMs: number;
  /** SPEECH_MAX_STREAMS_PER_CLIENT: syntheses in progress per client (kit/stream-limits.ts); absent → no limit. */
  streamSlots?: StreamSlots;
  /** SPEECH_STREAM_MAX_DURATION_MS: longest total time of one synthesis; 0 → none. */
  streamMaxMs?: number;
}

type SpeechOp = keyof typeof SPEECH_CATALOG;

/** The speech face's routes, registered from SPEECH_CATALOG: one handler per operation, none missing. */
export function speechRoutes(app: FastifyInstance, deps: SpeechRouteDeps): void {
  const bus = requireBus(deps.bus, 'the speech gateway is not connected to its bus; try again shortly');

  const handlers: Record<SpeechOp, RouteHandlerMethod> = {
    listModels: async (req, reply) => {
      const list = await busRequest(bus(), SPEECH_CATALOG.listModels, {}, { trace: req.trace });
      const id = (req.params as { id?: string }).id;
      if (id === undefined) return list;
      const model = list.data.find((m) => m.id === id);
      if (model) return model;
      const e = openaiError(404, `The model '${id}' does not exist`, { param: 'model', code: 'model_not_found' });
      return reply.code(e.status).send(e.body);
    },

    listVoices: async (req) => busRequest(bus(), SPEECH_CATALOG.listVoices, {}, { trace: req.trace }),

    synthesize: async (req, reply) => {
      const parsed = SPEECH_CATALOG.synthesize.body.safeParse(req.body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const param = issue?.path.join('.') || null;
        const custom = issue?.code === 'custom' ? (issue.params as { code?: string } | undefined)?.code : undefined;
        const e = openaiError(400, issue?.message ?? 'Invalid request', { param, code: custom ?? 'invalid_value' });
        return reply.code(e.status).send(e.body);
      }
      const body = parsed.data;
      if (!(await holdSlot(deps.streamSlots, callerOf(bearerToken(req.headers.authorization), req.ip), reply))) {
        const e = openaiError(429, `This client already has ${deps.streamSlots!.limit} syntheses in progress, the most allowed at once; wait for one to finish.`, {
          type: 'requests',
          code: 'rate_limit_exceeded',
        });
        return reply.code(e.status).send(e.body);
      }
      const stream = withDeadline(
        openBusStream(bus(), SPEECH_CATALOG.synthesize, body, { idleTimeoutMs: deps.streamIdleMs, signal: req.gateSignal, trace: req.trace }),
        deps.streamMaxMs ?? 0,
      );
      const meta = await readMeta(stream, 'speech worker');
      // Audio has no in-band error: past its duration limit (or a worker gone) the connection is cut.
      const frames = framesOf(stream);
      if (body.stream_format === 'sse') {
        reply.header('content-type', 'text/event-stream').header('cache-control', 'no-cache');
        return reply.send(Readable.from(sseEvents(frames)));
      }
      reply.header('content-type', meta.contentType);
      return reply.send(relayChunks(frames));
    },
  };

  const routes = app.withTypeProvider<ZodTypeProvider>();
  for (const [op, entry] of Object.entries(SPEECH_CATALOG) as [SpeechOp, (typeof SPEECH_CATALOG)[SpeechOp]][]) {
    for (const route of entry.routes) {
      const body = 'body' in entry ? entry.body : undefined;
      routes.route({ method: route.method, url: route.url, schema: catalogRouteSchema(route, op, body), config: { docs: speechDocs(op, route.url) }, handler: handlers[op] });
    }
  }
}

/** What each route answers, for the face's OpenAPI document. */
function speechDocs(op: SpeechOp, url: string): RouteDocs {
  switch (op) {
    case 'synthesize':
      return {
        reply: {
          description: 'Audio, streamed as it is produced (wav is sent whole so its header sizes are right); `text/event-stream` with stream_format=sse',
          content: { 'audio/mpeg': { schema: { type: 'string', format: 'binary' } }, 'text/event-stream': { schema: { type: 'string' } } },
        },
        status: { 400: 'Invalid request (names the field in `param`)', 429: 'Too many syntheses in progress for this client' },
      };
    case 'listModels':
      return url.includes(':id') ? { reply: SpeechModel, status: { 404: 'No such model' } } : { reply: SpeechModelList };
    case 'listVoices':
      return { reply: SPEECH_CATALOG.listVoices.reply };
  }
}

/** OpenAI's speech SSE: `speech.audio.delta` with base64 audio, then `speech.audio.done` with usage. */
async function* sseEvents<M>(frames: AsyncIterable<StreamFrame<M, { usage: unknown }>>): AsyncGenerator<string> {
  for await (const f of frames) {
    if (f.kind === 'chunk') yield `data: ${JSON.stringify({ type: 'speech.audio.delta', audio: Buffer.from(f.data).toString('base64') })}\n\n`;
    else if (f.kind === 'end') yield `data: ${JSON.stringify({ type: 'speech.audio.done', usage: f.end.usage })}\n\n`;
  }
}
