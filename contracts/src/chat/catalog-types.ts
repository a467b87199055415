import type { z } from 'zod';
import type { ChatOpReply, ChatOpRequest } from './bus.ts';
import type { CHAT_CATALOG, ChatOp } from './catalog.ts';

type Entry<Op extends ChatOp> = (typeof CHAT_CATALOG)[Op];

/**
 * The body an operation's handler gets, already parsed (the worker validates it once, before the
 * handler runs): by the entry's `workerBody` where the edge sends the worker something other than
 * the HTTP body, else by its `body`; `undefined` for an operation that takes none.
 */
export type ChatOpBody<Op extends ChatOp> =
  Entry<Op> extends { workerBody: infer S extends z.ZodType }
    ? z.output<S>
    : Entry<Op> extends { body: infer S extends z.ZodType }
      ? z.output<S>
      : undefined;

/** What an operation's handler must answer as the body: its entry's `reply` (checked again at run time). */
export type ChatOpReplyBody<Op extends ChatOp> = z.input<Entry<Op>['reply']>;

/** The request an operation's handler gets: the bus envelope with the body parsed. */
export type ChatRequestOf<Op extends ChatOp> = Omit<ChatOpRequest, 'body'> & { body: ChatOpBody<Op> };

/** The reply an operation's handler answers: the bus envelope with the body its entry promises. */
export type ChatReplyOf<Op extends ChatOp> = Omit<ChatOpReply, 'body'> & { body: ChatOpReplyBody<Op> };
