import { llmConnectionContracts } from '@gatehouse/contracts';
import { busStream, BusError, pyJson, type Bus, type TraceCarrier } from '@gatehouse/common';
import { fail, type OpContext, type UserRow } from '../context.ts';
import { saveContextSummary, threadTo, type ChatMessageRow, type ChatRow } from './chats.store.ts';
import { pickArenaMember, type ModelEntry, type ModelRegistry } from '../config/models.ops.ts';

/**
 * Automatic context compaction (Open WebUI 0.10.0, utils/context_compaction.py as of 0.10.2).
 *
 * Stored chats only. When the conversation's estimated size passes the threshold (the admin's
 * CONTEXT_COMPACTION_TOKEN_THRESHOLD, lowered — never raised — by the request's
 * `params.compact_token_threshold`) and it has more than three messages, the newest
 * max(2, 40 %) messages are kept (the cut never separates a tool call from its results), the
 * older ones are summarised by the task model through the proxy worker, and the summary is
 * stored on the current user message as its checkpoint (`context_summary`). The upstream then
 * gets `[CONVERSATION SUMMARY]\n<summary>` as system text followed by the kept messages. Every
 * later turn starts from the newest checkpoint: that message and what follows, plus its summary.
 * With compaction switched off, checkpoints are ignored (the whole thread is sent), as in
 * Open WebUI.
 */

/** Open WebUI's built-in prompt (CONTEXT_COMPACTION_PROMPT_TEMPLATE empty). */
export const DEFAULT_CONTEXT_COMPACTION_PROMPT = `### Task:
Summarize the conversation history that will be compacted out of the active chat context.

### Instructions:
- Preserve key decisions, user preferences, and constraints.
- Preserve files, artifacts, tool results, and code changes that matter going forward.
- Preserve the current task state, unresolved questions, and next steps.
- Be factual and specific. Do not invent details.
- Keep the summary concise, but complete enough for the assistant to continue without the removed messages.

### Previous Summary:
{{PREVIOUS_SUMMARY}}

### Messages Being Compacted:
{{COMPACTED_MESSAGES}}

### Recent Messages Kept In Context:
{{RECENT_MESSAGES}}`;

/** Open WebUI's answer to a compaction (`POST /api/v1/chats/{id}/compact`). */
export type CompactResult = {
  ok: true;
  compacted: boolean;
  /** Why nothing was compacted: `disabled`, `empty`, `too_short` (the counts are then absent). */
  reason?: string;
  dropped_messages?: number;
  kept_messages?: number;
  summary_chars?: number;
};

/** A conversation message as compaction sees it (OpenAI fields plus Open WebUI's bookkeeping). */
export interface ConvMessage {
  role: string;
  content?: unknown;
  id?: string;
  tool_calls?: unknown;
  output?: unknown;
  files?: unknown;
  usage?: Record<string, unknown> | null;
  contextSummary?: string | null;
  [key: string]: unknown;
}

/** What compaction needs from the worker: the bus to the proxy worker and the model list. */
export interface CompactionDeps {
  bus: Bus;
  models: ModelRegistry;
}

// ---- estimates and the cut ---------------------------------------------------------------

/** Python's len(): code points, not UTF-16 units. */
const pyLen = (s: string): number => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/** len(text) // 4, non-strings as their JSON (Open WebUI's _estimate_tokens). */
export function estimateTokens(value: unknown): number {
  if (value === null || value === undefined) return 0;
  const text = typeof value === 'string' ? value : pyJson(value, false);
  if (!text) return 0;
  return Math.max(1, Math.floor(pyLen(text) / 4));
}

export function estimateMessagesTokens(messages: readonly ConvMessage[]): number {
  let total = 0;
  for (const m of messages) {
    total += 4;
    if (Array.isArray(m.content)) {
      for (const item of m.content) {
        if (!item || typeof item !== 'object') total += estimateTokens(item);
        else if ((item as { type?: unknown }).type === 'image' || (item as { type?: unknown }).type === 'image_url') total += 1000;
        else total += estimateTokens((item as { text?: unknown }).text || (item as { content?: unknown }).content || item);
      }
    } else total += estimateTokens(m.content);
    total += estimateTokens(m.output);
    total += estimateTokens(m.tool_calls);
    total += estimateTokens(m.files);
  }
  return total;
}

const positiveInt = (v: unknown): number | null => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) && Math.trunc(n) > 0 ? Math.trunc(n) : null;
};

/** The model's (request's) compact_token_threshold can only lower the global one. */
export function resolveThreshold(global: number, params: Record<string, unknown> | undefined): number {
  const own = positiveInt(params?.compact_token_threshold);
  return own === null ? global : Math.min(own, global);
}

/** The newest message carrying a summary and everything after it; the whole list when none does. */
export function applyLatestCheckpoint<M extends ConvMessage>(messages: readonly M[]): { messages: M[]; summary: string | null } {
  let idx = -1;
  let summary: string | null = null;
  messages.forEach((m, i) => {
    const v = m.contextSummary;
    if (typeof v === 'string' && v.trim()) {
      idx = i;
      summary = v;
    }
  });
  return idx < 0 ? { messages: [...messages], summary: null } : { messages: messages.slice(idx), summary };
}

/**
 * Over the threshold? The newest message with a usage counts its real input+output tokens plus an
 * estimate of what came after it; without one, everything is estimated.
 */
export function exceedsThreshold(messages: readonly ConvMessage[], systemPrompt: string, summary: string | null, threshold: number): boolean {
  if (threshold <= 0) return false;
  for (let i = messages.length - 1; i >= 0; i--) {
    const usage = messages[i]!.usage;
    if (usage && typeof usage === 'object' && Number(usage.input_tokens)) {
      const total = Math.trunc(Number(usage.input_tokens) || 0) + Math.trunc(Number(usage.output_tokens) || 0);
      return total + estimateMessagesTokens(messages.slice(i + 1)) > threshold;
    }
  }
  return estimateTokens(systemPrompt) + estimateTokens(summary ?? '') + estimateMessagesTokens(messages) > threshold;
}

/** Index of the first kept message: the newest max(2, 40 %) stay, a tool exchange is never cut. */
export function findBoundary(messages: readonly ConvMessage[]): number {
  const n = messages.length;
  const keep = Math.max(2, Math.floor((n * 2) / 5));
  let split = Math.max(1, n - keep);
  while (split < n - 1) {
    const prev = messages[split - 1];
    const cur = messages[split]!;
    if (cur.role === 'tool' || (prev && (truthy(prev.tool_calls) || truthy(prev.output)))) {
      split++;
      continue;
    }
    break;
  }
  return Math.min(split, n - 2);
}

/** Python truthiness for JSON values. */
const truthy = (v: unknown): boolean =>
  Array.isArray(v) ? v.length > 0 : v && typeof v === 'object' ? Object.keys(v).length > 0 : Boolean(v);

// ---- the prompt (Open WebUI's task template variables) -------------------------------------

/** Open WebUI's get_content_from_message: the string, or the first text block. */
export function contentOf(m: ConvMessage): string | null {
  if (Array.isArray(m.content)) {
    for (const item of m.content) if (item && typeof item === 'object' && (item as { type?: unknown }).type === 'text') return String((item as { text?: unknown }).text ?? '');
    return null;
  }
  return typeof m.content === 'string' ? m.content : m.content === undefined || m.content === null ? null : String(m.content);
}

/** `ROLE: content` lines (Python prints a missing content as None). */
function messagesContent(messages: readonly ConvMessage[]): string {
  return messages.map((m) => `${String(m.role).toUpperCase()}: ${contentOf(m) ?? 'None'}`).join('\n');
}

function truncateText(content: string, max: number, mode: string): string {
  if (max <= 0) return '';
  const chars = Array.from(content);
  if (chars.length <= max) return content;
  if (mode === 'start') return chars.slice(0, max).join('');
  if (mode === 'end') return chars.slice(-max).join('');
  const half = Math.floor(max / 2);
  return `${chars.slice(0, half).join('')}...${chars.slice(-(max - half)).join('')}`;
}

/** `{{NAME}}`, `{{NAME:START|END|MIDDLETRUNCATE:n}}`, each optionally with `|ROLES:…` / `|start:n`-style filters. */
export function replaceMessagesVariable(template: string, messages: readonly ConvMessage[], name = 'MESSAGES'): string {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`\\{\\{${escaped}(?::(START|END|MIDDLETRUNCATE):(\\d+))?((?:\\|(?:[Rr][Oo][Ll][Ee][Ss]:[\\w,\\s]+|\\w+:\\d+))*)\\}\\}`, 'g');
  return template.replace(re, (_m, selector: string | undefined, length: string | undefined, filterStr: string) => {
    const filters = (filterStr ?? '').split('|').filter(Boolean);
    const roleFilters = filters.filter((f) => f.split(':', 1)[0]!.toLowerCase() === 'roles');
    const contentFilters = filters.filter((f) => !roleFilters.includes(f));
    let selected = [...messages];
    for (const rf of roleFilters) {
      const roles = new Set(rf.slice(rf.indexOf(':') + 1).split(/[,\s]+/).filter(Boolean).map((r) => r.toLowerCase()));
      if (roles.size) selected = selected.filter((m) => roles.has(String(m.role ?? '').toLowerCase()));
    }
    const n = Number(length);
    if (selector === 'START') selected = selected.slice(0, n);
    else if (selector === 'END') selected = n === 0 ? selected : selected.slice(-n);
    else if (selector === 'MIDDLETRUNCATE' && selected.length > n) {
      const half = Math.floor(n / 2);
      const tail = n % 2 === 0 ? half : half + 1;
      selected = [...selected.slice(0, half), ...(tail === 0 ? selected : selected.slice(-tail))];
    }
    for (const cf of contentFilters) {
      const [mode, num] = cf.split(':');
      const max = Number(num);
      if (!['middletruncate', 'start', 'end'].includes((mode ?? '').toLowerCase()) || !Number.isInteger(max)) continue;
      selected = selected.map((m) =>
        typeof m.content === 'string' ? { ...m, content: truncateText(m.content, max, mode!.toLowerCase()) } : m,
      );
    }
    return messagesContent(selected);
  });
}

/** `{{prompt}}`, `{{prompt:start:n}}`, `{{prompt:end:n}}`, `{{prompt:middletruncate:n}}` (any case). */
export function replacePromptVariable(template: string, prompt: string): string {
  return template.replace(/\{\{prompt\}\}|\{\{prompt:start:(\d+)\}\}|\{\{prompt:end:(\d+)\}\}|\{\{prompt:middletruncate:(\d+)\}\}/gi, (m, s?: string, e?: string, mid?: string) => {
    const chars = Array.from(prompt);
    if (m.toLowerCase() === '{{prompt}}') return prompt;
    if (s !== undefined) return chars.slice(0, Number(s)).join('');
    if (e !== undefined) return Number(e) === 0 ? prompt : chars.slice(-Number(e)).join('');
    if (mid !== undefined) {
      const n = Number(mid);
      if (chars.length <= n) return prompt;
      return `${chars.slice(0, Math.ceil(n / 2)).join('')}...${chars.slice(chars.length - Math.floor(n / 2)).join('')}`;
    }
    return '';
  });
}

const pad = (n: number) => String(n).padStart(2, '0');
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** Open WebUI's prompt_template: dates (server local time) and the user's profile variables. */
export function promptTemplate(template: string, user: UserRow | null, at = new Date()): string {
  const date = `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}`;
  const h12 = at.getHours() % 12 === 0 ? 12 : at.getHours() % 12;
  const time = `${pad(h12)}:${pad(at.getMinutes())}:${pad(at.getSeconds())} ${at.getHours() < 12 ? 'AM' : 'PM'}`;
  let vars: Record<string, string> = {};
  if (user) {
    const py = (v: unknown) => (v === null || v === undefined ? 'None' : String(v));
    const birth = user.date_of_birth ? String(user.date_of_birth).slice(0, 10) : null;
    let age: number | null = null;
    if (birth && /^\d{4}-\d{2}-\d{2}$/.test(birth)) {
      const [y, mo, d] = birth.split('-').map(Number) as [number, number, number];
      age = at.getFullYear() - y - (at.getMonth() + 1 < mo || (at.getMonth() + 1 === mo && at.getDate() < d) ? 1 : 0);
    }
    vars = {
      name: py(user.name),
      email: py(user.email),
      location: py((user.info as { location?: unknown } | null)?.location),
      bio: py(user.bio),
      gender: py(user.gender),
      birth_date: birth ? `${birth} 00:00:00` : 'None',
      age: py(age),
    };
  }
  return template
    .replaceAll('{{CURRENT_DATE}}', date)
    .replaceAll('{{CURRENT_TIME}}', time)
    .replaceAll('{{CURRENT_DATETIME}}', `${date} ${time}`)
    .replaceAll('{{CURRENT_WEEKDAY}}', WEEKDAYS[at.getDay()]!)
    .replaceAll('{{USER_NAME}}', vars.name ?? 'Unknown')
    .replaceAll('{{USER_EMAIL}}', vars.email ?? 'Unknown')
    .replaceAll('{{USER_BIO}}', vars.bio ?? 'Unknown')
    .replaceAll('{{USER_GENDER}}', vars.gender ?? 'Unknown')
    .replaceAll('{{USER_BIRTH_DATE}}', vars.birth_date ?? 'Unknown')
    .replaceAll('{{USER_AGE}}', vars.age ?? 'Unknown')
    .replaceAll('{{USER_LOCATION}}', vars.location ?? 'Unknown');
}

/** The summary prompt, variables filled in the order Open WebUI fills them. */
export function summaryPrompt(
  template: string,
  compacted: readonly ConvMessage[],
  recent: readonly ConvMessage[],
  previousSummary: string | null,
  user: UserRow | null,
): string {
  const all = [...compacted, ...recent];
  const lastUser = [...all].reverse().find((m) => m.role === 'user');
  let prompt = replacePromptVariable(template.trim() || DEFAULT_CONTEXT_COMPACTION_PROMPT, (lastUser && contentOf(lastUser)) || '');
  prompt = replaceMessagesVariable(prompt, all);
  prompt = replaceMessagesVariable(prompt, compacted, 'COMPACTED_MESSAGES');
  prompt = replaceMessagesVariable(prompt, recent, 'RECENT_MESSAGES');
  prompt = prompt.replaceAll('{{PREVIOUS_SUMMARY}}', previousSummary ?? '');
  return promptTemplate(prompt, user);
}

// ---- talking to the model --------------------------------------------------------------------

/**
 * One non-streamed completion through the proxy worker's registry: the whole `chat.completion`
 * object (the proxy sends it as chunk frames — more than one when it is large).
 */
export async function upstreamCompletion(
  bus: Bus,
  model: string,
  body: Record<string, unknown>,
  signal?: AbortSignal,
  /** The request's trace (sent as `traceparent`: the proxy worker's log lines carry it too). */
  trace?: TraceCarrier,
): Promise<{ completion: Record<string, unknown>; usage: Record<string, unknown> | null; finishReason: string | null }> {
  const parts: Uint8Array[] = [];
  let end: { finish_reason: string | null; usage: Record<string, unknown> | null } | undefined;
  for await (const f of busStream(bus, llmConnectionContracts.chat, { model, body, stream: false }, { signal, idleTimeoutMs: 600_000, trace })) {
    if (f.kind === 'chunk') parts.push(f.data);
    else if (f.kind === 'end') end = f.end;
  }
  const text = Buffer.concat(parts).toString('utf8');
  let completion: unknown;
  try {
    completion = JSON.parse(text);
  } catch {
    throw new BusError(502, 'the model answered with something that is not a chat completion');
  }
  if (!completion || typeof completion !== 'object' || Array.isArray(completion)) throw new BusError(502, 'the model answered with something that is not a chat completion');
  return { completion: completion as Record<string, unknown>, usage: end?.usage ?? null, finishReason: end?.finish_reason ?? null };
}

/** Open WebUI's get_task_model_id: TASK_MODEL for local (Ollama) chat models, TASK_MODEL_EXTERNAL otherwise. */
export function taskModelId(modelId: string, taskModel: string, taskModelExternal: string, models: readonly ModelEntry[]): string {
  const byId = (id: string) => models.find((m) => m.id === id);
  let id = modelId;
  if (byId(modelId)?.connection_type === 'local') {
    if (taskModel && byId(taskModel)) id = taskModel;
  } else if (taskModelExternal && byId(taskModelExternal)) id = taskModelExternal;
  return byId(id) ? id : modelId;
}

/** Summarise `compacted` (with `recent` as context) with the task model; never empty. */
export async function generateSummary(
  ctx: OpContext,
  { bus, models }: CompactionDeps,
  modelId: string,
  compacted: readonly ConvMessage[],
  recent: readonly ConvMessage[],
  previousSummary: string | null,
  signal?: AbortSignal,
): Promise<string> {
  const settings = await ctx.settings();
  const list = await models.list();
  let task = list.find((m) => m.id === taskModelId(modelId, settings.TASK_MODEL, settings.TASK_MODEL_EXTERNAL, list));
  if (!task) throw new BusError(400, 'No available model for context compaction');
  // An arena summarises through one of its members, as any arena request does.
  if (task.owned_by === 'arena') task = pickArenaMember(task, list) ?? fail(400, 'No available model for context compaction');
  const prompt = summaryPrompt(settings.CONTEXT_COMPACTION_PROMPT_TEMPLATE, compacted, recent, previousSummary, ctx.user);
  const maxTokens = (task.info?.params as { max_tokens?: unknown } | undefined)?.max_tokens ?? 1000;
  const body: Record<string, unknown> = {
    messages: [{ role: 'user', content: prompt }],
    ...(task.owned_by === 'ollama' ? { max_tokens: maxTokens } : { max_completion_tokens: maxTokens }),
  };
  const { completion } = await upstreamCompletion(bus, task.id, body, signal, ctx.trace);
  const message = ((completion.choices as { message?: Record<string, unknown> }[] | undefined)?.[0]?.message ?? {}) as Record<string, unknown>;
  const text = String((message.content || message.reasoning_content || '') as string).trim();
  if (text) return text;
  // The model said nothing: keep a plain digest rather than lose the history.
  const parts = previousSummary ? [previousSummary] : [];
  for (const m of compacted) {
    const c = contentOf(m);
    if (c) parts.push(`- ${m.role ?? 'unknown'}: ${Array.from(c).slice(0, 500).join('')}`);
  }
  return Array.from(parts.join('\n')).slice(0, 4000).join('');
}

/** A stored message as a conversation message (what compaction and the upstream see). */
export function rowToMessage(r: ChatMessageRow): ConvMessage {
  const m: ConvMessage = { id: r.id, role: r.role, content: r.content };
  if (Array.isArray(r.tool_calls) && r.tool_calls.length) m.tool_calls = r.tool_calls;
  if (r.output !== null && r.output !== undefined) m.output = r.output;
  if (r.usage) m.usage = r.usage;
  if (r.context_summary) m.contextSummary = r.context_summary;
  return m;
}

export interface RequestCompaction {
  /** Messages to send after the system message(s): from the checkpoint, or the kept ones. */
  messages: ConvMessage[];
  /** The summary to inject, if any (a new one, or the checkpoint's). */
  summary: string | null;
  compacted: boolean;
  dropped: number;
}

/**
 * Compaction for one completion of a stored chat (Open WebUI's compact_messages_for_request).
 * `messages` are the conversation without system messages, ending with the current turn;
 * `checkpointId` is the current user message (where a new summary is stored). A failing summary
 * call leaves the conversation as it was (the turn still runs), logged.
 */
export async function compactForRequest(
  ctx: OpContext,
  deps: CompactionDeps,
  opts: {
    chatId: string;
    checkpointId: string;
    messages: ConvMessage[];
    systemPrompt: string;
    modelId: string;
    params: Record<string, unknown>;
    signal?: AbortSignal;
    /** The write of the checkpoint's message, if still in progress (completions): the summary goes on it once it is there. */
    written?: Promise<unknown>;
  },
): Promise<RequestCompaction> {
  const settings = await ctx.settings();
  if (!settings.ENABLE_CONTEXT_COMPACTION) return { messages: opts.messages, summary: null, compacted: false, dropped: 0 };
  const { messages, summary: previous } = applyLatestCheckpoint(opts.messages);
  const threshold = resolveThreshold(settings.CONTEXT_COMPACTION_TOKEN_THRESHOLD, opts.params);
  if (!exceedsThreshold(messages, opts.systemPrompt, previous, threshold) || messages.length <= 3) {
    return { messages, summary: previous, compacted: false, dropped: 0 };
  }
  const boundary = findBoundary(messages);
  const compacted = messages.slice(0, boundary);
  const recent = messages.slice(boundary);
  if (!compacted.length || !recent.length) return { messages, summary: previous, compacted: false, dropped: 0 };
  let summary: string;
  try {
    summary = await generateSummary(ctx, deps, opts.modelId, compacted, recent, previous, opts.signal);
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    ctx.log.warn({ err: (err as Error).message, chat: opts.chatId }, 'context compaction failed; sending the conversation uncompacted');
    return { messages, summary: previous, compacted: false, dropped: 0 };
  }
  await opts.written;
  await ctx.sql.begin(async (tx) => {
    await saveContextSummary(tx, opts.chatId, opts.checkpointId, summary);
    await ctx.emit(tx, 'chat.compacted', {
      actor: ctx.user,
      subject: { type: 'chat', id: opts.chatId },
      data: { dropped_messages: compacted.length, kept_messages: recent.length, summary_chars: pyLen(summary), automatic: true },
    });
  });
  ctx.log.info({ chat: opts.chatId, checkpoint: opts.checkpointId, dropped: compacted.length, kept: recent.length }, 'compacted chat context');
  return { messages: recent, summary, compacted: true, dropped: compacted.length };
}

/**
 * `POST /api/v1/chats/{id}/compact` (Open WebUI's compact_chat_branch), called by chats.ops.ts once
 * it has checked the owner, that no reply is generating and which model to use. `force` (the manual
 * route) summarises everything before the newest message of the current branch; without it the
 * automatic rule applies (over the threshold, newest 40 % kept). The summary goes on the newest
 * message, with `chat.compacted` in the same transaction.
 */
export async function compactChat(ctx: OpContext, deps: CompactionDeps, chat: ChatRow, opts: { model?: string; force: boolean }): Promise<CompactResult> {
  const settings = await ctx.settings();
  if (!settings.ENABLE_CONTEXT_COMPACTION) return { ok: true, compacted: false, reason: 'disabled' };
  const history = chat.chat.history as { currentId?: unknown } | undefined;
  const currentId = typeof history?.currentId === 'string' && history.currentId ? history.currentId : null;
  if (!currentId) return { ok: true, compacted: false, reason: 'empty' };
  const thread = (await threadTo(ctx.sql, chat.id, currentId)).map(rowToMessage);
  const { messages, summary: previous } = applyLatestCheckpoint(thread);
  if (messages.length <= 2) return { ok: true, compacted: false, reason: 'too_short' };
  let compacted: ConvMessage[];
  let recent: ConvMessage[];
  if (opts.force) {
    compacted = messages.slice(0, -1);
    recent = messages.slice(-1);
  } else {
    const threshold = resolveThreshold(settings.CONTEXT_COMPACTION_TOKEN_THRESHOLD, (chat.chat.params as Record<string, unknown>) ?? {});
    if (!exceedsThreshold(messages, '', previous, threshold) || messages.length <= 3) return { ok: true, compacted: false, reason: 'too_short' };
    const boundary = findBoundary(messages);
    compacted = messages.slice(0, boundary);
    recent = messages.slice(boundary);
  }
  const model = opts.model ?? fail(400, 'No model found for context compaction.');
  const summary = await generateSummary(ctx, deps, model, compacted, recent, previous);
  await ctx.sql.begin(async (tx) => {
    await saveContextSummary(tx, chat.id, currentId, summary);
    await ctx.emit(tx, 'chat.compacted', {
      actor: ctx.user,
      subject: { type: 'chat', id: chat.id },
      data: { dropped_messages: compacted.length },
    });
  });
  return { ok: true, compacted: true, dropped_messages: compacted.length, kept_messages: recent.length, summary_chars: pyLen(summary) };
}
