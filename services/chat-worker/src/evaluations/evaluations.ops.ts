import { randomUUID } from 'node:crypto';
import { BusError } from '@gatehouse/common';
import { computeLeaderboard, feedbackTags, OWUI_ERRORS, type ChatEventData, type FeedbackForm, type FeedbackModel } from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type OpContext, type UserRow } from '../context.ts';
import type { ArenaSettings } from '../config/models.ops.ts';
import { saveSettings, type ChatSettings } from '../config/settings.ts';
import {
  allFeedbacks,
  allFeedbacksWithUsers,
  deleteFeedback,
  deleteFeedbacks,
  feedbackPage,
  feedbacksOf,
  insertFeedback,
  loadFeedback,
  updateFeedback,
} from './feedback.store.ts';

/**
 * Ratings (Open WebUI 0.10.2 routers/evaluations.py): a verified user creates, reads, changes and
 * deletes their own; an admin reads, changes and deletes anyone's, lists, exports and deletes
 * them all, and reads the leaderboard (contracts leaderboard.ts). The arena settings are the
 * admin's: stored as chat settings once set, the environment's (config/models.ops.ts arenaSettings) until then.
 */

type Json = Record<string, unknown>;
/** Open WebUI's PAGE_ITEM_COUNT for /feedbacks/list. */
const PAGE_SIZE = 30;

/** RatingData as Pydantic dumps it: the declared fields always there (null when not sent), then the rest. */
function ratingData(d: NonNullable<FeedbackForm['data']>): Json {
  const { rating, model_id, sibling_model_ids, reason, comment, ...rest } = d;
  return { rating: rating ?? null, model_id: model_id ?? null, sibling_model_ids: sibling_model_ids ?? null, reason: reason ?? null, comment: comment ?? null, ...rest };
}
const snapshotData = (s: NonNullable<FeedbackForm['snapshot']>): Json => ({ ...s, chat: s.chat ?? null });

/** What events say of a rating: never the comment, the reason or the snapshot. */
function eventData(f: FeedbackModel): ChatEventData<'feedback.created'> {
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  const rating = f.data?.rating;
  return {
    type: f.type,
    model_id: str(f.data?.model_id),
    rating: typeof rating === 'string' || typeof rating === 'number' ? rating : null,
    chat_id: str(f.meta?.chat_id),
    message_id: str(f.meta?.message_id),
  };
}
const subject = (f: FeedbackModel) => ({ type: 'feedback', id: f.id });
/** An admin acts on any rating; anyone else on their own only (another's is "not found"). */
const ownerScope = (u: UserRow) => (u.role === 'admin' ? undefined : u.id);

/** FastAPI's 422 for a query parameter that is not an integer. */
function intQuery(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^[+-]?\d+$/.test(raw.trim())) {
    throw new BusError(422, 'validation failed', {
      detail: [{ type: 'int_parsing', loc: ['query', name], msg: 'Input should be a valid integer, unable to parse string as an integer', input: raw }],
    });
  }
  return Number(raw);
}

/**
 * The arena the model list runs: the admin's settings where set (POST /config), the environment's
 * otherwise. A stored entry without a string id is left out (it could not be chosen); one without
 * a name is named by its id.
 */
export function effectiveArena(envArena: ArenaSettings, s: Pick<ChatSettings, 'ENABLE_EVALUATION_ARENA_MODELS' | 'EVALUATION_ARENA_MODELS'>): ArenaSettings {
  const models =
    s.EVALUATION_ARENA_MODELS?.flatMap((m) =>
      typeof m.id === 'string' && m.id
        ? [{ id: m.id, name: typeof m.name === 'string' ? m.name : m.id, meta: m.meta && typeof m.meta === 'object' && !Array.isArray(m.meta) ? (m.meta as Json) : {} }]
        : [],
    ) ?? envArena.models;
  return { enabled: s.ENABLE_EVALUATION_ARENA_MODELS ?? envArena.enabled, models };
}

export function evaluationsOps(envArena: ArenaSettings) {
  async function config(ctx: OpContext) {
    const s = await ctx.settings();
    return {
      ENABLE_EVALUATION_ARENA_MODELS: s.ENABLE_EVALUATION_ARENA_MODELS ?? envArena.enabled,
      EVALUATION_ARENA_MODELS: s.EVALUATION_ARENA_MODELS ?? (envArena.models as unknown as Json[]),
    };
  }

  return opTable({
    'evaluations.config.get': async (_req, ctx) => ok(await config(ctx)),
    'evaluations.config.set': async (req, ctx) => {
      const admin = me(ctx);
      const form = req.body;
      const values = {
        ...(form.ENABLE_EVALUATION_ARENA_MODELS == null ? {} : { ENABLE_EVALUATION_ARENA_MODELS: form.ENABLE_EVALUATION_ARENA_MODELS }),
        ...(form.EVALUATION_ARENA_MODELS == null ? {} : { EVALUATION_ARENA_MODELS: form.EVALUATION_ARENA_MODELS }),
      };
      const keys = Object.keys(values);
      if (keys.length) {
        await ctx.sql.begin(async (tx) => {
          await saveSettings(tx as never, values, now(), ctx.saved);
          await ctx.emit(tx, 'config.updated', { actor: admin, subject: { type: 'config', id: 'evaluations' }, data: { keys } });
        });
      }
      return ok({ ...(await config(ctx)), ...values });
    },

    'evaluations.feedbacks.all': async (_req, ctx) => ok((await allFeedbacksWithUsers(ctx.sql)).map(({ snapshot: _s, ...f }) => f)),
    'evaluations.feedbacks.export': async (_req, ctx) => ok(await allFeedbacks(ctx.sql)),
    'evaluations.feedbacks.list': async (req, ctx) => {
      const { rows, total } = await feedbackPage(ctx.sql, {
        // Any integer is a page (FastAPI's int); far past the end is an empty page, not an overflowing offset.
        page: Math.min(Math.max(1, intQuery(req.query.page, 'page') ?? 1), 1_000_000_000),
        size: PAGE_SIZE,
        orderBy: req.query.order_by,
        ascending: req.query.direction === 'asc',
      });
      return ok({ items: rows.map(({ snapshot: _s, ...f }) => f), total });
    },
    'evaluations.feedbacks.deleteAll': async (_req, ctx) => {
      const admin = me(ctx);
      const count = await ctx.sql.begin(async (tx) => {
        const n = await deleteFeedbacks(tx);
        if (n) await ctx.emit(tx, 'feedback.deleted', { actor: admin, subject: { type: 'feedback', id: null }, data: { count: n } });
        return n;
      });
      // Open WebUI answers false when there was nothing to delete.
      return ok(count > 0);
    },
    'evaluations.leaderboard': async (req, ctx) => {
      const query = (req.query.query ?? '').trim().toLowerCase();
      const feedbacks = await allFeedbacks(ctx.sql);
      // Open WebUI re-ranks by how close a rating's tags are to the query (embeddings in the
      // browser); here a rating weighs 1 when one of its tags contains the query, else 0.
      const weight = query ? (f: { data?: unknown; meta?: unknown }) => (feedbackTags(f as never).some((t) => t.toLowerCase().includes(query)) ? 1 : 0) : undefined;
      return ok({ entries: computeLeaderboard(feedbacks, weight) });
    },

    'evaluations.feedbacks.user': async (_req, ctx) => ok((await feedbacksOf(ctx.sql, me(ctx).id)).map(({ snapshot: _s, ...f }) => ({ ...f, user: null }))),
    'evaluations.feedbacks.deleteOwn': async (_req, ctx) => {
      const user = me(ctx);
      const count = await ctx.sql.begin(async (tx) => {
        const n = await deleteFeedbacks(tx, user.id);
        if (n) await ctx.emit(tx, 'feedback.deleted', { actor: user, subject: { type: 'user', id: user.id }, data: { count: n } });
        return n;
      });
      return ok(count > 0);
    },
    'evaluations.feedback.create': async (req, ctx) => {
      const user = me(ctx);
      const form = req.body;
      const t = now();
      const feedback = await ctx.sql.begin(async (tx) => {
        const row = await insertFeedback(tx, {
          id: randomUUID(),
          user_id: user.id,
          version: 0,
          type: form.type,
          data: form.data ? ratingData(form.data) : null,
          meta: form.meta ?? null,
          snapshot: form.snapshot ? snapshotData(form.snapshot) : null,
          created_at: t,
          updated_at: t,
        });
        await ctx.emit(tx, 'feedback.created', { actor: user, subject: subject(row), data: eventData(row) });
        return row;
      });
      return ok(feedback);
    },
    'evaluations.feedback.get': async (req, ctx) => {
      const feedback = await loadFeedback(ctx.sql, req.params.id ?? '', ownerScope(me(ctx)));
      if (!feedback) fail(404, OWUI_ERRORS.notFound);
      return ok(feedback);
    },
    'evaluations.feedback.update': async (req, ctx) => {
      const user = me(ctx);
      const form = req.body;
      const feedback = await ctx.sql.begin(async (tx) => {
        // As Open WebUI: the type stays; data and snapshot are replaced when sent, meta when sent non-empty.
        const row = await updateFeedback(
          tx,
          req.params.id ?? '',
          ownerScope(user),
          {
            data: form.data ? ratingData(form.data) : undefined,
            meta: form.meta && Object.keys(form.meta).length ? form.meta : undefined,
            snapshot: form.snapshot ? snapshotData(form.snapshot) : undefined,
          },
          now(),
        );
        if (!row) fail(404, OWUI_ERRORS.notFound);
        await ctx.emit(tx, 'feedback.updated', { actor: user, subject: subject(row), data: eventData(row) });
        return row;
      });
      return ok(feedback);
    },
    'evaluations.feedback.delete': async (req, ctx) => {
      const user = me(ctx);
      await ctx.sql.begin(async (tx) => {
        const row = await deleteFeedback(tx, req.params.id ?? '', ownerScope(user));
        if (!row) fail(404, OWUI_ERRORS.notFound);
        await ctx.emit(tx, 'feedback.deleted', { actor: user, subject: subject(row), data: eventData(row) });
      });
      return ok(true as const);
    },
  });
}

