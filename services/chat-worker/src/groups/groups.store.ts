import type { Sql } from 'postgres';
import type { Tx, UserRow } from '../context.ts';

/**
 * The `group` and `group_member` tables. Groups are admin-managed; membership is what folder
 * grants to a group resolve through (access.ts), so it is read live, never cached.
 */
export interface GroupRow {
  id: string;
  user_id: string | null;
  name: string;
  description: string;
  data: Record<string, unknown> | null;
  meta: Record<string, unknown> | null;
  permissions: Record<string, unknown> | null;
  created_at: number;
  updated_at: number;
  member_count: number;
}

type Db = Sql | Tx;
const q = (db: Db) => db as Sql;
const withCount = (db: Db) => q(db)`g.*, (select count(*)::int from group_member m where m.group_id = g.id) as member_count`;

export async function loadGroup(db: Db, id: string): Promise<GroupRow | undefined> {
  const [g] = await q(db)<GroupRow[]>`select ${withCount(db)} from "group" g where g.id = ${id}`;
  return g;
}

/**
 * The groups `user` sees, most recently changed first. Admins see every group; users their own,
 * or with `share` the groups they may share to (Open WebUI's filter: data.config.share unset/true
 * → anyone, "members" → members only; `share=false` → the groups that share with nobody).
 */
export async function listGroups(sql: Sql, user: UserRow, share: boolean | undefined): Promise<GroupRow[]> {
  const shareValue = sql`lower(coalesce(g.data -> 'config' ->> 'share', ''))`;
  const isMember = sql`g.id in (select group_id from group_member where user_id = ${user.id})`;
  const where =
    user.role === 'admin'
      ? sql`true`
      : share === undefined
        ? isMember
        : share
          ? sql`(g.data is null or g.data -> 'config' ->> 'share' is null or ${shareValue} in ('true', '1') or (${shareValue} = 'members' and ${isMember}))`
          : sql`(g.data is not null and ${shareValue} = 'false')`;
  return sql<GroupRow[]>`select ${withCount(sql)} from "group" g where ${where} order by g.updated_at desc, g.id`;
}

export async function insertGroup(
  tx: Tx,
  g: { id: string; userId: string; name: string; description: string; data: Record<string, unknown>; permissions: Record<string, unknown> | null | undefined },
  t: number,
): Promise<void> {
  await tx`insert into "group" (id, user_id, name, description, data, meta, permissions, created_at, updated_at)
    values (${g.id}, ${g.userId}, ${g.name}, ${g.description}, ${tx.json(g.data as never)}, null,
      ${g.permissions == null ? null : tx.json(g.permissions as never)}, ${t}, ${t})`;
}

/** Name and description always; data and permissions only when given (null keeps what is stored). */
export async function updateGroup(
  tx: Tx,
  id: string,
  g: { name: string; description: string; data: Record<string, unknown> | null | undefined; permissions: Record<string, unknown> | null | undefined },
  t: number,
): Promise<void> {
  await tx`update "group" set
      name = ${g.name},
      description = ${g.description},
      data = ${g.data == null ? tx`data` : tx.json(g.data as never)},
      permissions = ${g.permissions == null ? tx`permissions` : tx.json(g.permissions as never)},
      updated_at = ${t}
    where id = ${id}`;
}

export async function touchGroup(tx: Tx, id: string, t: number): Promise<void> {
  await tx`update "group" set updated_at = ${t} where id = ${id}`;
}

export async function deleteGroup(tx: Tx, id: string): Promise<void> {
  await tx`delete from "group" where id = ${id}`;
  // Grants to a group that no longer exists would only confuse the sharing dialogs.
  await tx`delete from access_grant where principal_type = 'group' and principal_id = ${id}`;
}

/** The ids that name existing users, in the order given, once each (Users.get_valid_user_ids). */
export async function validUserIds(tx: Tx, ids: readonly string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  if (!unique.length) return [];
  const rows = await tx<{ id: string }[]>`select id from "user" where id = any(${tx.array(unique)}::text[])`;
  const known = new Set(rows.map((r) => r.id));
  return unique.filter((id) => known.has(id));
}

/** Members in the order they joined. */
export function groupMembers(sql: Db, groupId: string): Promise<Pick<UserRow, 'id' | 'name' | 'email' | 'role'>[]> {
  return sql<Pick<UserRow, 'id' | 'name' | 'email' | 'role'>[]>`
    select u.id, u.name, u.email, u.role from group_member m join "user" u on u.id = m.user_id
    where m.group_id = ${groupId} order by m.created_at, u.name, u.id`;
}

/** Add existing users (already checked with validUserIds); members stay members. */
export async function addMembers(tx: Tx, groupId: string, userIds: readonly string[], t: number): Promise<void> {
  if (!userIds.length) return;
  await tx`insert into group_member (group_id, user_id, created_at)
    select ${groupId}, u.id, ${t} from "user" u where u.id = any(${tx.array([...userIds])}::text[])
    on conflict do nothing`;
}

/** The members become exactly `userIds` (already checked with validUserIds). */
export async function replaceMembers(tx: Tx, groupId: string, userIds: readonly string[], t: number): Promise<void> {
  await tx`delete from group_member where group_id = ${groupId}`;
  await addMembers(tx, groupId, userIds, t);
}

export async function removeMembers(tx: Tx, groupId: string, userIds: readonly string[]): Promise<void> {
  await tx`delete from group_member where group_id = ${groupId} and user_id = any(${tx.array([...userIds])}::text[])`;
}
