import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { grantReaches, type AccessGrantRow } from '../access.ts';
import type { ChatRow } from './chats.store.ts';
import type { Tx, UserRow } from '../context.ts';

/**
 * The shared_chat table (infra/migrations/chat/0015_shared_chats.sql) and the share grants:
 * access_grant rows with resource_type `shared_chat` whose resource_id is the chat's id, as Open
 * WebUI's AccessGrants keeps them. Chat rows themselves are chats.store.ts's.
 */

export interface SharedChatRow {
  id: string;
  chat_id: string;
  user_id: string;
  title: string;
  chat: Record<string, unknown>;
  created_at: number;
  updated_at: number;
}

export type ShareGrant = { principal_type: 'user' | 'group'; principal_id: string; permission: 'read' | 'write' };

const q = (db: Sql | Tx) => db as Sql;
const SHARE = 'shared_chat';

export async function shareById(db: Sql | Tx, shareId: string): Promise<SharedChatRow | undefined> {
  const [row] = await q(db)<SharedChatRow[]>`select * from shared_chat where id = ${shareId}`;
  return row;
}

/** A new snapshot of `chat` by `userId`, and the chat's share_id set to it. */
export async function createShare(tx: Tx, chat: ChatRow, userId: string, t: number): Promise<SharedChatRow> {
  const id = randomUUID();
  const [row] = await tx<SharedChatRow[]>`
    insert into shared_chat (id, chat_id, user_id, title, chat, created_at, updated_at)
    values (${id}, ${chat.id}, ${userId}, ${chat.title}, ${tx.json(chat.chat as never)}, ${t}, ${t})
    returning *`;
  await tx`update chat set share_id = ${id} where id = ${chat.id}`;
  return row!;
}

/** The snapshot taken again from the chat as it is now; undefined when the share is gone. */
export async function refreshShare(tx: Tx, shareId: string, chat: ChatRow, t: number): Promise<SharedChatRow | undefined> {
  const [row] = await tx<SharedChatRow[]>`
    update shared_chat set title = ${chat.title}, chat = ${tx.json(chat.chat as never)}, updated_at = ${t}
    where id = ${shareId} and chat_id = ${chat.id} returning *`;
  return row;
}

/** Every snapshot of the chat, its share_id and its grants gone. */
export async function dropShares(tx: Tx, chatId: string): Promise<void> {
  await tx`delete from shared_chat where chat_id = ${chatId}`;
  await tx`update chat set share_id = null where id = ${chatId} and share_id is not null`;
  await tx`delete from access_grant where resource_type = ${SHARE} and resource_id = ${chatId}`;
}

/** Every share the user made, dropped as `dropShares` does; answers the chats that had one. */
export async function dropUserShares(tx: Tx, userId: string): Promise<string[]> {
  const rows = await tx<{ chat_id: string }[]>`delete from shared_chat where user_id = ${userId} returning chat_id`;
  const chatIds = [...new Set(rows.map((r) => r.chat_id))];
  if (!chatIds.length) return [];
  await tx`update chat set share_id = null where id = any(${tx.array(chatIds)}::text[])`;
  await tx`delete from access_grant where resource_type = ${SHARE} and resource_id = any(${tx.array(chatIds)}::text[])`;
  return chatIds;
}

/** The user's shares, newest first unless ordered; `text` must be in the title (any case). */
export function userShares(
  sql: Sql,
  userId: string,
  o: { text: string | undefined; orderBy: 'title' | 'created_at' | 'updated_at' | undefined; ascending: boolean; skip: number; limit: number },
): Promise<SharedChatRow[]> {
  const pattern = o.text ? `%${o.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const order = o.orderBy ? sql`${sql(o.orderBy)} ${o.ascending ? sql`asc` : sql`desc`}, id` : sql`updated_at desc, id`;
  return sql<SharedChatRow[]>`
    select * from shared_chat where user_id = ${userId} ${pattern ? sql`and title ilike ${pattern}` : sql``}
    order by ${order} limit ${o.limit} offset ${o.skip}`;
}

/** Whether a read grant on the chat's share reaches `user` (their own, a group's, everyone's). */
export async function shareReadable(sql: Sql, user: UserRow, chatId: string): Promise<boolean> {
  const rows = await sql`
    select 1 from access_grant g
    where g.resource_type = ${SHARE} and g.resource_id = ${chatId} and g.permission in ('read', 'write') and ${grantReaches(sql, user.id)}
    limit 1`;
  return rows.length > 0;
}

export function shareGrants(db: Sql | Tx, chatId: string): Promise<AccessGrantRow[]> {
  return q(db)<AccessGrantRow[]>`
    select id, resource_type, resource_id, principal_type, principal_id, permission, created_at
    from access_grant where resource_type = ${SHARE} and resource_id = ${chatId}
    order by created_at, principal_type, principal_id, permission`;
}

/** The chat's share grants become exactly these (the caller removed duplicates). */
export async function replaceShareGrants(tx: Tx, chatId: string, grants: readonly ShareGrant[], t: number): Promise<void> {
  await tx`delete from access_grant where resource_type = ${SHARE} and resource_id = ${chatId}`;
  for (const g of grants) {
    await tx`insert into access_grant (id, resource_type, resource_id, principal_type, principal_id, permission, created_at)
      values (${randomUUID()}, ${SHARE}, ${chatId}, ${g.principal_type}, ${g.principal_id}, ${g.permission}, ${t})`;
  }
}

// ---- whole-account reads (export, admin) --------------------------------------------------

/** One page of the user's chats (archived ones too), newest first: the export's batches. */
export function userChatsPage(sql: Sql, userId: string, skip: number, limit: number): Promise<ChatRow[]> {
  return sql<ChatRow[]>`select * from chat where user_id = ${userId} order by updated_at desc, id limit ${limit} offset ${skip}`;
}

/** Every chat of every user, newest first (the admin export). */
export function everyChat(sql: Sql): Promise<ChatRow[]> {
  return sql<ChatRow[]>`select * from chat order by updated_at desc, id`;
}

/** One page of a user's chats for an admin, archived ones included; `text` in the title (any case). */
export function chatTitlesOf(
  sql: Sql,
  userId: string,
  o: { text: string | undefined; orderBy: 'title' | 'created_at' | 'updated_at' | undefined; ascending: boolean; skip: number; limit: number },
): Promise<Pick<ChatRow, 'id' | 'title' | 'updated_at' | 'created_at'>[]> {
  const pattern = o.text ? `%${o.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const order = o.orderBy ? sql`${sql(o.orderBy)} ${o.ascending ? sql`asc` : sql`desc`}, id` : sql`updated_at desc, id`;
  return sql<Pick<ChatRow, 'id' | 'title' | 'updated_at' | 'created_at'>[]>`
    select id, title, updated_at, created_at from chat
    where user_id = ${userId} ${pattern ? sql`and title ilike ${pattern}` : sql``}
    order by ${order} limit ${o.limit} offset ${o.skip}`;
}

/** Import's columns beyond what insertChat writes: as the export carried them. */
export async function setImportedColumns(
  tx: Tx,
  id: string,
  c: { meta: Record<string, unknown>; pinned: boolean; archived: boolean; updatedAt: number },
): Promise<ChatRow> {
  const [row] = await tx<ChatRow[]>`
    update chat set meta = ${tx.json(c.meta as never)}, pinned = ${c.pinned}, archived = ${c.archived}, updated_at = ${c.updatedAt}
    where id = ${id} returning *`;
  return row!;
}
