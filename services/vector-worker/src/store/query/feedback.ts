/**
 * `relevance_feedback` with the `naive` strategy (reference: Qdrant's FeedbackQuery):
 * score = a · sim(target) + Σ over feedback pairs of (Δconfidence^b · c) · (sim(pos) − sim(neg)).
 * The pairs: feedback sorted by score (best first), the best paired with the worst, the second
 * with the second worst, … at most 3 pairs; a single feedback item makes no pair.
 */
import type postgres from 'postgres';
import type { Fragment } from '../collections/catalog.ts';
import { similaritySql, type Example, type Target } from './examples.ts';

const MAX_PAIRS = 3;

export type Coefficients = { a: number; b: number; c: number };
export type FeedbackItem<T> = { example: T; score: number };

export function feedbackPairs<T>(items: FeedbackItem<T>[], k: Coefficients): { positive: T; negative: T; weight: number }[] {
  const sorted = [...items].sort((x, y) => y.score - x.score);
  const pairs: { positive: T; negative: T; weight: number }[] = [];
  const max = Math.min(MAX_PAIRS, Math.floor(sorted.length / 2));
  for (let front = 0, back = sorted.length - 1; front < back && pairs.length < max; front++, back--) {
    const confidence = sorted[front]!.score - sorted[back]!.score;
    pairs.push({ positive: sorted[front]!.example, negative: sorted[back]!.example, weight: confidence ** k.b * k.c });
  }
  return pairs;
}

export function feedbackSql(db: postgres.Sql, target: Target, goal: Example, items: FeedbackItem<Example>[], k: Coefficients): Fragment {
  const base = db`${k.a}::float8 * ${similaritySql(db, target, goal)}`;
  const sum = feedbackPairs(items, k).reduce(
    (acc, p) => db`${acc} + ${p.weight}::float8 * (${similaritySql(db, target, p.positive)} - ${similaritySql(db, target, p.negative)})`,
    base,
  );
  return db`(${sum})`;
}
