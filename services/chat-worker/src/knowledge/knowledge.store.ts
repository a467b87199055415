import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import type { KnowledgeFileUser, KnowledgePendingFiles } from '@gatehouse/contracts';
import type { z } from 'zod';
import type { Tx, UserRow } from '../context.ts';
import { readableKnowledgeIds, type KnowledgeRow } from './access.ts';

/**
 * The statements of the knowledge routes (knowledge.ops.ts): bases, their file links, grants
 * and the paged lists. Who may read or change a base is access.ts and the routes check it before
 * calling here; directories are directories.ts, linking a file (with its event) is links.ts.
 * Tables: infra/migrations/chat/0005_files_knowledge.sql.
 */

type Db = Sql | Tx;
export type Grant = { principal_type: 'user' | 'group'; principal_id: string; permission: 'read' | 'write' };
/** A file of a base as the lists show it (FileUserResponse: the adder as `user`). */
export type FileUserRow = z.input<typeof KnowledgeFileUser>;

/** The file columns the routes need: who owns it, its stored bytes and its processing status. */
export interface FileRow {
  id: string;
  user_id: string;
  filename: string;
  hash: string | null;
  path: string | null;
  status: string | null;
}

/** `%`, `_` and `\` matched as themselves in ILIKE. */
const likePattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

const userJson = (db: Db) => db`case when u.id is null then null else json_build_object(
  'id', u.id, 'name', u.name, 'email', u.email, 'role', u.role, 'profile_image_url', u.profile_image_url) end`;

async function count(q: PromiseLike<readonly { total: number }[]>): Promise<number> {
  return (await q)[0]?.total ?? 0;
}

// ---- bases ---------------------------------------------------------------------------------
export async function getKnowledge(db: Db, id: string): Promise<KnowledgeRow | undefined> {
  const [row] = await db<KnowledgeRow[]>`select * from knowledge where id = ${id}`;
  return row;
}

export async function insertKnowledge(tx: Tx, k: { id: string; userId: string; name: string; description: string }, t: number): Promise<void> {
  await tx`insert into knowledge (id, user_id, name, description, meta, data, created_at, updated_at)
    values (${k.id}, ${k.userId}, ${k.name}, ${k.description}, null, null, ${t}, ${t})`;
}

export async function updateKnowledge(tx: Tx, id: string, k: { name: string; description: string }, t: number): Promise<void> {
  await tx`update knowledge set name = ${k.name}, description = ${k.description}, updated_at = ${t} where id = ${id}`;
}

/** The base's row locked for the rest of `tx`: one grant change, move or clean-up at a time per base. */
export async function lockKnowledge(tx: Tx, id: string): Promise<void> {
  await tx`select id from knowledge where id = ${id} for update`;
}

/** The base and its grants; its links and directories go with it (foreign keys), files stay. */
export async function deleteKnowledge(tx: Tx, id: string): Promise<void> {
  await tx`delete from access_grant where resource_type = 'knowledge' and resource_id = ${id}`;
  await tx`delete from knowledge where id = ${id}`;
}

/** Every link of the base (and its directories when asked); returns how many files were unlinked. */
export async function resetKnowledge(tx: Tx, id: string, includeDirectories: boolean, t: number): Promise<number> {
  const removed = await tx`delete from knowledge_file where knowledge_id = ${id} returning id`;
  if (includeDirectories) await tx`delete from knowledge_directory where knowledge_id = ${id}`;
  await tx`update knowledge set updated_at = ${t} where id = ${id}`;
  return removed.length;
}

/** FileMetadataResponse of every file linked to the base, in the order they were added. */
export async function fileMetadatas(db: Db, knowledgeId: string) {
  return db<{ id: string; hash: string | null; meta: Record<string, unknown> | null; created_at: number; updated_at: number }[]>`
    select f.id, f.hash, f.meta, f.created_at, f.updated_at
    from knowledge_file kf join file f on f.id = kf.file_id
    where kf.knowledge_id = ${knowledgeId} order by kf.created_at, f.id`;
}

/** Every file linked into any base, once (a reindex queues them all). */
export async function linkedFileIds(sql: Sql): Promise<string[]> {
  const rows = await sql<{ file_id: string }[]>`select distinct file_id from knowledge_file order by file_id`;
  return rows.map((r) => r.file_id);
}

// ---- grants --------------------------------------------------------------------------------
export async function replaceGrants(tx: Tx, id: string, grants: readonly Grant[], t: number): Promise<void> {
  await tx`delete from access_grant where resource_type = 'knowledge' and resource_id = ${id}`;
  for (const g of grants) {
    await tx`insert into access_grant (id, resource_type, resource_id, principal_type, principal_id, permission, created_at)
      values (${randomUUID()}, 'knowledge', ${id}, ${g.principal_type}, ${g.principal_id}, ${g.permission}, ${t})`;
  }
}

/** The members of the groups, each once. */
export async function groupMemberIds(tx: Tx, groups: readonly string[]): Promise<string[]> {
  return (await tx<{ user_id: string }[]>`select distinct user_id from group_member where group_id = any(${groups}::text[])`).map((r) => r.user_id);
}

// ---- lists ---------------------------------------------------------------------------------
/** The search route's filters (absent for the plain list). */
export interface BaseSearch {
  query?: string;
  view?: string;
  source?: string;
  orderBy?: string;
  direction?: string;
}

/** Bases the caller may read, newest change first (or as the search orders them), one page, and how many in all. */
export async function basesPage(sql: Sql, user: UserRow, search: BaseSearch | null, limit: number, offset: number) {
  const conds = [sql`k.id in (${readableKnowledgeIds(sql, user)})`];
  if (search) {
    if (search.query) {
      const p = likePattern(search.query);
      conds.push(sql`(k.name ilike ${p} or k.description ilike ${p} or u.name ilike ${p} or u.email ilike ${p})`);
    }
    if (search.view === 'created') conds.push(sql`k.user_id = ${user.id}`);
    if (search.view === 'shared') conds.push(sql`k.user_id <> ${user.id}`);
    if (search.source === 'external') conds.push(sql`k.meta->>'source' = 'external'`);
    if (search.source === 'local') conds.push(sql`coalesce(k.meta->>'source', '') <> 'external'`);
  }
  const where = conds.reduce((a, c) => sql`${a} and ${c}`);
  const asc = search?.direction === 'asc';
  const column = search && ['name', 'created_at', 'updated_at'].includes(search.orderBy ?? '') ? search.orderBy! : 'updated_at';
  const order = search?.orderBy ? sql`${sql('k')}.${sql(column)} ${asc ? sql`asc` : sql`desc`}` : sql`k.updated_at desc`;
  const rows = await sql<(KnowledgeRow & { user: FileUserRow['user']; file_count: number })[]>`
    select k.*, ${userJson(sql)} as user,
      (select count(*) from knowledge_file kf where kf.knowledge_id = k.id)::int as file_count
    from knowledge k left join "user" u on u.id = k.user_id
    where ${where}
    order by ${order}, k.id asc
    limit ${limit} offset ${offset}`;
  const total = await count(sql`select count(*)::int as total from knowledge k left join "user" u on u.id = k.user_id where ${where}`);
  return { rows, total };
}

/** The file list's filters: `directoryId` undefined = every file, null = the root level, an id = that directory. */
export interface FileFilter {
  directoryId?: string | null;
  query?: string;
  includeContent: boolean;
  view?: string;
  orderBy?: string;
  direction?: string;
}

/** One page of the base's files with the adder as `user`, and how many match in all. */
export async function knowledgeFilesPage(sql: Sql, user: UserRow, knowledgeId: string, f: FileFilter, limit: number, offset: number) {
  const conds = [sql`kf.knowledge_id = ${knowledgeId}`];
  if (f.directoryId !== undefined) conds.push(f.directoryId ? sql`kf.directory_id = ${f.directoryId}` : sql`kf.directory_id is null`);
  if (f.query) {
    const p = likePattern(f.query);
    conds.push(f.includeContent ? sql`(f.filename ilike ${p} or f.data->>'content' ilike ${p})` : sql`f.filename ilike ${p}`);
  }
  if (f.view === 'created') conds.push(sql`kf.user_id = ${user.id}`);
  if (f.view === 'shared') conds.push(sql`kf.user_id <> ${user.id}`);
  const where = conds.reduce((a, c) => sql`${a} and ${c}`);
  const dir = f.direction === 'asc' ? sql`asc` : sql`desc`;
  const order = f.orderBy === 'name' ? sql`f.filename ${dir}` : f.orderBy === 'created_at' ? sql`f.created_at ${dir}` : f.orderBy === 'updated_at' ? sql`f.updated_at ${dir}` : sql`f.updated_at desc`;
  const items = await sql<FileUserRow[]>`
    select f.id, f.user_id, f.hash, f.filename, f.data, f.meta, f.created_at, f.updated_at, ${userJson(sql)} as user
    from knowledge_file kf join file f on f.id = kf.file_id left join "user" u on u.id = kf.user_id
    where ${where}
    order by ${order}, f.id asc
    limit ${limit} offset ${offset}`;
  const total = await count(sql`select count(*)::int as total from knowledge_file kf join file f on f.id = kf.file_id where ${where}`);
  return { items, total };
}

/** Files in every base the caller may read (a file once per base), with that base, one page, and how many in all. */
export async function searchFilesPage(sql: Sql, user: UserRow, f: { query?: string; includeContent: boolean }, limit: number, offset: number) {
  const conds = [sql`kf.knowledge_id in (${readableKnowledgeIds(sql, user)})`];
  if (f.query) {
    const p = likePattern(f.query);
    conds.push(f.includeContent ? sql`(f.filename ilike ${p} or f.data->>'content' ilike ${p})` : sql`f.filename ilike ${p}`);
  }
  const where = conds.reduce((a, c) => sql`${a} and ${c}`);
  const rows = await sql<(FileUserRow & { knowledge: KnowledgeRow })[]>`
    select f.id, f.user_id, f.hash, f.filename, f.data, f.meta, f.created_at, f.updated_at, ${userJson(sql)} as user, to_json(k) as knowledge
    from knowledge_file kf join file f on f.id = kf.file_id join knowledge k on k.id = kf.knowledge_id
    left join "user" u on u.id = kf.user_id
    where ${where}
    order by f.updated_at desc, f.id asc, k.id asc
    limit ${limit} offset ${offset}`;
  const total = await count(sql`select count(*)::int as total from knowledge_file kf join file f on f.id = kf.file_id where ${where}`);
  return { rows, total };
}

/**
 * Uploaded naming this base (metadata.knowledge_id, kept in meta.data) and not linked yet: the
 * caller's own, or everyone's for an admin, as Open WebUI.
 */
export async function pendingFiles(sql: Sql, user: UserRow, knowledgeId: string) {
  return sql<z.input<typeof KnowledgePendingFiles>>`
    select f.id, f.user_id, f.hash, f.filename, f.data, f.meta, f.created_at, f.updated_at
    from file f
    where f.meta->'data'->>'knowledge_id' = ${knowledgeId}
      and coalesce(f.data->>'status', 'pending') = 'pending'
      and not exists (select 1 from knowledge_file kf where kf.knowledge_id = ${knowledgeId} and kf.file_id = f.id)
      and ${user.role === 'admin' ? sql`true` : sql`f.user_id = ${user.id}`}
    order by f.created_at, f.id`;
}

// ---- files ---------------------------------------------------------------------------------
export async function getFile(db: Db, id: string): Promise<FileRow | null> {
  const [row] = await db<FileRow[]>`select id, user_id, filename, hash, path, data->>'status' as status from file where id = ${id}`;
  return row ?? null;
}

export async function filesByIds(sql: Sql, ids: readonly string[]): Promise<Map<string, FileRow>> {
  return new Map((await sql<FileRow[]>`select id, user_id, filename, hash, path, data->>'status' as status from file where id = any(${ids}::text[])`).map((f) => [f.id, f]));
}

/** Whether the file is linked into a base the caller may read. */
export async function inReadableBase(db: Db, user: UserRow, fileId: string): Promise<boolean> {
  const rows = await db`select 1 from knowledge_file where file_id = ${fileId} and knowledge_id in (${readableKnowledgeIds(db, user)}) limit 1`;
  return rows.length > 0;
}

/** The file's link into the base (its directory), or null when it is not in it. */
export async function linked(db: Db, knowledgeId: string, fileId: string): Promise<{ directory_id: string | null } | null> {
  const [row] = await db<{ directory_id: string | null }[]>`select directory_id from knowledge_file where knowledge_id = ${knowledgeId} and file_id = ${fileId}`;
  return row ?? null;
}

/** Moves a linked file to another directory of the base; its filename, or undefined when it is not linked. */
export async function moveLink(tx: Tx, knowledgeId: string, fileId: string, directoryId: string | null, t: number): Promise<string | undefined> {
  const [row] = await tx<{ filename: string }[]>`
    update knowledge_file kf set directory_id = ${directoryId}, updated_at = ${t} from file f
    where kf.knowledge_id = ${knowledgeId} and kf.file_id = ${fileId} and f.id = kf.file_id
    returning f.filename`;
  return row?.filename;
}

export async function deleteLink(tx: Tx, knowledgeId: string, fileId: string): Promise<void> {
  await tx`delete from knowledge_file where knowledge_id = ${knowledgeId} and file_id = ${fileId}`;
}

/** The file row; its chunks and its links to every base go with it (foreign keys). */
export async function deleteFileRow(tx: Tx, fileId: string): Promise<void> {
  await tx`delete from file where id = ${fileId}`;
}
