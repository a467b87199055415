import type { Sql } from 'postgres';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { queryInt, stripNul } from '../access.ts';
import { chatResponse, lockChat, ownChatRow, type ChatRow } from './chats.store.ts';
import { fail, me, now, ok, opTable, type OpContext, type Tx, type UserRow } from '../context.ts';
import { existingIds } from '../folders/folders.store.ts';
import { permissionsFor } from '../auth/accounts.ops.ts';
import { cloneDocument, importChat, requireImport } from './import.ts';
import {
  createShare,
  dropShares,
  dropUserShares,
  refreshShare,
  replaceShareGrants,
  shareById,
  shareGrants,
  shareReadable,
  userShares,
  type SharedChatRow,
  type ShareGrant,
} from './sharing.store.ts';

/**
 * Chat sharing and cloning (Open WebUI 0.10.2 routers/chats.py; the contract and its rules are
 * contracts/src/chat/catalog-chat-sharing.ts).
 *
 * Reading a share answers Open WebUI's 401s (NOT_FOUND for no such share, ACCESS_PROHIBITED for a
 * share the caller is not granted), as its shared-chat page expects. The owner-only operations on
 * a chat (share, unshare, clone, its grants) answer a chat that is not the caller's with the 404
 * every other chat operation here gives (chats.ops.ts): a stranger's chat looks like a missing one.
 */

export interface SharingOptions {
  /** ENABLE_ADMIN_CHAT_ACCESS: admins read any share and manage any chat's share grants. */
  adminChatAccess: boolean;
}

const asSql = (tx: Tx): Sql => tx as unknown as Sql;
const PAGE = 60;

/** A snapshot in ChatResponse's shape: its id and share_id are the share's, user_id the sharer's. */
function snapshotResponse(s: SharedChatRow) {
  return {
    id: s.id,
    user_id: s.user_id,
    title: s.title,
    chat: s.chat,
    updated_at: s.updated_at,
    created_at: s.created_at,
    share_id: s.id,
    archived: false,
    pinned: false,
    meta: {},
    folder_id: null,
  };
}

/** The caller's own chat, else 404. */
async function ownChat(db: Sql | Tx, user: UserRow, id: string): Promise<ChatRow> {
  return (await ownChatRow(db, user.id, id)) ?? fail(404, OWUI_ERRORS.notFound);
}

/** The chat whose share grants the caller manages: their own, or any with admin chat access. */
async function managedChat(sql: Sql, user: UserRow, id: string, o: SharingOptions): Promise<ChatRow> {
  if (user.role === 'admin' && o.adminChatAccess) {
    const [chat] = await sql<ChatRow[]>`select * from chat where id = ${id}`;
    return chat ?? fail(404, OWUI_ERRORS.notFound);
  }
  return ownChat(sql, user, id);
}

/**
 * What `shareId` opens for the caller, as Open WebUI's get_shared_chat_by_id reads it: the snapshot
 * (its sharer, admins with chat access, and whoever a read grant on the chat reaches), or for an
 * admin with chat access a chat id in its place; anything else is its 401.
 */
async function readableShare(sql: Sql, user: UserRow, shareId: string, o: SharingOptions): Promise<{ id: string; title: string; chat: Record<string, unknown>; body: ReturnType<typeof snapshotResponse> }> {
  const admin = user.role === 'admin' && o.adminChatAccess;
  const share = await shareById(sql, shareId);
  if (share) {
    if (!admin && share.user_id !== user.id && !(await shareReadable(sql, user, share.chat_id))) fail(401, OWUI_ERRORS.accessProhibited);
    return { id: share.id, title: share.title, chat: share.chat, body: snapshotResponse(share) };
  }
  if (admin) {
    const [chat] = await sql<ChatRow[]>`select * from chat where id = ${shareId}`;
    if (chat) return { id: chat.id, title: chat.title, chat: chat.chat, body: chatResponse(chat) as never };
  }
  return fail(401, OWUI_ERRORS.notFound);
}

/**
 * Open WebUI's filter_allowed_access_grants for chats: a non-admin's grant to everyone (`user:*`)
 * needs sharing.public_chats and a grant to one user needs access_grants.allow_users; grants
 * without the permission are dropped, not refused. Duplicates go; unknown principals are a 400.
 */
async function allowedGrants(tx: Tx, user: UserRow, grants: readonly ShareGrant[]): Promise<ShareGrant[]> {
  if (grants.some((g) => g.principal_type === 'group' && g.principal_id === '*')) fail(400, 'The everyone grant is principal_type "user" with principal_id "*"');
  let kept = [...grants];
  if (user.role !== 'admin') {
    const perms = (await permissionsFor(asSql(tx), user.id)) as { sharing?: { public_chats?: unknown }; access_grants?: { allow_users?: unknown } };
    if (perms.sharing?.public_chats !== true) kept = kept.filter((g) => !(g.principal_type === 'user' && g.principal_id === '*'));
    if (perms.access_grants?.allow_users === false) kept = kept.filter((g) => !(g.principal_type === 'user' && g.principal_id !== '*'));
  }
  const seen = new Set<string>();
  kept = kept.filter((g) => {
    const k = `${g.principal_type}\u0001${g.principal_id}\u0001${g.permission}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  for (const table of ['user', 'group'] as const) {
    const ids = [...new Set(kept.filter((g) => g.principal_type === table && g.principal_id !== '*').map((g) => g.principal_id))];
    if (!ids.length) continue;
    const known = await existingIds(tx, table, ids);
    const unknown = ids.find((id) => !known.has(id));
    if (unknown !== undefined) fail(400, `Unknown ${table} in access_grants: ${unknown}`);
  }
  return kept;
}

/** `?order_by=&direction=` of the share list (Open WebUI's filter; a bad one is a 400 here, not its 500). */
function listOrder(query: Record<string, string>): { orderBy: 'title' | 'created_at' | 'updated_at' | undefined; ascending: boolean } {
  const { order_by: orderBy, direction } = query;
  if (!orderBy || !direction) return { orderBy: undefined, ascending: false };
  if (orderBy !== 'title' && orderBy !== 'created_at' && orderBy !== 'updated_at') fail(400, 'Invalid order_by field');
  const dir = direction.toLowerCase();
  if (dir !== 'asc' && dir !== 'desc') fail(400, 'Invalid direction for ordering');
  return { orderBy, ascending: dir === 'asc' };
}

/** Insert the clone and write chat.cloned, in one transaction. */
async function cloneFrom(ctx: OpContext, user: UserRow, source: { id: string; title: string; chat: Record<string, unknown> }, extra: { title?: string | null; meta?: Record<string, unknown>; pinned?: boolean; folder_id?: string | null }) {
  const row = await ctx.sql.begin(async (tx) => {
    const created = await importChat(tx, user, { chat: cloneDocument(source, extra.title), meta: extra.meta ?? {}, pinned: extra.pinned ?? false, folder_id: extra.folder_id ?? null }, now());
    await ctx.emit(tx, 'chat.cloned', { actor: user, subject: { type: 'chat', id: created.id }, data: { original_chat_id: source.id } });
    return created;
  });
  return ok(chatResponse(row));
}

export function chatSharingOps(o: SharingOptions) {
  return opTable({
    /** First share: a snapshot under a new share id. Again: the same share id, snapshot refreshed. */
    'chats.share': async (req, ctx) => {
      const user = me(ctx);
      if (user.role !== 'admin') {
        const chatPerms = (await permissionsFor(ctx.sql, user.id)).chat as Record<string, unknown> | undefined;
        if (chatPerms?.share === false) fail(401, OWUI_ERRORS.accessProhibited);
      }
      const id = req.params.id ?? '';
      const chat = await ctx.sql.begin(async (tx) => {
        await ownChat(tx, user, id);
        const chat = await lockChat(tx, id);
        const t = now();
        const refreshed = chat.share_id ? await refreshShare(tx, chat.share_id, chat, t) : undefined;
        if (refreshed) {
          await ctx.emit(tx, 'chat.shared', { actor: user, subject: { type: 'chat', id }, data: { share_id: refreshed.id, updated: true } });
          return chat;
        }
        const share = await createShare(tx, chat, user.id, t);
        await ctx.emit(tx, 'chat.shared', { actor: user, subject: { type: 'chat', id }, data: { share_id: share.id } });
        return { ...chat, share_id: share.id };
      });
      return ok(chatResponse(chat));
    },

    /** The link, its snapshot and its grants removed; true even when the chat was not shared. */
    'chats.unshare': async (req, ctx) => {
      const user = me(ctx);
      const id = req.params.id ?? '';
      await ctx.sql.begin(async (tx) => {
        await ownChat(tx, user, id);
        const chat = await lockChat(tx, id);
        await dropShares(tx, id);
        await ctx.emit(tx, 'chat.unshared', { actor: user, subject: { type: 'chat', id }, data: { share_id: chat.share_id } });
      });
      return ok(true);
    },

    /** Every link the caller made; one event naming the chats, none when there was nothing shared. */
    'chats.unshareAll': async (_req, ctx) => {
      const user = me(ctx);
      await ctx.sql.begin(async (tx) => {
        const chatIds = await dropUserShares(tx, user.id);
        if (chatIds.length) {
          await ctx.emit(tx, 'chat.unshared', { actor: user, subject: { type: 'user', id: user.id }, data: { count: chatIds.length, chat_ids: chatIds } });
        }
      });
      return ok(true);
    },

    /** `GET /shared?page=&query=&order_by=&direction=`: the caller's links, 60 a page. */
    'chats.sharedList': async (req, ctx) => {
      const user = me(ctx);
      const page = queryInt(req.query, 'page', 1) ?? 1;
      const rows = await userShares(ctx.sql, user.id, { text: req.query.query, ...listOrder(req.query), skip: (page - 1) * PAGE, limit: PAGE });
      return ok(rows.map((s) => ({ id: s.chat_id, chat_id: s.chat_id, title: s.title, share_id: s.id, updated_at: s.updated_at, created_at: s.created_at })));
    },

    'chats.shareGet': async (req, ctx) => ok((await readableShare(ctx.sql, me(ctx), req.params.share_id ?? '', o)).body),

    /** Who may read the chat's link: the grants replace the chat's; answers the chat. */
    'chats.sharedAccess.update': async (req, ctx) => {
      const user = me(ctx);
      const form = stripNul(req.body);
      const chat = await managedChat(ctx.sql, user, req.params.id ?? '', o);
      await ctx.sql.begin(async (tx) => {
        await lockChat(tx, chat.id);
        await replaceShareGrants(tx, chat.id, await allowedGrants(tx, user, form.access_grants), now());
      });
      return ok(chatResponse(chat));
    },

    'chats.sharedAccess.get': async (req, ctx) => {
      const chat = await managedChat(ctx.sql, me(ctx), req.params.id ?? '', o);
      const grants = await shareGrants(ctx.sql, chat.id);
      return ok(grants.map((g) => ({ id: g.id, principal_type: g.principal_type, principal_id: g.principal_id, permission: g.permission })));
    },

    /** The caller's own chat copied, with its meta (tags), pin and folder. */
    'chats.clone': async (req, ctx) => {
      const user = me(ctx);
      await requireImport(ctx.sql, user);
      const source = await ownChat(ctx.sql, user, req.params.id ?? '');
      return cloneFrom(ctx, user, source, { title: req.body?.title, meta: source.meta, pinned: source.pinned, folder_id: source.folder_id });
    },

    /** A share the caller may read, copied into their chats (its originalChatId is the share id, as Open WebUI). */
    'chats.cloneShared': async (req, ctx) => {
      const user = me(ctx);
      await requireImport(ctx.sql, user);
      const source = await readableShare(ctx.sql, user, req.params.id ?? '', o);
      return cloneFrom(ctx, user, source, {});
    },
  });
}
