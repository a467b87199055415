import type { Sql } from 'postgres';
import type { Tx, UserRow } from '../context.ts';
import { loadUser } from '../users/users.store.ts';

/**
 * Provider links (migration 0013): `user_oauth` (provider, sub) → account, its primary key making
 * one subject one account; `user.oauth` mirrors them as Open WebUI stores them ({provider: {sub}}).
 */
type Db = Sql | Tx;
const q = (db: Db) => db as Sql;

export async function findOAuthUser(db: Db, provider: string, sub: string): Promise<UserRow | undefined> {
  const [link] = await q(db)<{ user_id: string }[]>`select user_id from user_oauth where provider = ${provider} and sub = ${sub}`;
  return link ? loadUser(db, link.user_id) : undefined;
}

/** Throws Postgres's unique violation when the subject is linked meanwhile (the caller retries). */
export async function linkOAuth(tx: Tx, userId: string, provider: string, sub: string, t: number): Promise<void> {
  // One link per provider per account, as Open WebUI's `oauth` object has one `sub` per provider.
  await tx`delete from user_oauth where user_id = ${userId} and provider = ${provider}`;
  await tx`insert into user_oauth (provider, sub, user_id, created_at) values (${provider}, ${sub}, ${userId}, ${t})`;
  await tx`update "user" set oauth = coalesce(oauth, '{}'::jsonb) || jsonb_build_object(${provider}::text, jsonb_build_object('sub', ${sub}::text)) where id = ${userId}`;
}

export async function userCount(db: Db): Promise<number> {
  const [row] = await q(db)<{ n: number }[]>`select count(*)::int as n from "user"`;
  return row!.n;
}

export function groupsByName(db: Db, names: readonly string[]): Promise<{ id: string; name: string }[]> {
  if (!names.length) return Promise.resolve([]);
  const sql = q(db);
  return sql<{ id: string; name: string }[]>`select id, name from "group" where name = any(${sql.array([...names])}::text[]) order by created_at, id`;
}

export function oauthGroupsOf(db: Db, userId: string): Promise<{ id: string; name: string }[]> {
  return q(db)<{ id: string; name: string }[]>`
    select g.id, g.name from "group" g join group_member m on m.group_id = g.id where m.user_id = ${userId} order by g.name`;
}
