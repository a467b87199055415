/**
 * The evaluation leaderboard: Elo ratings of models from their users' ratings, computed as Open
 * WebUI 0.10.2's admin Leaderboard computes them (Leaderboard.svelte calculateModelStats), so the
 * worker's `GET /api/v1/evaluations/leaderboard` and the web UI agree with it and with each other.
 *
 * - Every model starts at 1000; K is 32; the expected score is 1 / (1 + 10^((Rb - Ra) / 400)).
 * - A rating counts only when `data.rating` is 1 or -1 (number or string): 1 = the rated model
 *   (`data.model_id`) won, -1 = it lost. Anything else (null, a 1–10 detail score) is skipped.
 * - Each model in `data.sibling_model_ids` is one game against the rated model: both ratings
 *   move (by K × (outcome − expected) × weight) and both get a win or a loss. A rating without
 *   siblings (a thumbs up outside the arena) moves nothing. There are no ties.
 * - Games are played in the order given; pass the ratings as `/feedbacks/all` lists them (newest
 *   first), as Open WebUI does.
 * - Open WebUI's quirk kept: a model's first game of a rating reads its rating once, before the
 *   rating's games — when the model has no games yet, every sibling of that rating plays it at
 *   1000; once it has, each sibling plays its rating as moved by the previous sibling.
 * - `weight` (default 1) scales a rating's effect (Open WebUI's topic-similarity re-ranking); a
 *   weight of 0 still counts the win or loss, as there.
 */

export interface LeaderboardFeedback {
  id?: string;
  data?: { rating?: unknown; model_id?: unknown; sibling_model_ids?: unknown; tags?: unknown } | null;
  meta?: { tags?: unknown } | null;
}

export interface LeaderboardRow {
  model_id: string;
  rating: number;
  won: number;
  lost: number;
  count: number;
  top_tags: { tag: string; count: number }[];
}

export const ELO_K = 32;
export const ELO_INITIAL = 1000;
/** How many of a model's most frequent tags a row names. */
export const TOP_TAGS = 5;

interface Stats {
  rating: number;
  won: number;
  lost: number;
}

/** 1 = the rated model won, 0 = it lost, undefined = not a win/loss rating. */
export function ratingOutcome(rating: unknown): 1 | 0 | undefined {
  const s = typeof rating === 'number' || typeof rating === 'string' ? String(rating) : '';
  if (s === '1') return 1;
  if (s === '-1') return 0;
  return undefined;
}

/** The tags of a rating: `data.tags`, else `meta.tags` (strings only, each once). */
export function feedbackTags(f: LeaderboardFeedback): string[] {
  const raw = Array.isArray(f.data?.tags) ? f.data.tags : Array.isArray(f.meta?.tags) ? f.meta.tags : [];
  return [...new Set(raw.filter((t): t is string => typeof t === 'string' && t !== ''))];
}

export const expectedScore = (ratingA: number, ratingB: number): number => 1 / (1 + 10 ** ((ratingB - ratingA) / 400));

/** Ratings, wins and losses per model after every game of `feedbacks`, in order. */
export function eloStats(feedbacks: readonly LeaderboardFeedback[], weight: (f: LeaderboardFeedback) => number = () => 1): Map<string, Stats> {
  const stats = new Map<string, Stats>();
  const update = (model: string, change: number, outcome: number) => {
    const s = stats.get(model) ?? { rating: ELO_INITIAL, won: 0, lost: 0 };
    s.rating += change;
    if (outcome === 1) s.won++;
    else s.lost++;
    stats.set(model, s);
  };
  for (const f of feedbacks) {
    const modelA = f.data?.model_id;
    const outcome = ratingOutcome(f.data?.rating);
    if (typeof modelA !== 'string' || outcome === undefined) continue;
    const siblings = Array.isArray(f.data?.sibling_model_ids) ? f.data.sibling_model_ids.filter((m): m is string => typeof m === 'string') : [];
    const w = weight(f);
    // The rated model's stats as they were before this rating (see the quirk above).
    const a = stats.get(modelA);
    for (const modelB of siblings) {
      const ratingA = a ? a.rating : ELO_INITIAL;
      const ratingB = stats.get(modelB)?.rating ?? ELO_INITIAL;
      update(modelA, ELO_K * (outcome - expectedScore(ratingA, ratingB)) * w, outcome);
      update(modelB, ELO_K * (1 - outcome - expectedScore(ratingB, ratingA)) * w, 1 - outcome);
    }
  }
  return stats;
}

/**
 * The leaderboard rows: every model that played at least one game, by rounded rating (highest
 * first), then model id; with the tags most often given on ratings it played in.
 */
export function computeLeaderboard(feedbacks: readonly LeaderboardFeedback[], weight?: (f: LeaderboardFeedback) => number): LeaderboardRow[] {
  const stats = eloStats(feedbacks, weight);
  const tags = new Map<string, Map<string, number>>();
  for (const f of feedbacks) {
    const modelA = f.data?.model_id;
    if (typeof modelA !== 'string' || ratingOutcome(f.data?.rating) === undefined) continue;
    const siblings = Array.isArray(f.data?.sibling_model_ids) ? f.data.sibling_model_ids.filter((m): m is string => typeof m === 'string') : [];
    if (!siblings.length) continue;
    for (const model of new Set([modelA, ...siblings])) {
      const counts = tags.get(model) ?? new Map<string, number>();
      for (const t of feedbackTags(f)) counts.set(t, (counts.get(t) ?? 0) + 1);
      tags.set(model, counts);
    }
  }
  return [...stats.entries()]
    .map(([model_id, s]) => ({
      model_id,
      rating: Math.round(s.rating),
      won: s.won,
      lost: s.lost,
      count: s.won + s.lost,
      top_tags: [...(tags.get(model_id) ?? new Map<string, number>()).entries()]
        .sort((x, y) => y[1] - x[1] || x[0].localeCompare(y[0]))
        .slice(0, TOP_TAGS)
        .map(([tag, count]) => ({ tag, count })),
    }))
    .sort((x, y) => y.rating - x.rating || x.model_id.localeCompare(y.model_id));
}
