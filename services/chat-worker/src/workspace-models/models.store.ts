import type { Sql } from 'postgres';
import type { WorkspaceModel } from '@gatehouse/contracts';
import type { Tx, UserRow } from '../context.ts';
import { resourceGrants, type Grant } from '../access-grants.ts';

/**
 * The model table (migration 0018) and the models' access_grant rows (resource_type 'model').
 * What a user may read is filtered here in SQL: their own models and those a grant reaches
 * (their user id, a group they are in, or `user:*`); admins read all.
 */
type Db = Sql | Tx;
const q = (db: Db) => db as Sql;
type Json = Record<string, unknown>;

const grants = resourceGrants('model');
const reachable = grants.reachable;
export const { granted, writableByGrant, grantsOf, replaceGrants } = grants;
export type { Grant };

export type ModelRow = Omit<WorkspaceModel, 'access_grants'>;
export type Owner = { id: string; name: string; email: string; role: string };

const COLUMNS = ['id', 'user_id', 'base_model_id', 'name', 'params', 'meta', 'is_active', 'created_at', 'updated_at'];
const isJson = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
/** bigint comes back as a string from postgres.js; epochs fit a number. */
const row = (r: ModelRow): ModelRow => ({
  ...r,
  params: isJson(r.params) ? r.params : {},
  meta: isJson(r.meta) ? r.meta : {},
  created_at: Number(r.created_at),
  updated_at: Number(r.updated_at),
});


export async function insertModel(tx: Tx, m: ModelRow): Promise<ModelRow> {
  const [r] = await tx<ModelRow[]>`
    insert into model (id, user_id, base_model_id, name, params, meta, is_active, created_at, updated_at)
    values (${m.id}, ${m.user_id}, ${m.base_model_id}, ${m.name}, ${tx.json(m.params as never)}, ${tx.json(m.meta as never)},
      ${m.is_active}, ${m.created_at}, ${m.updated_at})
    returning ${tx(COLUMNS)}`;
  return row(r!);
}

export async function updateModel(tx: Tx, m: ModelRow): Promise<ModelRow> {
  const [r] = await tx<ModelRow[]>`
    update model set base_model_id = ${m.base_model_id}, name = ${m.name}, params = ${tx.json(m.params as never)},
      meta = ${tx.json(m.meta as never)}, is_active = ${m.is_active}, updated_at = ${m.updated_at}
    where id = ${m.id} returning ${tx(COLUMNS)}`;
  return row(r!);
}

/** `lock`: hold the row until the transaction ends, so two changes cannot interleave. */
export async function modelById(db: Db, id: string, lock = false): Promise<ModelRow | undefined> {
  const sql = q(db);
  const [r] = lock
    ? await sql<ModelRow[]>`select ${sql(COLUMNS)} from model where id = ${id} for update`
    : await sql<ModelRow[]>`select ${sql(COLUMNS)} from model where id = ${id}`;
  return r && row(r);
}

export async function deleteModel(tx: Tx, id: string): Promise<boolean> {
  return (await tx`delete from model where id = ${id}`).count > 0;
}

export interface ListFilter {
  query?: string | undefined;
  view?: string | undefined;
  tag?: string | undefined;
  orderBy?: string | undefined;
  direction?: string | undefined;
  /** Only active models (what /api/models and completions use). */
  activeOnly?: boolean;
  /** Only presets over a base model (`true`) or only base-model overrides (`false`). */
  presets?: boolean;
}

/** `LIKE` reads `%`, `_` and `\` in the search text literally. */
const likeText = (s: string) => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The models `user` may read, with their owners: filtered, ordered, one page (`limit` null: all). */
export async function modelsPage(
  db: Db,
  user: UserRow,
  f: ListFilter,
  limit: number | null,
  offset: number,
): Promise<{ rows: (ModelRow & { owner: Owner | null })[]; total: number }> {
  const sql = q(db);
  const conds = [sql`true`];
  if (f.activeOnly) conds.push(sql`m.is_active`);
  if (f.presets === true) conds.push(sql`m.base_model_id is not null`);
  if (f.presets === false) conds.push(sql`m.base_model_id is null`);
  if (user.role !== 'admin') conds.push(sql`(m.user_id = ${user.id} or m.id in (${reachable(db, user, 'read')}))`);
  if (f.query) {
    const like = likeText(f.query);
    conds.push(sql`(m.name ilike ${like} or m.id ilike ${like} or u.name ilike ${like} or u.email ilike ${like})`);
  }
  if (f.view === 'created') conds.push(sql`m.user_id = ${user.id}`);
  else if (f.view === 'shared') conds.push(sql`m.user_id <> ${user.id}`);
  if (f.tag) {
    conds.push(sql`exists (select 1 from jsonb_array_elements(case when jsonb_typeof(m.meta->'tags') = 'array' then m.meta->'tags' else '[]' end) t
      where lower(coalesce(t->>'name', t#>>'{}')) = ${f.tag.toLowerCase()})`);
  }
  const where = conds.reduce((a, c) => sql`${a} and ${c}`);
  const column = f.orderBy === 'name' ? sql`m.name` : f.orderBy === 'created_at' ? sql`m.created_at` : sql`m.updated_at`;
  const dir = f.orderBy && f.direction === 'asc' ? sql`asc` : sql`desc`;
  const cols = COLUMNS.map((c) => sql`m.${sql(c)}`).reduce((a, c) => sql`${a}, ${c}`);
  const rows = await sql<(ModelRow & { o_id: string | null; o_name: string | null; o_email: string | null; o_role: string | null; total: string })[]>`
    select ${cols}, u.id as o_id, u.name as o_name, u.email as o_email, u.role as o_role, count(*) over () as total
    from model m left join "user" u on u.id = m.user_id
    where ${where}
    order by ${column} ${dir}, m.id
    ${limit === null ? sql`` : sql`limit ${limit}`} offset ${offset}`;
  let total = rows.length ? Number(rows[0]!.total) : 0;
  if (!rows.length && offset > 0) {
    const [r] = await sql<{ n: string }[]>`select count(*) as n from model m left join "user" u on u.id = m.user_id where ${where}`;
    total = Number(r?.n ?? 0);
  }
  return {
    rows: rows.map(({ o_id, o_name, o_email, o_role, total: _t, ...m }) => ({
      ...row(m),
      owner: o_id ? { id: o_id, name: o_name ?? '', email: o_email ?? '', role: o_role ?? 'user' } : null,
    })),
    total,
  };
}

export async function ownerOf(db: Db, userId: string): Promise<Owner | null> {
  const [u] = await q(db)<Owner[]>`select id, name, email, role from "user" where id = ${userId}`;
  return u ?? null;
}
