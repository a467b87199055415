import type { History, HistoryMessage } from './types';

/** A history in Open WebUI's shape, whatever the stored JSON had (missing keys filled). */
export function normalizeHistory(raw: unknown): History {
  const h = (raw && typeof raw === 'object' ? raw : {}) as Partial<History>;
  const messages: Record<string, HistoryMessage> = {};
  const given = h.messages && typeof h.messages === 'object' ? h.messages : {};
  for (const [id, m] of Object.entries(given)) {
    if (!m || typeof m !== 'object') continue;
    messages[id] = {
      ...m,
      id,
      parentId: typeof m.parentId === 'string' ? m.parentId : null,
      childrenIds: Array.isArray(m.childrenIds) ? m.childrenIds.filter((c) => typeof c === 'string') : [],
      role: typeof m.role === 'string' ? m.role : 'assistant',
    };
  }
  const currentId = typeof h.currentId === 'string' && messages[h.currentId] ? h.currentId : null;
  return { messages, currentId: currentId ?? newestLeaf(messages) };
}

/** The most recent leaf (used when a stored history has no valid currentId). */
function newestLeaf(messages: Record<string, HistoryMessage>): string | null {
  let best: HistoryMessage | null = null;
  for (const m of Object.values(messages)) {
    if (m.childrenIds.some((c) => messages[c])) continue;
    if (!best || (m.timestamp ?? 0) >= (best.timestamp ?? 0)) best = m;
  }
  return best?.id ?? null;
}

/** The branch from the root down to `leafId` (a parent loop ends the walk). */
export function threadTo(history: History, leafId: string | null): HistoryMessage[] {
  const out: HistoryMessage[] = [];
  const seen = new Set<string>();
  let id = leafId;
  while (id && history.messages[id] && !seen.has(id)) {
    seen.add(id);
    const m: HistoryMessage = history.messages[id]!;
    out.push(m);
    id = m.parentId;
  }
  return out.reverse();
}

/** The ids sharing this message's parent (roots are siblings of each other), oldest first. */
export function siblingIds(history: History, id: string): string[] {
  const m = history.messages[id];
  if (!m) return [];
  if (m.parentId && history.messages[m.parentId]) {
    return history.messages[m.parentId]!.childrenIds.filter((c) => history.messages[c]);
  }
  return Object.values(history.messages)
    .filter((x) => !x.parentId || !history.messages[x.parentId])
    .sort((a, b) => (a.timestamp ?? 0) - (b.timestamp ?? 0))
    .map((x) => x.id);
}

/** Follow the newest child down from `id` to a leaf (what a sibling switch shows). */
export function deepestLeaf(history: History, id: string): string {
  const seen = new Set<string>();
  let cur = id;
  for (;;) {
    seen.add(cur);
    const kids = history.messages[cur]?.childrenIds.filter((c) => history.messages[c] && !seen.has(c)) ?? [];
    if (!kids.length) return cur;
    cur = kids[kids.length - 1]!;
  }
}

/** Add a message under its parent (childrenIds kept in step) without touching currentId. */
export function addMessage(history: History, m: HistoryMessage): void {
  history.messages[m.id] = m;
  const parent = m.parentId ? history.messages[m.parentId] : undefined;
  if (parent && !parent.childrenIds.includes(m.id)) parent.childrenIds.push(m.id);
}

/** A message's content as text (content may be a string or OpenAI content blocks). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((b) => (b && typeof b === 'object' && typeof (b as { text?: unknown }).text === 'string' ? (b as { text: string }).text : ''))
      .join('');
  }
  return content == null ? '' : String(content);
}

/** Stored reasoning: `reasoning_content` (this server), `reasoning`, or 0.10's structured `output`. */
export function storedReasoning(m: HistoryMessage): { text: string; duration: number | null } {
  if (typeof m.reasoning_content === 'string' && m.reasoning_content) return { text: m.reasoning_content, duration: null };
  if (typeof m.reasoning === 'string' && m.reasoning) return { text: m.reasoning, duration: null };
  if (Array.isArray(m.output)) {
    let text = '';
    let duration: number | null = null;
    for (const item of m.output as Record<string, unknown>[]) {
      if (!item || item.type !== 'reasoning') continue;
      if (Array.isArray(item.content)) text += textOf(item.content);
      if (typeof item.duration === 'number') duration = (duration ?? 0) + item.duration;
    }
    return { text, duration };
  }
  return { text: '', duration: null };
}

/** The error stored on a message (`{content}` as the worker writes it, or a string). */
export function errorText(error: unknown): string | null {
  if (!error) return null;
  if (typeof error === 'string') return error;
  if (typeof error === 'object') {
    const e = error as { content?: unknown; detail?: unknown; message?: unknown };
    for (const v of [e.content, e.detail, e.message]) if (typeof v === 'string' && v) return v;
  }
  return 'Something went wrong.';
}
