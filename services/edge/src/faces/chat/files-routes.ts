import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifyMultipart from '@fastify/multipart';
import { nuid } from 'nats';
import { chatContracts, type ChatDownload, type ChatIdentity, type ChatOpRequest, type ChatRoute } from '@gatehouse/contracts';
import { busRequest, BusError, type Bus } from '@gatehouse/common';

/**
 * The files routes that are more than JSON in, JSON out (contracts/src/chat/catalog-files.ts):
 *
 * - `POST /api/v1/files/` (multipart): the `file` part is streamed into the bus's object store as
 *   it arrives, counted on the way — over RAG_FILE_MAX_SIZE the put is abandoned (its partial
 *   chunks purged) and the answer is Open WebUI's 413 — then the worker is sent the object's name.
 * - `GET /api/v1/files/{id}/process/status?stream=true`: Server-Sent Events as Open WebUI writes
 *   them (`data: {"status": …}` once a second until `completed` or `failed`), from the worker's
 *   answers to the same operation.
 * - any operation answering bytes (ChatOpReply.download): `sendDownload` streams the named object.
 */
export interface FileRoutesOptions {
  bus: () => Bus;
  authenticate(req: FastifyRequest, reply: FastifyReply): Promise<ChatIdentity>;
  envelope(req: FastifyRequest, identity: ChatIdentity | null, body: unknown): ChatOpRequest;
  /** The default handling of a catalog route (JSON in, JSON or download out). */
  handle(route: ChatRoute, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
  /** RAG_FILE_MAX_SIZE, in bytes and as the 413 words it (`100 MB`). */
  maxFileBytes: number;
  maxFileLabel: string;
  /** How long the worker may take to answer an upload (default UPLOAD_TIMEOUT_MS). */
  uploadTimeoutMs?: number;
}

export type RouteHandler = (route: ChatRoute, req: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/** Open WebUI's ERROR_MESSAGES.FILE_TOO_LARGE. */
const fileTooLarge = (size: string) => `Oops! The file you're trying to upload is too large. Please upload a file that is less than ${size}.`;
/** After the limit, this much more of an oversized part is read and thrown away so the client can read its 413; past it the connection is cut. */
const DRAIN_AFTER_LIMIT = 64 * 1024 * 1024;
/** Wait for the server to take what was published every this many bytes: backpressure for the object store put. */
const FLUSH_EVERY = 4 * 1024 * 1024;
/** Open WebUI's MAX_FILE_PROCESSING_DURATION: at most this many status events (one a second). */
const MAX_STATUS_EVENTS = 2 * 3600;
/** An upload's worker request may wait for a large copy, and for processing with process_in_background=false. */
const UPLOAD_TIMEOUT_MS = 15 * 60 * 1000;

class TooLarge extends Error {}

export async function fileRoutes(app: FastifyInstance, opts: FileRoutesOptions): Promise<{ upload: RouteHandler; statusEvents: RouteHandler }> {
  // Limits against abuse of the form itself. The file's size is counted by putCounted, not here:
  // the plugin's default (the face's bodyLimit) would refuse big files with a 400 of its own.
  await app.register(fastifyMultipart, { limits: { fields: 20, fieldSize: 1024 * 1024, parts: 50, headerPairs: 200, fileSize: Number.MAX_SAFE_INTEGER } });

  async function upload(route: ChatRoute, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const identity = await opts.authenticate(req, reply);
    const bus = opts.bus();
    let stored: { object: string; filename: string; content_type: string | null; size: number } | undefined;
    let metadata: string | null = null;
    let tooLarge = false;
    if (req.isMultipart()) {
      try {
        for await (const part of req.parts()) {
          if (part.type === 'field') {
            if (part.fieldname === 'metadata') metadata = typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
            continue;
          }
          if (part.fieldname !== 'file' || stored || tooLarge) {
            part.file.resume();
            await new Promise((r) => part.file.once('end', r));
            continue;
          }
          const object = `upload-${nuid.next()}`;
          const it = part.file[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
          const r = await putCounted(bus, object, it, opts.maxFileBytes);
          if (r === 'too-large') {
            tooLarge = true;
            await drain(it, DRAIN_AFTER_LIMIT, req);
          } else stored = { object, filename: part.filename, content_type: part.mimetype || null, size: r };
        }
      } catch (err) {
        if (stored) await deleteObject(bus, stored.object);
        if (tooLarge) throw new BusError(413, fileTooLarge(opts.maxFileLabel));
        if (err instanceof BusError) throw err;
        throw new BusError(400, `[ERROR: ${(err as Error).message}]`);
      }
    }
    if (tooLarge) {
      if (stored) await deleteObject(bus, stored.object);
      throw new BusError(413, fileTooLarge(opts.maxFileLabel));
    }
    // FastAPI's answer to a form without its `file`.
    if (!stored) throw new BusError(422, 'validation failed', { detail: [{ type: 'missing', loc: ['body', 'file'], msg: 'Field required', input: null }] });
    try {
      const out = await busRequest(bus, chatContracts[route.op], opts.envelope(req, identity, { ...stored, metadata }), { trace: req.trace, timeoutMs: opts.uploadTimeoutMs ?? UPLOAD_TIMEOUT_MS });
      return json(reply, out.status ?? 200, out.body);
    } finally {
      // The worker deletes it once copied; this covers a worker that never got it.
      await deleteObject(bus, stored.object);
    }
  }

  async function status(route: ChatRoute, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const stream = String((req.query as Record<string, unknown>)?.stream ?? '').toLowerCase();
    if (!['true', '1', 'yes', 'on', 't', 'y'].includes(stream)) return opts.handle(route, req, reply);
    const identity = await opts.authenticate(req, reply);
    const ask = async () => (await busRequest(opts.bus(), chatContracts['files.status'], opts.envelope(req, identity, null), { trace: req.trace, timeoutMs: 30_000 })).body as { status: string | null; error?: string };
    // The first answer is awaited here, so a file the caller may not read is still a 404.
    const first = await ask();
    async function* events(): AsyncGenerator<string> {
      let s: { status: string | null; error?: string } | null = first;
      for (let i = 0; i < MAX_STATUS_EVENTS; i++) {
        if (!s) {
          yield `data: ${JSON.stringify({ status: 'not_found' })}\n\n`;
          return;
        }
        // A file never queued for processing has no status: Open WebUI's "legacy" case ends the stream.
        if (!s.status) return;
        yield `data: ${JSON.stringify(s.status === 'failed' ? { status: s.status, error: s.error ?? null } : { status: s.status })}\n\n`;
        if (s.status === 'completed' || s.status === 'failed') return;
        await new Promise((r) => setTimeout(r, 1000));
        s = await ask().catch((err: unknown) => {
          if (err instanceof BusError && err.status === 404) return null;
          throw err;
        });
      }
    }
    reply.code(200).type('text/event-stream; charset=utf-8').header('cache-control', 'no-cache').header('x-accel-buffering', 'no');
    return reply.send(Readable.from(events()));
  }

  return { upload, statusEvents: status };
}

/**
 * Put `file` into the object store under `name`, counting bytes; 'too-large' (the partial object
 * removed) once it passes `max`, else the size.
 */
export async function putCounted(bus: Bus, name: string, it: AsyncIterator<Buffer>, max: number): Promise<number | 'too-large'> {
  const store = await bus.claims();
  let size = 0;
  let sinceFlush = 0;
  const source = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await it.next();
      if (done) return controller.close();
      const chunk = value;
      size += chunk.length;
      if (size > max) return controller.error(new TooLarge());
      sinceFlush += chunk.length;
      if (sinceFlush >= FLUSH_EVERY) {
        sinceFlush = 0;
        await bus.nc.flush();
      }
      controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
    },
  });
  try {
    await store.put({ name }, source);
    return size;
  } catch (err) {
    // The store purges the chunks of a failed put; a meta entry cannot exist, but be sure.
    await store.delete(name).catch(() => undefined);
    if (err instanceof TooLarge) return 'too-large';
    throw err;
  }
}

/** Read and discard up to `limit` more bytes of an oversized part, then cut the connection. */
async function drain(it: AsyncIterator<Buffer>, limit: number, req: FastifyRequest): Promise<void> {
  let n = 0;
  for (let r = await it.next(); !r.done; r = await it.next()) {
    n += r.value.length;
    if (n > limit) {
      req.raw.destroy();
      return;
    }
  }
}

async function deleteObject(bus: Bus, name: string): Promise<void> {
  const store = await bus.claims();
  await store.delete(name).catch(() => undefined);
}

/** Stream an operation's bytes (ChatOpReply.download) to the client, then delete the object. */
export async function sendDownload(bus: Bus, reply: FastifyReply, d: ChatDownload): Promise<FastifyReply> {
  const store = await bus.claims();
  const obj = await store.get(d.object);
  if (!obj) throw new BusError(502, 'the worker’s answer is missing from the object store');
  obj.error.catch(() => undefined);
  reply.raw.once('close', () => void store.delete(d.object).catch(() => undefined));
  reply.code(200).type(d.contentType);
  if (d.disposition) reply.header('content-disposition', d.disposition);
  if (d.size !== undefined) reply.header('content-length', String(d.size));
  return reply.send(Readable.fromWeb(obj.data as never));
}

function json(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(JSON.stringify(body ?? null));
}
