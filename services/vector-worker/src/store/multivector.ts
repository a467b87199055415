/**
 * Multivectors (`multivector_config: {comparator: max_sim}`): a `vector[]` (or `halfvec[]`)
 * column, one array element per row of the multivector (LAYOUT.md). Search is exact: each
 * point's score is Qdrant's MaxSim, Σ over query rows of the best similarity to any stored row,
 * with similarity = dot product (Dot, and Cosine on normalised rows), −L2 (Euclid) or −L1
 * (Manhattan). pgvector has no index over arrays, so this scans the filtered rows that hold the
 * vector.
 */
import type postgres from 'postgres';
import { tableOf, type CollectionMeta, type DenseVector, type Fragment } from './catalog.ts';
import { join } from './common.ts';
import { idOrder } from './ids.ts';
import { candidateConds, type NearestOptions, type ScoredRowOf } from './kinds.ts';
import { clampLimit } from './reads.ts';
import { recordColumns, type PointRow } from './records.ts';
import { castType, vectorText } from './vectors.ts';

/** Similarity of stored row `d.v` to query row `q.w` (higher is closer). */
function similarity(sql: postgres.Sql, vector: DenseVector): Fragment {
  switch (vector.distance) {
    case 'Dot':
    case 'Cosine':
      return sql`-(d.v <#> q.w)`;
    case 'Euclid':
      return sql`-(d.v <-> q.w)`;
    case 'Manhattan':
      return sql`-(d.v <+> q.w)`;
  }
}

/** MaxSim of the stored multivector against `query` (rows already checked and normalised). */
export function maxSimExpression(sql: postgres.Sql, vector: DenseVector, query: number[][]): Fragment {
  const q = sql`${vectorText(query)}::${sql.unsafe(castType(vector))}`;
  return sql`(
    select sum(best)::float8 from (
      select max(${similarity(sql, vector)}) as best
      from unnest(${q}) with ordinality as q(w, j) cross join unnest(${sql(vector.column)}) as d(v)
      group by q.j
    ) rows
  )`;
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
  const threshold = o.scoreThreshold !== undefined ? sql`where score > ${o.scoreThreshold}` : sql``;
  const rows = await sql<(PointRow & { score: number })[]>`
    select * from (
      select ${recordColumns(sql, meta, o.withPayload, o.sel)}, ${maxSimExpression(sql, vector, query)} as score
      from ${tableOf(sql, schema, meta)}
      where ${join(sql, conds, 'and')}
    ) scored ${threshold}
    order by score desc, ${idOrder(sql)}
    limit ${need}`;
  return rows.slice(o.offset).map((row) => ({ row, score: Number(row.score) }));
}
