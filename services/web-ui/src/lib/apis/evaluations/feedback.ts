// /api/v1/evaluations/feedback: a rating (thumbs up/down, then reason, tags, 1–10 and a comment)
// on an answer, as Open WebUI's ResponseMessage sends it. Beside index.ts (the admin's calls).
import { api, type Body, type Reply } from '../client.ts';

export type FeedbackForm = Body<'evaluations.feedback.create'>;
export type RatingData = NonNullable<FeedbackForm['data']>;
export type Feedback = Reply<'evaluations.feedback.create'>;

export const createFeedback = (form: FeedbackForm): Promise<Feedback> => api.post<Feedback>('/api/v1/evaluations/feedback', form);
export const updateFeedback = (id: string, form: FeedbackForm): Promise<Feedback> =>
  api.post<Feedback>(`/api/v1/evaluations/feedback/${encodeURIComponent(id)}`, form);
export const getFeedback = (id: string): Promise<Feedback> => api.get<Feedback>(`/api/v1/evaluations/feedback/${encodeURIComponent(id)}`);
