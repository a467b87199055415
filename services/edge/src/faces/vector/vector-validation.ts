import type { VectorOp } from '@gatehouse/contracts';

/**
 * Validate a request body at the edge with the shared Qdrant schemas (contracts/src/qdrant.ts),
 * throwing Qdrant's 400 ("Format error in JSON body") or 422 ("Validation error in JSON body").
 */
export function validateVectorBody(_op: VectorOp, _body: unknown): void {
  // Wired to contracts/src/qdrant.ts once the schemas land.
}
