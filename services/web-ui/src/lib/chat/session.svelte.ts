/**
 * One open chat: its history (Open WebUI's message tree), the branch shown, and the turns —
 * send, edit (a sibling user message), regenerate (a sibling answer), stop, switch siblings.
 *
 * A turn, as Open WebUI 0.10.2's client does it against this server:
 * 1. client-made ids for the user message and the answer (crypto.randomUUID());
 * 2. the user message is saved into the chat's history — a new chat is created with it
 *    (`POST /api/v1/chats/new`, ChatForm), an existing one updated (`POST /api/v1/chats/{id}`
 *    with the current stored history plus the message);
 * 3. `POST /api/chat/completions` `{model, stream: true, chat_id, id: <answer>, parent_id: <user>,
 *    user_message, messages}`: the worker stores both messages with their links and streams the
 *    reply (sse.ts); tokens are painted once per animation frame;
 * 4. when it ends (done, error, stopped) the chat is read back and the sidebar refreshed.
 */
import { get } from 'svelte/store';
import { api, ApiError, authHeaders, refreshChats, user } from '../api.ts';
import type { ChatRecord, History, HistoryMessage, ToolCall } from './types';
import { addMessage, deepestLeaf, normalizeHistory, siblingIds, textOf, threadTo } from './history';
import { detailText, interpret, mergeToolCalls, sseData } from './sse';

export const READONLY_NOTICE = 'This chat is shared with you read-only';

export interface LiveState {
  reasoningStreaming: boolean;
  reasoningDuration: number | null;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
const uuid = (): string =>
  typeof crypto !== 'undefined' && typeof crypto.randomUUID === 'function'
    ? crypto.randomUUID()
    : 'xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx'.replace(/[xy]/g, (c) => {
        const r = (Math.random() * 16) | 0;
        return (c === 'x' ? r : (r & 0x3) | 0x8).toString(16);
      });
const plain = <T>(v: T): T => $state.snapshot(v) as T;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function titleFrom(text: string): string {
  const line = text.split('\n').find((l) => l.trim())?.trim() ?? '';
  if (!line) return 'New Chat';
  return line.length > 60 ? `${line.slice(0, 57)}…` : line;
}

export class ChatSession {
  chatId = $state<string | null>(null);
  chat = $state<ChatRecord | null>(null);
  history = $state<History>({ messages: {}, currentId: null });
  loading = $state(false);
  /** The chat could not be loaded (shown instead of the messages). */
  loadError = $state<string | null>(null);
  /** Nothing may be written (read-only shared chat). */
  readonly = $state(false);
  /** A line above the input (read-only notice, a failed save…). */
  notice = $state<string | null>(null);
  /** The answer being streamed. */
  streamingId = $state<string | null>(null);
  /** Per answer: reasoning in progress, and its measured duration. */
  live = $state<Record<string, LiveState>>({});

  thread = $derived(threadTo(this.history, this.history.currentId));

  /** Called after each painted batch (the list keeps the bottom in view). */
  onPaint: (() => void) | null = null;
  onChatCreated: ((id: string) => void) | null = null;

  private controller: AbortController | null = null;
  private stopped = false;
  private disposed = false;

  constructor(chatId: string | null) {
    this.chatId = chatId;
  }

  dispose(): void {
    // A reply still streaming carries on (the server finishes and stores it); only painting stops.
    this.disposed = true;
    this.onPaint = null;
  }

  // ---- loading ---------------------------------------------------------------------------

  async load(): Promise<void> {
    const id = this.chatId;
    if (!id) return;
    this.loading = true;
    this.loadError = null;
    try {
      const rec = await api.get<ChatRecord>(`/api/v1/chats/${encodeURIComponent(id)}`);
      if (this.chatId !== id) return;
      this.chat = rec;
      this.history = normalizeHistory(rec.chat?.history);
      this.readonly = await this.isReadonly(rec);
      this.notice = this.readonly ? READONLY_NOTICE : null;
      void this.watchUnfinished();
    } catch (err) {
      if (this.chatId !== id) return;
      this.loadError =
        err instanceof ApiError && err.status === 404 ? 'This chat does not exist or is not shared with you.' : `The chat could not be loaded: ${errText(err)}`;
    } finally {
      if (this.chatId === id) this.loading = false;
    }
  }

  /**
   * Read-only: the chat is someone else's (`readonly: true` from the server, or another
   * `user_id`) and its folder is not shared with me for `write` (GET /api/v1/folders/shared).
   */
  private async isReadonly(rec: ChatRecord): Promise<boolean> {
    const me = get(user)?.id;
    const foreign = rec.readonly === true || (!!me && !!rec.user_id && rec.user_id !== me);
    if (!foreign) return false;
    if (!rec.folder_id) return true;
    try {
      const shared = await api.get<{ id: string; permission?: string }[]>('/api/v1/folders/shared');
      const f = Array.isArray(shared) ? shared.find((x) => x.id === rec.folder_id) : undefined;
      return f?.permission !== 'write';
    } catch {
      return true;
    }
  }

  /** A stored reply still generating (another tab, a reload mid-reply): re-read until it is done. */
  private async watchUnfinished(): Promise<void> {
    for (let i = 0; i < 300 && !this.disposed && !this.streamingId; i++) {
      const leaf = this.history.currentId ? this.history.messages[this.history.currentId] : undefined;
      if (!leaf || leaf.role !== 'assistant' || leaf.done !== false) return;
      await sleep(2000);
      if (this.disposed || this.streamingId) return;
      await this.reread(leaf.id, 1);
    }
  }

  /**
   * Read the chat back after a turn. The server stores the finished reply just after the
   * stream's last byte, so the read is retried (briefly) until the answer is stored done; what
   * only this client knows (the reply as painted if the store lags, an error never stored) is kept.
   */
  private async reread(answerId: string | null, attempts = 1): Promise<void> {
    const id = this.chatId;
    if (!id) return;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let rec: ChatRecord;
      try {
        rec = await api.get<ChatRecord>(`/api/v1/chats/${encodeURIComponent(id)}`);
      } catch {
        return;
      }
      if (this.chatId !== id || this.streamingId) return;
      const fresh = normalizeHistory(rec.chat?.history);
      const stored = answerId ? fresh.messages[answerId] : undefined;
      if (answerId && (!stored || stored.done === false) && attempt < attempts) {
        await sleep(300);
        continue;
      }
      const local = plain(this.history.messages);
      for (const m of Object.values(local)) {
        const there = fresh.messages[m.id];
        if (!there) {
          addMessage(fresh, { ...m, childrenIds: m.childrenIds.filter((c) => fresh.messages[c] || local[c]) });
        } else {
          if (m.id === answerId && there.done === false && m.done) {
            // Stored copy not finished yet: keep the reply as this client saw it.
            Object.assign(there, { content: m.content, reasoning_content: m.reasoning_content, tool_calls: m.tool_calls, done: true, stopped: m.stopped });
          }
          if (m.error && !there.error) there.error = m.error;
        }
      }
      if (answerId && fresh.messages[answerId]) fresh.currentId = answerId;
      this.chat = rec;
      this.history = fresh;
      return;
    }
  }

  // ---- turns -----------------------------------------------------------------------------

  /** Send a new message at the end of the shown branch. False: nothing was sent. */
  async send(text: string, model: string | null): Promise<boolean> {
    if (!model || this.streamingId || this.readonly || this.loading || !text.trim()) return false;
    // A new chat starts empty (a failed first attempt shown before is not part of it).
    if (!this.chatId) this.history = { messages: {}, currentId: null };
    await this.userTurn(text, this.history.currentId, model);
    return true;
  }

  /** Edit a user message: a new sibling (same parent) and a new answer to it. */
  async edit(messageId: string, text: string, model: string | null = null): Promise<void> {
    const m = this.history.messages[messageId];
    if (!m || this.streamingId || this.readonly) return;
    const use = model ?? this.model ?? (Array.isArray(m.models) ? m.models[0] : undefined) ?? this.lastModel();
    if (!use) return;
    await this.userTurn(text, m.parentId && this.history.messages[m.parentId] ? m.parentId : null, use);
  }

  /** A new answer to the same user message (a sibling of `answerId`). */
  async regenerate(answerId: string, model: string | null = null): Promise<void> {
    const m = this.history.messages[answerId];
    if (!m || !m.parentId || this.streamingId || this.readonly) return;
    const use = model ?? this.model ?? m.model ?? this.lastModel();
    if (!use) return;
    const answer = this.placeholder(m.parentId, use);
    await this.complete(answer.id, m.parentId, use, null);
  }

  /** Show the previous/next sibling's branch (saved as the chat's currentId when writable). */
  navigate(messageId: string, delta: number): void {
    if (this.streamingId) return;
    const sibs = siblingIds(this.history, messageId);
    const i = sibs.indexOf(messageId);
    const target = sibs[i + delta];
    if (i < 0 || !target) return;
    this.history.currentId = deepestLeaf(this.history, target);
    if (!this.readonly && this.chatId) {
      const history = plain(this.history);
      api
        .post(`/api/v1/chats/${encodeURIComponent(this.chatId)}`, { chat: { history } }, { noAuthRedirect: true })
        .catch(() => {
          /* the branch shown is only a view; a failed save changes nothing else */
        });
    }
  }

  /** Stop the reply: the fetch is aborted, the server stores what was produced as stopped. */
  stop(): void {
    if (!this.controller) return;
    this.stopped = true;
    this.controller.abort();
  }

  /** The model the view currently selects (set by ChatView). */
  model: string | null = null;

  private lastModel(): string | null {
    for (let i = this.thread.length - 1; i >= 0; i--) {
      const m = this.thread[i]!;
      if (m.role === 'assistant' && typeof m.model === 'string') return m.model;
    }
    return null;
  }

  private placeholder(parentId: string, model: string): HistoryMessage {
    const answer: HistoryMessage = {
      id: uuid(),
      parentId,
      childrenIds: [],
      role: 'assistant',
      content: '',
      model,
      done: false,
      timestamp: nowSeconds(),
    };
    addMessage(this.history, answer);
    this.history.currentId = answer.id;
    this.streamingId = answer.id;
    return answer;
  }

  private async userTurn(text: string, parentId: string | null, model: string): Promise<void> {
    const userMessage: HistoryMessage = {
      id: uuid(),
      parentId,
      childrenIds: [],
      role: 'user',
      content: text,
      timestamp: nowSeconds(),
      models: [model],
    };
    addMessage(this.history, userMessage);
    const answer = this.placeholder(userMessage.id, model);
    const saved = await this.saveUserMessage(plain(this.history.messages[userMessage.id]!), model);
    if (saved !== true) {
      this.fail(answer.id, saved);
      this.finish(answer.id);
      return;
    }
    await this.complete(answer.id, userMessage.id, model, userMessage);
  }

  /** Step 2: the user message into the stored history. True, or what went wrong. */
  private async saveUserMessage(message: HistoryMessage, model: string): Promise<true | string> {
    const stored = { ...message, childrenIds: [] as string[] };
    try {
      if (!this.chatId) {
        const rec = await api.post<ChatRecord>('/api/v1/chats/new', {
          chat: {
            title: titleFrom(textOf(message.content)),
            models: [model],
            history: { messages: { [message.id]: stored }, currentId: message.id },
            messages: [],
            timestamp: Date.now(),
          },
        });
        this.chat = rec;
        this.chatId = rec.id;
        this.onChatCreated?.(rec.id);
        void refreshChats().catch(() => {});
        return true;
      }
      const id = this.chatId;
      const rec = await api.get<ChatRecord>(`/api/v1/chats/${encodeURIComponent(id)}`);
      if (rec.readonly === true && (await this.isReadonly(rec))) return this.becomeReadonly();
      const fresh = normalizeHistory(rec.chat?.history);
      addMessage(fresh, stored);
      fresh.currentId = message.id;
      await api.post(`/api/v1/chats/${encodeURIComponent(id)}`, { chat: { history: fresh } }, { noAuthRedirect: true });
      return true;
    } catch (err) {
      if (err instanceof ApiError && this.chat && (err.status === 401 || err.status === 403 || (err.status === 404 && this.chat.readonly))) {
        return this.becomeReadonly();
      }
      return `The message could not be saved: ${errText(err)}`;
    }
  }

  private becomeReadonly(): string {
    this.readonly = true;
    this.notice = READONLY_NOTICE;
    return `${READONLY_NOTICE}: nothing can be sent here.`;
  }

  /** Step 3: stream the answer `answerId` to `userId` into the history. */
  private async complete(answerId: string, userId: string, model: string, userMessage: HistoryMessage | null): Promise<void> {
    const controller = new AbortController();
    this.controller = controller;
    this.stopped = false;
    const thread = threadTo(this.history, userId).map((m) => ({ role: m.role, content: textOf(m.content) }));
    const body: Record<string, unknown> = {
      model,
      stream: true,
      chat_id: this.chatId,
      id: answerId,
      parent_id: userId,
      messages: thread,
    };
    if (userMessage) {
      const u = plain(userMessage);
      body.user_message = { id: u.id, parentId: u.parentId, role: 'user', content: u.content, timestamp: u.timestamp, models: u.models };
    }

    // Painting: deltas gather here and reach the message once per frame.
    const pending = { content: '', reasoning: '', tools: false };
    const toolCalls: ToolCall[] = [];
    let frame = 0;
    let timer: ReturnType<typeof setTimeout> | null = null;
    let firstReasoning: number | null = null;
    let lastReasoning = 0;
    const flush = () => {
      if (frame) cancelAnimationFrame(frame);
      if (timer) clearTimeout(timer);
      frame = 0;
      timer = null;
      const m = this.history.messages[answerId];
      if (!m) return;
      if (pending.reasoning) m.reasoning_content = (m.reasoning_content ?? '') + pending.reasoning;
      if (pending.content) m.content = textOf(m.content) + pending.content;
      if (pending.tools) m.tool_calls = toolCalls.map((c) => ({ ...c, function: { ...c.function } }));
      pending.content = '';
      pending.reasoning = '';
      pending.tools = false;
      if (!this.disposed) this.onPaint?.();
    };
    const schedule = () => {
      if (frame || timer) return;
      frame = requestAnimationFrame(flush);
      // Hidden tabs get no frames: paint anyway, less often.
      timer = setTimeout(flush, 250);
    };
    const endReasoning = () => {
      if (firstReasoning === null || !this.live[answerId]?.reasoningStreaming) return;
      flush();
      this.live[answerId] = { reasoningStreaming: false, reasoningDuration: Math.max(1, Math.round((lastReasoning - firstReasoning) / 1000)) };
    };

    try {
      let res: Response;
      try {
        res = await fetch('/api/chat/completions', {
          method: 'POST',
          headers: authHeaders({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
          body: JSON.stringify(body),
          credentials: 'same-origin',
          signal: controller.signal,
        });
      } catch (err) {
        if (!controller.signal.aborted) this.fail(answerId, 'Network error: the server could not be reached.');
        return;
      }
      if (!res.ok) {
        const parsed = await res.json().catch(() => null);
        const detail = detailText((parsed as { detail?: unknown } | null)?.detail, res.statusText || `HTTP ${res.status}`);
        if (res.status === 401 || (res.status === 404 && this.chat?.readonly)) {
          this.becomeReadonly();
          this.fail(answerId, `${READONLY_NOTICE}: nothing can be sent here.`);
        } else this.fail(answerId, detail);
        return;
      }
      const type = res.headers.get('content-type') ?? '';
      if (!type.includes('text/event-stream') || !res.body) {
        // A non-streamed answer (a model whose params turn streaming off).
        const j = (await res.json().catch(() => null)) as Record<string, unknown> | null;
        const ev = j ? interpret(JSON.stringify(j)) : null;
        if (ev?.type === 'delta') {
          pending.content = ev.content;
          pending.reasoning = ev.reasoning;
          if (ev.toolCalls.length) {
            mergeToolCalls(toolCalls, ev.toolCalls);
            pending.tools = true;
          }
          flush();
        } else if (ev?.type === 'error') this.fail(answerId, ev.detail);
        return;
      }
      for await (const data of sseData(res.body)) {
        const ev = interpret(data);
        if (!ev) continue;
        if (ev.type === 'done') break;
        if (ev.type === 'error') {
          endReasoning();
          flush();
          this.fail(answerId, ev.detail);
          break;
        }
        if (ev.type === 'selected_model') {
          const m = this.history.messages[answerId];
          if (m) {
            m.selectedModelId = ev.id;
            m.arena = true;
          }
          continue;
        }
        if (ev.reasoning) {
          const t = performance.now();
          if (firstReasoning === null) {
            firstReasoning = t;
            this.live[answerId] = { reasoningStreaming: true, reasoningDuration: null };
          }
          lastReasoning = t;
          pending.reasoning += ev.reasoning;
        }
        if (ev.content) {
          endReasoning();
          pending.content += ev.content;
        }
        if (ev.toolCalls.length) {
          endReasoning();
          mergeToolCalls(toolCalls, ev.toolCalls);
          pending.tools = true;
        }
        if (ev.reasoning || ev.content || ev.toolCalls.length) schedule();
      }
    } catch (err) {
      if (!controller.signal.aborted) this.fail(answerId, `The reply was cut off: ${errText(err)}`);
    } finally {
      endReasoning();
      flush();
      const wasStopped = this.stopped || controller.signal.aborted;
      const m = this.history.messages[answerId];
      if (m && wasStopped) m.stopped = true;
      if (this.controller === controller) this.controller = null;
      this.finish(answerId);
      await this.reread(answerId, 10);
      void refreshChats().catch(() => {});
    }
  }

  private fail(answerId: string, detail: string): void {
    const m = this.history.messages[answerId];
    if (m) m.error = { content: detail };
  }

  private finish(answerId: string): void {
    const m = this.history.messages[answerId];
    if (m) m.done = true;
    if (this.streamingId === answerId) this.streamingId = null;
  }
}

function errText(err: unknown): string {
  if (err instanceof ApiError) return err.detail;
  if (err instanceof Error) return err.message;
  return String(err);
}
