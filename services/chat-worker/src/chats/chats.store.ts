import type { Sql } from 'postgres';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { fail, now, type OpContext, type Tx, type UserRow } from '../context.ts';
import { atLeast, folderAccess, stripNul } from '../access.ts';

/**
 * Chats and their messages, shared by the chat routes (chats.ops.ts) and completions
 * (completions.ops.ts, compaction.ts).
 *
 * A chat is stored twice, on purpose: the `chat` JSON column keeps Open WebUI's document as clients
 * send and read it — `history: {messages: {<id>: {id, parentId, childrenIds, role, content, model,
 * timestamp, done, …}}, currentId}` — and `chat_message` holds one row per message with its parent
 * link, so a thread can be walked (and compaction checkpoints found) without loading the whole
 * document. Both are written in the same transaction, under a row lock on the chat, so they never
 * disagree: create/update mirror the posted history into rows (`syncMessages`), completions write
 * one message into both (`upsertMessage`).
 *
 * Who may do what with a chat (`chatAccessOf`): its owner everything; anyone whose grant on the
 * chat's folder (part 1, access.ts) is `write` may read and update it; `read` (or being an admin)
 * may read it, read-only. Anyone else gets the same 404 as for a chat that does not exist.
 */

export interface ChatRow {
  id: string;
  user_id: string;
  folder_id: string | null;
  title: string;
  chat: Record<string, unknown>;
  meta: Record<string, unknown>;
  share_id: string | null;
  archived: boolean;
  pinned: boolean;
  created_at: number;
  updated_at: number;
}

/** One row of chat_message (infra/migrations/chat/0002_chat_messages.sql). */
export interface ChatMessageRow {
  id: string;
  chat_id: string;
  user_id: string;
  role: string;
  parent_id: string | null;
  content: string;
  reasoning: string | null;
  output: unknown;
  tool_calls: unknown;
  model_id: string | null;
  selected_model_id: string | null;
  usage: Record<string, unknown> | null;
  context_summary: string | null;
  done: boolean;
  created_at: number;
  updated_at: number;
}

export const MESSAGE_COLUMNS = [
  'id', 'chat_id', 'user_id', 'role', 'parent_id', 'content', 'reasoning', 'output', 'tool_calls', 'model_id',
  'selected_model_id', 'usage', 'context_summary', 'done', 'created_at', 'updated_at',
] as const;

/**
 * A message as Open WebUI keeps it in `chat.history.messages` (camelCase keys). Any other keys
 * (files, sources, output, statusHistory, error, info…) are kept in the JSON as given.
 */
export interface HistoryMessage {
  id?: string;
  parentId?: string | null;
  childrenIds?: string[];
  role?: string;
  /** A string, or Open WebUI's list of content blocks (text and images) for user messages. */
  content?: unknown;
  model?: string | null;
  timestamp?: number;
  done?: boolean;
  [key: string]: unknown;
}

export type ChatAccess = 'owner' | 'write' | 'read';

/** ChatResponse, in Open WebUI's field order. */
export function chatResponse(c: ChatRow) {
  return {
    id: c.id,
    user_id: c.user_id,
    title: c.title,
    chat: c.chat,
    updated_at: c.updated_at,
    created_at: c.created_at,
    share_id: c.share_id,
    archived: c.archived,
    pinned: c.pinned,
    meta: c.meta,
    folder_id: c.folder_id,
  };
}

/** ChatTitleIdResponse: what chat lists carry. */
export function chatTitleId(c: Pick<ChatRow, 'id' | 'title' | 'updated_at' | 'created_at'>) {
  return { id: c.id, title: c.title, updated_at: c.updated_at, created_at: c.created_at };
}

const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/**
 * The chat and the caller's access to it, or null when the caller may not even know it exists.
 * Admins read every chat (Open WebUI's ENABLE_ADMIN_CHAT_ACCESS default) but write only their own.
 */
export async function chatAccessOf(sql: Sql | Tx, user: UserRow, chatId: string): Promise<{ chat: ChatRow; access: ChatAccess } | null> {
  const [chat] = await (sql as Sql)<ChatRow[]>`select * from chat where id = ${chatId}`;
  if (!chat) return null;
  if (chat.user_id === user.id) return { chat, access: 'owner' };
  let access: ChatAccess | null = null;
  if (chat.folder_id) {
    const found = await folderAccess(sql as Sql, user, chat.folder_id);
    if (found && atLeast(found.access, 'write')) access = 'write';
    else if (found && atLeast(found.access, 'read')) access = 'read';
  }
  if (!access && user.role === 'admin') access = 'read';
  return access ? { chat, access } : null;
}

/**
 * The chat `user` may read (`need: 'read'`) or change (`need: 'write'`: owner, or write on its
 * folder); anything else throws Open WebUI's 404 — a stranger's chat looks exactly like a missing
 * one. For completions: `loadChatFor(ctx.sql, me(ctx), body.chat_id, 'write')`.
 */
export async function loadChatFor(sql: Sql | Tx, user: UserRow, chatId: string, need: 'read' | 'write'): Promise<ChatRow> {
  const found = await chatAccessOf(sql, user, chatId);
  if (!found || (need === 'write' && found.access === 'read')) fail(404, OWUI_ERRORS.notFound);
  return found.chat;
}

/** The chat row, locked for the rest of `tx` (every writer of a chat's JSON takes this lock). */
export async function lockChat(tx: Tx, chatId: string): Promise<ChatRow> {
  const [chat] = await tx<ChatRow[]>`select * from chat where id = ${chatId} for update`;
  return chat ?? fail(404, OWUI_ERRORS.notFound);
}

/**
 * The messages of a chat JSON by id: `history.messages`, or for a chat saved in the older flat
 * form (`messages: [...]` without a history) the listed messages that carry an id. Entries
 * without a role are not messages (Open WebUI skips them too).
 */
export function historyMessages(chat: Record<string, unknown>): Record<string, HistoryMessage> {
  const out: Record<string, HistoryMessage> = {};
  const history = chat.history;
  if (isObject(history) && isObject(history.messages)) {
    for (const [id, m] of Object.entries(history.messages)) if (isObject(m) && str(m.role)) out[id] = m as HistoryMessage;
    return out;
  }
  if (Array.isArray(chat.messages)) {
    for (const m of chat.messages) if (isObject(m) && str(m.id) && str(m.role)) out[m.id as string] = m as HistoryMessage;
  }
  return out;
}

/** Text of a message's content: strings as they are, content blocks → their text parts. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((b) => (isObject(b) && b.type === 'text' && typeof b.text === 'string' ? b.text : ''))
      .filter(Boolean)
      .join('\n');
  }
  return '';
}

/** Message timestamps arrive in seconds (Open WebUI) or milliseconds (some clients). */
function seconds(ts: unknown, fallback: number): number {
  if (typeof ts !== 'number' || !Number.isFinite(ts) || ts <= 0) return fallback;
  return Math.floor(ts > 1e11 ? ts / 1000 : ts);
}

/** The row columns a history message maps to (user_id, chat_id and updated_at are the writer's). */
function rowValues(id: string, m: HistoryMessage, t: number) {
  const usage = isObject(m.usage) ? m.usage : isObject(m.info) && isObject(m.info.usage) ? m.info.usage : null;
  return {
    id,
    role: str(m.role) ?? 'assistant',
    parent_id: str(m.parentId),
    content: contentText(m.content),
    reasoning: typeof m.reasoning_content === 'string' ? m.reasoning_content : typeof m.reasoning === 'string' ? m.reasoning : null,
    output: Array.isArray(m.output) ? m.output : null,
    tool_calls: Array.isArray(m.tool_calls) ? m.tool_calls : null,
    model_id: str(m.model),
    selected_model_id: str(m.selectedModelId) ?? str(m.selected_model_id),
    usage,
    context_summary: typeof m.contextSummary === 'string' ? m.contextSummary : null,
    // Citations of a reply grounded on knowledge (completions with `files`).
    sources: Array.isArray(m.sources) ? m.sources : null,
    done: m.done !== false,
    created_at: seconds(m.timestamp, t),
  };
}

/**
 * Insert or refresh rows from history messages. `userId` is recorded on new rows only: a row's
 * user_id is whoever saved the message first, as the server saw them — never a user id taken
 * from client JSON. created_at is the message's timestamp when first saved. Unchanged rows are
 * left alone (no dead tuples on every chat save).
 */
async function writeRows(tx: Tx, chatId: string, userId: string, messages: [string, HistoryMessage][]): Promise<void> {
  const t = now();
  // One parameter per batch (a JSON array unpacked by Postgres): no bind-parameter limit to hit.
  for (let i = 0; i < messages.length; i += 500) {
    const rows = messages.slice(i, i + 500).map(([id, m]) => rowValues(id, m, t));
    await tx`
      insert into chat_message (id, chat_id, user_id, role, parent_id, content, reasoning, output, tool_calls, model_id,
        selected_model_id, usage, context_summary, sources, done, created_at, updated_at)
      select r.id, ${chatId}, ${userId}, r.role, r.parent_id, r.content, r.reasoning, r.output, r.tool_calls, r.model_id,
        r.selected_model_id, r.usage, r.context_summary, r.sources, r.done, r.created_at, ${t}
      from jsonb_to_recordset(${tx.json(rows as never)}) as r(id text, role text, parent_id text, content text, reasoning text,
        output jsonb, tool_calls jsonb, model_id text, selected_model_id text, usage jsonb, context_summary text, sources jsonb,
        done boolean, created_at bigint)
      on conflict (chat_id, id) do update set
        role = excluded.role, parent_id = excluded.parent_id, content = excluded.content, reasoning = excluded.reasoning,
        output = excluded.output, tool_calls = excluded.tool_calls, model_id = excluded.model_id,
        selected_model_id = excluded.selected_model_id, usage = excluded.usage, context_summary = excluded.context_summary,
        sources = excluded.sources, done = excluded.done, updated_at = excluded.updated_at
      where (chat_message.role, chat_message.parent_id, chat_message.content, chat_message.reasoning, chat_message.output,
          chat_message.tool_calls, chat_message.model_id, chat_message.selected_model_id, chat_message.usage,
          chat_message.context_summary, chat_message.sources, chat_message.done)
        is distinct from (excluded.role, excluded.parent_id, excluded.content, excluded.reasoning, excluded.output,
          excluded.tool_calls, excluded.model_id, excluded.selected_model_id, excluded.usage, excluded.context_summary,
          excluded.sources, excluded.done)`;
  }
}

/**
 * Make the chat's rows match its JSON (chat create and update): every message of the history
 * gets its row, rows of messages the history no longer has are deleted. Call inside the
 * transaction that writes the JSON, after `lockChat` (or the insert) — `userId` is the caller.
 */
export async function syncMessages(tx: Tx, chatId: string, userId: string, chat: Record<string, unknown>): Promise<void> {
  const messages = Object.entries(historyMessages(chat));
  await writeRows(tx, chatId, userId, messages);
  await tx`delete from chat_message where chat_id = ${chatId} and not (id = any(${tx.array(messages.map(([id]) => id))}::text[]))`;
}

/**
 * The thread ending at `messageId`: its rows from the root down to that message, following
 * parent_id (context_summary included, so completions can start from the newest checkpoint).
 * Empty when the message does not exist; a parent link that loops ends the walk.
 */
export async function threadTo(sql: Sql | Tx, chatId: string, messageId: string): Promise<ChatMessageRow[]> {
  return (sql as Sql)<ChatMessageRow[]>`
    with recursive up as (
      select m.*, 0 as depth, array[m.id] as seen from chat_message m where m.chat_id = ${chatId} and m.id = ${messageId}
      union all
      select p.*, u.depth + 1, u.seen || p.id
      from chat_message p join up u on p.chat_id = ${chatId} and p.id = u.parent_id
      where not (p.id = any(u.seen))
    )
    select ${(sql as Sql)(MESSAGE_COLUMNS as unknown as string[])} from up order by depth desc`;
}

/** Where message events go, and who caused them: pass the op's OpContext. */
export type MessageEvents = Pick<OpContext, 'emit' | 'user'>;

export interface UpsertedMessage {
  /** The message as now stored in the chat JSON (merged over what was there). */
  message: HistoryMessage;
  created: boolean;
}

/**
 * Write one message into a chat — its row AND `chat.history.messages[id]` — in `tx`, for
 * completions (the user turn, then the assistant reply as it starts and when it is done):
 * - a new message gets `parentId` (default null), `childrenIds: []`, `role` (default assistant),
 *   `timestamp`; it is appended to its parent's `childrenIds` and becomes `history.currentId`;
 * - an existing one is merged key by key (`{...stored, ...msg}`), currentId untouched;
 * - row columns come from the merged message: content (text of content blocks), `reasoning_content`
 *   (or `reasoning`) → reasoning, output, tool_calls, model → model_id, `selectedModelId` (or
 *   `selected_model_id`) → selected_model_id (arena), usage (or info.usage), contextSummary, done;
 * - the chat's updated_at moves; `message.created` or `message.updated` goes to the outbox with
 *   `events.user` as the actor.
 * `userId` is recorded as the row's author on insert. Throws 404 if the chat is gone.
 */
export async function upsertMessage(tx: Tx, chatId: string, userId: string, msg: HistoryMessage & { id: string }, events: MessageEvents): Promise<UpsertedMessage> {
  return (await upsertMessages(tx, chatId, userId, [msg], events))[0]!;
}

/**
 * `upsertMessage` for several messages in order (a turn's user message and reply), under one lock
 * and one write of the chat JSON. After the lock, the statements are sent together — the JSON, the
 * rows, the events, then whatever `after` adds (its own events) — and Postgres runs them in that
 * order: one round trip instead of one per statement (postgres.js pipelines the statements of a
 * transaction issued without waiting for each other).
 */
export async function upsertMessages(
  tx: Tx,
  chatId: string,
  userId: string,
  msgs: (HistoryMessage & { id: string })[],
  events: MessageEvents,
  after?: () => Promise<unknown>,
): Promise<UpsertedMessage[]> {
  for (const msg of msgs) if (typeof msg.id !== 'string' || msg.id === '') throw new Error('upsertMessage: the message needs an id');
  const chat = await lockChat(tx, chatId);
  const history: Record<string, unknown> = isObject(chat.chat.history) ? { ...chat.chat.history } : { messages: {}, currentId: null };
  const messages: Record<string, HistoryMessage> = isObject(history.messages) ? { ...(history.messages as Record<string, HistoryMessage>) } : {};
  const t = now();
  const done: UpsertedMessage[] = [];
  for (const msg of msgs) {
    const id = msg.id;
    const before = isObject(messages[id]) ? messages[id] : undefined;
    const merged = mergeMessage(before, msg, t);
    if (!before) history.currentId = id;
    const oldParent = before ? str(before.parentId) : null;
    const newParent = str(merged.parentId);
    if (oldParent && oldParent !== newParent && isObject(messages[oldParent])) {
      const p = messages[oldParent]!;
      messages[oldParent] = { ...p, childrenIds: (Array.isArray(p.childrenIds) ? p.childrenIds : []).filter((c) => c !== id) };
    }
    if (newParent && isObject(messages[newParent])) {
      const p = messages[newParent]!;
      const kids = Array.isArray(p.childrenIds) ? p.childrenIds : [];
      if (!kids.includes(id)) messages[newParent] = { ...p, childrenIds: [...kids, id] };
    }
    messages[id] = merged;
    done.push({ message: merged, created: !before });
  }
  history.messages = messages;
  const sent: Promise<unknown>[] = [tx`update chat set chat = ${tx.json({ ...chat.chat, history } as never)}, updated_at = ${t} where id = ${chatId}`.execute()];
  sent.push(writeRows(tx, chatId, userId, done.map((d) => [d.message.id!, d.message])));
  for (const { message: m, created } of done) {
    sent.push(
      events.emit(tx, created ? 'message.created' : 'message.updated', {
        actor: events.user,
        subject: { type: 'message', id: m.id! },
        data: { chat_id: chatId, role: str(m.role) ?? 'assistant', parent_id: str(m.parentId), model: str(m.model), content_preview: contentText(m.content).slice(0, 300) },
      }),
    );
  }
  if (after) sent.push(after());
  await Promise.all(sent);
  return done;
}

/** A message as `upsertMessage` stores it: merged over the stored one, or new with its defaults. */
export function mergeMessage(before: HistoryMessage | undefined, msg: HistoryMessage & { id: string }, t = now()): HistoryMessage {
  const id = msg.id;
  if (before) return stripNul({ ...before, ...msg, id });
  return stripNul({
    ...msg,
    id,
    parentId: msg.parentId ?? null,
    childrenIds: Array.isArray(msg.childrenIds) ? msg.childrenIds : [],
    role: str(msg.role) ?? 'assistant',
    timestamp: seconds(msg.timestamp, t),
  });
}

/** The thread fields a message's row would hold once stored (what `threadTo` reads back; rowToMessage's columns). */
export function rowOf(chatId: string, m: HistoryMessage & { id: string }): Pick<ChatMessageRow, 'id' | 'chat_id' | 'role' | 'parent_id' | 'content' | 'output' | 'tool_calls' | 'usage' | 'context_summary'> {
  const r = rowValues(m.id, m, now());
  return { id: m.id, chat_id: chatId, role: r.role, parent_id: r.parent_id, content: r.content, output: r.output, tool_calls: r.tool_calls, usage: r.usage as Record<string, unknown> | null, context_summary: r.context_summary };
}

/**
 * Store a compaction checkpoint on a message (Open WebUI keeps it on the user message the
 * summary was made for): the row's context_summary and the JSON message's `contextSummary`, in
 * `tx`. Throws 404 when the chat has no such message.
 */
export async function saveContextSummary(tx: Tx, chatId: string, messageId: string, summary: string): Promise<void> {
  const chat = await lockChat(tx, chatId);
  const clean = stripNul(summary);
  const rows = await tx`update chat_message set context_summary = ${clean}, updated_at = ${now()}
    where chat_id = ${chatId} and id = ${messageId} returning id`;
  if (!rows.length) fail(404, OWUI_ERRORS.notFound);
  const history = chat.chat.history;
  if (isObject(history) && isObject(history.messages) && isObject(history.messages[messageId])) {
    const messages = { ...history.messages, [messageId]: { ...(history.messages[messageId] as object), contextSummary: clean } };
    await tx`update chat set chat = ${tx.json({ ...chat.chat, history: { ...history, messages } } as never)} where id = ${chatId}`;
  }
}

// ---- chat rows (the /api/v1/chats routes) ---------------------------------------------------

type ChatTitle = Pick<ChatRow, 'id' | 'title' | 'updated_at' | 'created_at'>;
const q = (db: Sql | Tx) => db as Sql;
const containsPattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The user's own chat (pin, archive, folder, tags, compaction are the owner's), locked when asked. */
export async function ownChatRow(db: Sql | Tx, userId: string, id: string, lock = false): Promise<ChatRow | undefined> {
  const sql = q(db);
  const [chat] = await sql<ChatRow[]>`select * from chat where id = ${id} and user_id = ${userId} ${lock ? sql`for update` : sql``}`;
  return chat;
}

export async function insertChat(tx: Tx, c: { id: string; userId: string; folderId: string | null; title: string; chat: Record<string, unknown> }, t: number): Promise<ChatRow> {
  const [row] = await tx<ChatRow[]>`
    insert into chat (id, user_id, folder_id, title, chat, meta, share_id, archived, pinned, created_at, updated_at)
    values (${c.id}, ${c.userId}, ${c.folderId}, ${c.title}, ${tx.json(c.chat as never)}, ${tx.json({})}, null, false, false, ${t}, ${t})
    returning *`;
  return row!;
}

export async function writeChatJson(tx: Tx, id: string, chat: Record<string, unknown>, title: string, t: number): Promise<ChatRow | undefined> {
  const [row] = await tx<ChatRow[]>`update chat set chat = ${tx.json(chat as never)}, title = ${title}, updated_at = ${t} where id = ${id} returning *`;
  return row;
}

/** Flip the owner's pinned or archived flag; undefined when the user has no such chat. */
export async function toggleChatFlag(tx: Tx, userId: string, id: string, flag: 'pinned' | 'archived', t: number): Promise<ChatRow | undefined> {
  const [row] = await tx<ChatRow[]>`
    update chat set ${flag === 'pinned' ? tx`pinned = not pinned` : tx`archived = not archived`}, updated_at = ${t}
    where id = ${id} and user_id = ${userId} returning *`;
  return row;
}

/** Archive (or unarchive) every chat of the user; answers how many changed. */
export async function setAllArchived(tx: Tx, userId: string, archived: boolean): Promise<number> {
  return (await tx`update chat set archived = ${archived} where user_id = ${userId} and archived <> ${archived} returning id`).length;
}

/** Into a folder (null: out of any), unpinned as Open WebUI does; undefined when not the user's. */
export async function moveChat(tx: Tx, userId: string, id: string, folderId: string | null, t: number): Promise<ChatRow | undefined> {
  const [row] = await tx<ChatRow[]>`
    update chat set folder_id = ${folderId}, pinned = false, updated_at = ${t}
    where id = ${id} and user_id = ${userId} returning *`;
  return row;
}

/** Delete a chat (its messages go with it); `ownerId` null lets an admin delete anyone's. Answers the owner. */
export async function deleteChat(tx: Tx, id: string, ownerId: string | null): Promise<string | undefined> {
  const [row] = await tx<{ user_id: string }[]>`
    delete from chat where id = ${id} ${ownerId === null ? tx`` : tx`and user_id = ${ownerId}`} returning user_id`;
  return row?.user_id;
}

/** Every chat of the user, archived ones too; answers how many. */
export async function deleteUserChats(tx: Tx, userId: string): Promise<number> {
  return (await tx`delete from chat where user_id = ${userId} returning id`).length;
}

/** The sidebar's unarchived chats: loose ones (no folder, not pinned) unless asked; all, or one page. */
export function listChats(
  sql: Sql,
  userId: string,
  o: { includeFolders: boolean; includePinned: boolean; byTitle: boolean; ascending: boolean; page: number | undefined; size: number },
): Promise<ChatTitle[]> {
  return sql<ChatTitle[]>`
    select id, title, updated_at, created_at from chat
    where user_id = ${userId} and not archived
      ${o.includeFolders ? sql`` : sql`and folder_id is null`}
      ${o.includePinned ? sql`` : sql`and not pinned`}
    order by ${o.byTitle ? sql`title` : sql`updated_at`} ${o.ascending ? sql`asc` : sql`desc`}, id
    ${o.page === undefined ? sql`` : sql`limit ${o.size} offset ${(o.page - 1) * o.size}`}`;
}

export function pinnedChats(sql: Sql, userId: string): Promise<ChatTitle[]> {
  return sql<ChatTitle[]>`
    select id, title, updated_at, created_at from chat where user_id = ${userId} and pinned and not archived
    order by updated_at desc, id`;
}

/** One page of archived chats, newest first unless ordered; `text` must be in the title (any case). */
export function archivedChats(
  sql: Sql,
  userId: string,
  o: { text: string | undefined; orderBy: 'updated_at' | 'created_at' | 'title' | undefined; ascending: boolean; page: number; size: number },
): Promise<ChatTitle[]> {
  const order = o.orderBy ? sql`${sql(o.orderBy)} ${o.ascending ? sql`asc` : sql`desc`}, id` : sql`updated_at desc, id`;
  return sql<ChatTitle[]>`
    select id, title, updated_at, created_at from chat
    where user_id = ${userId} and archived ${o.text ? sql`and title ilike ${containsPattern(o.text)}` : sql``}
    order by ${order} limit ${o.size} offset ${(o.page - 1) * o.size}`;
}

export function allArchivedChats(sql: Sql, userId: string): Promise<ChatRow[]> {
  return sql<ChatRow[]>`select * from chat where user_id = ${userId} and archived order by updated_at desc, id`;
}

/** The user's own unpinned, unarchived chats in any of these folders, newest first. */
export function chatsInFolders(sql: Sql, userId: string, folderIds: readonly string[]): Promise<ChatRow[]> {
  return sql<ChatRow[]>`
    select * from chat
    where user_id = ${userId} and folder_id = any(${sql.array([...folderIds])}::text[]) and not pinned and not archived
    order by updated_at desc, id`;
}

/** Whether an assistant reply of the chat is still being generated (not done). */
export async function replyInProgress(sql: Sql, chatId: string): Promise<boolean> {
  return (await sql`select 1 from chat_message where chat_id = ${chatId} and role = 'assistant' and not done limit 1`).length > 0;
}

/** A parsed search text (tags.ops.ts): filters, and words that must be in the title or a message. */
export interface ChatSearch {
  archived: boolean | null;
  pinned: boolean | null;
  shared: boolean | null;
  /** Folder names as compared (runs of spaces and underscores one space, lower case); sub-folders match too. */
  folders: string[];
  /** All must be listed; `none` = untagged. */
  tagIds: string[];
  text: string;
}

/** One page of the user's chats matching a search, newest first (archived ones only when asked). */
export function searchChats(sql: Sql, userId: string, s: ChatSearch, page: number, size: number): Promise<ChatTitle[]> {
  const conds = [sql`c.user_id = ${userId}`];
  conds.push(s.archived === null ? sql`not c.archived` : sql`c.archived = ${s.archived}`);
  if (s.pinned !== null) conds.push(sql`c.pinned = ${s.pinned}`);
  if (s.shared !== null) conds.push(s.shared ? sql`c.share_id is not null` : sql`c.share_id is null`);
  if (s.folders.length) {
    // Open WebUI ignores a folder filter that names none of the caller's folders; here it
    // matches nothing, which is what the words ask for.
    conds.push(sql`c.folder_id in (
      with recursive hit (id) as (
        select id from folder
        where user_id = ${userId} and lower(btrim(regexp_replace(name, '[[:space:]_]+', ' ', 'g'))) = any(${s.folders}::text[])
        union
        select f.id from folder f join hit h on f.parent_id = h.id
      )
      select id from hit)`);
  }
  if (s.tagIds.includes('none')) conds.push(sql`cardinality(chat_tag_ids(c.meta)) = 0`);
  else for (const id of s.tagIds) conds.push(sql`c.meta -> 'tags' ? ${id}`);
  if (s.text) {
    const pattern = containsPattern(s.text);
    conds.push(sql`(c.title ilike ${pattern}
      or exists (select 1 from chat_message m where m.chat_id = c.id and lower(m.content) like ${pattern}))`);
  }
  const where = conds.reduce((a, b) => sql`${a} and ${b}`);
  return sql<ChatTitle[]>`
    select c.id, c.title, c.updated_at, c.created_at from chat c
    where ${where}
    order by c.updated_at desc, c.id
    limit ${size} offset ${(page - 1) * size}`;
}
