import type { Sql } from 'postgres';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { BusError } from '@gatehouse/common';
import { fail, type Tx, type UserRow } from './context.ts';

/**
 * Folder sharing (Open WebUI 0.10 access grants). A user's permission on a folder is the highest
 * of: owning it, a grant to them, a grant to a group they belong to, or a grant to `user:*`
 * (every signed-in user), on the folder or on any folder above it. Write includes read (Open
 * WebUI's sharing dialog always stores both; a lone write grant is not taken as "no read").
 */
export type FolderAccess = 'owner' | 'write' | 'read';

const LEVEL: Record<FolderAccess, number> = { read: 1, write: 2, owner: 3 };

export type FolderRow = {
  id: string;
  parent_id: string | null;
  user_id: string;
  name: string;
  items: Record<string, unknown> | null;
  meta: Record<string, unknown> | null;
  data: Record<string, unknown> | null;
  is_expanded: boolean;
  created_at: number;
  updated_at: number;
};

export const FOLDER_COLUMNS = ['id', 'parent_id', 'user_id', 'name', 'items', 'meta', 'data', 'is_expanded', 'created_at', 'updated_at'] as const;

/** Open WebUI's FolderModel, field for field. */
export function folderModel(f: FolderRow): FolderRow {
  return {
    id: f.id,
    parent_id: f.parent_id,
    user_id: f.user_id,
    name: f.name,
    items: f.items,
    meta: f.meta,
    data: f.data,
    is_expanded: f.is_expanded,
    created_at: f.created_at,
    updated_at: f.updated_at,
  };
}

export type AccessGrantRow = {
  id: string;
  resource_type: string;
  resource_id: string;
  principal_type: 'user' | 'group';
  principal_id: string;
  permission: 'read' | 'write';
  created_at: number;
};

/**
 * SQL fragment: the grant rows that reach `userId` (their own, their groups', everyone's).
 * Used inside the queries below (and knowledge/access.ts) with `g` as the access_grant alias.
 */
export function grantReaches(sql: Sql, userId: string) {
  return sql`(
    (g.principal_type = 'user' and g.principal_id in (${userId}, '*'))
    or (g.principal_type = 'group' and g.principal_id in (select group_id from group_member where user_id = ${userId}))
  )`;
}

/**
 * The folder and the caller's permission on it (null when they have none). One round trip:
 * walk up the parent chain and take the best grant anywhere on it. `union` (not `union all`)
 * ends the walk even if a corrupt row made a loop.
 */
export async function folderAccess(sql: Sql, user: UserRow, folderId: string): Promise<{ folder: FolderRow; access: FolderAccess | null } | null> {
  const [row] = await sql<(FolderRow & { level: number | null })[]>`
    with recursive chain (id, parent_id) as (
      select id, parent_id from folder where id = ${folderId}
      union
      select f.id, f.parent_id from folder f join chain c on f.id = c.parent_id
    )
    select f.*, (
      select max(case g.permission when 'write' then 2 when 'read' then 1 end)
      from chain c join access_grant g on g.resource_type = 'folder' and g.resource_id = c.id
      where ${grantReaches(sql, user.id)}
    ) as level
    from folder f where f.id = ${folderId}`;
  if (!row) return null;
  const { level, ...folder } = row;
  const access: FolderAccess | null = folder.user_id === user.id ? 'owner' : level === 2 ? 'write' : level === 1 ? 'read' : null;
  return { folder, access };
}

export const atLeast = (have: FolderAccess | null, need: FolderAccess): boolean => have !== null && LEVEL[have] >= LEVEL[need];

/**
 * Load a folder the caller can at least read (admins read everything); anyone else gets the
 * same 404 as for a folder that does not exist, so ids never reveal what exists.
 */
export async function readableFolder(sql: Sql, user: UserRow, folderId: string): Promise<{ folder: FolderRow; access: FolderAccess | null }> {
  const found = await folderAccess(sql, user, folderId);
  if (!found || (!atLeast(found.access, 'read') && user.role !== 'admin')) fail(404, OWUI_ERRORS.notFound);
  return found;
}

/** The ids of a folder and everything under it (same owner: a tree never mixes owners). */
export async function subtreeIds(sql: Sql, folderId: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    with recursive tree (id) as (
      select id from folder where id = ${folderId}
      union
      select f.id from folder f join tree t on f.parent_id = t.id
    )
    select id from tree`;
  return rows.map((r) => r.id);
}

/**
 * Folders shared with the caller (not their own), each with the best permission reaching it:
 * granted folders and everything below them.
 */
export async function sharedWith(sql: Sql, user: UserRow): Promise<(FolderRow & { owner_name: string | null; level: number })[]> {
  return sql<(FolderRow & { owner_name: string | null; level: number })[]>`
    with recursive granted (id, level) as (
      select g.resource_id, max(case g.permission when 'write' then 2 else 1 end)
      from access_grant g
      where g.resource_type = 'folder' and ${grantReaches(sql, user.id)}
      group by g.resource_id
    ),
    tree (id, level) as (
      select f.id, gr.level from folder f join granted gr on gr.id = f.id
      union
      select f.id, t.level from folder f join tree t on f.parent_id = t.id
    ),
    best as (select id, max(level) as level from tree group by id)
    select f.*, u.name as owner_name, b.level
    from best b join folder f on f.id = b.id left join "user" u on u.id = f.user_id
    where f.user_id <> ${user.id}
    order by f.created_at, f.id`;
}

export async function grantsOf(sql: Sql, folderId: string): Promise<AccessGrantRow[]> {
  return sql<AccessGrantRow[]>`
    select id, resource_type, resource_id, principal_type, principal_id, permission, created_at
    from access_grant where resource_type = 'folder' and resource_id = ${folderId}
    order by created_at, principal_type, principal_id, permission`;
}

/** Postgres refuses NUL in text and jsonb; Open WebUI strips it before storing, and so do we. */
export function stripNul<T>(value: T): T {
  if (typeof value === 'string') return value.replaceAll('\u0000', '') as T;
  if (Array.isArray(value)) return value.map(stripNul) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k.replaceAll('\u0000', '')] = stripNul(v);
    return out as T;
  }
  return value;
}

/** FastAPI's boolean query parsing (`true/false/1/0/yes/no/on/off`, any case); else its 422. */
export function queryBool(query: Record<string, string>, name: string, dflt: boolean): boolean {
  const raw = query[name];
  if (raw === undefined) return dflt;
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on', 't', 'y'].includes(v)) return true;
  if (['false', '0', 'no', 'off', 'f', 'n'].includes(v)) return false;
  return invalidQuery(name, raw, 'bool_parsing', 'Input should be a valid boolean, unable to interpret input');
}

export function queryInt(query: Record<string, string>, name: string, min: number): number | undefined {
  const raw = query[name];
  if (raw === undefined) return undefined;
  if (!/^-?\d+$/.test(raw.trim())) return invalidQuery(name, raw, 'int_parsing', 'Input should be a valid integer, unable to parse string as an integer');
  const n = Number(raw);
  if (n < min) return invalidQuery(name, raw, 'greater_than_equal', `Input should be greater than or equal to ${min}`);
  return n;
}

/** A bad query parameter answers like FastAPI: 422 with pydantic's item list. */
function invalidQuery(name: string, input: string, type: string, msg: string): never {
  throw new BusError(422, 'validation failed', { detail: [{ type, loc: ['query', name], msg, input }] });
}

/** Hold the folder (key share lock) until `tx` ends, so it cannot be deleted under a write; false when gone. */
export async function holdFolder(tx: Tx, folderId: string): Promise<boolean> {
  return (await tx`select id from folder where id = ${folderId} for key share`).length > 0;
}
