import { describe, expect, it } from 'vitest';
import { computeLeaderboard, eloStats, expectedScore, feedbackTags, ratingOutcome } from './leaderboard.ts';

const rate = (model_id: string, rating: unknown, sibling_model_ids: string[] | null, tags?: string[]) => ({ data: { model_id, rating, sibling_model_ids, ...(tags ? { tags } : {}) } });

describe('the Elo leaderboard (Open WebUI 0.10.2 calculateModelStats)', () => {
  it('starts every model at 1000 and moves a game between equals by K/2 = 16', () => {
    expect(computeLeaderboard([rate('a', 1, ['b'])])).toEqual([
      { model_id: 'a', rating: 1016, won: 1, lost: 0, count: 1, top_tags: [] },
      { model_id: 'b', rating: 984, won: 0, lost: 1, count: 1, top_tags: [] },
    ]);
    // -1: the rated model lost.
    expect(computeLeaderboard([rate('a', -1, ['b'])]).map((r) => [r.model_id, r.rating, r.won, r.lost])).toEqual([
      ['b', 1016, 1, 0],
      ['a', 984, 0, 1],
    ]);
  });

  it('reads 1 and -1 as numbers or strings, and skips any other rating and ratings without siblings', () => {
    expect([ratingOutcome(1), ratingOutcome('1'), ratingOutcome(-1), ratingOutcome('-1')]).toEqual([1, 1, 0, 0]);
    expect([ratingOutcome(0), ratingOutcome(7), ratingOutcome(null), ratingOutcome(undefined), ratingOutcome('up'), ratingOutcome(' 1')]).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
    expect(computeLeaderboard([rate('a', 7, ['b']), rate('a', 1, []), rate('a', 1, null), { data: null }, {}])).toEqual([]);
    expect(computeLeaderboard([rate('a', '1', ['b'])])[0]).toMatchObject({ model_id: 'a', rating: 1016 });
  });

  it('plays each sibling as one game, with the rated model at its rating from before the rating when it had none', () => {
    // New model a beats b and c in one arena rating: both games are played at a = 1000 (Open
    // WebUI's quirk), so a gains 16 twice; playing them one after the other would give 1031.
    const rows = computeLeaderboard([rate('a', 1, ['b', 'c'])]);
    expect(rows.map((r) => [r.model_id, r.rating, r.won, r.lost])).toEqual([
      ['a', 1032, 2, 0],
      ['b', 984, 0, 1],
      ['c', 984, 0, 1],
    ]);
    // Once a has games, its rating moves between the siblings of a rating.
    const stats = eloStats([rate('a', 1, ['b']), rate('a', 1, ['c', 'd'])]);
    const afterC = 1016 + 32 * (1 - expectedScore(1016, 1000));
    const afterD = afterC + 32 * (1 - expectedScore(afterC, 1000));
    expect(stats.get('a')?.rating).toBeCloseTo(afterD, 10);
    expect(stats.get('c')?.rating).toBeCloseTo(1000 + 32 * (0 - expectedScore(1000, 1016)), 10);
    expect(stats.get('d')?.rating).toBeCloseTo(1000 + 32 * (0 - expectedScore(1000, afterC)), 10);
  });

  it('plays the ratings in the order given (Elo is order dependent)', () => {
    const one = computeLeaderboard([rate('a', 1, ['b']), rate('b', 1, ['a'])]);
    const other = computeLeaderboard([rate('b', 1, ['a']), rate('a', 1, ['b'])]);
    // a wins first, then loses at 1016 vs 984: b gains more than 16 back.
    expect(one.find((r) => r.model_id === 'b')?.rating).toBe(Math.round(984 + 32 * (1 - expectedScore(984, 1016))));
    expect(one.find((r) => r.model_id === 'a')?.rating).toBe(Math.round(1016 + 32 * (0 - expectedScore(1016, 984))));
    expect(other.find((r) => r.model_id === 'a')?.rating).toBe(one.find((r) => r.model_id === 'b')?.rating);
  });

  it('weights a rating by `weight`; a weight of 0 still counts the win and the loss', () => {
    const rows = computeLeaderboard([rate('a', 1, ['b'], ['code']), rate('b', 1, ['a'], ['poetry'])], (f) => (feedbackTags(f).includes('code') ? 1 : 0));
    expect(rows.map((r) => [r.model_id, r.rating, r.won, r.lost])).toEqual([
      ['a', 1016, 1, 1],
      ['b', 984, 1, 1],
    ]);
  });

  it('names the tags most given on the ratings a model played in, most frequent first', () => {
    const rows = computeLeaderboard([
      rate('a', 1, ['b'], ['code', 'python']),
      rate('a', 1, ['b'], ['code']),
      { data: { model_id: 'b', rating: -1, sibling_model_ids: ['c'] }, meta: { tags: ['math'] } },
    ]);
    expect(rows.find((r) => r.model_id === 'a')?.top_tags).toEqual([{ tag: 'code', count: 2 }, { tag: 'python', count: 1 }]);
    expect(rows.find((r) => r.model_id === 'b')?.top_tags).toEqual([{ tag: 'code', count: 2 }, { tag: 'math', count: 1 }, { tag: 'python', count: 1 }]);
    expect(rows.find((r) => r.model_id === 'c')?.top_tags).toEqual([{ tag: 'math', count: 1 }]);
  });
});
