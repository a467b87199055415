/**
 * Rows → Qdrant `Record` / `ScoredPoint`: the columns a read selects, payload selectors
 * (`with_payload`: bool, list of keys, {include}, {exclude}) and the `vector` field.
 * `payload` and `vector` are omitted unless requested; a point without payload shows `{}`.
 */
import type { QdrantRecord, QdrantWithPayload } from '@gatehouse/contracts';
import type { CollectionMeta, Db, Fragment } from '../collections/catalog.ts';
import { join } from '../common.ts';
import { formatPointId } from './ids.ts';
import { excludePaths, includePaths } from './json-path.ts';
import { selectedColumns, vectorOutput, wantsVectors, type VectorSelection } from '../vectors/vectors.ts';

export type PointRow = {
  id_num: string | null;
  id_uuid: string | null;
  version: string;
  payload?: Record<string, unknown>;
  sparse?: Record<string, unknown> | null;
  [column: string]: unknown;
};

export function wantsPayload(wp: QdrantWithPayload): boolean {
  return wp !== false;
}

/** The select list of a read (ids and version always; payload and vectors on request). */
export function recordColumns(db: Db, meta: CollectionMeta, wp: QdrantWithPayload, sel: VectorSelection): Fragment {
  // numeric and uuid arrive as strings (postgres.js); kept uncast so they still order as ids.
  const cols: Fragment[] = [db`id_num`, db`id_uuid`, db`version::text as version`];
  if (wantsPayload(wp)) cols.push(db`payload`);
  for (const d of selectedColumns(meta, sel)) cols.push(db`${db(d.column)}::text as ${db(d.column)}`);
  if (wantsVectors(sel) && meta.sparse.size > 0) cols.push(db`sparse`);
  return join(db, cols);
}

export function selectPayload(payload: Record<string, unknown>, wp: QdrantWithPayload): Record<string, unknown> | undefined {
  if (wp === false) return undefined;
  if (wp === true) return payload;
  if (Array.isArray(wp)) return includePaths(payload, wp);
  if ('include' in wp) return includePaths(payload, wp.include);
  return excludePaths(payload, wp.exclude);
}

export function toRecord(meta: CollectionMeta, row: PointRow, wp: QdrantWithPayload, sel: VectorSelection): QdrantRecord {
  const rec: QdrantRecord = { id: formatPointId(row) };
  const payload = selectPayload(row.payload ?? {}, wp);
  if (payload !== undefined) rec.payload = payload;
  if (wantsVectors(sel)) rec.vector = vectorOutput(meta, sel, row);
  return rec;
}
