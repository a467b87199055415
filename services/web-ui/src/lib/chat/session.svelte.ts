/**
 * One open chat: its history (Open WebUI's message tree), the branch shown, and the turns —
 * send, edit (a sibling user message), regenerate (a sibling answer), stop, switch siblings.
 *
 * A turn. Open WebUI 0.10.2's client first saves the user message (creating the chat), then asks
 * for the completion; here the completion is sent at once, so the first token is not behind a
 * save (the stored chat ends up the same):
 * 1. client-made ids for the user message and the answer (crypto.randomUUID());
 * 2. `POST /api/chat/completions` `{model, stream: true, chat_id, id: <answer>, parent_id: <user>,
 *    user_message, messages}` goes out first; tokens are painted once per animation frame:
 *    - an existing chat: the worker stores the user message (with its parent link) and the
 *      answer itself — no save before it;
 *    - a new chat: the completion goes without `chat_id` and `POST /api/v1/chats/new` (ChatForm,
 *      the user message in its history) goes beside it; the sidebar gets the chat from that
 *      answer at once. When the stream ends the answer is stored with `POST /api/v1/chats/{id}`
 *      (what Open WebUI's client does after a completion); a page closed mid-answer saves what
 *      arrived, marked stopped (a keepalive request on `beforeunload`/`pagehide`);
 * 3. when it ends (done, error, stopped) the chat is read back and the sidebar refreshed — after
 *    the stream, so nothing competes with the first token.
 */
import { get } from 'svelte/store';
import { ApiError, errorText } from '../apis/client.ts';
import { createChat, getChat, KEEPALIVE_MAX, streamCompletion, updateChat, updateChatOnLeave, type ChatRecord } from '../apis/chats/index.ts';
import { listSharedFolders } from '../apis/folders/index.ts';
import { addChatToSidebar, holdChatRefresh, refreshChats, user } from '../stores.ts';
import type { History, HistoryMessage } from './types';
import { addMessage, deepestLeaf, normalizeHistory, siblingIds, textOf, threadTo } from './history';
import { detailText, interpret, sseData } from './sse';
import { Painter, type LiveState } from './painter';
import { attachedFiles, completionBody, type AttachedFile } from './completion-body';
import { withTiming } from './usage';

export const READONLY_NOTICE = 'This chat is shared with you read-only';

export { attachedFiles, type AttachedFile } from './completion-body';

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

/** One answer being streamed (ChatSession.complete and its steps). */
interface Turn {
  answerId: string;
  controller: AbortController;
  painter: Painter;
  /** A new chat's creation, running beside the stream. */
  creating: Promise<true | string> | null;
  /** Why the new chat could not be created (the answer stops with it). */
  saveError: string | null;
  /** The new chat, once created. */
  createdId: string | null;
  /** The page is being left: the stream's end is not an error, what arrived is stored. */
  leaving: boolean;
  onLeave: () => void;
  /** When the request left and the first of the answer came (performance.now()), for its timing. */
  startedAt: number;
  firstAt: number | null;
}

const LEAVE_EVENTS = ['beforeunload', 'pagehide'] as const;

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
  /** A new chat's first answer being stored (storeAnswer); later writes wait for it. */
  private storing: Promise<void> | null = null;
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
      const rec = await getChat(id);
      if (this.chatId !== id) return;
      this.chat = rec;
      this.history = normalizeHistory(rec.chat?.history);
      this.readonly = await this.isReadonly(rec);
      this.notice = this.readonly ? READONLY_NOTICE : null;
      void this.watchUnfinished();
    } catch (err) {
      if (this.chatId !== id) return;
      this.loadError =
        err instanceof ApiError && err.status === 404 ? 'This chat does not exist or is not shared with you.' : `The chat could not be loaded: ${errorText(err)}`;
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
      const shared = await listSharedFolders();
      const f = Array.isArray(shared) ? shared.find((x) => x.id === rec.folder_id) : undefined;
      return f?.permission !== 'write';
    } catch {
      return true;
    }
  }

  /**
   * A stored reply still generating (another tab, a reload mid-reply): re-read until it is done.
   * A new chat whose last message is a question asked seconds ago with no answer yet: its first
   * answer may be on its way from the page that asked it (stored at the end, or on pagehide when
   * that page was reloaded or closed), so it is read again a few times.
   */
  private async watchUnfinished(): Promise<void> {
    for (let i = 0, waitedForFirst = 0; i < 300 && !this.disposed && !this.streamingId; i++) {
      const leaf = this.history.currentId ? this.history.messages[this.history.currentId] : undefined;
      if (leaf && leaf.role === 'user' && !leaf.childrenIds.length && waitedForFirst < 3 && nowSeconds() - (leaf.timestamp ?? 0) < 30) {
        waitedForFirst++;
        await sleep(1000);
        if (this.disposed || this.streamingId) return;
        await this.reread(null, 1);
        continue;
      }
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
        rec = await getChat(id);
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

  /**
   * Send a new message at the end of the shown branch, with the knowledge bases and files it
   * attaches (`#` in the input: Open WebUI's `files`). False: nothing was sent.
   */
  async send(text: string, model: string | null, files: AttachedFile[] = []): Promise<boolean> {
    if (!model || this.streamingId || this.readonly || this.loading || !text.trim()) return false;
    // A new chat starts empty (a failed first attempt shown before is not part of it).
    if (!this.chatId) this.history = { messages: {}, currentId: null };
    await this.userTurn(text, this.history.currentId, model, files);
    return true;
  }

  /** Edit a user message: a new sibling (same parent) and a new answer to it. */
  async edit(messageId: string, text: string, model: string | null = null): Promise<void> {
    const m = this.history.messages[messageId];
    if (!m || this.streamingId || this.readonly) return;
    const use = model ?? this.model ?? (Array.isArray(m.models) ? m.models[0] : undefined) ?? this.lastModel();
    if (!use) return;
    // The edited message keeps what the original attached.
    await this.userTurn(text, m.parentId && this.history.messages[m.parentId] ? m.parentId : null, use, attachedFiles(m));
  }

  /** A new answer to the same user message (a sibling of `answerId`). */
  async regenerate(answerId: string, model: string | null = null): Promise<void> {
    if (this.storing) await this.storing;
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
      const id = this.chatId;
      Promise.resolve(this.storing)
        .then(() => updateChat(id, { chat: { history } }, { noAuthRedirect: true }))
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

  /**
   * One message changed in place (a rating's `annotation` and `feedbackId`, as Open WebUI keeps
   * them on the message) and the history stored. Waits for a new chat's first answer to be stored.
   */
  async saveMessage(message: HistoryMessage): Promise<void> {
    const id = this.chatId;
    if (!id || this.readonly || !this.history.messages[message.id]) return;
    if (this.storing) await this.storing;
    this.history.messages[message.id] = message;
    await updateChat(id, { chat: { history: plain(this.history) } });
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

  private async userTurn(text: string, parentId: string | null, model: string, files: AttachedFile[] = []): Promise<void> {
    if (this.storing) await this.storing;
    const userMessage: HistoryMessage = {
      id: uuid(),
      parentId,
      childrenIds: [],
      role: 'user',
      content: text,
      timestamp: nowSeconds(),
      models: [model],
      ...(files.length ? { files: files.map((f) => ({ ...f })) } : {}),
    };
    addMessage(this.history, userMessage);
    const answer = this.placeholder(userMessage.id, model);
    // A new chat is created beside the completion, not before it (step 2 above).
    const create = this.chatId ? null : () => this.createChat(plain(this.history.messages[userMessage.id]!), model);
    await this.complete(answer.id, userMessage.id, model, userMessage, create);
  }

  /** A new chat holding the user message (`POST /api/v1/chats/new`). True, or what went wrong. */
  private async createChat(message: HistoryMessage, model: string): Promise<true | string> {
    const stored = { ...message, childrenIds: [] as string[] };
    try {
      const rec = await createChat({
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
      // The sidebar shows it now; the live event's refresh comes later and changes nothing.
      addChatToSidebar(rec);
      if (!this.disposed) this.onChatCreated?.(rec.id);
      return true;
    } catch (err) {
      return `The message could not be saved: ${errorText(err)}`;
    }
  }

  /**
   * A new chat's answer into its stored history, as the worker stores answers of existing chats
   * (done, content, reasoning, tool calls, usage, stopped or error): `POST /api/v1/chats/{id}`.
   */
  private answerBody(answerId: string, stopped: boolean): { chat: { history: History } } | null {
    if (!this.history.messages[answerId]) return null;
    const history = plain(this.history);
    const a = history.messages[answerId]!;
    a.done = true;
    if (stopped) a.stopped = true;
    history.currentId = answerId;
    return { chat: { history } };
  }

  private async storeAnswer(chatId: string, answerId: string): Promise<void> {
    const body = this.answerBody(answerId, false);
    if (!body) return;
    try {
      // keepalive: the page may be on its way out (the stream ended because it is).
      await updateChat(chatId, body, { noAuthRedirect: true, keepalive: JSON.stringify(body).length < KEEPALIVE_MAX });
    } catch (err) {
      if (!this.disposed && this.chatId === chatId) this.notice = `The answer could not be saved: ${errorText(err)}`;
    }
  }

  private becomeReadonly(): string {
    this.readonly = true;
    this.notice = READONLY_NOTICE;
    return `${READONLY_NOTICE}: nothing can be sent here.`;
  }

  /**
   * Stream the answer `answerId` to `userId` into the history. `create` (a new chat): called
   * once the completion request is on its way; the answer is stored into that chat at the end.
   */
  private async complete(
    answerId: string,
    userId: string,
    model: string,
    userMessage: HistoryMessage | null,
    create: (() => Promise<true | string>) | null = null,
  ): Promise<void> {
    const turn = this.startTurn(answerId);
    // Sidebar refreshes wait for the end of the reply (addChatToSidebar already shows a new chat).
    const releaseRefresh = holdChatRefresh();
    try {
      let res: Response;
      try {
        res = await streamCompletion(completionBody(this.history, create ? null : this.chatId, answerId, userId, model, userMessage && plain(userMessage)), turn.controller.signal);
      } catch {
        if (!turn.controller.signal.aborted && !turn.leaving) this.fail(answerId, 'Network error: the server could not be reached.');
        return;
      }
      // The chat is created once the answer has started: its request and the worker's work for
      // it would otherwise share the machine with the completion's way to its first token.
      if (create) this.createBeside(turn, create);
      if (!res.ok) return await this.refused(answerId, res);
      const type = res.headers.get('content-type') ?? '';
      if (!type.includes('text/event-stream') || !res.body) return await this.readWhole(turn, res);
      await this.readStream(turn, res.body);
    } catch (err) {
      if (!turn.controller.signal.aborted && !turn.leaving) this.fail(answerId, `The reply was cut off: ${errorText(err)}`);
    } finally {
      await this.endTurn(turn);
      if (!releaseRefresh()) void refreshChats().catch(() => {});
    }
  }

  /** A turn's state: its abort, its painter, and a new chat's creation beside the stream. */
  private startTurn(answerId: string): Turn {
    const controller = new AbortController();
    this.controller = controller;
    this.stopped = false;
    const painter = new Painter({
      message: () => this.history.messages[answerId],
      painted: () => {
        if (!this.disposed) this.onPaint?.();
      },
      live: () => this.live[answerId],
      setLive: (state) => (this.live[answerId] = state),
    });
    const turn: Turn = { answerId, controller, painter, creating: null, saveError: null, createdId: null, leaving: false, onLeave: () => {}, startedAt: performance.now(), firstAt: null };
    // Leaving the page mid-answer (reload, close, another site): what arrived is stored, stopped,
    // as the worker stores a reply whose client went away. `beforeunload` comes before the
    // browser cuts the page's requests (the stream then fails: not an error here); `pagehide` is
    // the fallback. A keepalive request outlives the page.
    turn.onLeave = () => {
      if (turn.leaving) return;
      turn.leaving = true;
      if (!turn.createdId || this.history.messages[answerId]?.done) return;
      painter.flush();
      const b = this.answerBody(answerId, true);
      if (b) updateChatOnLeave(turn.createdId, b);
    };
    return turn;
  }

  /** A new chat: its creation runs beside the stream; if it fails, the answer stops with why. */
  private createBeside(turn: Turn, create: () => Promise<true | string>): void {
    if (typeof window !== 'undefined') for (const e of LEAVE_EVENTS) window.addEventListener(e, turn.onLeave);
    turn.creating = create().then((r) => {
      if (r === true) turn.createdId = this.chatId;
      else {
        turn.saveError = r;
        turn.controller.abort();
      }
      return r;
    });
  }

  /** The completion was refused: why, on the answer (someone else's chat turns read-only). */
  private async refused(answerId: string, res: Response): Promise<void> {
    const parsed = await res.json().catch(() => null);
    const detail = detailText((parsed as { detail?: unknown } | null)?.detail, res.statusText || `HTTP ${res.status}`);
    const foreign = this.chat?.readonly === true || (!!this.chat?.user_id && this.chat.user_id !== get(user)?.id);
    if (res.status === 401 || (res.status === 404 && foreign)) {
      this.becomeReadonly();
      this.fail(answerId, `${READONLY_NOTICE}: nothing can be sent here.`);
    } else this.fail(answerId, detail);
  }

  /** A non-streamed answer (a model whose params turn streaming off). */
  private async readWhole(turn: Turn, res: Response): Promise<void> {
    const j = (await res.json().catch(() => null)) as Record<string, unknown> | null;
    const ev = j ? interpret(JSON.stringify(j)) : null;
    if (ev?.type === 'delta') {
      turn.firstAt = performance.now();
      if (ev.usage) this.setUsage(turn.answerId, ev.usage);
      turn.painter.whole(ev);
    } else if (ev?.type === 'error') this.fail(turn.answerId, ev.detail);
  }

  /** The SSE stream's events into the answer until `[DONE]`, an error or its end. */
  private async readStream(turn: Turn, body: ReadableStream<Uint8Array>): Promise<void> {
    const { answerId, painter } = turn;
    for await (const data of sseData(body)) {
      const ev = interpret(data);
      if (!ev) continue;
      if (ev.type === 'done') break;
      if (ev.type === 'error') {
        painter.endReasoning();
        painter.flush();
        this.fail(answerId, ev.detail);
        break;
      }
      const m = this.history.messages[answerId];
      if (ev.type === 'sources') {
        if (m) m.sources = ev.sources;
      } else if (ev.type === 'selected_model') {
        if (m) {
          m.selectedModelId = ev.id;
          m.arena = true;
        }
      } else {
        turn.firstAt ??= performance.now();
        if (ev.usage) this.setUsage(answerId, ev.usage);
        painter.delta(ev);
      }
    }
  }

  /**
   * The answer ends (done, error, stopped, page left): painted, marked, then — a new chat — stored
   * into the chat once it exists, and the chat read back.
   */
  private async endTurn(turn: Turn): Promise<void> {
    const { answerId, controller, painter } = turn;
    painter.endReasoning();
    painter.flush();
    if (turn.saveError) this.fail(answerId, turn.saveError);
    const wasStopped = !turn.saveError && (this.stopped || controller.signal.aborted || turn.leaving);
    const m = this.history.messages[answerId];
    if (m && wasStopped) m.stopped = true;
    // A new chat's answer is stored from here: its usage gets the timing the worker adds to others.
    if (m?.usage && !wasStopped) m.usage = withTiming(m.usage as Record<string, unknown>, turn.startedAt, turn.firstAt, performance.now());
    if (this.controller === controller) this.controller = null;
    this.finish(answerId);
    if (typeof window !== 'undefined') for (const e of LEAVE_EVENTS) window.removeEventListener(e, turn.onLeave);
    // The next turn (or a branch switch) waits for this save: it writes the whole history, so
    // landing after the worker stored a next message would take that message out again.
    let storeDone: () => void = () => {};
    const storing = turn.creating ? new Promise<void>((r) => (storeDone = r)) : null;
    if (storing) this.storing = storing;
    const created = turn.creating ? await turn.creating : null;
    if (created === true && turn.createdId) await this.storeAnswer(turn.createdId, answerId);
    if (this.storing === storing) this.storing = null;
    storeDone();
    if (!turn.creating || created === true) await this.reread(answerId, turn.creating ? 1 : 10);
  }

  private setUsage(answerId: string, usage: Record<string, unknown>): void {
    const m = this.history.messages[answerId];
    if (m) m.usage = usage;
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
