import { BusError, parseExactJson } from '@gatehouse/common';
import { qdrantCollectionNameError, type VectorOpRequest } from '@gatehouse/contracts';

/**
 * The parts of a bus request every operation reads the same way: Qdrant's `timeout` and `wait`
 * query parameters, the collection name of the path, and a body forwarded as the client's text.
 */

/**
 * Qdrant's `timeout` query parameter (seconds, ≥ 1) on any route: 400 when it is not an unsigned
 * integer (actix's query deserialize error), 422 when it is 0.
 */
export function timeoutOf(req: VectorOpRequest): number | undefined {
  const raw = req.query.timeout;
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new BusError(400, `Query deserialize error: invalid digit found in string`);
  const n = Number(raw);
  if (n < 1) throw new BusError(422, `Validation error in query parameters: [timeout: value ${n} invalid, must be 1 or larger]`);
  return n;
}

/**
 * A body the edge forwarded as text (`bodyText`), parsed once, here: integers beyond 2^53 exact,
 * and not JSON → the 400 the edge gives (Fastify's wording; the edge keeps texts that could
 * poison a prototype, and empty ones, to its own parser).
 */
export function bodyOf(text: string): unknown {
  try {
    return parseExactJson(text);
  } catch {
    throw new BusError(400, "Format error in JSON body: Body is not valid JSON but content-type is set to 'application/json'");
  }
}

/** Qdrant's `wait` (default false) and `timeout` query parameters of a write. */
export const wait = (req: VectorOpRequest) => ({ wait: req.query.wait === 'true' || req.query.wait === '1', timeout: timeoutOf(req) });

/** Options of a read: `timeout`. */
export const readOpts = (req: VectorOpRequest) => ({ timeout: timeoutOf(req) });

/** The path's collection name. */
export const coll = (req: VectorOpRequest): string => {
  if (!req.collection) throw new BusError(400, 'Bad request: missing collection name');
  // Every `/collections/{name}…` route checks the name's length (Qdrant's CollectionPath): 422.
  // The character rules (StrictCollectionPath) apply only when creating, so older names still work.
  const length = [...req.collection].length;
  if (length > 255) {
    const bad = qdrantCollectionNameError(req.collection);
    throw new BusError(422, `Validation error in path parameters: [name: ${bad}]`);
  }
  return req.collection;
};
