import type { Sql } from 'postgres';
import type { FeedbackModel } from '@gatehouse/contracts';
import type { Tx } from '../context.ts';

/**
 * The feedback table (migration 0016): users' ratings of answers. Reads are newest change first,
 * as Open WebUI lists them (and as the leaderboard plays them). `owner` undefined = any user's
 * (an admin), else only that user's.
 */
type Db = Sql | Tx;
const q = (db: Db) => db as Sql;
type Json = Record<string, unknown>;

const COLUMNS = ['id', 'user_id', 'version', 'type', 'data', 'meta', 'snapshot', 'created_at', 'updated_at'];
/** bigint columns come back as strings from postgres.js: version is small, so a number. */
const row = (r: FeedbackModel & { version: number | string }): FeedbackModel => ({ ...r, version: Number(r.version) });

export interface FeedbackWithUser extends FeedbackModel {
  user: { id: string; name: string; email: string; role: string; last_active_at: number; updated_at: number; created_at: number } | null;
}

const jsonOrNull = (db: Db, v: Json | null) => (v === null ? null : q(db).json(v as never));

export async function insertFeedback(tx: Tx, f: FeedbackModel): Promise<FeedbackModel> {
  const [r] = await tx<FeedbackModel[]>`
    insert into feedback (id, user_id, version, type, data, meta, snapshot, created_at, updated_at)
    values (${f.id}, ${f.user_id}, ${f.version}, ${f.type}, ${jsonOrNull(tx, f.data)}, ${jsonOrNull(tx, f.meta)}, ${jsonOrNull(tx, f.snapshot)}, ${f.created_at}, ${f.updated_at})
    returning ${tx(COLUMNS)}`;
  return row(r!);
}

export async function loadFeedback(db: Db, id: string, owner?: string): Promise<FeedbackModel | undefined> {
  const sql = q(db);
  const [r] = await sql<FeedbackModel[]>`select ${sql(COLUMNS)} from feedback where id = ${id} ${owner === undefined ? sql`` : sql`and user_id = ${owner}`}`;
  return r && row(r);
}

/** Replace the parts given (undefined keeps one); undefined when there is no such rating (of that owner). */
export async function updateFeedback(
  tx: Tx,
  id: string,
  owner: string | undefined,
  p: { data?: Json; meta?: Json; snapshot?: Json },
  t: number,
): Promise<FeedbackModel | undefined> {
  const [r] = await tx<FeedbackModel[]>`
    update feedback set
      data = ${p.data === undefined ? tx`data` : tx`${tx.json(p.data as never)}`},
      meta = ${p.meta === undefined ? tx`meta` : tx`${tx.json(p.meta as never)}`},
      snapshot = ${p.snapshot === undefined ? tx`snapshot` : tx`${tx.json(p.snapshot as never)}`},
      updated_at = ${t}
    where id = ${id} ${owner === undefined ? tx`` : tx`and user_id = ${owner}`}
    returning ${tx(COLUMNS)}`;
  return r && row(r);
}

export async function deleteFeedback(tx: Tx, id: string, owner?: string): Promise<FeedbackModel | undefined> {
  const [r] = await tx<FeedbackModel[]>`delete from feedback where id = ${id} ${owner === undefined ? tx`` : tx`and user_id = ${owner}`} returning ${tx(COLUMNS)}`;
  return r && row(r);
}

/** Delete every rating (of `owner`, when given); how many went. */
export async function deleteFeedbacks(tx: Tx, owner?: string): Promise<number> {
  const gone = await tx`delete from feedback ${owner === undefined ? tx`` : tx`where user_id = ${owner}`} returning id`;
  return gone.length;
}

export async function feedbacksOf(db: Db, owner: string): Promise<FeedbackModel[]> {
  const sql = q(db);
  const rows = await sql<FeedbackModel[]>`select ${sql(COLUMNS)} from feedback where user_id = ${owner} order by updated_at desc, id`;
  return rows.map(row);
}

/** Every rating, newest change first (the export and the leaderboard read these). */
export async function allFeedbacks(db: Db): Promise<FeedbackModel[]> {
  const sql = q(db);
  const rows = await sql<FeedbackModel[]>`select ${sql(COLUMNS)} from feedback order by updated_at desc, id`;
  return rows.map(row);
}

const WITH_USER = (sql: Sql) => sql`
  select f.id, f.user_id, f.version, f.type, f.data, f.meta, f.snapshot, f.created_at, f.updated_at,
    case when u.id is null then null else jsonb_build_object('id', u.id, 'name', u.name, 'email', u.email, 'role', u.role,
      'last_active_at', u.last_active_at, 'updated_at', u.updated_at, 'created_at', u.created_at) end as "user"
  from feedback f left join "user" u on u.id = f.user_id`;

export async function allFeedbacksWithUsers(sql: Sql): Promise<FeedbackWithUser[]> {
  const rows = await sql<FeedbackWithUser[]>`${WITH_USER(sql)} order by f.updated_at desc, f.id`;
  return rows.map((r) => ({ ...r, version: Number(r.version) }));
}

/** What `order_by` may name (anything else: newest change first). */
const ORDER: Record<string, string> = {
  updated_at: 'f.updated_at',
  created_at: 'f.created_at',
  model_id: "f.data->>'model_id'",
  rating: "f.data->>'rating'",
  user: 'u.name',
  type: 'f.type',
};

export async function feedbackPage(
  sql: Sql,
  o: { page: number; size: number; orderBy: string | undefined; ascending: boolean },
): Promise<{ rows: FeedbackWithUser[]; total: number }> {
  const column = (o.orderBy && ORDER[o.orderBy]) || 'f.updated_at';
  const dir = o.ascending ? sql`asc` : sql`desc`;
  const [counted] = await sql<{ total: number }[]>`select count(*)::int as total from feedback`;
  const rows = await sql<FeedbackWithUser[]>`${WITH_USER(sql)} order by ${sql.unsafe(column)} ${dir} nulls last, f.id limit ${o.size} offset ${(o.page - 1) * o.size}`;
  return { rows: rows.map((r) => ({ ...r, version: Number(r.version) })), total: counted?.total ?? 0 };
}
