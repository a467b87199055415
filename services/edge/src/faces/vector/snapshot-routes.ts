import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifyMultipart from '@fastify/multipart';
import { nuid } from 'nats';
import type { z } from 'zod';
import { acceptedWithoutWait, vectorContracts, type RequestContract, type VectorOp, type VectorOpRequest, type VectorSnapshotObject } from '@gatehouse/contracts';
import { busRequest, BusError, type Bus } from '@gatehouse/common';
import { putCounted, sendDownload } from '../chat/files-routes.ts';

/**
 * The two snapshot routes that carry bytes, through the bus's object store exactly as the chat
 * face's files do (chat/files-routes.ts, whose helpers these reuse):
 * - `GET /collections/{c}/snapshots/{name}`: the worker copies the file into the object store and
 *   names the object; the edge streams it (application/octet-stream) and deletes it.
 * - `POST /collections/{c}/snapshots/upload` (multipart, part `snapshot`): the part is streamed
 *   into the object store as it arrives, then the worker recovers the collection from it.
 */
/** A snapshot upload larger than this is refused with 413 (the object store holds it meanwhile). */
export const MAX_SNAPSHOT_UPLOAD_BYTES = 16 * 1024 ** 3;
/** Writing or recovering a large snapshot takes a while. */
const SNAPSHOT_TIMEOUT_MS = 30 * 60 * 1000;

type Handler = (req: FastifyRequest<{ Params: { collection?: string; id?: string } }>, reply: FastifyReply) => Promise<unknown>;
type Contract = RequestContract<typeof VectorOpRequest, z.ZodObject<{ result: z.ZodType }>>;

const envelope = (req: FastifyRequest<{ Params: { collection?: string; id?: string } }>, body: unknown): VectorOpRequest => ({
  collection: req.params.collection,
  id: req.params.id,
  query: Object.fromEntries(Object.entries(req.query as Record<string, unknown>).map(([k, v]) => [k, String(v)])),
  body,
});

export async function snapshotRoutes(app: FastifyInstance, bus: () => Bus): Promise<Partial<Record<VectorOp, Handler>>> {
  await app.register(fastifyMultipart, { limits: { fields: 10, fieldSize: 64 * 1024, parts: 20, headerPairs: 200, fileSize: Number.MAX_SAFE_INTEGER } });

  const download: Handler = async (req, reply) => {
    const b = bus();
    const { result } = await busRequest(b, vectorContracts['snapshots.download'] as Contract, envelope(req, {}), { trace: req.trace, timeoutMs: SNAPSHOT_TIMEOUT_MS });
    const d = result as VectorSnapshotObject;
    return sendDownload(b, reply, {
      object: d.object,
      contentType: 'application/octet-stream',
      disposition: `attachment; filename*=UTF-8''${encodeURIComponent(d.name)}`,
      size: d.size,
    });
  };

  const upload: Handler = async (req, reply) => {
    const b = bus();
    if (!req.isMultipart()) throw new BusError(400, 'Bad request: expected a multipart/form-data body with a `snapshot` file');
    let stored: VectorSnapshotObject | undefined;
    try {
      for await (const part of req.parts()) {
        if (part.type === 'field' || stored) {
          if (part.type === 'file') part.file.resume();
          continue;
        }
        const object = `vector-upload-${nuid.next()}`;
        const size = await putCounted(b, object, part.file[Symbol.asyncIterator]() as AsyncIterator<Buffer>, MAX_SNAPSHOT_UPLOAD_BYTES);
        if (size === 'too-large') throw new BusError(413, 'Payload too large');
        stored = { object, size, name: part.filename };
      }
    } catch (err) {
      if (stored) await deleteObject(b, stored.object);
      if (err instanceof BusError) throw err;
      throw new BusError(400, `Bad request: ${(err as Error).message}`);
    }
    if (!stored) throw new BusError(400, 'Bad request: expected a multipart/form-data body with a `snapshot` file');
    try {
      const { result } = await busRequest(b, vectorContracts['snapshots.upload'] as Contract, envelope(req, stored), { trace: req.trace, timeoutMs: SNAPSHOT_TIMEOUT_MS });
      const time = (performance.now() - req.startedAt) / 1000;
      if (acceptedWithoutWait('snapshots.upload', req.query)) return reply.code(202).send({ status: 'accepted', time });
      return reply.send({ result, status: 'ok', time });
    } finally {
      // The worker deletes it once read; this covers a worker that never got it.
      await deleteObject(b, stored.object);
    }
  };

  return { 'snapshots.download': download, 'snapshots.upload': upload };
}

async function deleteObject(bus: Bus, name: string): Promise<void> {
  const store = await bus.claims();
  await store.delete(name).catch(() => undefined);
}
