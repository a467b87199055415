import type { Sql } from 'postgres';
import type { ChatSettings } from '../config/settings.ts';
import type { UserRow } from '../context.ts';
import { normalizeMemoryType, pyStrip, searchMemoryRows, type MemoryRow } from './rules.ts';
import { relevantMemories, userMemories } from './memories.store.ts';

/**
 * The user's memories in the system context of a completion (Open WebUI 0.10's add_memory_context,
 * utils/memory.py): a `<memory_context>` block appended to the system message (one is created when
 * the request has none) with
 * - `[User Memory]` — every `user` memory (facts and preferences), by path then age;
 * - `[Memory Neighborhood]` — `context` memories filed under a path the recent user messages name;
 * - `[Relevant Context]` — the memories closest in meaning to the last (up to 7) user messages,
 *   8 at most, those already listed left out;
 * cut to MEMORIES_USER_CHAR_LIMIT (user part) and MEMORIES_CONTEXT_CHAR_LIMIT (the rest), 2000
 * characters each by default and never below 250. A block already in the system message (a client
 * replaying a prompt) is replaced, not repeated.
 *
 * When: ENABLE_MEMORIES and ENABLE_MEMORY_SYSTEM_CONTEXT are on, and the request does not say
 * `features.memory: false`. Open WebUI's own web client sends `features.memory: true` when the
 * user's memory toggle is on; API clients rarely send `features` at all, so here an absent flag
 * means on (the issue's "unless disabled") — Open WebUI itself injects only on an explicit true.
 * ENABLE_MEMORY_SYSTEM_CONTEXT=false injects nothing (the memory tools keep working).
 */

export const MEMORY_CONTEXT_OPEN = '<memory_context>';
export const MEMORY_CONTEXT_CLOSE = '</memory_context>';

export interface MemoryLimits {
  user: number;
  context: number;
}

/** MEMORIES_USER_CHAR_LIMIT / MEMORIES_CONTEXT_CHAR_LIMIT: an int ≥ 250; anything else is the default 2000. */
export function memoryLimits(env: NodeJS.ProcessEnv): MemoryLimits {
  const one = (raw: string | undefined) => {
    const n = raw === undefined || raw.trim() === '' ? NaN : Number(raw);
    return Number.isInteger(n) && n !== 0 ? Math.max(250, n) : 2000;
  };
  return { user: one(env.MEMORIES_USER_CHAR_LIMIT), context: one(env.MEMORIES_CONTEXT_CHAR_LIMIT) };
}

/** Whether this request gets memories injected. */
export function memoryWanted(settings: ChatSettings, features: unknown): boolean {
  if (!settings.ENABLE_MEMORIES || !settings.ENABLE_MEMORY_SYSTEM_CONTEXT) return false;
  const flag = features && typeof features === 'object' ? (features as { memory?: unknown }).memory : undefined;
  return flag !== false;
}

type Message = Record<string, unknown> & { role?: unknown; content?: unknown };

function textOf(m: Message): string | null {
  if (Array.isArray(m.content)) {
    for (const item of m.content) if (item && typeof item === 'object' && (item as { type?: unknown }).type === 'text') return String((item as { text?: unknown }).text ?? '');
    return null;
  }
  return typeof m.content === 'string' ? m.content : null;
}

const label = (m: Pick<MemoryRow, 'path' | 'content'>): string => (m.path ? `${m.path}: ${m.content}` : m.content);

/** Python slicing by code points. */
const cut = (s: string, n: number): string => {
  const chars = Array.from(s);
  return chars.length <= n ? s : chars.slice(0, n).join('');
};

const pathParts = (p: string): string[] => p.split('/').filter(Boolean);

/** Paths (up to `limit`) that the query mentions, whole or by one of their segments. */
function memoryPathHints(query: string, memories: readonly MemoryRow[], limit = 6): string[] {
  const lowered = query.toLowerCase();
  if (!lowered) return [];
  const hints: string[] = [];
  for (const m of memories) {
    const path = m.path;
    if (!path || hints.includes(path)) continue;
    const parts = pathParts(path);
    const last = parts.at(-1) ?? path;
    if (lowered.includes(path.toLowerCase()) || lowered.includes(last.toLowerCase())) hints.push(path);
    else if (parts.some((p) => p.length >= 3 && lowered.includes(p.toLowerCase()))) hints.push(path);
    if (hints.length >= limit) break;
  }
  return hints;
}

/** The rendered `<memory_context>` block for these messages, or null when there is nothing to add. */
export async function memoryContextBlock(sql: Sql, user: UserRow, messages: readonly Message[], limits: MemoryLimits): Promise<string | null> {
  const userTexts: string[] = [];
  for (let i = messages.length - 1; i >= 0 && userTexts.length < 7; i--) {
    const m = messages[i]!;
    if (m.role !== 'user') continue;
    const text = textOf(m);
    if (typeof text === 'string' && pyStrip(text)) userTexts.push(pyStrip(text));
  }
  const joined = Array.from(userTexts.reverse().join('\n\n'));
  const query = joined.slice(-4000).join('');
  if (!query) return null;

  const all = await userMemories(sql, user.id);
  if (all.length === 0) return null;
  const relevant = await relevantMemories(sql, user.id, query, 8);

  const sections: Record<'user' | 'neighborhood' | 'context', string[]> = { user: [], neighborhood: [], context: [] };
  const seen = new Set<string>();
  const userRows = all
    .filter((m) => m.type === 'user')
    .sort((a, b) => ((a.path ?? '') < (b.path ?? '') ? -1 : (a.path ?? '') > (b.path ?? '') ? 1 : a.updated_at - b.updated_at));
  for (const m of userRows) {
    seen.add(m.id);
    sections.user.push(label(m));
  }
  for (const hint of memoryPathHints(query, all)) {
    for (const m of searchMemoryRows(all, { path: hint, type: 'context', limit: 4 })) {
      if (seen.has(m.id)) continue;
      seen.add(m.id);
      sections.neighborhood.push(label(m));
    }
  }
  for (const m of relevant) {
    if (seen.has(m.id)) continue;
    seen.add(m.id);
    const section = normalizeMemoryType(m.type) === 'user' ? 'user' : 'context';
    sections[section].push(label(m));
  }

  const bullet = (xs: string[]) => xs.map((x) => `- ${x}`).join('\n');
  const userPart = sections.user.length ? `[User Memory]\n${bullet(sections.user)}` : '';
  const contextParts = [
    sections.neighborhood.length ? `[Memory Neighborhood]\n${bullet(sections.neighborhood)}` : '',
    sections.context.length ? `[Relevant Context]\n${bullet(sections.context)}` : '',
  ].filter(Boolean);
  if (!userPart && contextParts.length === 0) return null;
  const rendered = pyStrip([cut(userPart, limits.user), cut(contextParts.join('\n\n'), limits.context)].join('\n\n'));
  if (!rendered) return null;
  return `${MEMORY_CONTEXT_OPEN}\n${rendered}\n${MEMORY_CONTEXT_CLOSE}`;
}

/**
 * Open WebUI's add_or_update_system_message(…, append=True): the text goes after the first
 * message's content when that one is a system message, else a new system message leads.
 */
export function appendToSystem<M extends Message>(messages: readonly M[], text: string): M[] {
  const out = [...messages];
  const first = out[0];
  if (first && first.role === 'system') {
    const content = first.content;
    out[0] = {
      ...first,
      content: Array.isArray(content) ? [...content, { type: 'text', text }] : `${typeof content === 'string' ? content : String(content ?? '')}\n${text}`,
    };
  } else out.unshift({ role: 'system', content: text } as unknown as M);
  return out;
}

/** Take out a memory block an earlier turn left in the system message. */
function withoutOldBlock<M extends Message>(messages: readonly M[]): M[] {
  const out = [...messages];
  const first = out[0];
  if (first && first.role === 'system' && typeof first.content === 'string' && first.content.includes(MEMORY_CONTEXT_OPEN)) {
    const start = first.content.indexOf(MEMORY_CONTEXT_OPEN);
    const end = first.content.indexOf(MEMORY_CONTEXT_CLOSE, start);
    if (end !== -1) out[0] = { ...first, content: pyStrip(first.content.slice(0, start) + first.content.slice(end + MEMORY_CONTEXT_CLOSE.length)) };
  }
  return out;
}

/** The messages with the user's memory context added (unchanged when there is none). */
export async function addMemoryContext<M extends Message>(sql: Sql, user: UserRow, messages: readonly M[], limits: MemoryLimits): Promise<M[]> {
  const block = await memoryContextBlock(sql, user, messages, limits);
  if (!block) return [...messages];
  return appendToSystem(withoutOldBlock(messages), block);
}
