/**
 * Point writes: upsert (list and batch), delete, set / overwrite / delete / clear payload, update
 * and delete vectors, and batches of those. Every write runs in one transaction that share-locks
 * the collection's catalog row, takes an operation id from the collection's sequence, and stamps
 * it as the `version` of every point it touches. It is durable when the call returns, whatever
 * `wait` says (`wait` only changes the reported status).
 */
import type postgres from 'postgres';
import { stringifyExactJson } from '@gatehouse/common';
import type {
  QdrantBatch,
  QdrantDeletePayload,
  QdrantPointStruct,
  QdrantDeleteVectors,
  QdrantPointInsertOperations,
  QdrantPointsSelector,
  QdrantSetPayload,
  QdrantUpdateOperation,
  QdrantUpdateVectors,
  QdrantVectorStruct,
} from '@gatehouse/contracts';
import { isUndefinedTable, loadCollection, tableOf, type CollectionMeta, type Fragment } from '../collections/catalog.ts';
import { join, nextOperationId } from '../common.ts';
import { notFoundCollection, validationError, wrongInput } from '../errors.ts';
import { parsePointId, pidOf, type ParsedPointId } from './ids.ts';
import { excludePaths, mergeAtPath } from './json-path.ts';
import { castType, notExistingVector, prepareVectorStruct, type PreparedVectors } from '../vectors/vectors.ts';
import { stageRows } from './staging.ts';
import { pointsToWrite } from './update-mode.ts';
import { filterWhere, parseIds, requireExisting, selectorWhere } from '../filter/where.ts';

export type WriteCtx = {
  tx: postgres.TransactionSql;
  schema: string;
  meta: CollectionMeta;
  table: Fragment;
};

/** Deadlock / serialization failure: the transaction can simply run again. */
const RETRYABLE = new Set(['40P01', '40001']);
const WRITE_ATTEMPTS = 3;

/**
 * Run `fn` in a write transaction on collection `name` (404 if it does not exist). Two writes
 * touching the same points in different orders can deadlock; Postgres aborts one and it is
 * retried here (a fresh transaction, so a fresh operation id).
 */
export async function runWrite<T>(
  sql: postgres.Sql,
  schema: string,
  name: string,
  fn: (c: WriteCtx) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await sql.begin(async (tx) => {
        const meta = await loadCollection(tx, schema, name, true);
        return fn({ tx, schema, meta, table: tableOf(tx, schema, meta) });
      })) as T;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (typeof code === 'string' && RETRYABLE.has(code) && attempt < WRITE_ATTEMPTS) continue;
      // The point table vanished under us: the collection was deleted concurrently.
      if (isUndefinedTable(err)) throw notFoundCollection(name);
      // Class 22 (data exception): a value Postgres cannot store, e.g. a float beyond float4
      // range in a vector, or a \u0000 in a payload string.
      if (typeof code === 'string' && code.startsWith('22')) throw wrongInput((err as Error).message);
      throw err;
    }
  }
}

const nextOp = (c: WriteCtx) => nextOperationId(c.tx, c.schema, c.meta);

// ------------------------------------------------------------------------------------------------
// Upsert

type NewPoint = { id: ParsedPointId; vectors: PreparedVectors; payload: Record<string, unknown> | null };

function batchPoints(meta: CollectionMeta, batch: QdrantBatch): NewPoint[] {
  const n = batch.ids.length;
  const structs: QdrantVectorStruct[] = [];
  if (Array.isArray(batch.vectors)) {
    if (batch.vectors.length !== n) {
      throw wrongInput(`number of ids (${n}) and vectors (${batch.vectors.length}) must be equal`);
    }
    structs.push(...batch.vectors);
  } else {
    for (let i = 0; i < n; i++) structs.push({});
    for (const [name, list] of Object.entries(batch.vectors)) {
      if (list.length !== n) throw wrongInput(`number of ids (${n}) and vectors "${name}" (${list.length}) must be equal`);
      list.forEach((v, i) => ((structs[i] as Record<string, unknown>)[name] = v));
    }
  }
  if (batch.payloads && batch.payloads.length !== n) {
    throw wrongInput(`number of ids (${n}) and payloads (${batch.payloads.length}) must be equal`);
  }
  return batch.ids.map((id, i) => ({
    id: parsePointId(id),
    vectors: prepareVectorStruct(meta, structs[i]!),
    payload: batch.payloads?.[i] ?? null,
  }));
}

export async function upsert(c: WriteCtx, req: QdrantPointInsertOperations): Promise<number> {
  const { tx, meta, table } = c;
  const op = await nextOp(c);
  const list = (req as { points?: QdrantPointStruct[] }).points;
  let points: NewPoint[] =
    list !== undefined
      ? list.map((p) => ({
          id: parsePointId(p.id),
          vectors: prepareVectorStruct(meta, p.vector),
          payload: p.payload ?? null,
        }))
      : batchPoints(meta, (req as { batch: QdrantBatch }).batch);
  // Qdrant applies the list in order: the last write of an id wins. Rows go in pid order, so
  // concurrent upserts lock shared points in the same order.
  points = [...new Map(points.map((p) => [pidOf(p.id), p])).values()].sort((a, b) =>
    pidOf(a.id) < pidOf(b.id) ? -1 : pidOf(a.id) > pidOf(b.id) ? 1 : 0,
  );
  // `update_mode` and `update_filter` decide which of them are written (update-mode.ts).
  points = await pointsToWrite(c, req, points);
  if (points.length === 0) return op;

  const cols = [...meta.dense.values()];
  // Vectors as float32 bits (staging.ts: binary COPY for a batch), then one upsert.
  const staged = await stageRows(
    tx,
    cols,
    points.map((p) => ({
      pid: pidOf(p.id),
      uuid: 'uuid' in p.id,
      payload: p.payload === null ? null : stringifyExactJson(p.payload),
      sparse: p.vectors.sparse.size ? stringifyExactJson(Object.fromEntries(p.vectors.sparse)) : null,
      vectors: cols.map((d) => p.vectors.dense.get(d.column) ?? null),
    })),
  );
  const target = join(tx, [
    tx`id_num`,
    tx`id_uuid`,
    tx`payload`,
    tx`version`,
    tx`sparse`,
    ...cols.map((d) => tx`${tx(d.column)}`),
  ]);
  const values = join(tx, [
    tx`x.s_num::numeric`,
    tx`x.s_uuid::uuid`,
    tx`coalesce(x.s_payload, '{}'::jsonb)`,
    tx`${op}::bigint`,
    tx`x.s_sparse`,
    ...cols.map((d, i) => tx`x.${staged.column(i)}::${tx.unsafe(castType(d))}`),
  ]);
  const updates = join(tx, [
    tx`payload = excluded.payload`,
    tx`version = excluded.version`,
    tx`sparse = excluded.sparse`,
    ...cols.map((d) => tx`${tx(d.column)} = excluded.${tx(d.column)}`),
  ]);
  await tx`
    insert into ${table} (${target})
    select ${values} from ${staged.table} order by x.s_ord
    on conflict (pid) do update set ${updates}`;
  return op;
}

// ------------------------------------------------------------------------------------------------
// Delete and payload

export async function deletePoints(c: WriteCtx, sel: QdrantPointsSelector): Promise<number> {
  const op = await nextOp(c);
  await c.tx`delete from ${c.table} where ${selectorWhere(c.tx, c.meta, sel)}`;
  return op;
}

/**
 * WHERE of a payload/vector update; explicit ids must all exist (404 otherwise).
 * (A fragment is a thenable: it must not be returned from an async function, or it would run.)
 */
async function checkTarget(c: WriteCtx, sel: object): Promise<void> {
  const ids = (sel as { points?: unknown[] }).points;
  if (ids !== undefined) await requireExisting(c.tx, c.table, parseIds(ids));
}

/** Rewrite payloads row by row (paths that SQL's jsonb operators cannot express). */
async function rewritePayloads(
  c: WriteCtx,
  where: Fragment,
  op: number,
  fn: (payload: Record<string, unknown>) => Record<string, unknown>,
): Promise<void> {
  const { tx, table } = c;
  const rows = await tx<{ pid: string; payload: Record<string, unknown> }[]>`
    select pid, payload from ${table} where ${where} for update`;
  if (rows.length === 0) return;
  const updated = rows.map((r) => ({ pid: r.pid, payload: fn(r.payload) }));
  await tx`
    update ${table} as t set payload = x.new_payload, version = ${op}
    from jsonb_to_recordset(${stringifyExactJson(updated.map((u) => ({ new_pid: u.pid, new_payload: u.payload })))}::text::jsonb)
      as x(new_pid text, new_payload jsonb)
    where t.pid = x.new_pid`;
}

/** POST (merge keys) and PUT (overwrite) `…/points/payload`. */
export async function setPayload(c: WriteCtx, req: QdrantSetPayload, overwrite: boolean): Promise<number> {
  const op = await nextOp(c);
  await checkTarget(c, req);
  const where = selectorWhere(c.tx, c.meta, req);
  const { tx, table } = c;
  if (req.key !== undefined) {
    await rewritePayloads(c, where, op, (p) => mergeAtPath(p, req.key!, req.payload, overwrite));
  } else if (overwrite) {
    await tx`update ${table} set payload = ${stringifyExactJson(req.payload)}::text::jsonb, version = ${op} where ${where}`;
  } else {
    await tx`update ${table} set payload = payload || ${stringifyExactJson(req.payload)}::text::jsonb, version = ${op} where ${where}`;
  }
  return op;
}

const SIMPLE_KEY = /^[^.[\]"]+$/;

export async function deletePayload(c: WriteCtx, req: QdrantDeletePayload): Promise<number> {
  const op = await nextOp(c);
  await checkTarget(c, req);
  const where = selectorWhere(c.tx, c.meta, req);
  if (req.keys.every((k) => SIMPLE_KEY.test(k))) {
    await c.tx`update ${c.table} set payload = payload - ${req.keys}::text[], version = ${op} where ${where}`;
  } else {
    await rewritePayloads(c, where, op, (p) => excludePaths(p, req.keys));
  }
  return op;
}

export async function clearPayload(c: WriteCtx, sel: QdrantPointsSelector): Promise<number> {
  const op = await nextOp(c);
  await checkTarget(c, sel);
  const where = selectorWhere(c.tx, c.meta, sel);
  await c.tx`update ${c.table} set payload = '{}'::jsonb, version = ${op} where ${where}`;
  return op;
}

// ------------------------------------------------------------------------------------------------
// Vectors

export async function updateVectors(c: WriteCtx, req: QdrantUpdateVectors): Promise<number> {
  const { tx, meta, table } = c;
  const op = await nextOp(c);
  // Several entries may name the same point: apply them in order.
  const merged = new Map<string, { id: ParsedPointId; vectors: PreparedVectors }>();
  for (const [i, p] of req.points.entries()) {
    if (typeof p.vector === 'object' && !Array.isArray(p.vector) && Object.keys(p.vector).length === 0) {
      throw validationError([`points[${i}].vector: must specify vectors to update for point`]);
    }
    const id = parsePointId(p.id);
    const vectors = prepareVectorStruct(meta, p.vector);
    const prev = merged.get(pidOf(id));
    if (prev) {
      for (const [k, v] of vectors.dense) prev.vectors.dense.set(k, v);
      for (const [k, v] of vectors.sparse) prev.vectors.sparse.set(k, v);
    } else merged.set(pidOf(id), { id, vectors });
  }
  await requireExisting(tx, table, [...merged.values()].map((m) => m.id));
  const cols = [...meta.dense.values()];
  const staged = await stageRows(
    tx,
    cols,
    [...merged.entries()].map(([pid, m]) => ({
      pid,
      uuid: 'uuid' in m.id,
      payload: null,
      sparse: m.vectors.sparse.size ? stringifyExactJson(Object.fromEntries(m.vectors.sparse)) : null,
      vectors: cols.map((d) => m.vectors.dense.get(d.column) ?? null),
    })),
  );
  const sets = join(tx, [
    tx`version = ${op}`,
    tx`sparse = case when x.s_sparse is null then t.sparse else coalesce(t.sparse, '{}'::jsonb) || x.s_sparse end`,
    ...cols.map((d, i) => tx`${tx(d.column)} = coalesce(x.${staged.column(i)}::${tx.unsafe(castType(d))}, t.${tx(d.column)})`),
  ]);
  const filter = req.update_filter !== undefined ? filterWhere(tx, meta, req.update_filter) : tx`true`;
  await tx`
    update ${table} as t set ${sets}
    from ${staged.table}
    where t.pid = coalesce(x.s_num, x.s_uuid) and (${filter})`;
  return op;
}

export async function deleteVectors(c: WriteCtx, req: QdrantDeleteVectors): Promise<number> {
  const { tx, meta, table } = c;
  const op = await nextOp(c);
  const dense: string[] = [];
  const sparse: string[] = [];
  for (const name of req.vector) {
    const d = meta.dense.get(name);
    if (d) dense.push(d.column);
    else if (meta.sparse.has(name)) sparse.push(name);
    else throw notExistingVector(name);
  }
  await checkTarget(c, req);
  const where = selectorWhere(c.tx, c.meta, req);
  const sets = join(tx, [
    tx`version = ${op}`,
    ...dense.map((col) => tx`${tx(col)} = null`),
    ...(sparse.length ? [tx`sparse = nullif(coalesce(sparse, '{}'::jsonb) - ${sparse}::text[], '{}'::jsonb)`] : []),
  ]);
  await tx`update ${table} set ${sets} where ${where}`;
  return op;
}

// ------------------------------------------------------------------------------------------------
// Batch

/** One operation of `POST …/points/batch`; returns its operation id. */
export async function applyOperation(c: WriteCtx, operation: QdrantUpdateOperation): Promise<number> {
  if ('upsert' in operation) return upsert(c, operation.upsert);
  if ('delete' in operation) return deletePoints(c, operation.delete);
  if ('set_payload' in operation) return setPayload(c, operation.set_payload, false);
  if ('overwrite_payload' in operation) return setPayload(c, operation.overwrite_payload, true);
  if ('delete_payload' in operation) return deletePayload(c, operation.delete_payload);
  if ('clear_payload' in operation) return clearPayload(c, operation.clear_payload);
  if ('update_vectors' in operation) return updateVectors(c, operation.update_vectors);
  return deleteVectors(c, operation.delete_vectors);
}
