import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CHAT_COMPLETION_PATHS, chatCompletionsContract, OWUI_ERRORS, type ChatIdentity, type ChatOpRequest } from '@gatehouse/contracts';
import { BusError, openBusStream, type Bus } from '@gatehouse/common';
import { holdSlot, readMeta, responseBody, withDeadline, type StreamSlots } from '../../kit/index.ts';

export interface CompletionsRouteOptions {
  bus: () => Bus;
  authenticate(req: FastifyRequest, reply: FastifyReply): Promise<ChatIdentity>;
  envelope(req: FastifyRequest, identity: ChatIdentity | null, body: unknown): ChatOpRequest;
  streamIdleMs: number;
  streamSlots?: StreamSlots;
  streamMaxMs?: number;
}

/** FastAPI's 422: the list travels as the error's details, as the worker's own 422s do. */
export const invalid = (detail: unknown[]) => new BusError(422, 'validation failed', { detail });

/**
 * Open WebUI's in-stream error event (`data: {"error": {"detail": …}}`, Python's separators), for a
 * completion that fails after its 200: its duration limit, a worker gone mid-stream.
 */
const sseError = (err: unknown): Buffer => Buffer.from(`data: {"error": {"detail": ${pyString(err instanceof BusError ? err.message : OWUI_ERRORS.default)}}}\n\n`);
/** Python's json.dumps of a string: JSON's escapes, and every character past ASCII as \uXXXX. */
const pyString = (s: string): string => JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * Completions, streamed: the worker sends the status and content type first, then the exact bytes
 * (SSE or JSON); a client that goes away cancels the stream, and the worker the upstream. The
 * chunks that arrived together go out in one socket write (kit/relay.ts responseBody).
 */
export function completionsRoute(app: FastifyInstance, opts: CompletionsRouteOptions): void {
  async function complete(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const identity = await opts.authenticate(req, reply);
    if (!req.body || typeof req.body !== 'object' || Array.isArray(req.body)) {
      throw invalid([{ type: 'dict_type', loc: ['body'], msg: 'Input should be a valid dictionary', input: req.body ?? null }]);
    }
    // Streamed or not, a completion holds a worker and an upstream request for as long: both count.
    if (!(await holdSlot(opts.streamSlots, identity.userId, reply))) {
      throw new BusError(429, `You already have ${opts.streamSlots!.limit} chat completions in progress, the most allowed at once; wait for one to finish.`);
    }
    const abort = new AbortController();
    reply.raw.on('close', () => abort.abort());
    const stream = withDeadline(
      openBusStream(opts.bus(), chatCompletionsContract, { ...opts.envelope(req, identity, req.body), params: {} }, {
        idleTimeoutMs: opts.streamIdleMs,
        signal: abort.signal,
        trace: req.trace,
      }),
      opts.streamMaxMs ?? 0,
    );
    const { status, contentType } = await readMeta(stream, 'chat worker');
    reply.code(status).type(contentType);
    const sse = contentType.startsWith('text/event-stream');
    if (sse) reply.header('cache-control', 'no-cache').header('x-accel-buffering', 'no');
    // A stream that fails after its 200 ends with Open WebUI's in-stream error event, not a cut connection.
    return reply.send(responseBody(stream, sse ? sseError : undefined));
  }
  for (const url of CHAT_COMPLETION_PATHS) app.post(url, complete);
}
