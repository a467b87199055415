/**
 * Multivectors (`multivector_config: {comparator: max_sim}`): a `vector[]` (or `halfvec[]`)
 * column, one array element per row of the multivector (LAYOUT.md). Search is exact: each
 * point's score is Qdrant's MaxSim, Σ over query rows of the best similarity to any stored row,
 * with Qdrant's internal similarities (below); Euclid and Manhattan scores are then shown as
 * positive distances, as Qdrant does. pgvector has no index over arrays, so this scans the filtered rows that hold the
 * vector.
 */
import type postgres from 'postgres';
import { tableOf, type CollectionMeta, type DenseVector, type Fragment } from '../collections/catalog.ts';
import { join } from '../common.ts';
import { idOrder } from '../points/ids.ts';
import { candidateConds, type NearestOptions, type ScoredRowOf } from './kinds.ts';
import { clampLimit } from '../points/reads.ts';
import { recordColumns, type PointRow } from '../points/records.ts';
import { passesThreshold } from '../search/scoring.ts';
import { castType, vectorText } from './vectors.ts';

/**
 * Qdrant's similarity of stored row `d.v` to query row `q.w` (higher is closer): dot product
 * (Dot; Cosine on normalised rows), −L2² (Euclid), −L1 (Manhattan).
 */
function similarity(sql: postgres.Sql, vector: DenseVector): Fragment {
  switch (vector.distance) {
    case 'Dot':
    case 'Cosine':
      return sql`-(d.v <#> q.w)`;
    case 'Euclid':
      return sql`-((d.v <-> q.w) ^ 2)`;
    case 'Manhattan':
      return sql`-(d.v <+> q.w)`;
  }
}

/** MaxSim of the stored multivector against `query` (rows already checked and normalised). */
export function maxSimExpression(sql: postgres.Sql, vector: DenseVector, query: number[][]): Fragment {
  const q = sql`${vectorText(query, vector)}::${sql.unsafe(castType(vector))}`;
  return sql`(
    select sum(best)::float8 from (
      select max(${similarity(sql, vector)}) as best
      from unnest(${q}) with ordinality as q(w, j) cross join unnest(${sql(vector.column)}) as d(v)
      group by q.j
    ) rows
  )`;
}

/** The score Qdrant shows for a MaxSim sum: Euclid √|s|, Manhattan |s| (lower is closer). */
function postprocess(vector: DenseVector, s: number): number {
  if (vector.distance === 'Euclid') return Math.fround(Math.sqrt(Math.abs(s)));
  if (vector.distance === 'Manhattan') return Math.fround(Math.abs(s));
  return s;
}

export async function multiRows(
  sql: postgres.Sql,
  schema: string,
  meta: CollectionMeta,
  vector: DenseVector,
  query: number[][],
  o: NearestOptions,
): Promise<ScoredRowOf[]> {
  const need = clampLimit(o.limit + o.offset);
  const conds = [sql`${sql(vector.column)} is not null`, ...candidateConds(sql, meta, o)];
  const rows = await sql<(PointRow & { sim: number })[]>`
    select * from (
      select ${recordColumns(sql, meta, o.withPayload, o.sel)}, ${maxSimExpression(sql, vector, query)} as sim
      from ${tableOf(sql, schema, meta)}
      where ${join(sql, conds, 'and')}
    ) scored
    order by sim desc, ${idOrder(sql)}
    limit ${need}`;
  // Rows come best first, so the threshold only cuts the tail.
  return rows
    .slice(o.offset)
    .map((row) => ({ row, score: postprocess(vector, Number(row.sim)) }))
    .filter((r) => passesThreshold(vector.distance, r.score, o.scoreThreshold));
}
