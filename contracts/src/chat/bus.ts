import { z } from 'zod';

/**
 * The chat platform on the bus. The edge authenticates (JWT, revocation) and sends every request
 * as one envelope to `chat.<resource>.<verb>`; the chat worker loads the user named by the
 * verified identity, checks the role the operation needs, and answers with the JSON body (and
 * status) the edge sends back as it is.
 */

/** Who the edge verified. Built by the edge only; inbound headers never reach it. */
export const ChatIdentity = z.object({
  userId: z.string(),
  /** The token's id, so sign-out can name what it revoked. */
  jti: z.string(),
  /** Token expiry (epoch seconds), null when the token never expires. */
  expiresAt: z.number().nullable(),
});
export type ChatIdentity = z.infer<typeof ChatIdentity>;

export const ChatOpRequest = z.object({
  /** Null only for the operations whose auth is `none` (sign-in, sign-up…). */
  identity: ChatIdentity.nullable(),
  /** Path parameters (`{id}`…) as sent. */
  params: z.record(z.string(), z.string()),
  /** Query parameters, first value of each. */
  query: z.record(z.string(), z.string()),
  /** The JSON body, already validated by the edge against the route's form. */
  body: z.unknown(),
  /** The client as the edge saw it (events record it; rate limits live at the edge). */
  client: z.object({ ip: z.string(), userAgent: z.string() }),
});
export type ChatOpRequest = z.infer<typeof ChatOpRequest>;

/** A reply made of bytes (see ChatOpReply.download). */
export const ChatDownload = z.object({
  object: z.string(),
  contentType: z.string(),
  /** `Content-Disposition`, e.g. `attachment; filename*=UTF-8''report.pdf`. */
  disposition: z.string().optional(),
  size: z.number().int().min(0).optional(),
});
export type ChatDownload = z.infer<typeof ChatDownload>;

export const ChatOpReply = z.object({
  /** HTTP status when not 200. */
  status: z.number().int().optional(),
  body: z.unknown(),
  /**
   * Set by sign-in / sign-up: the edge mints a session token for this user, adds
   * `token`, `token_type` and `expires_at` to the body and sets the `token` cookie. `expiresIn`
   * is the JWT_EXPIRES_IN setting in force (`-1` = never, else a duration like `4w`).
   */
  issueSession: z.object({ userId: z.string(), expiresIn: z.string() }).optional(),
  /**
   * Bytes instead of JSON (file content, a knowledge base's zip export): the worker streamed them
   * into the bus's object store (`bus.claims()`) under `object`; the edge streams that object to
   * the client with this content type and disposition, then deletes it. `body` is null.
   */
  download: ChatDownload.optional(),
});
export type ChatOpReply = z.infer<typeof ChatOpReply>;

/**
 * A ChatOpReply as the worker puts it on the bus: `body` always last, and a plain 200 (no status,
 * session or download) is exactly `{"body":<body>}`. So the edge can forward such a reply's body
 * bytes to the client as they are (`plainReplyBody`) — no parse, no re-serialisation — and reads
 * the envelope only when it says more.
 */
export function chatReplyWire(reply: ChatOpReply): ChatOpReply {
  const { status, body, issueSession, download } = reply;
  if ((status === undefined || status === 200) && !issueSession && !download) return { body };
  return { ...(status === undefined ? {} : { status }), ...(issueSession ? { issueSession } : {}), ...(download ? { download } : {}), body };
}

const PLAIN_PREFIX = new TextEncoder().encode('{"body":');

/** The body's JSON bytes of a plain 200 reply in the wire form above (a view, not a copy); undefined for any other. */
export function plainReplyBody(bytes: Uint8Array): Uint8Array | undefined {
  const n = PLAIN_PREFIX.length;
  if (bytes.byteLength <= n + 1 || bytes[bytes.byteLength - 1] !== 0x7d) return undefined;
  for (let i = 0; i < n; i++) if (bytes[i] !== PLAIN_PREFIX[i]) return undefined;
  return bytes.subarray(n, bytes.byteLength - 1);
}
