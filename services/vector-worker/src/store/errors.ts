/**
 * A failure in Qdrant's own terms: the HTTP status and the exact message Qdrant gives
 * (reference §1.2–1.3), e.g. 404 "Not found: Collection `x` doesn't exist!". The bus glue turns
 * it into a BusError and the edge into `{"status":{"error":message},"time":…}`.
 */
export class QdrantError extends Error {
  constructor(
    public readonly status: number,
    message: string,
    /** Travels with the error to the edge (e.g. `retry_after` seconds of a 429, its `Retry-After`). */
    public readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'QdrantError';
  }
}

export const notFoundCollection = (name: string) => new QdrantError(404, `Not found: Collection \`${name}\` doesn't exist!`);
export const wrongInput = (msg: string) => new QdrantError(400, `Wrong input: ${msg}`);
export const formatError = (msg: string) => new QdrantError(400, `Format error in JSON body: ${msg}`);
export const validationError = (msgs: string[]) => new QdrantError(422, `Validation error in JSON body: [${msgs.join('; ')}]`);
