import type { PendingQuery, Row, Sql } from 'postgres';
import type { PromptModel } from '@gatehouse/contracts';
import type { Tx, UserRow } from '../context.ts';
import { resourceGrants, type Grant } from '../access-grants.ts';

/**
 * The prompt and prompt_history tables (migration 0017) and the prompts' access_grant rows
 * (resource_type 'prompt'). Reads a user may make are filtered here in SQL: their own prompts,
 * and those a grant reaches (their user id, a group they are in, or `user:*`); admins read all.
 */
type Db = Sql | Tx;
const q = (db: Db) => db as Sql;
type Json = Record<string, unknown>;

const grants = resourceGrants('prompt');
const reachable = grants.reachable;
export const { granted, writableByGrant, grantsOf, replaceGrants } = grants;
export type { Grant };

export type PromptRow = Omit<PromptModel, 'access_grants'>;
export type Owner = { id: string; name: string; email: string; role: string };

const COLUMNS = ['id', 'command', 'user_id', 'name', 'content', 'data', 'meta', 'tags', 'is_active', 'version_id', 'created_at', 'updated_at'];
/** bigint comes back as a string from postgres.js; epochs fit a number. */
const row = (r: PromptRow): PromptRow => ({ ...r, tags: Array.isArray(r.tags) ? r.tags : [], created_at: Number(r.created_at), updated_at: Number(r.updated_at) });
const jsonOrNull = (db: Db, v: Json | null) => (v === null ? null : q(db).json(v as never));


export async function insertPrompt(tx: Tx, p: PromptRow): Promise<PromptRow> {
  const [r] = await tx<PromptRow[]>`
    insert into prompt (id, command, user_id, name, content, data, meta, tags, is_active, version_id, created_at, updated_at)
    values (${p.id}, ${p.command}, ${p.user_id}, ${p.name}, ${p.content}, ${jsonOrNull(tx, p.data)}, ${jsonOrNull(tx, p.meta)},
      ${tx.json(p.tags)}, ${p.is_active}, ${p.version_id}, ${p.created_at}, ${p.updated_at})
    returning ${tx(COLUMNS)}`;
  return row(r!);
}

/** Name, command, text, data, meta, tags and the active version. */
export async function updatePrompt(tx: Tx, p: PromptRow): Promise<PromptRow> {
  const [r] = await tx<PromptRow[]>`
    update prompt set command = ${p.command}, name = ${p.name}, content = ${p.content}, data = ${jsonOrNull(tx, p.data)},
      meta = ${jsonOrNull(tx, p.meta)}, tags = ${tx.json(p.tags)}, version_id = ${p.version_id}, updated_at = ${p.updated_at}
    where id = ${p.id} returning ${tx(COLUMNS)}`;
  return row(r!);
}

export async function touchPrompt(tx: Tx, id: string, t: number): Promise<void> {
  await tx`update prompt set updated_at = ${t} where id = ${id}`;
}

export async function setVersion(tx: Tx, id: string, versionId: string): Promise<void> {
  await tx`update prompt set version_id = ${versionId} where id = ${id}`;
}

/** `lock`: hold the row until the transaction ends, so two updates cannot interleave their versions. */
export async function promptById(db: Db, id: string, lock = false): Promise<PromptRow | undefined> {
  const sql = q(db);
  const [r] = lock
    ? await sql<PromptRow[]>`select ${sql(COLUMNS)} from prompt where id = ${id} for update`
    : await sql<PromptRow[]>`select ${sql(COLUMNS)} from prompt where id = ${id}`;
  return r && row(r);
}

export async function promptByCommand(db: Db, command: string): Promise<PromptRow | undefined> {
  const sql = q(db);
  const [r] = await sql<PromptRow[]>`select ${sql(COLUMNS)} from prompt where command = ${command}`;
  return r && row(r);
}

export async function deletePrompt(tx: Tx, id: string): Promise<boolean> {
  return (await tx`delete from prompt where id = ${id}`).count > 0;
}

export interface ListFilter {
  query?: string | undefined;
  view?: string | undefined;
  tag?: string | undefined;
  orderBy?: string | undefined;
  direction?: string | undefined;
}

/** `LIKE` reads `%`, `_` and `\` in the search text literally. */
const likeText = (s: string) => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * The prompts `user` may read, with their owners: filtered, ordered, one page. With no filter at
 * all (GET /) every readable prompt, newest change first.
 */
export async function promptsPage(
  db: Db,
  user: UserRow,
  f: ListFilter,
  limit: number | null,
  offset: number,
): Promise<{ rows: (PromptRow & { owner: Owner | null })[]; total: number }> {
  const sql = q(db);
  const conds = [sql`p.is_active`];
  if (user.role !== 'admin') conds.push(sql`(p.user_id = ${user.id} or p.id in (${reachable(db, user, 'read')}))`);
  if (f.query) {
    const like = likeText(f.query);
    conds.push(sql`(p.name ilike ${like} or p.command ilike ${like} or p.content ilike ${like} or u.name ilike ${like} or u.email ilike ${like})`);
  }
  if (f.view === 'created') conds.push(sql`p.user_id = ${user.id}`);
  else if (f.view === 'shared') conds.push(sql`p.user_id <> ${user.id}`);
  if (f.tag) conds.push(sql`exists (select 1 from jsonb_array_elements_text(p.tags) t where lower(t) = ${f.tag.toLowerCase()})`);
  const where = conds.reduce((a, c) => sql`${a} and ${c}`);
  const column = f.orderBy === 'name' ? sql`p.name` : f.orderBy === 'created_at' ? sql`p.created_at` : sql`p.updated_at`;
  const dir = f.orderBy && f.direction === 'asc' ? sql`asc` : sql`desc`;
  const cols = COLUMNS.map((c) => sql`p.${sql(c)}`).reduce((a, c) => sql`${a}, ${c}`);
  const rows = await sql<(PromptRow & { o_id: string | null; o_name: string | null; o_email: string | null; o_role: string | null; total: string })[]>`
    select ${cols}, u.id as o_id, u.name as o_name, u.email as o_email, u.role as o_role, count(*) over () as total
    from prompt p left join "user" u on u.id = p.user_id
    where ${where}
    order by ${column} ${dir}, p.id
    ${limit === null ? sql`` : sql`limit ${limit}`} offset ${offset}`;
  const total = rows.length ? Number(rows[0]!.total) : offset > 0 ? await countOnly(db, where) : 0;
  return {
    rows: rows.map(({ o_id, o_name, o_email, o_role, total: _t, ...p }) => ({
      ...row(p),
      owner: o_id ? { id: o_id, name: o_name ?? '', email: o_email ?? '', role: o_role ?? 'user' } : null,
    })),
    total,
  };
}

async function countOnly(db: Db, where: PendingQuery<Row[]>): Promise<number> {
  const sql = q(db);
  const [r] = await sql<{ n: string }[]>`select count(*) as n from prompt p left join "user" u on u.id = p.user_id where ${where}`;
  return Number(r?.n ?? 0);
}

export interface HistoryRow {
  id: string;
  prompt_id: string;
  parent_id: string | null;
  snapshot: Json;
  user_id: string;
  commit_message: string | null;
  created_at: number;
}

export async function latestVersionId(tx: Tx, promptId: string): Promise<string | null> {
  const [r] = await tx<{ id: string }[]>`select id from prompt_history where prompt_id = ${promptId} order by seq desc limit 1`;
  return r?.id ?? null;
}

export async function insertHistory(tx: Tx, h: HistoryRow): Promise<void> {
  await tx`insert into prompt_history (id, prompt_id, parent_id, snapshot, user_id, commit_message, created_at)
    values (${h.id}, ${h.prompt_id}, ${h.parent_id}, ${tx.json(h.snapshot as never)}, ${h.user_id}, ${h.commit_message}, ${h.created_at})`;
}

export async function historyOf(db: Db, promptId: string, limit: number, offset: number): Promise<(HistoryRow & { owner: Owner | null })[]> {
  const sql = q(db);
  const rows = await sql<(HistoryRow & { o_id: string | null; o_name: string | null; o_email: string | null; o_role: string | null })[]>`
    select h.id, h.prompt_id, h.parent_id, h.snapshot, h.user_id, h.commit_message, h.created_at,
      u.id as o_id, u.name as o_name, u.email as o_email, u.role as o_role
    from prompt_history h left join "user" u on u.id = h.user_id
    where h.prompt_id = ${promptId} order by h.seq desc limit ${limit} offset ${offset}`;
  return rows.map(({ o_id, o_name, o_email, o_role, ...h }) => ({
    ...h,
    created_at: Number(h.created_at),
    owner: o_id ? { id: o_id, name: o_name ?? '', email: o_email ?? '', role: o_role ?? 'user' } : null,
  }));
}

export async function ownerOf(db: Db, userId: string): Promise<Owner | null> {
  const [u] = await q(db)<Owner[]>`select id, name, email, role from "user" where id = ${userId}`;
  return u ?? null;
}
