import { randomUUID } from 'node:crypto';
import { ChatCompletionForm, ChatCompletionHead, COMPLETION_ERRORS, llmConnectionContracts, type ChatOpRequest } from '@gatehouse/contracts';
import { BusError, ChunkWriter, normalizeOwuiUsage as normalizeUsage, openBusStream, pyJson, SSE_DONE, sseData, sseError, storeUnavailable, utf8, type Bus, type HandlerContext, type StreamFrame, type StreamWriter } from '@gatehouse/common';
import { fail, me, now, type OpContext, type UserRow } from '../context.ts';
import { loadChatFor, mergeMessage, rowOf, threadTo, upsertMessages, type ChatMessageRow, type ChatRow, type HistoryMessage } from '../chat-store.ts';
import { compactForRequest, promptTemplate, rowToMessage, upstreamCompletion, type ConvMessage } from '../compaction.ts';
import { addMemoryContext, appendToSystem, memoryWanted, type MemoryLimits } from '../memory-context.ts';
import { lastUserText, ragDeps, ragItems, retrieveSources, withRagContext } from '../knowledge/rag.ts';
import type { Source } from '../knowledge/rag-template.ts';
import { pickArenaMember, type ModelEntry, type ModelRegistry } from './models.ts';

/**
 * `POST /api/chat/completions` (and `/api/v1/chat/completions`), Open WebUI 0.10.2's main.py
 * chat_completion with utils/middleware.py process_chat_payload / process_chat_response, on the
 * stream `chat.completions.create`: first frame the HTTP status and content type, then the bytes.
 *
 * - The model must be one `/api/models` lists (else 400 "Model not found"). An arena model picks
 *   one member at random per request; the stream opens with `data: {"selected_model_id": …}` and
 *   a non-streamed body carries `selected_model_id` last, as Open WebUI's arena wrapper does.
 * - The request body goes upstream through the proxy worker's registry (`llm.connections.chat`)
 *   minus Open WebUI's own fields; `params` are applied as Open WebUI maps them for OpenAI
 *   (temperature, top_p, max_tokens, stop…, `system` prepended to the system message). Tools and
 *   tool_choice go as they are: native tool calling is the default (`params.function_calling`
 *   absent or "native"); nothing is executed here — "legacy" mode's server-side tools are not
 *   implemented, the tools are passed natively all the same.
 * - Streamed: `text/event-stream`, one `data: <chunk>\n\n` per upstream chunk as soon as it
 *   arrives (reasoning already in `delta.reasoning_content`, normalised by the proxy), then
 *   `data: [DONE]\n\n`. Not streamed: one `chat.completion` object; `message.reasoning_content`
 *   only when there was reasoning, `tool_calls` with `content: ""` when the model called tools;
 *   `usage` with Open WebUI's input_tokens/output_tokens/total_tokens added.
 * - Stored chats (`chat_id` of the caller's own chat or one shared with write on its folder):
 *   the user message (`user_message`, else the request's last user message) and the assistant
 *   message (`id`, parent `parent_id`) are written with their parent links, the reply marked
 *   `done: false` until it ends; the conversation sent upstream is the stored thread (from the
 *   newest compaction checkpoint on), so automatic compaction (compaction.ts) applies. The reply
 *   still streams to this HTTP client: there is no socket.io here, so Open WebUI's third mode
 *   (`session_id` → `{status, task_id}` and socket events) is served like the plain API.
 * - Memories (memory-context.ts) go into the system message unless switched off.
 * - Retrieval (knowledge/rag.ts): `files` (or `metadata.files`) naming knowledge bases and files
 *   are searched for the last user message; the chunks go before that message in Open WebUI's
 *   RAG template, and the `sources` are the stream's first event (`data: {"sources": […]}`, after
 *   an arena's selected_model_id), the first key of a non-streamed answer, and are kept on the
 *   stored reply (chat JSON and chat_message.sources).
 * - A client that goes away cancels the proxy stream (and so the upstream request); what was
 *   produced is stored as a stopped reply: `done: true` (what Open WebUI's client saves when the
 *   user presses stop) with `stopped: true`, so nothing waits on it — a compaction would otherwise
 *   see a reply forever "in progress" and answer 409.
 * - Upstream errors before the first byte: an error frame with the upstream's status (the edge
 *   answers `{"detail": …}`); after it: `data: {"error": {"detail": …}}\n\n` and the stream ends
 *   (Open WebUI's in-stream error event). Never a hung connection.
 */

type Meta = { status: number; contentType: string };
type Out = StreamWriter<Meta, Record<string, never>>;
type Message = Record<string, unknown> & { role?: unknown; content?: unknown };

export interface CompletionsDeps {
  bus: Bus;
  models: ModelRegistry;
  /** The verified caller's operation context (throws Open WebUI's 401s). */
  authorize(req: ChatOpRequest, hctx: HandlerContext): Promise<OpContext>;
  memoryLimits: MemoryLimits;
  /** RAG_SYSTEM_CONTEXT: retrieved context after the system prompt instead of before the user's message. */
  ragSystemContext?: boolean;
  /** Longest silence allowed from the proxy worker (its stream idle timeout). */
  upstreamIdleMs?: number;
}

/** Fields of Open WebUI's request body that are its own, never the upstream's. */
const OWUI_FIELDS = new Set([
  'model', 'messages', 'stream', 'params', 'chat_id', 'id', 'parent_id', 'user_message', 'session_id', 'features',
  'tool_ids', 'files', 'filter_ids', 'skill_ids', 'terminal_id', 'tool_servers', 'folder_id', 'variables',
  'background_tasks', 'regeneration_prompt', 'assistant_message_id', 'model_item', 'message_ids', 'metadata', 'direct',
  'task_id', 'task_ids',
]);

/** Bookkeeping keys Open WebUI clients put on messages; upstreams do not know them. */
const MESSAGE_BOOKKEEPING = new Set([
  'id', 'parentId', 'childrenIds', 'timestamp', 'models', 'model', 'modelName', 'modelIdx', 'done', 'usage', 'info',
  'contextSummary', 'context_summary', 'files', 'sources', 'statusHistory', 'error', 'output', 'selectedModelId', 'arena',
  'userContext', 'lastSentence', 'followUps', 'annotation', 'merged',
]);

/** Open WebUI's apply_model_params_to_body_openai: request params that become body fields. */
const PARAM_FIELDS = ['temperature', 'top_p', 'min_p', 'max_tokens', 'frequency_penalty', 'presence_penalty', 'reasoning_effort', 'seed', 'stop', 'logit_bias', 'response_format'] as const;

const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** Python's `bytes(s, "utf-8").decode("unicode_escape")` for the escapes people write in stop sequences. */
function unicodeEscape(s: string): string {
  const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', v: '\v', '0': '\0' };
  return s.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)/g, (m, e: string) => {
    if (e[0] === 'x' || e[0] === 'u' || e[0] === 'U') return e.length > 1 ? String.fromCodePoint(parseInt(e.slice(1), 16)) : m;
    return simple[e] ?? m;
  });
}

/** Request params → upstream body fields (a null param is left out, as Open WebUI skips it). */
export function applyParams(body: Record<string, unknown>, params: Record<string, unknown>): void {
  for (const key of PARAM_FIELDS) {
    const v = params[key];
    if (v === null || v === undefined) continue;
    if (key === 'stop') body.stop = Array.isArray(v) ? v.map((s) => (typeof s === 'string' ? unicodeEscape(s) : s)) : v;
    else body[key] = v;
  }
  const custom = params.custom_params;
  if (isObject(custom)) Object.assign(body, custom);
}

/** What a reply produced, gathered from chunks (or the one completion) for storage. */
class Reply {
  content = '';
  reasoning = '';
  toolCalls: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
  private byIndex = new Map<number, (typeof this.toolCalls)[number]>();
  finishReason: string | null = null;
  usage: Record<string, unknown> | null = null;
  /** What retrieval grounded the reply on (stored with it). */
  sources: Source[] = [];

  addDelta(delta: Record<string, unknown>): void {
    if (typeof delta.content === 'string') this.content += delta.content;
    if (typeof delta.reasoning_content === 'string') this.reasoning += delta.reasoning_content;
    if (Array.isArray(delta.tool_calls)) {
      for (const raw of delta.tool_calls) {
        if (!isObject(raw)) continue;
        const index = typeof raw.index === 'number' ? raw.index : this.byIndex.size;
        let call = this.byIndex.get(index);
        if (!call) {
          call = { id: '', type: 'function', function: { name: '', arguments: '' } };
          this.byIndex.set(index, call);
          this.toolCalls.push(call);
        }
        if (typeof raw.id === 'string' && raw.id) call.id = raw.id;
        if (typeof raw.type === 'string') call.type = raw.type;
        const fn = isObject(raw.function) ? raw.function : {};
        if (typeof fn.name === 'string' && fn.name) call.function.name = fn.name;
        if (typeof fn.arguments === 'string') call.function.arguments += fn.arguments;
        else if (isObject(fn.arguments)) call.function.arguments += JSON.stringify(fn.arguments);
      }
    }
  }

  /** SSE events as sent (the proxy's own), read into the reply when it is stored (`absorbSse`). */
  private sse: Uint8Array[] = [];
  addSse(bytes: Uint8Array): void {
    this.sse.push(bytes);
  }

  /** The events kept by `addSse`, read as chunks (an event cut short at the end is left out, as an unparsed chunk was). */
  absorbSse(): void {
    if (!this.sse.length) return;
    const text = Buffer.concat(this.sse).toString('utf8');
    this.sse = [];
    for (let at = 0, cut = text.indexOf('\n\n'); cut >= 0; at = cut + 2, cut = text.indexOf('\n\n', at)) {
      const event = text.slice(at, cut);
      if (!event.startsWith('data: ')) continue;
      let chunk: unknown;
      try {
        chunk = JSON.parse(event.slice(6));
      } catch {
        continue;
      }
      if (isObject(chunk)) this.addChunk(chunk);
    }
  }

  addChunk(c: Record<string, unknown>): void {
    for (const raw of Array.isArray(c.choices) ? c.choices : []) {
      if (!isObject(raw) || (raw.index ?? 0) !== 0) continue;
      if (isObject(raw.delta)) this.addDelta(raw.delta);
      if (typeof raw.finish_reason === 'string') this.finishReason = raw.finish_reason;
    }
    const u = normalizeUsage(c.usage);
    if (u) this.usage = u;
  }
}

/** Open WebUI's non-streamed answer (openai_chat_completion_message_template's fields). */
function completionShape(c: Record<string, unknown>, reply: Reply, fallbackModel: string, selectedModelId: string | null): Record<string, unknown> {
  const choice = isObject((c.choices as unknown[] | undefined)?.[0]) ? ((c.choices as unknown[])[0] as Record<string, unknown>) : {};
  // The upstream's own tool calls (as the proxy normalised them), else what was gathered.
  const given = isObject(choice.message) && Array.isArray(choice.message.tool_calls) ? choice.message.tool_calls : [];
  const toolCalls = given.length ? given : reply.toolCalls.length ? reply.toolCalls : null;
  const message: Record<string, unknown> = {
    role: 'assistant',
    // Open WebUI 0.10's rule: a reply that calls tools has content "" (never null), text kept if any.
    content: reply.content,
    ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
    ...(toolCalls ? { tool_calls: toolCalls } : {}),
  };
  return {
    id: c.id ?? `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: c.created ?? now(),
    model: c.model ?? fallbackModel,
    choices: [{ index: 0, logprobs: choice.logprobs ?? null, finish_reason: reply.finishReason ?? (toolCalls ? 'tool_calls' : 'stop'), message }],
    ...(reply.usage ? { usage: reply.usage } : {}),
    ...(selectedModelId ? { selected_model_id: selectedModelId } : {}),
  };
}

/** A message for the upstream: Open WebUI's bookkeeping keys left out. */
function forUpstream(m: Message): Message {
  const out: Message = {};
  for (const [k, v] of Object.entries(m)) if (!MESSAGE_BOOKKEEPING.has(k)) out[k] = v;
  return out;
}

function lastIndexOf<T>(xs: readonly T[], pred: (x: T) => boolean): number {
  for (let i = xs.length - 1; i >= 0; i--) if (pred(xs[i]!)) return i;
  return -1;
}

/** Open WebUI's add_or_update_system_message(…, append=False): text before the system content. */
function prependToSystem(messages: Message[], text: string): Message[] {
  const out = [...messages];
  const first = out[0];
  if (first && first.role === 'system') out[0] = { ...first, content: `${text}\n${typeof first.content === 'string' ? first.content : String(first.content ?? '')}` };
  else out.unshift({ role: 'system', content: text });
  return out;
}

interface StoredTurn {
  chatId: string;
  userMessageId: string | null;
  /** The user message this turn writes (null: the turn continues from an existing one, `parent_id`). */
  userMessage: (HistoryMessage & { id: string }) | null;
  /** The user message as the chat held it before this turn (merged over by the write). */
  userBefore: HistoryMessage | undefined;
  assistantId: string;
  /** The write of the user message and the reply's placeholder: true once done, false if it failed. */
  written: Promise<boolean>;
  /** The thread to `parent`, already asked for. */
  above?: { parent: string; rows: Promise<ChatMessageRow[]> };
}

/**
 * Plan a stored turn and start writing its user message and the assistant placeholder (done:
 * false) — not waited for here: the thread is read and the upstream asked meanwhile, and the reply
 * is sent to the client only once the write is done (`turnWritten`), so a failed write is still the
 * client's error and nothing is streamed for a turn that was not stored.
 */
function startStoredTurn(
  ctx: OpContext,
  chat: ChatRow,
  body: ChatCompletionForm,
  messages: Message[],
  requested: ModelEntry,
  selectedModelId: string | null,
  above?: StoredTurn['above'],
): StoredTurn & { write: Promise<void> } {
  const user = me(ctx);
  const given = body.user_message;
  const parentId = body.parent_id;
  const lastUser = lastIndexOf(messages, (m) => m.role === 'user');
  const history = isObject(chat.chat.history) ? chat.chat.history : {};
  const leaf = str(history.currentId);
  let userMessageId: string | null = null;
  let userMessage: (HistoryMessage & { id: string }) | null = null;
  if (given) {
    userMessageId = str(given.id) ?? parentId ?? randomUUID();
    userMessage = {
      ...given,
      id: userMessageId,
      role: 'user',
      // An explicit parentId (null included) is the client's; none given continues the current branch.
      parentId: 'parentId' in given ? (str(given.parentId) ?? null) : leaf,
      content: 'content' in given ? given.content : (messages[lastUser]?.content ?? ''),
    };
  } else if (parentId) {
    userMessageId = parentId;
  } else if (lastUser >= 0) {
    userMessageId = randomUUID();
    userMessage = { id: userMessageId, role: 'user', parentId: leaf, content: messages[lastUser]!.content ?? '' };
  }
  const assistantId = str(body.id) ?? randomUUID();
  const stored = isObject(history.messages) ? (history.messages as Record<string, unknown>) : {};
  const userBefore = userMessage && isObject(stored[userMessage.id]) ? (stored[userMessage.id] as HistoryMessage) : undefined;
  const write = ctx.sql.begin(async (tx) => {
    const reply: HistoryMessage & { id: string } = {
      id: assistantId,
      parentId: userMessageId ?? leaf,
      role: 'assistant',
      content: '',
      model: requested.id,
      done: false,
      // A regenerated reply starts clean (undefined keys leave the stored JSON).
      reasoning_content: undefined,
      tool_calls: undefined,
      usage: undefined,
      error: undefined,
      sources: undefined,
      ...(selectedModelId ? { selectedModelId, arena: true } : {}),
    };
    await upsertMessages(tx, chat.id, user.id, userMessage ? [userMessage, reply] : [reply], ctx);
  });
  const written = write.then(
    () => true,
    () => false,
  );
  return { chatId: chat.id, userMessageId, userMessage, userBefore, assistantId, write, written, ...(above ? { above } : {}) };
}

/** The reply as it ended (a cancelled one is done and marked stopped); an error is kept on the message. */
async function finishStoredTurn(ctx: OpContext, turn: StoredTurn, reply: Reply, outcome: 'done' | 'cancelled' | 'error', error?: string): Promise<void> {
  const user = me(ctx);
  await ctx.sql.begin(async (tx) => {
    await upsertMessages(
      tx,
      turn.chatId,
      user.id,
      [
        {
          id: turn.assistantId,
          content: reply.content,
          ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
          ...(reply.toolCalls.length ? { tool_calls: reply.toolCalls } : {}),
          ...(reply.usage ? { usage: reply.usage } : {}),
          ...(reply.sources.length ? { sources: reply.sources } : {}),
          done: true,
          ...(outcome === 'cancelled' ? { stopped: true } : {}),
          ...(outcome === 'error' ? { error: { content: error ?? 'error' } } : {}),
        },
      ],
      ctx,
      () =>
        ctx.emit(tx, 'chat.updated', {
          actor: user,
          subject: { type: 'chat', id: turn.chatId },
          data: { message_id: turn.assistantId, done: true, ...(outcome === 'cancelled' ? { stopped: true } : {}), ...(outcome === 'error' ? { error: true } : {}) },
        }),
    );
  });
}

/**
 * The stored thread to the turn's user message, read while the turn is being written: the thread
 * to its parent, then the user message as the write stores it (the same rows `threadTo` of the
 * user message reads once written). A user message already in its parent's thread (a loop) is
 * read back after the write, as before.
 */
async function storedThread(ctx: OpContext, turn: StoredTurn & { write: Promise<void> }): Promise<Pick<ChatMessageRow, 'id' | 'role' | 'content' | 'output' | 'tool_calls' | 'usage' | 'context_summary'>[]> {
  const userMessage = turn.userMessage;
  if (!userMessage) return threadTo(ctx.sql, turn.chatId, turn.userMessageId!);
  const parent = str(userMessage.parentId);
  const above = !parent ? [] : await (turn.above?.parent === parent ? turn.above.rows : threadTo(ctx.sql, turn.chatId, parent));
  if (above.some((r) => r.id === userMessage.id)) {
    await turn.write;
    return threadTo(ctx.sql, turn.chatId, userMessage.id);
  }
  return [...above, rowOf(turn.chatId, { ...mergeMessage(turn.userBefore, userMessage), id: userMessage.id })];
}

/** The conversation for a stored turn: the thread to the user message, with the request's tail. */
async function storedConversation(ctx: OpContext, turn: StoredTurn & { write: Promise<void> }, messages: Message[]): Promise<ConvMessage[] | null> {
  if (!turn.userMessageId) return null;
  const thread = await storedThread(ctx, turn);
  if (!thread.length || thread.at(-1)!.role !== 'user') return null;
  const conv = thread.map((r) => rowToMessage(r as ChatMessageRow));
  const lastUser = lastIndexOf(messages, (m) => m.role === 'user');
  // Rows keep text only; the request's own user turn keeps its images and blocks.
  if (lastUser >= 0 && messages[lastUser]!.content !== undefined) conv[conv.length - 1] = { ...conv.at(-1)!, content: messages[lastUser]!.content };
  // After the user turn the request may carry a tool exchange (the client ran the tools).
  for (const m of messages.slice(lastUser + 1)) conv.push(m as ConvMessage);
  return conv;
}

/** What one completion asks: the turn (null for an unstored chat), the request's messages, body and params. */
interface CompletionAsk {
  turn: (StoredTurn & { write: Promise<void> }) | null;
  messages: Message[];
  body: ChatCompletionForm;
  params: Record<string, unknown>;
  modelId: string;
  ragRequest: ReturnType<typeof ragItems>;
  /** Where the retrieved sources are kept (the reply stores them). */
  reply: Reply;
  signal: AbortSignal;
}

/**
 * The messages sent upstream, in Open WebUI's order: the stored thread (compacted) for a stored
 * turn, the memory context, the `params.system` prompt, then the retrieved context.
 */
async function upstreamConversation(ctx: OpContext, deps: CompletionsDeps, ask: CompletionAsk): Promise<Message[]> {
  const { turn, messages, body, params, ragRequest, reply, signal } = ask;
  const user = me(ctx);
  let upstreamMessages: Message[] = messages.map(forUpstream);
  const conv = turn ? await storedConversation(ctx, turn, messages) : null;
  if (turn && conv) {
    let lead = 0;
    while (lead < messages.length && messages[lead]!.role === 'system') lead++;
    const system = messages.slice(0, lead).map(forUpstream);
    const c = turn.userMessageId
      ? await compactForRequest(ctx, deps, { chatId: turn.chatId, checkpointId: turn.userMessageId, messages: conv, systemPrompt: systemText(system), modelId: ask.modelId, params, signal, written: turn.write })
      : { messages: conv, summary: null };
    upstreamMessages = [...system, ...c.messages.map(forUpstream)];
    if (c.summary) upstreamMessages = appendToSystem(upstreamMessages, `[CONVERSATION SUMMARY]\n${c.summary}`);
  }
  if (memoryWanted(await ctx.settings(), body.features)) {
    upstreamMessages = await addMemoryContext(ctx.sql, user, upstreamMessages, deps.memoryLimits);
  }
  const system = str(params.system);
  if (system) upstreamMessages = prependToSystem(upstreamMessages, promptTemplate(system, user));
  if (ragRequest.length) {
    const query = lastUserText(messages) ?? '';
    const stored = await ctx.settings();
    try {
      reply.sources = await retrieveSources(ragDeps(ctx.sql, user, ctx.log, stored, ctx.searchSql), ragRequest, query);
    } catch (err) {
      // Open WebUI answers without context when retrieval itself breaks (an embedding
      // endpoint down, a misconfigured engine); so do we.
      ctx.log.error({ err }, 'retrieval for the completion failed');
    }
    upstreamMessages = withRagContext(upstreamMessages, reply.sources, stored.RAG_TEMPLATE, query, deps.ragSystemContext);
  }
  return upstreamMessages;
}

/** Text of the system messages (what compaction counts as the system prompt). */
const systemText = (ms: Message[]): string => ms.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');

export function completionsHandler(deps: CompletionsDeps) {
  const idleMs = deps.upstreamIdleMs ?? 600_000;

  return async (req: ChatOpRequest, out: Out, hctx: HandlerContext): Promise<void> => {
    const ctx = await deps.authorize(req, hctx);
    const user: UserRow = me(ctx);
    const signal = hctx.signal;
    // The body's shape and the model first: an unknown model is the answer before a malformed message list.
    const head = ChatCompletionHead.safeParse(req.body);
    if (!head.success) fail(400, COMPLETION_ERRORS.body);
    const requested = head.data.model ? await deps.models.get(head.data.model) : undefined;
    if (!requested) fail(400, 'Model not found');
    let target = requested;
    let selectedModelId: string | null = null;
    if (requested.owned_by === 'arena') {
      const pick = pickArenaMember(requested, await deps.models.list());
      if (!pick) fail(400, 'Model not found');
      target = pick;
      selectedModelId = pick.id;
    }
    const form = ChatCompletionForm.safeParse(req.body);
    if (!form.success) fail(400, COMPLETION_ERRORS.messages);
    const body = form.data;
    const messages: Message[] = body.messages;
    // Checked before anything is stored: a malformed `files` is the client's 400, not half a turn.
    const ragRequest = ragItems(body);
    const params = body.params ?? {};
    const stream = typeof params.stream_response === 'boolean' ? params.stream_response : body.stream === true;

    // Stored chats: not `local:` (temporary) nor `channel:` ids, and only the caller's or write-shared.
    const chatIdRaw = body.chat_id;
    const chatId = chatIdRaw && !chatIdRaw.startsWith('local:') && !chatIdRaw.startsWith('channel:') ? chatIdRaw : null;
    // The thread above a user message that names its parent is read beside the access check (and
    // dropped unread if the caller may not write the chat).
    const givenParent = chatId && body.user_message ? str(body.user_message.parentId) : null;
    const above = givenParent ? threadTo(ctx.sql, chatId!, givenParent) : undefined;
    above?.catch(() => undefined);
    const chat = chatId ? await loadChatFor(ctx.sql, user, chatId, 'write') : null;
    const turn = chat ? startStoredTurn(ctx, chat, body, messages, requested, selectedModelId, above && { parent: givenParent!, rows: above }) : null;
    // Waited for (and its failure thrown) before anything of the reply reaches the client.
    const turnWritten = async () => void (turn && (await turn.write));

    const reply = new Reply();
    let metaSent = false;
    try {
      const upstreamMessages = await upstreamConversation(ctx, deps, { turn, messages, body, params, modelId: target.id, ragRequest, reply, signal });
      const sourcesEvent = reply.sources.length ? sseData({ sources: reply.sources }) : null;

      const upstreamBody: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(body)) if (!OWUI_FIELDS.has(k)) upstreamBody[k] = v;
      applyParams(upstreamBody, params);
      upstreamBody.messages = upstreamMessages;

      if (stream) {
        let pending: Buffer | null = null;
        const chunks = new ChunkWriter(target.id);
        // What the frames at hand add to the answer, written out as one chunk once they are handled.
        let text = '';
        const flushText = () => {
          if (!text) return;
          out.chunk(utf8(text));
          text = '';
        };
        const open = () => {
          out.meta({ status: 200, contentType: 'text/event-stream; charset=utf-8' });
          metaSent = true;
          if (selectedModelId) text += sseData({ selected_model_id: selectedModelId });
          if (sourcesEvent) text += sourcesEvent;
        };
        type Frame = StreamFrame<{ model: string; owned_by: string; sse?: boolean }, { finish_reason: string | null; usage: Record<string, unknown> | null }>;
        // The proxy writes each chunk's SSE event itself when its meta says so (asked with `sse`):
        // the bytes go on as they are, and a stored turn's reply is read from them when it settles.
        let forward = false;
        const handle = (f: Frame) => {
          if (f.kind === 'meta') {
            forward = f.meta.sse === true;
            open();
          } else if (f.kind === 'chunk' && forward) {
            if (!metaSent) open();
            flushText();
            // A copy: the frame's bytes are a view into the bus's read buffer, and leave after this turn.
            const bytes = Buffer.from(f.data);
            out.chunk(bytes);
            if (turn) reply.addSse(bytes);
          } else if (f.kind === 'chunk') {
            // A chunk bigger than one bus frame comes in pieces: parse once it is whole.
            const bytes: Buffer = pending ? Buffer.concat([pending, f.data]) : Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength);
            let chunk: unknown;
            try {
              chunk = JSON.parse(bytes.toString('utf8'));
              pending = null;
            } catch {
              // Kept as a copy: the frame's bytes are a view into the bus's read buffer.
              pending = Buffer.from(bytes);
              return;
            }
            if (!isObject(chunk)) return;
            if (!metaSent) open();
            reply.addChunk(chunk);
            text += chunks.sse(chunk);
          } else if (f.kind === 'end') {
            if (f.end.finish_reason && !reply.finishReason) reply.finishReason = f.end.finish_reason;
            const u = normalizeUsage(f.end.usage);
            if (u && !reply.usage) reply.usage = u;
          }
        };
        const frames = openBusStream(
          deps.bus,
          llmConnectionContracts.chat,
          { model: target.id, body: upstreamBody, stream: true, sse: true },
          { signal, idleTimeoutMs: idleMs, trace: hctx },
        );
        try {
          // The upstream is asked while the turn is written; its answer waits for the write.
          await turnWritten();
          // Each wait for a frame, then every frame that arrived with it (one bus message holds the
          // chunks of one upstream read): handled together, they leave as one chunk.
          for (let f = await frames.next(); f; f = frames.ended ? undefined : await frames.next()) {
            try {
              for (let g: Frame | undefined = f; g; g = frames.ended ? undefined : frames.buffered()) handle(g);
            } finally {
              // A failure after some frames (the stream's error, the proxy gone) still sends what they made, first.
              flushText();
            }
          }
        } finally {
          frames.close();
        }
        if (!metaSent) {
          out.meta({ status: 200, contentType: 'text/event-stream; charset=utf-8' });
          metaSent = true;
          if (sourcesEvent) text += sourcesEvent;
        }
        text += SSE_DONE;
        flushText();
      } else {
        await turnWritten();
        const { completion, usage, finishReason } = await upstreamCompletion(deps.bus, target.id, { ...upstreamBody }, signal, hctx);
        const choice = (completion.choices as unknown[] | undefined)?.[0];
        const message = isObject(choice) && isObject(choice.message) ? choice.message : {};
        reply.addDelta(message);
        reply.finishReason = (isObject(choice) && typeof choice.finish_reason === 'string' ? choice.finish_reason : null) ?? finishReason;
        reply.usage = normalizeUsage(completion.usage) ?? normalizeUsage(usage);
        // Open WebUI merges its events' keys in front of the completion's.
        const shaped = { ...(reply.sources.length ? { sources: reply.sources } : {}), ...completionShape(completion, reply, target.id, selectedModelId) };
        out.meta({ status: 200, contentType: 'application/json' });
        metaSent = true;
        out.chunk(utf8(JSON.stringify(shaped)));
      }
      if (turn) await settle(ctx, turn, reply, 'done');
      out.end({});
    } catch (err) {
      // The turn's own write failed: its error, as when nothing was done before it.
      if (turn && !metaSent && !(await turn.written)) throw err;
      if (signal.aborted) {
        // The client is gone: keep what was produced, answer nobody.
        if (turn) await settle(ctx, turn, reply, 'cancelled');
        throw err;
      }
      // The database away or out of connections is the client's 503 (retry), as on every other route.
      const e = err instanceof BusError ? err : (storeUnavailable(err) ?? new BusError(500, 'The chat completion failed.'));
      if (!(err instanceof BusError)) ctx.log[e.status === 503 ? 'warn' : 'error']({ err }, 'chat completion failed');
      if (turn) await settle(ctx, turn, reply, 'error', e.message);
      if (!metaSent) throw e;
      out.chunk(utf8(sseError(e.message)));
      out.end({});
    }
  };
}

/** Store how the turn ended; a failure to store is logged, never thrown over the reply. */
async function settle(ctx: OpContext, turn: StoredTurn, reply: Reply, outcome: 'done' | 'cancelled' | 'error', error?: string): Promise<void> {
  // A turn whose start was not stored has nothing to finish (its failure is the client's error).
  if (!(await turn.written)) return;
  reply.absorbSse();
  try {
    await finishStoredTurn(ctx, turn, reply, outcome, error);
  } catch (err) {
    ctx.log.error({ err, chat: turn.chatId, message: turn.assistantId }, 'could not store the reply');
  }
}
