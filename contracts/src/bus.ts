/**
 * Bus conventions shared by the edge and every worker: header names, frame kinds of streamed
 * replies and the error convention. Headers, not body fields, so a worker can answer an error or
 * a claim check without knowing the body's schema.
 */
export const BUS_HEADERS = {
  /** `<message type>@<version>` of the request body, checked by the worker before parsing. */
  contract: 'Gh-Contract',
  /** Frame kind of a streamed reply message: see StreamFrameKind. */
  frame: 'Gh-Frame',
  /** Sequence number of a streamed frame, starting at 0, so the edge can detect a gap. */
  seq: 'Gh-Seq',
  /** Object-store name holding the real body when it exceeds the server's max payload. */
  claim: 'Gh-Claim',
  /** Subject the edge publishes on when the client went away, so the worker stops working. */
  cancel: 'Gh-Cancel',
  /**
   * W3C Trace Context `traceparent` of the request (common/src/tracing.ts): the edge's trace, so
   * every worker's log lines for the request carry its `trace_id`, and OpenTelemetry spans link up.
   */
  traceparent: 'traceparent',
  /**
   * On a request: "send me signs of life every N ms while you work on this" (N as text). On a
   * message to the reply subject: a sign of life (empty body), not the reply. So a requester can
   * tell a worker that is slow from one that died, long before its total limit.
   */
  alive: 'Gh-Alive',
  /** NATS services convention for error replies. */
  errorCode: 'Nats-Service-Error-Code',
  errorMessage: 'Nats-Service-Error',
} as const;

/**
 * A streamed reply is `meta` (optional, first), any number of `chunk`s, then exactly one `end`
 * or `error`. The edge treats silence longer than its idle timeout as an error.
 */
export type StreamFrameKind = 'meta' | 'chunk' | 'end' | 'error';

/** Object store bucket for claim-checked bodies (bodies above the server's max payload). */
export const CLAIM_BUCKET = 'gatehouse_bodies';

/** Leave room for headers and protocol overhead under the server's max payload. */
export const CLAIM_MARGIN_BYTES = 16 * 1024;

/** Streamed chunks are cut to this size so they never approach the max payload. */
export const STREAM_CHUNK_BYTES = 64 * 1024;
