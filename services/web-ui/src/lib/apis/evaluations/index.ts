// /api/v1/evaluations (admin): the Elo leaderboard computed from the ratings, the ratings
// themselves (paged, newest first), one rating's removal and the export of all.
import { api, type Reply } from '../client.ts';

export type LeaderboardEntry = Reply<'evaluations.leaderboard'>['entries'][number];
export type FeedbackList = Reply<'evaluations.feedbacks.list'>;
export type FeedbackItem = FeedbackList['items'][number];
/** Open WebUI's page size for `/feedbacks/list`. */
export const FEEDBACKS_PAGE_SIZE = 30;

/** `query`: only ratings with a tag containing it. */
export const getLeaderboard = (query = ''): Promise<Reply<'evaluations.leaderboard'>> =>
  api.get<Reply<'evaluations.leaderboard'>>('/api/v1/evaluations/leaderboard', { query: { query: query.trim() || undefined } });
export const listFeedbacks = (page: number): Promise<FeedbackList> =>
  api.get<FeedbackList>('/api/v1/evaluations/feedbacks/list', { query: { page, order_by: 'updated_at', direction: 'desc' } });
export const deleteFeedback = (id: string): Promise<Reply<'evaluations.feedback.delete'>> =>
  api.del<Reply<'evaluations.feedback.delete'>>(`/api/v1/evaluations/feedback/${encodeURIComponent(id)}`);
export const exportFeedbacks = (): Promise<Reply<'evaluations.feedbacks.export'>> => api.get<Reply<'evaluations.feedbacks.export'>>('/api/v1/evaluations/feedbacks/all/export');
