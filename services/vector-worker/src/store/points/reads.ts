/**
 * Reads without a query vector: retrieve by ids (POST and GET by path id), scroll, count, and the
 * id-ordered walk shared by scroll and a query without `query`.
 */
import type postgres from 'postgres';
import type {
  QdrantCountRequest,
  QdrantPointId,
  QdrantPointRequest,
  QdrantRecord,
  QdrantScrollRequest,
  QdrantWithPayload,
} from '@gatehouse/contracts';
import { tableOf, type CollectionMeta, type Db, type Fragment } from '../collections/catalog.ts';
import { join } from '../common.ts';
import { QdrantError } from '../errors.ts';
import { formatPointId, idAtOrAfter, idOrder, parsePathPointId, parsePointId, pidOf, type ParsedPointId } from './ids.ts';
import { toJsonPathText } from './json-path.ts';
import { recordColumns, toRecord, type PointRow } from './records.ts';
import { vectorSelection, type VectorSelection } from '../vectors/vectors.ts';
import { filterWhere, parseIds, pidIn } from '../filter/where.ts';

/** LIMIT for "everything": huge limits (u64::MAX) are clamped to this. */
export const MAX_LIMIT = 2 ** 31 - 1;
export const clampLimit = (n: number) => Math.min(n, MAX_LIMIT);

/** Records in request order, missing ids absent, duplicates once. */
export async function retrieve(db: Db, schema: string, meta: CollectionMeta, req: QdrantPointRequest): Promise<QdrantRecord[]> {
  const ids = parseIds(req.ids);
  if (ids.length === 0) return [];
  const sel = vectorSelection(meta, req.with_vector);
  const rows = await db<PointRow[]>`
    select pid, ${recordColumns(db, meta, req.with_payload, sel)}
    from ${tableOf(db, schema, meta)} where ${pidIn(db, ids)}`;
  const byPid = new Map(rows.map((r) => [r.pid as string, r]));
  const out: QdrantRecord[] = [];
  for (const pid of new Set(ids.map(pidOf))) {
    const row = byPid.get(pid);
    if (row) out.push(toRecord(meta, row, req.with_payload, sel));
  }
  return out;
}

/** `GET …/points/{id}`: payload and all vectors, or 404. */
export async function getPoint(db: Db, schema: string, meta: CollectionMeta, pathId: string): Promise<QdrantRecord> {
  const id = parsePathPointId(pathId);
  const sel: VectorSelection = { all: true, names: [] };
  const [row] = await db<PointRow[]>`
    select ${recordColumns(db, meta, true, sel)} from ${tableOf(db, schema, meta)} where pid = ${pidOf(id)}`;
  if (!row) throw new QdrantError(404, `Not found: Point with id ${pathId} does not exists!`);
  return toRecord(meta, row, true, sel);
}

/** ORDER BY for `order_by` on a payload key: its numeric value (or datetime text). */
export type OrderBy = { key: string; direction: 'asc' | 'desc'; start_from?: unknown };

function orderByOf(req: QdrantScrollRequest): OrderBy | undefined {
  const o = req.order_by;
  if (o === undefined) return undefined;
  if (typeof o === 'string') return { key: o, direction: 'asc' };
  return { key: o.key, direction: o.direction ?? 'asc', start_from: o.start_from };
}

function checkOrderByIndex(meta: CollectionMeta, key: string): void {
  const schema = meta.payloadIndexes.get(key);
  const type = typeof schema === 'string' ? schema : (schema as { type?: string } | undefined)?.type;
  if (type !== 'integer' && type !== 'float' && type !== 'datetime') {
    throw new QdrantError(
      400,
      `Bad request: No range index for \`order_by\` key: \`${key}\`. Please create one to use \`order_by\`. Check https://qdrant.tech/documentation/concepts/indexing/#payload-index to see which payload schemas support Range conditions`,
    );
  }
}

export type IdWalk = {
  filter: unknown;
  /** Inclusive start id (scroll `offset`). */
  from?: ParsedPointId;
  /** Rows to skip (query `offset`). */
  skip?: number;
  limit: number;
  withPayload: QdrantWithPayload;
  sel: VectorSelection;
  orderBy?: OrderBy;
};

/** Points in id order (numeric ids, then UUIDs) — or by an `order_by` payload value. */
export async function walk(db: Db, schema: string, meta: CollectionMeta, w: IdWalk): Promise<PointRow[]> {
  const conds: Fragment[] = [filterWhere(db, meta, w.filter)];
  if (w.from) conds.push(idAtOrAfter(db as postgres.Sql, w.from));
  let order: Fragment = idOrder(db as postgres.Sql);
  let valueCol: Fragment = db``;
  let values: Fragment = db``;
  if (w.orderBy) {
    checkOrderByIndex(meta, w.orderBy.key);
    // One row per value at the key (each element of an array), as Qdrant's order_by reads its
    // range index: a point with two values comes back twice. Datetime values order as text
    // (RFC 3339 in UTC sorts lexically); numbers numerically.
    const path = `${toJsonPathText(w.orderBy.key)}[*]`;
    const type = (meta.payloadIndexes.get(w.orderBy.key) as { type?: string } | string);
    const isDate = type === 'datetime' || (typeof type === 'object' && type?.type === 'datetime');
    values = isDate
      ? db`cross join lateral (select v #>> '{}' as order_value from jsonb_path_query(payload, ${path}::jsonpath) v
                               where jsonb_typeof(v) = 'string') ov`
      : db`cross join lateral (select v::text::numeric as order_value from jsonb_path_query(payload, ${path}::jsonpath) v
                               where jsonb_typeof(v) = 'number') ov`;
    const value = db`ov.order_value`;
    const dir = w.orderBy.direction === 'desc' ? db`desc` : db`asc`;
    if (w.orderBy.start_from !== undefined && w.orderBy.start_from !== null) {
      const start = isDate ? db`${String(w.orderBy.start_from)}::text` : db`${Number(w.orderBy.start_from)}::numeric`;
      conds.push(w.orderBy.direction === 'desc' ? db`${value} <= ${start}` : db`${value} >= ${start}`);
    }
    order = db`${value} ${dir}, ${idOrder(db as postgres.Sql)}`;
    valueCol = db`, ${value} as order_value`;
  }
  return db<PointRow[]>`
    select ${recordColumns(db, meta, w.withPayload, w.sel)} ${valueCol}
    from ${tableOf(db, schema, meta)} ${values}
    where ${join(db, conds, 'and')}
    order by ${order}
    limit ${w.limit} offset ${w.skip ?? 0}`;
}

export async function scroll(
  db: Db,
  schema: string,
  meta: CollectionMeta,
  req: QdrantScrollRequest,
): Promise<{ points: QdrantRecord[]; next_page_offset: QdrantPointId | null }> {
  const limit = clampLimit(req.limit ?? 10);
  const sel = vectorSelection(meta, req.with_vector);
  const orderBy = orderByOf(req);
  if (orderBy && req.offset !== undefined) {
    checkOrderByIndex(meta, orderBy.key);
    throw new QdrantError(
      400,
      "Wrong input: Cannot use an `offset` when using `order_by`. The alternative for paging is to use `order_by.start_from` and a filter to exclude the IDs that you've already seen for the `order_by.start_from` value",
    );
  }
  const rows = await walk(db, schema, meta, {
    filter: req.filter,
    from: req.offset !== undefined ? parsePointId(req.offset) : undefined,
    // One more row tells the next page's first id.
    limit: orderBy ? limit : limit + 1,
    withPayload: req.with_payload,
    sel,
    orderBy,
  });
  const page = rows.slice(0, limit);
  const next = orderBy ? undefined : rows[limit];
  return {
    points: page.map((r) => {
      const rec = toRecord(meta, r, req.with_payload, sel);
      if (orderBy) {
        const v = r.order_value;
        (rec as QdrantRecord & { order_value?: unknown }).order_value =
          typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v)) ? Number(v) : v;
      }
      return rec;
    }),
    next_page_offset: next ? formatPointId(next) : null,
  };
}

export async function count(db: Db, schema: string, meta: CollectionMeta, req: QdrantCountRequest): Promise<{ count: number }> {
  const [row] = await db<{ n: string }[]>`
    select count(*)::text as n from ${tableOf(db, schema, meta)} where ${filterWhere(db, meta, req.filter)}`;
  return { count: Number(row!.n) };
}
