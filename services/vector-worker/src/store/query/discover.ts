/**
 * `discover` and `context` (reference: Qdrant's DiscoverQuery and ContextQuery).
 *
 * - discover: rank + scaled_fast_sigmoid(sim(target)), where rank = Σ over the context pairs of
 *   +1 / 0 / −1 as the point is more similar to the pair's positive than to its negative, equally
 *   similar, or less (Qdrant's `total_cmp`). The integer part says how many pairs a point
 *   satisfies, the fraction how near it is to the target.
 * - context: Σ over the pairs of fast_sigmoid(min(sim(pos) − sim(neg) − ε, 0)), ε = f32::EPSILON:
 *   0 for a point on the positive side of every pair, negative otherwise (a loss, never > 0).
 */
import type postgres from 'postgres';
import type { Fragment } from '../collections/catalog.ts';
import { fastSigmoidSql, scaledSigmoidSql, similaritySql, type Example, type Target } from './examples.ts';

export type Pair<T> = { positive: T; negative: T };

/** f32::EPSILON, Qdrant's context margin. */
const MARGIN = 1.1920929e-7;

export function discoverSql(db: postgres.Sql, target: Target, goal: Example, pairs: Pair<Example>[]): Fragment {
  const rank = pairs.reduce(
    (acc, p) => db`${acc} + sign(${similaritySql(db, target, p.positive)} - ${similaritySql(db, target, p.negative)})`,
    db`0`,
  );
  return db`((${rank}) + ${scaledSigmoidSql(db, similaritySql(db, target, goal))})`;
}

export function contextSql(db: postgres.Sql, target: Target, pairs: Pair<Example>[]): Fragment {
  const loss = (p: Pair<Example>) =>
    fastSigmoidSql(db, db`least(${similaritySql(db, target, p.positive)} - ${similaritySql(db, target, p.negative)} - ${MARGIN}::float8, 0)`);
  return db`(${pairs.reduce((acc, p) => db`${acc} + ${loss(p)}`, db`0::float8`)})`;
}
