import type { Sql } from 'postgres';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { fail, type Tx, type UserRow } from '../context.ts';
import { grantReaches, type AccessGrantRow } from '../access.ts';

/**
 * Who may do what to a knowledge base (Open WebUI 0.10.2 access grants, resource_type
 * 'knowledge'). The caller's level is the highest of: owning it, being an admin (Open WebUI's
 * BYPASS_ADMIN_ACCESS_CONTROL, on by default), a write or read grant to them, to a group they are
 * in, or to `user:*`. Write includes read. Files, search and chat import these so every reader of
 * knowledge applies one rule.
 */
export type KnowledgeAccess = 'owner' | 'admin' | 'write' | 'read';

export interface KnowledgeRow {
  id: string;
  user_id: string;
  name: string;
  description: string;
  meta: Record<string, unknown> | null;
  data: Record<string, unknown> | null;
  created_at: number;
  updated_at: number;
}

const LEVEL: Record<KnowledgeAccess, number> = { read: 1, write: 2, admin: 3, owner: 3 };

export const mayRead = (a: KnowledgeAccess | null): boolean => a !== null;
export const mayWrite = (a: KnowledgeAccess | null): boolean => a !== null && LEVEL[a] >= LEVEL.write;

/**
 * The knowledge base and the caller's access to it (null access: none), or null when it does not
 * exist. One round trip.
 */
export async function knowledgeAccess(
  sql: Sql | Tx,
  user: UserRow,
  id: string,
): Promise<{ knowledge: KnowledgeRow; access: KnowledgeAccess | null } | null> {
  const [row] = await sql<(KnowledgeRow & { level: number | null })[]>`
    select k.*, (
      select max(case g.permission when 'write' then 2 when 'read' then 1 end)
      from access_grant g
      where g.resource_type = 'knowledge' and g.resource_id = k.id and ${grantReaches(sql as Sql, user.id)}
    ) as level
    from knowledge k where k.id = ${id}`;
  if (!row) return null;
  const { level, ...knowledge } = row;
  const access: KnowledgeAccess | null =
    knowledge.user_id === user.id ? 'owner' : user.role === 'admin' ? 'admin' : level === 2 ? 'write' : level === 1 ? 'read' : null;
  return { knowledge, access };
}

/**
 * A knowledge base the caller may read, or the 404 of one that does not exist: a stranger learns
 * nothing from an id (Open WebUI answers some of these 400/401; we never say "exists").
 */
export async function readableKnowledge(sql: Sql | Tx, user: UserRow, id: string): Promise<{ knowledge: KnowledgeRow; access: KnowledgeAccess }> {
  const found = await knowledgeAccess(sql, user, id);
  if (!found || !found.access) fail(404, OWUI_ERRORS.notFound);
  return { knowledge: found.knowledge, access: found.access };
}

/**
 * A knowledge base the caller may change: a stranger gets the 404 above; a reader gets Open
 * WebUI's ACCESS_PROHIBITED with the status that route uses (400 on most, 403 on the directory
 * and sync routes).
 */
export async function writableKnowledge(sql: Sql | Tx, user: UserRow, id: string, deniedStatus: 400 | 403 = 400): Promise<{ knowledge: KnowledgeRow; access: KnowledgeAccess }> {
  const found = await readableKnowledge(sql, user, id);
  if (!mayWrite(found.access)) fail(deniedStatus, OWUI_ERRORS.accessProhibited);
  return found;
}

/**
 * SQL fragment: the ids of the knowledge bases `user` may read (`permission: 'write'` for the ones
 * they may change), for `where kf.knowledge_id in (${readableKnowledgeIds(sql, user)})`. Filtering
 * inside the query keeps search and listing from ever reading what the caller may not see.
 */
export function readableKnowledgeIds(sql: Sql | Tx, user: UserRow, permission: 'read' | 'write' = 'read') {
  if (user.role === 'admin') return sql`select id from knowledge`;
  const perms = permission === 'write' ? ['write'] : ['read', 'write'];
  return sql`
    select id from knowledge where user_id = ${user.id}
    union
    select g.resource_id from access_grant g
    where g.resource_type = 'knowledge' and g.permission = any(${perms}::text[]) and ${grantReaches(sql as Sql, user.id)}`;
}

/** The grant rows of a knowledge base (Open WebUI's AccessGrantModel). */
export async function knowledgeGrants(sql: Sql | Tx, id: string): Promise<AccessGrantRow[]> {
  return sql<AccessGrantRow[]>`
    select id, resource_type, resource_id, principal_type, principal_id, permission, created_at
    from access_grant where resource_type = 'knowledge' and resource_id = ${id}
    order by created_at, principal_type, principal_id, permission`;
}

/** Grants of many knowledge bases at once, by knowledge id. */
export async function grantsByKnowledge(sql: Sql | Tx, ids: readonly string[]): Promise<Map<string, AccessGrantRow[]>> {
  const out = new Map<string, AccessGrantRow[]>(ids.map((id) => [id, []]));
  if (!ids.length) return out;
  const rows = await sql<AccessGrantRow[]>`
    select id, resource_type, resource_id, principal_type, principal_id, permission, created_at
    from access_grant where resource_type = 'knowledge' and resource_id = any(${[...ids]}::text[])
    order by created_at, principal_type, principal_id, permission`;
  for (const r of rows) out.get(r.resource_id)?.push(r);
  return out;
}

/** The subset of `ids` the caller may write to (owner, admin, or a write grant reaching them). */
export async function writableAmong(sql: Sql | Tx, user: UserRow, ids: readonly string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await sql<{ id: string }[]>`
    select id from knowledge where id = any(${[...ids]}::text[]) and id in (${readableKnowledgeIds(sql, user, 'write')})`;
  return new Set(rows.map((r) => r.id));
}
