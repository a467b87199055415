import type { Sql } from 'postgres';
import type { Tx } from '../context.ts';
import type { ChatRow } from './chats.store.ts';

/**
 * The `tag` table and the tag list in a chat's meta (infra/migrations/chat/0003_tags.sql: its
 * triggers drop tag rows no unarchived chat lists any more, whichever route changed the chat).
 */
export type TagRow = {
  id: string;
  name: string;
  user_id: string;
  meta: Record<string, unknown> | null;
};

type Db = Sql | Tx;
const q = (db: Db) => db as Sql;

/** TagModel list for `ids` in the chat's order; ids without a row are left out, as Open WebUI does. */
export async function tagModels(db: Db, userId: string, ids: string[]): Promise<TagRow[]> {
  if (!ids.length) return [];
  return q(db)<TagRow[]>`
    select id, name, user_id, meta from tag
    where user_id = ${userId} and id = any(${ids}::text[])
    order by array_position(${ids}::text[], id)`;
}

export function userTags(sql: Sql, userId: string): Promise<TagRow[]> {
  return sql<TagRow[]>`select id, name, user_id, meta from tag where user_id = ${userId} order by id`;
}

/** The tag's row (first spelling wins), under the user's tag lock so the triggers cannot race it. */
export async function ensureTag(tx: Tx, userId: string, id: string, name: string): Promise<void> {
  await tx`select chat_tags_lock(${userId})`;
  await tx`insert into tag (id, name, user_id) values (${id}, ${name}, ${userId}) on conflict do nothing`;
}

/** Set the chat's tag list; the caller holds the chat's row lock, the triggers then take the user's tag lock. */
export async function writeChatTags(tx: Tx, chat: ChatRow, ids: string[]): Promise<void> {
  await tx`update chat set meta = ${tx.json({ ...chat.meta, tags: ids } as never)} where id = ${chat.id}`;
}

/** The tag rows of `ids` that no unarchived chat of the user lists any more are deleted. */
export async function dropUnusedTags(db: Db, userId: string, ids: string[]): Promise<void> {
  await q(db)`select chat_tags_drop_unused(${userId}, ${ids}::text[])`;
}

/** The user's chats listing the tag (archived too), newest first; `limit` null = all. */
export function taggedChats(sql: Sql, userId: string, tagId: string, o: { skip: number; limit: number | null }): Promise<Pick<ChatRow, 'id' | 'title' | 'updated_at' | 'created_at'>[]> {
  return sql<Pick<ChatRow, 'id' | 'title' | 'updated_at' | 'created_at'>[]>`
    select id, title, updated_at, created_at from chat
    where user_id = ${userId} and meta -> 'tags' ? ${tagId}
    order by updated_at desc, id
    ${o.limit === null ? sql`` : sql`limit ${o.limit}`} offset ${o.skip}`;
}
