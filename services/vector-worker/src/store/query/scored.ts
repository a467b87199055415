/**
 * Ranked lists, the currency between the stages of a query tree (query.ts), and the exact top-k
 * by a score expression that every custom-scored query (recommend best_score / sum_scores,
 * discover, context, relevance feedback) runs: one ordered scan over the filtered points that
 * hold the target vector. Exact, like Qdrant's plain (unindexed) search; HNSW cannot serve a score
 * that is not a distance to one vector.
 */
import type { Fragment } from '../collections/catalog.ts';
import { tableOf } from '../collections/catalog.ts';
import { join } from '../common.ts';
import { hasTargetSql, type Ctx, type Target } from './examples.ts';
import { idOrder, type ParsedPointId } from '../points/ids.ts';
import type { PointRow } from '../points/records.ts';
import { filterWhere, pidIn } from '../filter/where.ts';

/** A ranked point: `pid` (the table key) and its score, best first. */
/** A ranked point; `row` when the ranking statement also read the page's columns (query.ts `Page`). */
export type Ranked = { pid: string; score: number; row?: PointRow };

export const pidOfRow = (row: PointRow) => (row.id_num ?? row.id_uuid) as string;
export const parsedOfPid = (pid: string): ParsedPointId => (/^[0-9]+$/.test(pid) ? { num: pid } : { uuid: pid });

export type ScoredScan = {
  target: Target;
  /** SQL of the score, larger is better. */
  score: Fragment;
  filter: unknown;
  take: number;
  /** `score > threshold` in f32, as Qdrant compares (custom scores are always larger-is-better). */
  threshold?: number;
  /** Only these points (a prefetch's candidates). */
  restrict?: readonly ParsedPointId[];
};

export async function topByScore(ctx: Ctx, s: ScoredScan): Promise<Ranked[]> {
  const { sql, schema, meta } = ctx;
  const conds: Fragment[] = [hasTargetSql(sql, s.target), filterWhere(sql, meta, s.filter)];
  if (s.restrict) conds.push(pidIn(sql, s.restrict));
  const rows = await sql<(PointRow & { score: number })[]>`
    select * from (
      select id_num, id_uuid, (${s.score})::float8 as score
      from ${tableOf(sql, schema, meta)} where ${join(sql, conds, 'and')}
    ) scored
    where ${s.threshold === undefined ? sql`true` : sql`score::float4 > ${s.threshold}::float4`}
    order by score desc, ${idOrder(sql)}
    limit ${s.take}`;
  return rows.map((r) => ({ pid: pidOfRow(r), score: Number(r.score) }));
}
