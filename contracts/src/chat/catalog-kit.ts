import type { z } from 'zod';
import type { CatalogEntry, HttpRoute } from '../catalog.ts';
import type { ChatEventName } from './events.ts';

/**
 * Who may call an operation. The edge checks the token for everything but `none`; the worker
 * checks the role: `any` admits pending users (Open WebUI's get_current_user), `verified` is
 * role user|admin (get_verified_user), `admin` is role admin (get_admin_user).
 */
export type ChatAuth = 'none' | 'any' | 'verified' | 'admin';

/**
 * One operation of the chat platform. `reply` is the 200 body (the bus envelope is ChatOpReply).
 * An operation that answers bytes (a file's content, a zip export) declares `reply: R.Bytes` and
 * its handler streams the bytes into the bus's object store and answers `download` naming the
 * object (services/chat-worker/src/knowledge/object-reply.ts: `replyWithBytes`); the edge streams
 * it to the client, so neither side holds the bytes whole.
 */
export interface ChatCatalogEntry<Subject extends string = string> extends CatalogEntry<Subject> {
  auth: ChatAuth;
  /** The events (events.ts) the operation may write; the worker refuses any other. */
  events: readonly ChatEventName[];
  /**
   * The body the worker gets when it is not the HTTP body: the edge answers the route itself (the
   * OAuth browser flow) and sends what it verified instead. The worker parses the body with this,
   * else with `body`, before the handler runs (catalog-types.ts ChatOpBody).
   */
  workerBody?: z.ZodType;
  /** What the edge does besides forwarding (absent: JSON in, the worker's JSON out). */
  edge?: ChatEdgeDuties;
}

/**
 * The edge's part in an operation (services/edge/src/faces/chat/chat-face.ts reads these; none is
 * about the operation's meaning, which is the worker's).
 */
export interface ChatEdgeDuties {
  /**
   * The caller's session: `issue` — the worker's `issueSession` becomes a token, answered and set
   * as the `token` cookie; `issueForAnother` — the token is answered, the caller's own cookie left
   * alone (an admin adding a user); `show` — the caller's credential is answered as `token` (a
   * session's cookie refreshed); `end` — revoked before the worker hears of it, cookies cleared, and
   * a provider's end-session URL answered as `redirect_url`.
   */
  session?: 'issue' | 'issueForAnother' | 'show' | 'end';
  /** Counts against the sign-in rate limit (per account and address); the account is this body field. */
  signinLimit?: 'email' | 'user';
  /**
   * With a trusted email header configured (WEBUI_AUTH_TRUSTED_EMAIL_HEADER): `signin` is answered
   * from the header's identity instead of the form; `adminConfig` and `appConfig` answers name it.
   */
  trustedHeader?: 'signin' | 'adminConfig' | 'appConfig';
  /**
   * The edge answers the route with its own handler, not JSON in / JSON out: `upload` streams a
   * multipart file into the object store, `statusEvents` writes Server-Sent Events, `oauth*` are the
   * OpenID Connect browser flow (redirects, form posts).
   */
  handler?: 'upload' | 'statusEvents' | 'oauthLogin' | 'oauthCallback' | 'oauthTokenExchange' | 'oauthBackchannelLogout';
}

export const GET = (url: string): HttpRoute => ({ method: 'GET', url });
export const POST = (url: string): HttpRoute => ({ method: 'POST', url });
export const DELETE = (url: string): HttpRoute => ({ method: 'DELETE', url });

/** Each key's subject must be `chat.<key>`, written out so a grep for the subject finds its entry. */
export function catalog<T extends { [Op in keyof T]: ChatCatalogEntry<`chat.${Op & string}`> }>(entries: T): T {
  return entries;
}

