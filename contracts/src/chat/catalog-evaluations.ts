import { z } from 'zod';
import { catalog, DELETE, GET, POST } from './catalog-kit.ts';

/**
 * Ratings of answers and the arena (Open WebUI 0.10.2 routers/evaluations.py, models/feedbacks.py):
 * a user rates a message (thumbs up 1 / down -1, reason, comment, tags; in the arena the model
 * that won against its siblings), reads, changes and deletes their own ratings; an admin sees,
 * exports and deletes everyone's, reads the Elo leaderboard computed from them (leaderboard.ts)
 * and switches the arena models on or off.
 */

const json = z.record(z.string(), z.unknown());
const epoch = z.number().int();

/** A rating's `data` (RatingData): every field optional, any other key kept (`details`, `tags`…). */
export const RatingData = z.looseObject({
  rating: z.union([z.string(), z.number().int()]).nullish(),
  model_id: z.string().nullish(),
  sibling_model_ids: z.array(z.string()).nullish(),
  reason: z.string().nullish(),
  comment: z.string().nullish(),
});
/** What the front end sends (FeedbackForm): `type` is `rating` there; `meta` holds arena, chat_id, message_id, tags. */
export const FeedbackForm = z.looseObject({
  type: z.string(),
  data: RatingData.nullish(),
  meta: json.nullish(),
  snapshot: z.looseObject({ chat: json.nullish() }).nullish(),
});
export type FeedbackForm = z.output<typeof FeedbackForm>;

/** FeedbackModel: one stored rating, with the chat snapshot taken when it was given. */
export const FeedbackModel = z.object({
  id: z.string(),
  user_id: z.string(),
  version: z.number().int(),
  type: z.string(),
  data: json.nullable(),
  meta: json.nullable(),
  snapshot: json.nullable(),
  created_at: epoch,
  updated_at: epoch,
});
export type FeedbackModel = z.infer<typeof FeedbackModel>;
/** FeedbackResponse: the same without the snapshot (lists). */
export const FeedbackResponse = FeedbackModel.omit({ snapshot: true });
/** Who gave a rating, in the admin's list (no settings, no secrets). */
export const FeedbackUser = z.object({
  id: z.string(),
  name: z.string(),
  email: z.string(),
  role: z.string(),
  last_active_at: epoch,
  updated_at: epoch,
  created_at: epoch,
});
export const FeedbackUserResponse = FeedbackResponse.extend({ user: FeedbackUser.nullable() });
/** GET /feedbacks/list: one page (30) of everyone's ratings and the total. */
export const FeedbackListReply = z.object({ items: z.array(FeedbackUserResponse), total: z.number().int() });

/** The arena settings (config.py ENABLE_EVALUATION_ARENA_MODELS, EVALUATION_ARENA_MODELS). */
export const EvaluationConfig = z.object({ ENABLE_EVALUATION_ARENA_MODELS: z.boolean(), EVALUATION_ARENA_MODELS: z.array(json) });
/** Either field may be left out or null: it keeps its value. */
export const EvaluationConfigForm = z.object({
  ENABLE_EVALUATION_ARENA_MODELS: z.boolean().nullish(),
  EVALUATION_ARENA_MODELS: z.array(json).nullish(),
});

/** One model's line of the leaderboard (leaderboard.ts computeLeaderboard). */
export const LeaderboardEntry = z.object({
  model_id: z.string(),
  rating: z.number().int(),
  won: z.number().int(),
  lost: z.number().int(),
  count: z.number().int(),
  top_tags: z.array(z.object({ tag: z.string(), count: z.number().int() })),
});
export const LeaderboardReply = z.object({ entries: z.array(LeaderboardEntry) });

export const EVALUATIONS_OPS = catalog({
  'evaluations.config.get': { subject: 'chat.evaluations.config.get', routes: [GET('/api/v1/evaluations/config')], reply: EvaluationConfig, auth: 'admin', events: [] },
  'evaluations.config.set': {
    subject: 'chat.evaluations.config.set',
    routes: [POST('/api/v1/evaluations/config')],
    body: EvaluationConfigForm,
    reply: EvaluationConfig,
    auth: 'admin',
    events: ['config.updated'],
  },
  // everyone's (admin)
  'evaluations.feedbacks.all': { subject: 'chat.evaluations.feedbacks.all', routes: [GET('/api/v1/evaluations/feedbacks/all')], reply: z.array(FeedbackUserResponse), auth: 'admin', events: [] },
  'evaluations.feedbacks.deleteAll': { subject: 'chat.evaluations.feedbacks.deleteAll', routes: [DELETE('/api/v1/evaluations/feedbacks/all')], reply: z.boolean(), auth: 'admin', events: ['feedback.deleted'] },
  'evaluations.feedbacks.export': { subject: 'chat.evaluations.feedbacks.export', routes: [GET('/api/v1/evaluations/feedbacks/all/export')], reply: z.array(FeedbackModel), auth: 'admin', events: [] },
  /** `?page=` (1-based, 30 a page), `order_by` (`updated_at`, `created_at`, `model_id`, `rating`, `user`), `direction` (`asc`/`desc`). */
  'evaluations.feedbacks.list': { subject: 'chat.evaluations.feedbacks.list', routes: [GET('/api/v1/evaluations/feedbacks/list')], reply: FeedbackListReply, auth: 'admin', events: [] },
  /** `?query=` keeps the ratings with a tag containing it (any case); without it, every rating. */
  'evaluations.leaderboard': { subject: 'chat.evaluations.leaderboard', routes: [GET('/api/v1/evaluations/leaderboard')], reply: LeaderboardReply, auth: 'admin', events: [] },
  // the caller's own
  'evaluations.feedbacks.user': { subject: 'chat.evaluations.feedbacks.user', routes: [GET('/api/v1/evaluations/feedbacks/user')], reply: z.array(FeedbackUserResponse), auth: 'verified', events: [] },
  'evaluations.feedbacks.deleteOwn': { subject: 'chat.evaluations.feedbacks.deleteOwn', routes: [DELETE('/api/v1/evaluations/feedbacks')], reply: z.boolean(), auth: 'verified', events: ['feedback.deleted'] },
  'evaluations.feedback.create': {
    subject: 'chat.evaluations.feedback.create',
    routes: [POST('/api/v1/evaluations/feedback')],
    body: FeedbackForm,
    reply: FeedbackModel,
    auth: 'verified',
    events: ['feedback.created'],
  },
  // one rating: the owner's, or any for an admin
  'evaluations.feedback.get': { subject: 'chat.evaluations.feedback.get', routes: [GET('/api/v1/evaluations/feedback/:id')], reply: FeedbackModel, auth: 'verified', events: [] },
  'evaluations.feedback.update': {
    subject: 'chat.evaluations.feedback.update',
    routes: [POST('/api/v1/evaluations/feedback/:id')],
    body: FeedbackForm,
    reply: FeedbackModel,
    auth: 'verified',
    events: ['feedback.updated'],
  },
  'evaluations.feedback.delete': { subject: 'chat.evaluations.feedback.delete', routes: [DELETE('/api/v1/evaluations/feedback/:id')], reply: z.literal(true), auth: 'verified', events: ['feedback.deleted'] },
});
