import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import type { Tx } from '../context.ts';
import { FOLDER_COLUMNS, type FolderRow } from '../access.ts';

/**
 * Folder writes and the folder routes' reads (who may read or write a folder is access.ts). Every
 * statement names the folder by id; the routes have already checked access.
 */
type Db = Sql | Tx;
type Json = Record<string, unknown> | null | undefined;
const q = (db: Db) => db as Sql;
const cols = (db: Db) => q(db)(FOLDER_COLUMNS as unknown as string[]);
const jsonOrNull = (db: Db, v: Json) => (v == null ? null : q(db).json(v as never));

export async function getFolder(db: Db, id: string): Promise<FolderRow | undefined> {
  const [f] = await q(db)<FolderRow[]>`select ${cols(db)} from folder where id = ${id}`;
  return f;
}

/** The user's own folder, locked for the rest of `tx`. */
export async function lockOwnFolder(tx: Tx, userId: string, id: string): Promise<FolderRow | undefined> {
  const [f] = await tx<FolderRow[]>`select ${cols(tx)} from folder where id = ${id} and user_id = ${userId} for update`;
  return f;
}

export async function lockFolder(tx: Tx, id: string): Promise<void> {
  await tx`select id from folder where id = ${id} for update`;
}

export async function ownsFolder(db: Db, userId: string, id: string): Promise<boolean> {
  return (await q(db)`select id from folder where id = ${id} and user_id = ${userId}`).length > 0;
}

/** One move at a time per owner, so two crossing moves cannot both pass the cycle check. */
export async function serialiseMoves(tx: Tx, userId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtext(${'folder-move:' + userId}))`;
}

/** Same name (any case) under the same parent of the same owner: the unique index's rule. */
export async function nameTaken(db: Db, ownerId: string, parentId: string | null, name: string, except?: string): Promise<boolean> {
  const rows = await q(db)`
    select id from folder
    where user_id = ${ownerId} and coalesce(parent_id, '') = ${parentId ?? ''} and lower(name) = lower(${name})
      and id <> ${except ?? ''}
    limit 1`;
  return rows.length > 0;
}

export function userFolders(sql: Sql, userId: string): Promise<FolderRow[]> {
  return sql<FolderRow[]>`select ${cols(sql)} from folder where user_id = ${userId} order by created_at, id`;
}

export async function insertFolder(
  tx: Tx,
  f: { id: string; parentId: string | null; ownerId: string; name: string; meta: Json; data: Json },
  t: number,
): Promise<void> {
  await tx`insert into folder (id, parent_id, user_id, name, items, meta, data, is_expanded, created_at, updated_at)
    values (${f.id}, ${f.parentId}, ${f.ownerId}, ${f.name}, null, ${jsonOrNull(tx, f.meta)}, ${jsonOrNull(tx, f.data)}, false, ${t}, ${t})`;
}

export async function updateFolder(tx: Tx, id: string, f: { name: string; data: Json; meta: Json }, t: number): Promise<void> {
  await tx`update folder set name = ${f.name}, data = ${jsonOrNull(tx, f.data)}, meta = ${jsonOrNull(tx, f.meta)}, updated_at = ${t} where id = ${id}`;
}

export async function setParent(tx: Tx, id: string, parentId: string | null, t: number): Promise<void> {
  await tx`update folder set parent_id = ${parentId}, updated_at = ${t} where id = ${id}`;
}

export async function setExpanded(sql: Sql, id: string, expanded: boolean, t: number): Promise<FolderRow | undefined> {
  const [f] = await sql<FolderRow[]>`update folder set is_expanded = ${expanded}, updated_at = ${t} where id = ${id} returning ${cols(sql)}`;
  return f;
}

/** The folder's grants become exactly these (one row each; the caller removed duplicates). */
export async function replaceGrants(
  tx: Tx,
  folderId: string,
  grants: readonly { principal_type: 'user' | 'group'; principal_id: string; permission: 'read' | 'write' }[],
  t: number,
): Promise<void> {
  await tx`delete from access_grant where resource_type = 'folder' and resource_id = ${folderId}`;
  for (const g of grants) {
    await tx`insert into access_grant (id, resource_type, resource_id, principal_type, principal_id, permission, created_at)
      values (${randomUUID()}, 'folder', ${folderId}, ${g.principal_type}, ${g.principal_id}, ${g.permission}, ${t})`;
  }
}

/** Which of these ids name an existing user or group. */
export async function existingIds(tx: Tx, table: 'user' | 'group', ids: readonly string[]): Promise<Set<string>> {
  const rows = await tx<{ id: string }[]>`select id from ${tx(table)} where id = any(${tx.array([...ids])}::text[])`;
  return new Set(rows.map((r) => r.id));
}

export interface FolderChat {
  id: string;
  title: string;
  user_id: string;
  updated_at: number;
  created_at: number;
  owner_name: string | null;
}

/**
 * Every user's chats in the folder (a write grantee's own chats live there too) with their
 * owner's name; pinned and archived ones stay in their owners' own lists, as in Open WebUI.
 */
export function folderChats(sql: Sql, folderId: string, o: { byTitle: boolean; ascending: boolean; limit: number; skip: number }): Promise<FolderChat[]> {
  return sql<FolderChat[]>`
    select c.id, c.title, c.user_id, c.updated_at, c.created_at, u.name as owner_name
    from chat c left join "user" u on u.id = c.user_id
    where c.folder_id = ${folderId} and not c.pinned and not c.archived
    order by ${o.byTitle ? sql`c.title` : sql`c.updated_at`} ${o.ascending ? sql`asc` : sql`desc`}, c.id
    limit ${o.limit} offset ${o.skip}`;
}

export async function countFolderChats(sql: Sql, folderId: string): Promise<number> {
  const [count] = await sql<{ total: number }[]>`select count(*)::int as total from chat where folder_id = ${folderId} and not pinned and not archived`;
  return count?.total ?? 0;
}

/**
 * Delete a folder with its sub-folders (`ids`, the whole tree) and their grants. The owner's chats
 * go with them, or back to the owner's root; other users' chats in a shared folder are theirs and
 * fall back to their own root (chat.folder_id on delete set null).
 */
export async function deleteFolderTree(tx: Tx, folder: Pick<FolderRow, 'id' | 'user_id'>, ids: readonly string[], deleteContents: boolean): Promise<void> {
  const all = [...ids];
  if (deleteContents) await tx`delete from chat where user_id = ${folder.user_id} and folder_id = any(${tx.array(all)}::text[])`;
  else await tx`update chat set folder_id = null where user_id = ${folder.user_id} and folder_id = any(${tx.array(all)}::text[])`;
  await tx`delete from access_grant where resource_type = 'folder' and resource_id = any(${tx.array(all)}::text[])`;
  await tx`delete from folder where id = ${folder.id}`;
}
