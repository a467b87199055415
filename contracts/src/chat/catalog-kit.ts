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
}

export const GET = (url: string): HttpRoute => ({ method: 'GET', url });
export const POST = (url: string): HttpRoute => ({ method: 'POST', url });
export const DELETE = (url: string): HttpRoute => ({ method: 'DELETE', url });

/** Each key's subject must be `chat.<key>`, written out so a grep for the subject finds its entry. */
export function catalog<T extends { [Op in keyof T]: ChatCatalogEntry<`chat.${Op & string}`> }>(entries: T): T {
  return entries;
}

