/**
 * Conditional upserts: `update_mode` (`insert_only`: ids that exist are left as they are;
 * `update_only`: ids that do not exist are skipped) and `update_filter` (existing points that do
 * not match it are left as they are; new ids are inserted). Both decide per point, in the
 * upsert's transaction, which of the request's points are written.
 */
import type { QdrantPointInsertOperations } from '@gatehouse/contracts';
import type { WriteCtx } from './points.ts';
import { filterWhere, pidIn } from '../filter/where.ts';
import { pidOf, type ParsedPointId } from './ids.ts';

/** The points of an upsert that are written, after `update_mode` and `update_filter`. */
export async function pointsToWrite<P extends { id: ParsedPointId }>(c: WriteCtx, req: QdrantPointInsertOperations, points: P[]): Promise<P[]> {
  const mode = req.update_mode ?? 'upsert';
  if (points.length === 0 || (mode === 'upsert' && req.update_filter === undefined)) return points;
  const { tx, meta, table } = c;
  // Existing ids, and whether each matches `update_filter` (true when there is none).
  const filter = req.update_filter === undefined ? tx`true` : filterWhere(tx, meta, req.update_filter);
  const rows = await tx<{ pid: string; ok: boolean }[]>`
    select pid, coalesce((${filter}), false) as ok from ${table}
    where ${pidIn(tx, points.map((p) => p.id))}`;
  const existing = new Map(rows.map((r) => [r.pid, r.ok]));
  return points.filter((p) => {
    const found = existing.get(pidOf(p.id));
    if (found === undefined) return mode !== 'update_only';
    return mode !== 'insert_only' && found;
  });
}
