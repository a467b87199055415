import type { Sql } from 'postgres';
import { USER_COLUMNS, type Tx, type UserRow } from '../context.ts';

/**
 * The "user" table (and first_user, which decides the first sign-up). The password hash is read
 * only by the two functions that say so; every other read returns UserRow, without it.
 */
type Db = Sql | Tx;
const q = (db: Db) => db as Sql;
const cols = (db: Db) => q(db)(USER_COLUMNS as unknown as string[]);
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export interface NewAccount {
  id: string;
  name: string;
  email: string;
  passwordHash: string;
  profileImageUrl: string;
  role: UserRow['role'];
}

/** Throws Postgres's unique violation (`user_email_key`) when the email is taken meanwhile. */
export async function insertUser(tx: Tx, a: NewAccount, t: number): Promise<UserRow> {
  const [row] = await tx<UserRow[]>`
    insert into "user" (id, email, name, role, profile_image_url, password_hash, last_active_at, created_at, updated_at)
    values (${a.id}, ${a.email}, ${a.name}, ${a.role}, ${a.profileImageUrl}, ${a.passwordHash}, ${t}, ${t}, ${t})
    returning ${cols(tx)}`;
  return row!;
}

export async function loadUser(db: Db, id: string): Promise<UserRow | undefined> {
  const [row] = await q(db)<UserRow[]>`select ${cols(db)} from "user" where id = ${id}`;
  return row;
}

/** Any case; `exceptId` leaves that user out (their own address is not "taken"). */
export async function emailTaken(db: Db, email: string, exceptId?: string): Promise<boolean> {
  const sql = q(db);
  return (await sql`select 1 from "user" where lower(email) = lower(${email}) ${exceptId === undefined ? sql`` : sql`and id <> ${exceptId}`}`).length > 0;
}

export async function nameByEmail(db: Db, email: string): Promise<string | undefined> {
  const [row] = await q(db)<{ name: string }[]>`select name from "user" where lower(email) = lower(${email})`;
  return row?.name;
}

export async function hasUsers(db: Db): Promise<boolean> {
  return (await q(db)`select 1 from "user" limit 1`).length > 0;
}

/** One row decides who is first: concurrent first sign-ups block on its key, exactly one wins. */
export async function claimFirstUser(tx: Tx, id: string): Promise<boolean> {
  return (await tx`insert into first_user (user_id) values (${id}) on conflict do nothing returning user_id`).length > 0;
}

/** The primary admin: the first sign-up (first_user), else the oldest account. */
export async function primaryAdminId(db: Db): Promise<string | undefined> {
  const sql = q(db);
  const [first] = await sql<{ user_id: string }[]>`select f.user_id from first_user f join "user" u on u.id = f.user_id`;
  if (first) return first.user_id;
  const [oldest] = await sql<{ id: string }[]>`select id from "user" order by created_at asc, id asc limit 1`;
  return oldest?.id;
}

/** Sign-in's lookup (any case), with the stored hash to check the password against. */
export async function userWithPasswordHash(db: Db, email: string): Promise<(UserRow & { password_hash: string }) | undefined> {
  const [row] = await q(db)<(UserRow & { password_hash: string })[]>`
    select ${cols(db)}, password_hash from "user" where lower(email) = lower(${email})`;
  return row;
}

export async function passwordHashOf(db: Db, id: string): Promise<string | undefined> {
  const [row] = await q(db)<{ password_hash: string }[]>`select password_hash from "user" where id = ${id}`;
  return row?.password_hash;
}

export async function setPasswordHash(tx: Tx, id: string, hash: string, t: number): Promise<void> {
  await tx`update "user" set password_hash = ${hash}, updated_at = ${t} where id = ${id}`;
}

/** A sign-in: last_active_at moves; a hash of an older cost is replaced if nobody changed it meanwhile. */
export async function recordSignin(tx: Tx, id: string, t: number, rehash?: { from: string; to: string }): Promise<void> {
  await tx`update "user" set last_active_at = ${t} where id = ${id}`;
  if (rehash) await tx`update "user" set password_hash = ${rehash.to} where id = ${id} and password_hash = ${rehash.from}`;
}

export async function updateProfile(
  tx: Tx,
  id: string,
  p: { name: string; profile_image_url: string; bio: string | null; gender: string | null; date_of_birth: string | null },
  t: number,
): Promise<UserRow | undefined> {
  const [row] = await tx<UserRow[]>`
    update "user" set name = ${p.name}, profile_image_url = ${p.profile_image_url},
      bio = ${p.bio}, gender = ${p.gender}, date_of_birth = ${p.date_of_birth}, updated_at = ${t}
    where id = ${id} returning ${cols(tx)}`;
  return row;
}

/** An admin's update; `passwordHash` undefined keeps the password. Throws the unique violation on a taken email. */
export async function updateUser(
  tx: Tx,
  id: string,
  u: { role: UserRow['role']; name: string; email: string; profile_image_url: string; passwordHash: string | undefined },
  t: number,
): Promise<UserRow | undefined> {
  const [row] = await tx<UserRow[]>`
    update "user" set role = ${u.role}, name = ${u.name}, email = ${u.email}, profile_image_url = ${u.profile_image_url},
      password_hash = coalesce(${u.passwordHash ?? null}, password_hash), updated_at = ${t}
    where id = ${id} returning ${cols(tx)}`;
  return row;
}

/**
 * Delete a user. Grants name principals and resources by id without a foreign key: the ones to
 * this user and the ones on what they own go first, then the cascade removes the rest
 * (memberships, folders, chats, memories; groups they created keep existing without an owner).
 */
export async function deleteUser(tx: Tx, id: string): Promise<boolean> {
  await tx`
    delete from access_grant
    where (principal_type = 'user' and principal_id = ${id})
       or (resource_type = 'folder' and resource_id in (select f.id from folder f where f.user_id = ${id}))
       or (resource_type = 'chat' and resource_id in (select c.id from chat c where c.user_id = ${id}))`;
  return (await tx`delete from "user" where id = ${id} returning id`).length > 0;
}

export function allUsers(sql: Sql): Promise<UserRow[]> {
  return sql<UserRow[]>`select ${cols(sql)} from "user" order by created_at desc, id`;
}

const ORDERABLE = new Set(['name', 'email', 'created_at', 'last_active_at', 'updated_at', 'role']);

/**
 * One page of users with the total: `query` matches name or email (contains, any case); `orderBy`
 * one of the ORDERABLE columns, or `group_id:<id>` to put that group's members first (Open
 * WebUI's member picker), by name within; anything else is newest first.
 */
export async function userPage(
  sql: Sql,
  o: { page: number; size: number; query: string | undefined; orderBy: string | undefined; ascending: boolean },
): Promise<{ rows: UserRow[]; total: number }> {
  const dir = o.ascending ? sql`asc` : sql`desc`;
  const where = o.query ? sql`where name ilike ${`%${likeEscape(o.query)}%`} or email ilike ${`%${likeEscape(o.query)}%`}` : sql``;
  let order = sql`created_at desc, id`;
  if (o.orderBy?.startsWith('group_id:')) {
    const gid = o.orderBy.slice('group_id:'.length);
    order = sql`exists (select 1 from group_member m where m.user_id = "user".id and m.group_id = ${gid}) ${dir}, name asc, id`;
  } else if (o.orderBy && ORDERABLE.has(o.orderBy)) {
    order = sql`${sql(o.orderBy)} ${dir}, id`;
  }
  const [counted] = await sql<{ total: number }[]>`select count(*)::int as total from "user" ${where}`;
  const rows = await sql<UserRow[]>`select ${cols(sql)} from "user" ${where} order by ${order} limit ${o.size} offset ${(o.page - 1) * o.size}`;
  return { rows, total: counted?.total ?? 0 };
}

/** Each user's group ids, in the order they joined. */
export async function groupIdsOf(sql: Sql, userIds: readonly string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (!userIds.length) return out;
  const rows = await sql<{ user_id: string; group_id: string }[]>`
    select user_id, group_id from group_member where user_id in ${sql([...userIds])} order by created_at, group_id`;
  for (const m of rows) out.set(m.user_id, [...(out.get(m.user_id) ?? []), m.group_id]);
  return out;
}

export function groupsOfUser(sql: Sql, userId: string): Promise<{ id: string; name: string }[]> {
  return sql<{ id: string; name: string }[]>`
    select g.id, g.name from "group" g join group_member m on m.group_id = g.id where m.user_id = ${userId} order by g.name, g.id`;
}

/** The permissions of every group the user is in (the defaults are widened with them). */
export async function groupPermissionsOf(db: Db, userId: string): Promise<unknown[]> {
  const rows = await q(db)<{ permissions: unknown }[]>`
    select g.permissions from "group" g join group_member m on m.group_id = g.id where m.user_id = ${userId}`;
  return rows.map((r) => r.permissions);
}

/** Open WebUI's apply_default_group_assignment: a new account joins the group when it exists. */
export async function joinGroupIfExists(tx: Tx, groupId: string, userId: string, t: number): Promise<void> {
  await tx`insert into group_member (group_id, user_id, created_at)
    select id, ${userId}, ${t} from "group" where id = ${groupId}
    on conflict do nothing`;
}
