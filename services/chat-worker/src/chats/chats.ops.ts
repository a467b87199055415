import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { BusError } from '@gatehouse/common';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type OpContext, type OpReply, type Tx, type UserRow } from '../context.ts';
import { atLeast, folderAccess, holdFolder, queryBool, queryInt, readableFolder, stripNul, subtreeIds } from '../access.ts';
import { loadSettings, saveSettings, type ChatSettings } from '../config/settings.ts';
import {
  allArchivedChats,
  archivedChats,
  chatAccessOf,
  chatResponse,
  chatsInFolders,
  chatTitleId,
  deleteChat,
  deleteUserChats,
  insertChat,
  listChats,
  lockChat,
  moveChat,
  ownChatRow,
  pinnedChats,
  replyInProgress,
  setAllArchived,
  syncMessages,
  threadTo,
  toggleChatFlag,
  writeChatJson,
  type ChatRow,
} from './chats.store.ts';
import { compactChat, type CompactionDeps } from './compaction.ts';

/**
 * Chats (Open WebUI 0.10.2 routers/chats.py under /api/v1/chats): list with paging, create, get,
 * update, delete (one, all of mine), pin and archive toggles with their lists, move into or out of
 * a folder, the chats of a folder, the compaction config (admin) and manual compaction.
 *
 * Where Open WebUI answers 401 for a chat the caller may not touch (pin, archive, folder, update…)
 * this answers 404 with its NOT_FOUND message: a 401 makes Open WebUI's front end sign the user
 * out (the 0.10.1 fix), and a stranger's chat must look exactly like a missing one.
 * Per-user state (pin, archive, folder, delete) is the owner's alone; admins may also delete.
 */

/** A page of chat lists (Open WebUI: 60 per page). */
const PAGE = 60;
const asSql = (tx: Tx): Sql => tx as unknown as Sql;

/** Open WebUI's title rule: the chat JSON's `title` when given (a string), else "New Chat". */
function checkTitle(chat: Record<string, unknown>): void {
  const title = chat.title;
  if (title !== undefined && typeof title !== 'string') {
    throw new BusError(422, 'validation failed', {
      detail: [{ type: 'string_type', loc: ['body', 'chat', 'title'], msg: 'Input should be a valid string', input: title }],
    });
  }
}
const titleOf = (chat: Record<string, unknown>) => (typeof chat.title === 'string' ? chat.title : 'New Chat');

/** The caller's own chat (pin, archive, folder, compaction are the owner's), else 404. */
async function ownChat(sql: Sql | Tx, user: UserRow, id: string): Promise<ChatRow> {
  return (await ownChatRow(sql, user.id, id)) ?? fail(404, OWUI_ERRORS.notFound);
}

/** The folder `user` may put chats in (their own, or shared with write), held until `tx` ends. */
async function writableFolder(tx: Tx, user: UserRow, folderId: string): Promise<void> {
  const found = await folderAccess(asSql(tx), user, folderId);
  if (!found || !atLeast(found.access, 'write')) fail(404, OWUI_ERRORS.notFound);
  // Hold it so a delete cannot slip in between the check and the write.
  if (!(await holdFolder(tx, folderId))) fail(404, OWUI_ERRORS.notFound);
}

const compactionConfig = (s: ChatSettings) => ({
  ENABLE_CONTEXT_COMPACTION: s.ENABLE_CONTEXT_COMPACTION,
  CONTEXT_COMPACTION_TOKEN_THRESHOLD: s.CONTEXT_COMPACTION_TOKEN_THRESHOLD,
  CONTEXT_COMPACTION_PROMPT_TEMPLATE: s.CONTEXT_COMPACTION_PROMPT_TEMPLATE,
});

/** Toggle a per-user flag on the caller's chat, with its event (`chat.pinned` / `chat.unpinned`…). */
async function toggle(ctx: OpContext, id: string, flag: 'pinned' | 'archived') {
  const user = me(ctx);
  const chat = await ctx.sql.begin(async (tx) => {
    const row = await toggleChatFlag(tx, user.id, id, flag, now());
    if (!row) fail(404, OWUI_ERRORS.notFound);
    const e = { actor: user, subject: { type: 'chat', id } };
    if (flag === 'pinned') await ctx.emit(tx, row.pinned ? 'chat.pinned' : 'chat.unpinned', { ...e, data: { pinned: row.pinned } });
    else await ctx.emit(tx, row.archived ? 'chat.archived' : 'chat.unarchived', { ...e, data: { archived: row.archived } });
    return row;
  });
  return ok(chatResponse(chat));
}

/** Set `archived` on all of the caller's chats; one event for the batch, as Open WebUI. */
async function archiveAll(ctx: OpContext, archived: boolean): Promise<OpReply<'chats.archiveAll' | 'chats.unarchiveAll'>> {
  const user = me(ctx);
  await ctx.sql.begin(async (tx) => {
    const count = await setAllArchived(tx, user.id, archived);
    if (count) {
      await ctx.emit(tx, archived ? 'chat.archived' : 'chat.unarchived', {
        actor: user,
        subject: { type: 'user', id: user.id },
        data: { count },
      });
    }
  });
  return ok(true);
}

export const chatsOps = opTable({
  /** `GET /` and `/list`: the sidebar's loose chats (no folder, not pinned) unless asked. */
  'chats.list': async (req, ctx) => {
    const user = me(ctx);
    const page = queryInt(req.query, 'page', 1);
    const includePinned = queryBool(req.query, 'include_pinned', false);
    const includeFolders = queryBool(req.query, 'include_folders', false);
    // `?sort_by=title|updated_at&sort_dir=asc|desc` (anything else: newest first, as the default).
    const rows = await listChats(ctx.sql, user.id, {
      includeFolders,
      includePinned,
      byTitle: req.query.sort_by === 'title',
      ascending: req.query.sort_dir === 'asc',
      page,
      size: PAGE,
    });
    return ok(rows.map(chatTitleId));
  },

  'chats.create': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    checkTitle(form.chat);
    const folderId = form.folder_id ?? null;
    const id = randomUUID();
    const t = now();
    const chat = await ctx.sql.begin(async (tx) => {
      // Open WebUI: a folder that is neither the caller's nor shared with them for write is 404,
      // read-only sharing included (nothing is created).
      if (folderId !== null) await writableFolder(tx, user, folderId);
      const row = await insertChat(tx, { id, userId: user.id, folderId, title: titleOf(form.chat), chat: form.chat }, t);
      await syncMessages(tx, id, user.id, form.chat);
      await ctx.emit(tx, 'chat.created', { actor: user, subject: { type: 'chat', id }, data: { title: row.title, folder_id: folderId } });
      return row;
    });
    return ok(chatResponse(chat));
  },

  /**
   * Owner → `readonly: false`. Anyone else who may read it (a grant on its folder, or an admin)
   * → `readonly: true`, never a 401 (a 401 signs Open WebUI's front end out — the 0.10.1 fix).
   */
  'chats.get': async (req, ctx) => {
    const user = me(ctx);
    const found = await chatAccessOf(ctx.sql, user, req.params.id ?? '');
    if (!found) fail(404, OWUI_ERRORS.notFound);
    return ok({ ...chatResponse(found.chat), readonly: found.access !== 'owner' });
  },

  /**
   * `chat` is merged over the stored JSON key by key (`{**chat.chat, **form.chat}`), the title
   * follows it, and when the update carries `history` (or `messages`) the message rows are made
   * to match. The owner and write grantees of its folder may update; readers may not.
   */
  'chats.update': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    checkTitle(form.chat);
    const id = req.params.id ?? '';
    const chat = await ctx.sql.begin(async (tx) => {
      await lockChat(tx, id);
      // Checked under the lock: a chat moved out of a shared folder meanwhile is no longer writable.
      const found = await chatAccessOf(tx, user, id);
      if (!found || found.access === 'read') fail(404, OWUI_ERRORS.notFound);
      const merged = { ...found.chat.chat, ...form.chat };
      const row = await writeChatJson(tx, id, merged, titleOf(merged), now());
      if ('history' in form.chat || 'messages' in form.chat) await syncMessages(tx, id, user.id, merged);
      await ctx.emit(tx, 'chat.updated', { actor: user, subject: { type: 'chat', id }, data: { title: row!.title } });
      return row!;
    });
    return ok(chatResponse(chat));
  },

  'chats.delete': async (req, ctx) => {
    const user = me(ctx);
    const id = req.params.id ?? '';
    await ctx.sql.begin(async (tx) => {
      const ownerId = await deleteChat(tx, id, user.role === 'admin' ? null : user.id);
      if (!ownerId) fail(404, OWUI_ERRORS.notFound);
      await ctx.emit(tx, 'chat.deleted', { actor: user, subject: { type: 'chat', id }, data: { owner_id: ownerId } });
    });
    return ok(true);
  },

  /** `DELETE /`: every chat of the caller (archived ones too); their messages go with them. */
  'chats.deleteAll': async (_req, ctx) => {
    const user = me(ctx);
    await ctx.sql.begin(async (tx) => {
      const count = await deleteUserChats(tx, user.id);
      await ctx.emit(tx, 'chat.deleted_all', { actor: user, subject: { type: 'user', id: user.id }, data: { count } });
    });
    return ok(true);
  },

  'chats.pinned': async (_req, ctx) => {
    const user = me(ctx);
    return ok((await pinnedChats(ctx.sql, user.id)).map(chatTitleId));
  },

  'chats.pinnedStatus': async (req, ctx) => ok((await ownChat(ctx.sql, me(ctx), req.params.id ?? '')).pinned),

  'chats.pin': async (req, ctx) => toggle(ctx, req.params.id ?? '', 'pinned'),

  /** `GET /archived?page=&query=&order_by=&direction=` (page defaults to 1: 60 at a time). */
  'chats.archived': async (req, ctx) => {
    const user = me(ctx);
    const page = queryInt(req.query, 'page', 1) ?? 1;
    const { query: text, order_by: orderBy, direction } = req.query;
    let order: { orderBy?: 'updated_at' | 'created_at' | 'title'; ascending: boolean } = { ascending: false };
    if (orderBy && direction) {
      if (orderBy !== 'updated_at' && orderBy !== 'created_at' && orderBy !== 'title') fail(400, '[ERROR: Invalid order_by field]');
      const dir = direction.toLowerCase();
      if (dir !== 'asc' && dir !== 'desc') fail(400, '[ERROR: Invalid direction for ordering]');
      order = { orderBy, ascending: dir === 'asc' };
    }
    const rows = await archivedChats(ctx.sql, user.id, { text, orderBy: order.orderBy, ascending: order.ascending, page, size: PAGE });
    return ok(rows.map(chatTitleId));
  },

  'chats.allArchived': async (_req, ctx) => {
    const user = me(ctx);
    return ok((await allArchivedChats(ctx.sql, user.id)).map(chatResponse));
  },

  'chats.archive': async (req, ctx) => toggle(ctx, req.params.id ?? '', 'archived'),
  'chats.archiveAll': async (_req, ctx) => archiveAll(ctx, true),
  'chats.unarchiveAll': async (_req, ctx) => archiveAll(ctx, false),

  /**
   * Move the caller's chat into a folder they own or may write (a read-only share is 404, like a
   * missing folder), or out of any folder with `folder_id: null`. Moving unpins, as Open WebUI.
   */
  'chats.updateFolder': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const id = req.params.id ?? '';
    const folderId = form.folder_id ?? null;
    const chat = await ctx.sql.begin(async (tx) => {
      await ownChat(tx, user, id);
      if (folderId !== null) await writableFolder(tx, user, folderId);
      const row = await moveChat(tx, user.id, id, folderId, now());
      if (!row) fail(404, OWUI_ERRORS.notFound);
      await ctx.emit(tx, 'chat.folder_updated', { actor: user, subject: { type: 'chat', id }, data: { folder_id: folderId } });
      return row;
    });
    return ok(chatResponse(chat));
  },

  /** The caller's own chats in a folder they can read and its sub-folders (ChatResponse list). */
  'chats.byFolder': async (req, ctx) => {
    const user = me(ctx);
    const { folder } = await readableFolder(ctx.sql, user, req.params.folder_id ?? '');
    const rows = await chatsInFolders(ctx.sql, user.id, await subtreeIds(ctx.sql, folder.id));
    return ok(rows.map(chatResponse));
  },

  'chats.config.get': async (_req, ctx) => ok(compactionConfig(await ctx.settings())),

  'chats.config.set': async (req, ctx) => {
    const admin = me(ctx);
    const form = req.body;
    const values: Partial<ChatSettings> = {
      ENABLE_CONTEXT_COMPACTION: form.ENABLE_CONTEXT_COMPACTION,
      // Open WebUI clamps rather than refuses: a threshold below one token means "always".
      CONTEXT_COMPACTION_TOKEN_THRESHOLD: Math.max(1, form.CONTEXT_COMPACTION_TOKEN_THRESHOLD),
      CONTEXT_COMPACTION_PROMPT_TEMPLATE: stripNul(form.CONTEXT_COMPACTION_PROMPT_TEMPLATE),
    };
    const saved = await ctx.sql.begin(async (tx) => {
      await saveSettings(asSql(tx), values, now(), ctx.saved);
      await ctx.emit(tx, 'config.updated', { actor: admin, subject: { type: 'config', id: 'chat' }, data: { keys: Object.keys(values) } });
      return loadSettings(asSql(tx));
    });
    return ok(compactionConfig(saved));
  },
});

/** Manual compaction, built with what it needs to reach a model. */
export function compactOps(deps: CompactionDeps) {
  return opTable({
    /**
     * `POST /{id}/compact` `{model?}`: the owner's chat only; 409 while a reply is still being
     * generated (an assistant message not done); the model is the body's, else the newest assistant
     * message's on the current branch, else the chat's first model (400 when there is none).
     */
    'chats.compact': async (req, ctx) => {
      const user = me(ctx);
      const form = req.body;
      const chat = await ownChat(ctx.sql, user, req.params.id ?? '');
      if (await replyInProgress(ctx.sql, chat.id)) fail(409, 'Wait for the current response to finish before compacting.');
      let model = form?.model || undefined;
      if (!model) {
        const history = chat.chat.history as { currentId?: unknown } | undefined;
        const current = typeof history?.currentId === 'string' ? history.currentId : null;
        const thread = current ? await threadTo(ctx.sql, chat.id, current) : [];
        model = thread.reverse().find((m) => m.role === 'assistant' && m.model_id)?.model_id ?? undefined;
      }
      if (!model) {
        const models = chat.chat.models;
        model = Array.isArray(models) && typeof models[0] === 'string' && models[0] ? models[0] : undefined;
      }
      if (!model) fail(400, 'No model found for context compaction.');
      return ok(await compactChat(ctx, deps, chat, { model, force: true }));
    },
  });
}
