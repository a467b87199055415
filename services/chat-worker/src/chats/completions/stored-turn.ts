import { randomUUID } from 'node:crypto';
import type { ChatCompletionForm } from '@gatehouse/contracts';
import { me, type OpContext } from '../../context.ts';
import { mergeMessage, rowOf, threadTo, upsertMessages, type ChatMessageRow, type ChatRow, type HistoryMessage } from '../chats.store.ts';
import { rowToMessage, type ConvMessage } from '../compaction.ts';
import type { ModelEntry } from '../../config/models.ops.ts';
import { isObject, lastIndexOf, str, type Message } from './messages.ts';
import type { Reply } from './reply.ts';

/**
 * A stored turn of a completion (a `chat_id` of a chat the caller may write): its user message and
 * the assistant placeholder written as it starts, the stored thread it continues, and the reply
 * stored as it ends (done, stopped or with its error). Apart from the handler
 * (../completions.ops.ts), which only decides when each of these happens.
 */

export interface StoredTurn {
  chatId: string;
  userMessageId: string | null;
  /** The user message this turn writes (null: the turn continues from an existing one, `parent_id`). */
  userMessage: (HistoryMessage & { id: string }) | null;
  /** The user message as the chat held it before this turn (merged over by the write). */
  userBefore: HistoryMessage | undefined;
  assistantId: string;
  /** The write of the user message and the reply's placeholder: true once done, false if it failed. */
  written: Promise<boolean>;
  /** The thread to `parent`, already asked for. */
  above?: { parent: string; rows: Promise<ChatMessageRow[]> };
}

/** A turn whose write has started: `write` rejects with the write's failure. */
export type OpenTurn = StoredTurn & { write: Promise<void> };

/**
 * Plan a stored turn and start writing its user message and the assistant placeholder (done:
 * false) — not waited for here: the thread is read and the upstream asked meanwhile, and the reply
 * is sent to the client only once the write is done (`turnWritten`), so a failed write is still the
 * client's error and nothing is streamed for a turn that was not stored.
 */
export function startStoredTurn(
  ctx: OpContext,
  chat: ChatRow,
  body: ChatCompletionForm,
  messages: Message[],
  requested: ModelEntry,
  selectedModelId: string | null,
  above?: StoredTurn['above'],
): OpenTurn {
  const user = me(ctx);
  const given = body.user_message;
  const parentId = body.parent_id;
  const lastUser = lastIndexOf(messages, (m) => m.role === 'user');
  const history = isObject(chat.chat.history) ? chat.chat.history : {};
  const leaf = str(history.currentId);
  let userMessageId: string | null = null;
  let userMessage: (HistoryMessage & { id: string }) | null = null;
  if (given) {
    userMessageId = str(given.id) ?? parentId ?? randomUUID();
    userMessage = {
      ...given,
      id: userMessageId,
      role: 'user',
      // An explicit parentId (null included) is the client's; none given continues the current branch.
      parentId: 'parentId' in given ? (str(given.parentId) ?? null) : leaf,
      content: 'content' in given ? given.content : (messages[lastUser]?.content ?? ''),
    };
  } else if (parentId) {
    userMessageId = parentId;
  } else if (lastUser >= 0) {
    userMessageId = randomUUID();
    userMessage = { id: userMessageId, role: 'user', parentId: leaf, content: messages[lastUser]!.content ?? '' };
  }
  const assistantId = str(body.id) ?? randomUUID();
  const stored = isObject(history.messages) ? (history.messages as Record<string, unknown>) : {};
  const userBefore = userMessage && isObject(stored[userMessage.id]) ? (stored[userMessage.id] as HistoryMessage) : undefined;
  const write = ctx.sql.begin(async (tx) => {
    const reply: HistoryMessage & { id: string } = {
      id: assistantId,
      parentId: userMessageId ?? leaf,
      role: 'assistant',
      content: '',
      model: requested.id,
      done: false,
      // A regenerated reply starts clean (undefined keys leave the stored JSON).
      reasoning_content: undefined,
      tool_calls: undefined,
      usage: undefined,
      error: undefined,
      sources: undefined,
      ...(selectedModelId ? { selectedModelId, arena: true } : {}),
    };
    await upsertMessages(tx, chat.id, user.id, userMessage ? [userMessage, reply] : [reply], ctx);
  });
  const written = write.then(
    () => true,
    () => false,
  );
  return { chatId: chat.id, userMessageId, userMessage, userBefore, assistantId, write, written, ...(above ? { above } : {}) };
}

/** The reply as it ended (a cancelled one is done and marked stopped); an error is kept on the message. */
async function finishStoredTurn(ctx: OpContext, turn: StoredTurn, reply: Reply, outcome: 'done' | 'cancelled' | 'error', error?: string): Promise<void> {
  const user = me(ctx);
  await ctx.sql.begin(async (tx) => {
    await upsertMessages(
      tx,
      turn.chatId,
      user.id,
      [
        {
          id: turn.assistantId,
          content: reply.content,
          ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
          ...(reply.toolCalls.length ? { tool_calls: reply.toolCalls } : {}),
          ...(reply.usage ? { usage: reply.usage } : {}),
          ...(reply.sources.length ? { sources: reply.sources } : {}),
          done: true,
          ...(outcome === 'cancelled' ? { stopped: true } : {}),
          ...(outcome === 'error' ? { error: { content: error ?? 'error' } } : {}),
        },
      ],
      ctx,
      () =>
        ctx.emit(tx, 'chat.updated', {
          actor: user,
          subject: { type: 'chat', id: turn.chatId },
          data: { message_id: turn.assistantId, done: true, ...(outcome === 'cancelled' ? { stopped: true } : {}), ...(outcome === 'error' ? { error: true } : {}) },
        }),
    );
  });
}

/**
 * The stored thread to the turn's user message, read while the turn is being written: the thread
 * to its parent, then the user message as the write stores it (the same rows `threadTo` of the
 * user message reads once written). A user message already in its parent's thread (a loop) is
 * read back after the write, as before.
 */
async function storedThread(ctx: OpContext, turn: OpenTurn): Promise<Pick<ChatMessageRow, 'id' | 'role' | 'content' | 'output' | 'tool_calls' | 'usage' | 'context_summary'>[]> {
  const userMessage = turn.userMessage;
  if (!userMessage) return threadTo(ctx.sql, turn.chatId, turn.userMessageId!);
  const parent = str(userMessage.parentId);
  const above = !parent ? [] : await (turn.above?.parent === parent ? turn.above.rows : threadTo(ctx.sql, turn.chatId, parent));
  if (above.some((r) => r.id === userMessage.id)) {
    await turn.write;
    return threadTo(ctx.sql, turn.chatId, userMessage.id);
  }
  return [...above, rowOf(turn.chatId, { ...mergeMessage(turn.userBefore, userMessage), id: userMessage.id })];
}

/** The conversation for a stored turn: the thread to the user message, with the request's tail. */
export async function storedConversation(ctx: OpContext, turn: OpenTurn, messages: Message[]): Promise<ConvMessage[] | null> {
  if (!turn.userMessageId) return null;
  const thread = await storedThread(ctx, turn);
  if (!thread.length || thread.at(-1)!.role !== 'user') return null;
  const conv = thread.map((r) => rowToMessage(r as ChatMessageRow));
  const lastUser = lastIndexOf(messages, (m) => m.role === 'user');
  // Rows keep text only; the request's own user turn keeps its images and blocks.
  if (lastUser >= 0 && messages[lastUser]!.content !== undefined) conv[conv.length - 1] = { ...conv.at(-1)!, content: messages[lastUser]!.content };
  // After the user turn the request may carry a tool exchange (the client ran the tools).
  for (const m of messages.slice(lastUser + 1)) conv.push(m as ConvMessage);
  return conv;
}


/** Store how the turn ended; a failure to store is logged, never thrown over the reply. */
export async function settle(ctx: OpContext, turn: StoredTurn, reply: Reply, outcome: 'done' | 'cancelled' | 'error', error?: string): Promise<void> {
  // A turn whose start was not stored has nothing to finish (its failure is the client's error).
  if (!(await turn.written)) return;
  const endedAt = performance.now();
  reply.absorbSse();
  reply.usage = reply.timed(endedAt);
  try {
    await finishStoredTurn(ctx, turn, reply, outcome, error);
  } catch (err) {
    ctx.log.error({ err, chat: turn.chatId, message: turn.assistantId }, 'could not store the reply');
  }
}
