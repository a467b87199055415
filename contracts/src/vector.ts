import { z } from 'zod';
import { requestContract } from './catalog.ts';

/**
 * The vector store's operations on the bus, one subject each (`vector.<resource>.<verb>`). Every
 * operation carries the same envelope: path parameters, query parameters and the JSON body as
 * the client sent it (the edge has validated it against contracts/src/qdrant.ts; the worker
 * parses it again to apply defaults). The reply is Qdrant's `result`.
 */
export const VectorOpRequest = z.object({
  collection: z.string().optional(),
  /** `/points/{id}` and `/index/{field}` path segments, as sent. */
  id: z.string().optional(),
  field: z.string().optional(),
  query: z.record(z.string(), z.string()),
  body: z.unknown(),
});
export type VectorOpRequest = z.infer<typeof VectorOpRequest>;
export const VectorOpReply = z.object({ result: z.unknown() });

/** Operation name → whether it writes (a read-only key gets 403 on those). */
export const VECTOR_OPS = {
  'collections.list': false,
  'collections.create': true,
  'collections.get': false,
  'collections.update': true,
  'collections.delete': true,
  'collections.exists': false,
  'index.create': true,
  'index.delete': true,
  'points.upsert': true,
  'points.retrieve': false,
  'points.get': false,
  'points.delete': true,
  'points.setPayload': true,
  'points.overwritePayload': true,
  'points.deletePayload': true,
  'points.clearPayload': true,
  'points.updateVectors': true,
  'points.deleteVectors': true,
  'points.batch': true,
  'points.scroll': false,
  'points.count': false,
  'points.search': false,
  'points.searchBatch': false,
  'points.query': false,
  'points.queryBatch': false,
} as const;
export type VectorOp = keyof typeof VECTOR_OPS;

export const vectorContracts = Object.fromEntries(
  Object.keys(VECTOR_OPS).map((op) => [op, requestContract(`vector.${op}`, 1, VectorOpRequest, VectorOpReply)]),
) as Record<VectorOp, ReturnType<typeof requestContract<typeof VectorOpRequest, typeof VectorOpReply>>>;
