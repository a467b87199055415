// Rating an answer as Open WebUI's ResponseMessage does: the thumbs (1 / -1), then the reason,
// tags, a 1–10 score and a comment. Each step is one feedback (`POST /api/v1/evaluations/feedback`
// the first time, `POST /api/v1/evaluations/feedback/{id}` after) carrying the model, for arena
// answers the models it was compared with (`sibling_model_ids`), the chat and message ids and a
// snapshot of the chat; the message keeps `annotation` and `feedbackId` in the chat's history, so
// the rating is still shown after a reload.
import { getChat } from '../apis/chats/index.ts';
import { createFeedback, updateFeedback, type FeedbackForm, type RatingData } from '../apis/evaluations/feedback.ts';
import { threadTo } from './history.ts';
import type { History, HistoryMessage } from './types.ts';

/** What a message keeps of its rating (Open WebUI's `message.annotation`). */
export interface Annotation {
  rating?: 1 | -1;
  reason?: string;
  comment?: string;
  tags?: string[];
  details?: { rating?: number | null };
}

export const annotationOf = (m: HistoryMessage): Annotation => (m.annotation && typeof m.annotation === 'object' ? (m.annotation as Annotation) : {});

/** The reasons offered after a thumbs up / down (Open WebUI's RateComment lists). */
export const POSITIVE_REASONS = ['Accurate information', 'Followed instructions perfectly', 'Showcased creativity', 'Positive attitude', 'Attention to detail', 'Thorough explanation', 'Other'];
export const NEGATIVE_REASONS = ["Don't like the style", 'Too verbose', 'Not helpful', 'Not factually correct', "Didn't fully follow instructions", "Refused when it shouldn't have", 'Being lazy', 'Other'];

const modelOf = (m: HistoryMessage | undefined): string | null =>
  m ? (typeof m.selectedModelId === 'string' && m.selectedModelId ? m.selectedModelId : typeof m.model === 'string' ? m.model : null) : null;

/** The other answers to the same question and their models (the arena's opponents). */
export function siblingModelIds(history: History, m: HistoryMessage): string[] {
  const parent = m.parentId ? history.messages[m.parentId] : undefined;
  const others = (parent?.childrenIds ?? []).filter((id) => id !== m.id);
  return others.map((id) => modelOf(history.messages[id])).filter((x): x is string => !!x);
}

/** The feedback form for `m` with `annotation` as it is to be stored. */
export function feedbackForm(chatId: string, history: History, m: HistoryMessage, annotation: Annotation, chat: Record<string, unknown> | null): FeedbackForm {
  const siblings = siblingModelIds(history, m);
  const data: RatingData = { ...annotation, model_id: modelOf(m), ...(siblings.length ? { sibling_model_ids: siblings } : {}) };
  const model = typeof m.model === 'string' ? m.model : null;
  return {
    type: 'rating',
    data,
    meta: {
      arena: m.arena === true,
      chat_id: chatId,
      message_id: m.id,
      message_index: threadTo(history, m.id).length,
      ...(model ? { model_id: model, base_models: { [model]: null } } : {}),
    },
    snapshot: { chat },
  };
}

export interface RatingTarget {
  chatId: string | null;
  history: History;
  saveMessage(m: HistoryMessage): Promise<void>;
}

/**
 * Store a rating step on `m`: `rating` (thumbs) and/or `details` (reason, tags, score, comment).
 * Answers the message as saved.
 */
export async function rate(target: RatingTarget, m: HistoryMessage, change: Annotation): Promise<HistoryMessage> {
  const chatId = target.chatId;
  if (!chatId) throw new Error('The chat is not saved yet');
  const annotation: Annotation = { ...annotationOf(m), ...change };
  let snapshot: Record<string, unknown> | null = null;
  try {
    snapshot = (await getChat(chatId)) as unknown as Record<string, unknown>;
  } catch {
    snapshot = null;
  }
  const form = feedbackForm(chatId, target.history, m, annotation, snapshot);
  const existing = typeof m.feedbackId === 'string' ? m.feedbackId : null;
  const saved = existing ? await updateFeedback(existing, form) : await createFeedback(form);
  const updated: HistoryMessage = { ...m, annotation, feedbackId: saved.id ?? existing };
  await target.saveMessage(updated);
  return updated;
}
