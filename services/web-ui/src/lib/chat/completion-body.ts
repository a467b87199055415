// What one completion request carries: the thread up to the user message, Settings → General's
// system prompt and parameters, and the user message's attachments — `POST /api/chat/completions`
// as Open WebUI's chat sends it.
import { completionDefaults } from '../settings/store.ts';
import { textOf, threadTo } from './history';
import type { History, HistoryMessage } from './types';
import { webSearch } from './web-search.svelte.ts';

/** A knowledge base (`collection`) or file attached to a user message (Open WebUI's `files` entries). */
export interface AttachedFile {
  type: 'collection' | 'file' | 'web';
  id: string;
  name?: string;
  /** A web page (`#https://…`): its URL and the collection /process/web stored it in. */
  url?: string;
  collection_name?: string;
}

/** The attachments a stored user message carries (entries of another kind are left out). */
export function attachedFiles(m: HistoryMessage | undefined): AttachedFile[] {
  const list = Array.isArray(m?.files) ? (m.files as unknown[]) : [];
  return list.filter((f): f is AttachedFile => {
    const o = f as Partial<AttachedFile> | null;
    return !!o && (o.type === 'collection' || o.type === 'file' || o.type === 'web') && typeof o.id === 'string';
  });
}

/**
 * The body for answer `answerId` to user message `userId`. `chatId` null: a new chat, which does not
 * exist yet, so the worker does not store this completion (the client stores it once created).
 * `userMessage`: a plain copy of the user message when it is new (the worker stores it).
 */
export function completionBody(
  history: History,
  chatId: string | null,
  answerId: string,
  userId: string,
  model: string,
  userMessage: HistoryMessage | null,
): Record<string, unknown> {
  const thread: { role: string; content: string }[] = threadTo(history, userId).map((m) => ({ role: m.role, content: textOf(m.content) }));
  // Settings → General, as Open WebUI's chat sends them: the system prompt first (unless the
  // thread has one), the default parameters as `params`.
  const defaults = completionDefaults();
  if (defaults.system && !thread.some((m) => m.role === 'system')) thread.unshift({ role: 'system', content: defaults.system });
  const body: Record<string, unknown> = {
    model,
    stream: true,
    ...(chatId ? { chat_id: chatId } : {}),
    id: answerId,
    parent_id: userId,
    messages: thread,
    ...(Object.keys(defaults.params).length ? { params: defaults.params } : {}),
  };
  if (userMessage) {
    const u = userMessage;
    body.user_message = { id: u.id, parentId: u.parentId, role: 'user', content: u.content, timestamp: u.timestamp, models: u.models, ...(u.files ? { files: u.files } : {}) };
  }
  // The user message's attachments go with every answer to it (a regenerated one too).
  const files = attachedFiles(history.messages[userId]);
  if (files.length) body.files = files.map((f) => (f.type === 'web' ? { type: f.type, id: f.id, name: f.name, url: f.url, collection_name: f.collection_name } : { type: f.type, id: f.id }));
  if (webSearch.on) body.features = { web_search: true };
  return body;
}
