import type { z } from 'zod';
import {
  QdrantCountRequest,
  QdrantCreateCollection,
  QdrantCreateFieldIndex,
  QdrantDeletePayload,
  QdrantDeleteVectors,
  QdrantPointInsertOperations,
  QdrantPointRequest,
  QdrantPointsSelector,
  QdrantQueryRequest,
  QdrantQueryRequestBatch,
  QdrantScrollRequest,
  QdrantSearchRequest,
  QdrantSearchRequestBatch,
  QdrantSetPayload,
  QdrantUpdateCollection,
  QdrantUpdateOperations,
  QdrantUpdateVectors,
  qdrantBodyError,
  type VectorOp,
} from '@gatehouse/contracts';
import { BusError } from '@gatehouse/common';

/** The body schema of each operation that takes one (contracts/src/qdrant.ts, shared with the worker). */
const BODY_SCHEMAS: Partial<Record<VectorOp, z.ZodType>> = {
  'collections.create': QdrantCreateCollection,
  'collections.update': QdrantUpdateCollection,
  'index.create': QdrantCreateFieldIndex,
  'points.upsert': QdrantPointInsertOperations,
  'points.retrieve': QdrantPointRequest,
  'points.delete': QdrantPointsSelector,
  'points.setPayload': QdrantSetPayload,
  'points.overwritePayload': QdrantSetPayload,
  'points.deletePayload': QdrantDeletePayload,
  'points.clearPayload': QdrantPointsSelector,
  'points.updateVectors': QdrantUpdateVectors,
  'points.deleteVectors': QdrantDeleteVectors,
  'points.batch': QdrantUpdateOperations,
  'points.scroll': QdrantScrollRequest,
  'points.count': QdrantCountRequest,
  'points.search': QdrantSearchRequest,
  'points.searchBatch': QdrantSearchRequestBatch,
  'points.query': QdrantQueryRequest,
  'points.queryBatch': QdrantQueryRequestBatch,
};

/**
 * Validate a request body at the edge, so a malformed request is refused without a bus hop,
 * with Qdrant's 400 ("Format error in JSON body") or 422 ("Validation error in JSON body").
 */
export function validateVectorBody(op: VectorOp, body: unknown): void {
  const schema = BODY_SCHEMAS[op];
  if (!schema) return;
  const parsed = schema.safeParse(body);
  if (parsed.success) return;
  const e = qdrantBodyError(parsed.error);
  throw new BusError(e.status, e.message);
}
