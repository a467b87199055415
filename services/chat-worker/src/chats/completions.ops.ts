import { ChatCompletionForm, ChatCompletionHead, COMPLETION_ERRORS, llmConnectionContracts, type ChatOpRequest } from '@gatehouse/contracts';
import { BusError, ChunkWriter, normalizeOwuiUsage as normalizeUsage, openBusStream, SSE_DONE, sseData, sseError, storeUnavailable, utf8, type Bus, type HandlerContext, type StreamFrame, type StreamWriter } from '@gatehouse/common';
import { fail, me, type OpContext, type UserRow } from '../context.ts';
import { loadChatFor, threadTo } from './chats.store.ts';
import { compactForRequest, promptTemplate, upstreamCompletion } from './compaction.ts';
import { addMemoryContext, appendToSystem, memoryWanted, type MemoryLimits } from '../memories/system-context.ts';
import { lastUserText, ragDeps, ragItems, retrieveSources, withRagContext } from '../retrieval/rag.ts';
import { webSources } from '../retrieval/web.ops.ts';
import { pickArenaMember, type ModelEntry, type ModelRegistry } from '../config/models.ops.ts';
import { presetFor, presetKnowledge } from '../workspace-models/models.ops.ts';
import type { ModelRow } from '../workspace-models/models.store.ts';
// The request's shapes, the reply's and the stored turn live in ../completions/; this file is the
// handler: the order of its steps and what each answers.
import { forUpstream, isObject, prependToSystem, str, systemText, upstreamBodyOf, type Message } from './completions/messages.ts';
import { completionShape, Reply } from './completions/reply.ts';
import { settle, startStoredTurn, storedConversation, type OpenTurn } from './completions/stored-turn.ts';

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
 * - Memories (memories/system-context.ts) go into the system message unless switched off.
 * - Retrieval (retrieval/rag.ts): `files` (or `metadata.files`) naming knowledge bases and files
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

/** What one completion asks: the turn (null for an unstored chat), the request's messages, body and params. */
interface CompletionAsk {
  turn: OpenTurn | null;
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
  // Attached web pages and the web-search toggle (retrieval/web.ops.ts) join the retrieved sources.
  const web = await webSources(ctx, body, lastUserText(messages) ?? '').catch((err) => (ctx.log.error({ err }, 'web sources failed'), []));
  if (ragRequest.length || web.length) {
    const query = lastUserText(messages) ?? '';
    const stored = await ctx.settings();
    try {
      if (ragRequest.length) reply.sources = await retrieveSources(ragDeps(ctx.sql, user, ctx.log, stored, ctx.searchSql), ragRequest, query);
    } catch (err) {
      // Open WebUI answers without context when retrieval itself breaks (an embedding
      // endpoint down, a misconfigured engine); so do we.
      ctx.log.error({ err }, 'retrieval for the completion failed');
    }
    reply.sources.push(...web);
    upstreamMessages = withRagContext(upstreamMessages, reply.sources, stored.RAG_TEMPLATE, query, deps.ragSystemContext);
  }
  return upstreamMessages;
}

/**
 * The model asked for and the one that answers (an arena's member, named in `selectedModelId`).
 * A workspace preset the caller may use answers as its base model, the preset returned with it.
 */
async function resolveModel(deps: CompletionsDeps, raw: unknown, ctx: OpContext): Promise<{ requested: ModelEntry; target: ModelEntry; selectedModelId: string | null; preset: ModelRow | undefined }> {
  // The body's shape and the model first: an unknown model is the answer before a malformed message list.
  const head = ChatCompletionHead.safeParse(raw);
  if (!head.success) fail(400, COMPLETION_ERRORS.body);
  const preset = head.data.model ? await presetFor(ctx.sql, me(ctx), head.data.model) : undefined;
  const base = preset ? await deps.models.get(preset.base_model_id!) : undefined;
  if (preset && !base) fail(400, 'Model not found');
  const requested = base ? { ...base, id: preset!.id, name: preset!.name } : head.data.model ? await deps.models.get(head.data.model) : undefined;
  if (!requested) fail(400, 'Model not found');
  let target = base ?? requested;
  let selectedModelId: string | null = null;
  if (target.owned_by === 'arena') {
    const pick = pickArenaMember(target, await deps.models.list());
    if (!pick) fail(400, 'Model not found');
    target = pick;
    selectedModelId = pick.id;
  }
  return { requested, target, selectedModelId, preset };
}

/** The preset's knowledge first, then the request's items it does not already name. */
function withPresetKnowledge(knowledge: ReturnType<typeof ragItems>, asked: ReturnType<typeof ragItems>): ReturnType<typeof ragItems> {
  const key = (i: { type: string; id: string }) => `${i.type}:${i.id}`;
  const seen = new Set(knowledge.map(key));
  return [...knowledge, ...asked.filter((i) => !seen.has(key(i)))];
}

/** The whole body, read once the model is known: messages, retrieval items, params and whether to stream. */
function readRequest(raw: unknown) {
  const form = ChatCompletionForm.safeParse(raw);
  if (!form.success) fail(400, COMPLETION_ERRORS.messages);
  const body = form.data;
  const messages: Message[] = body.messages;
  // Checked before anything is stored: a malformed `files` is the client's 400, not half a turn.
  const ragRequest = ragItems(body);
  const params = body.params ?? {};
  const stream = typeof params.stream_response === 'boolean' ? params.stream_response : body.stream === true;
  return { body, messages, ragRequest, params, stream };
}

/** A stored chat's turn, its write started (null when the chat is not stored); the caller must be able to write the chat. */
async function openStoredTurn(ctx: OpContext, user: UserRow, body: ChatCompletionForm, messages: Message[], requested: ModelEntry, selectedModelId: string | null): Promise<OpenTurn | null> {
  // Stored chats: not `local:` (temporary) nor `channel:` ids, and only the caller's or write-shared.
  const chatIdRaw = body.chat_id;
  const chatId = chatIdRaw && !chatIdRaw.startsWith('local:') && !chatIdRaw.startsWith('channel:') ? chatIdRaw : null;
  // The thread above a user message that names its parent is read beside the access check (and
  // dropped unread if the caller may not write the chat).
  const givenParent = chatId && body.user_message ? str(body.user_message.parentId) : null;
  const above = givenParent ? threadTo(ctx.sql, chatId!, givenParent) : undefined;
  above?.catch(() => undefined);
  const chat = chatId ? await loadChatFor(ctx.sql, user, chatId, 'write') : null;
  return chat ? startStoredTurn(ctx, chat, body, messages, requested, selectedModelId, above && { parent: givenParent!, rows: above }) : null;
}

/** What the answering steps share: where the answer goes and what it is made of. */
interface Answer {
  deps: CompletionsDeps;
  out: Out;
  hctx: HandlerContext;
  idleMs: number;
  /** The model that answers, and an arena's pick to announce. */
  model: string;
  selectedModelId: string | null;
  turn: OpenTurn | null;
  reply: Reply;
  upstreamBody: Record<string, unknown>;
  sourcesEvent: string | null;
  /** Set once the status and content type have gone: after that a failure is an in-stream error event. */
  metaSent: boolean;
}

/** Waited for (and its failure thrown) before anything of the reply reaches the client. */
const turnWritten = async (a: Answer) => void (a.turn && (await a.turn.write));

/** The streamed answer: the proxy's chunks as SSE events as they arrive, then [DONE]. */
async function streamAnswer(a: Answer): Promise<void> {
  const { deps, out, hctx, turn, reply, selectedModelId, sourcesEvent } = a;
  let pending: Buffer | null = null;
  const chunks = new ChunkWriter(a.model);
  // What the frames at hand add to the answer, written out as one chunk once they are handled.
  let text = '';
  const flushText = () => {
    if (!text) return;
    out.chunk(utf8(text));
    text = '';
  };
  const open = () => {
    out.meta({ status: 200, contentType: 'text/event-stream; charset=utf-8' });
    a.metaSent = true;
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
      if (!a.metaSent) open();
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
      if (!a.metaSent) open();
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
    { model: a.model, body: a.upstreamBody, stream: true, sse: true },
    { signal: hctx.signal, idleTimeoutMs: a.idleMs, trace: hctx },
  );
  try {
    // The upstream is asked while the turn is written; its answer waits for the write.
    await turnWritten(a);
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
  if (!a.metaSent) {
    out.meta({ status: 200, contentType: 'text/event-stream; charset=utf-8' });
    a.metaSent = true;
    if (sourcesEvent) text += sourcesEvent;
  }
  text += SSE_DONE;
  flushText();
}

/** The non-streamed answer: one chat.completion object in Open WebUI's shape. */
async function jsonAnswer(a: Answer): Promise<void> {
  const { out, reply } = a;
  await turnWritten(a);
  const { completion, usage, finishReason } = await upstreamCompletion(a.deps.bus, a.model, { ...a.upstreamBody }, a.hctx.signal, a.hctx);
  const choice = (completion.choices as unknown[] | undefined)?.[0];
  const message = isObject(choice) && isObject(choice.message) ? choice.message : {};
  reply.addDelta(message);
  reply.finishReason = (isObject(choice) && typeof choice.finish_reason === 'string' ? choice.finish_reason : null) ?? finishReason;
  reply.usage = normalizeUsage(completion.usage) ?? normalizeUsage(usage);
  // Open WebUI merges its events' keys in front of the completion's.
  const shaped = { ...(reply.sources.length ? { sources: reply.sources } : {}), ...completionShape(completion, reply, a.model, a.selectedModelId) };
  out.meta({ status: 200, contentType: 'application/json' });
  a.metaSent = true;
  out.chunk(utf8(JSON.stringify(shaped)));
}

/**
 * How a failure ends the request: thrown as the client's error while nothing was sent (and when
 * the turn's own write failed, or the client went away), else an in-stream error event; the turn
 * keeps what was produced either way.
 */
async function answerFailure(ctx: OpContext, a: Answer, err: unknown): Promise<void> {
  const { out, turn, reply } = a;
  // The turn's own write failed: its error, as when nothing was done before it.
  if (turn && !a.metaSent && !(await turn.written)) throw err;
  if (a.hctx.signal.aborted) {
    // The client is gone: keep what was produced, answer nobody.
    if (turn) await settle(ctx, turn, reply, 'cancelled');
    throw err;
  }
  // The database away or out of connections is the client's 503 (retry), as on every other route.
  const e = err instanceof BusError ? err : (storeUnavailable(err) ?? new BusError(500, 'The chat completion failed.'));
  if (!(err instanceof BusError)) ctx.log[e.status === 503 ? 'warn' : 'error']({ err }, 'chat completion failed');
  if (turn) await settle(ctx, turn, reply, 'error', e.message);
  if (!a.metaSent) throw e;
  out.chunk(utf8(sseError(e.message)));
  out.end({});
}

export function completionsHandler(deps: CompletionsDeps) {
  const idleMs = deps.upstreamIdleMs ?? 600_000;

  return async (req: ChatOpRequest, out: Out, hctx: HandlerContext): Promise<void> => {
    const ctx = await deps.authorize(req, hctx);
    const user: UserRow = me(ctx);
    const { requested, target, selectedModelId, preset } = await resolveModel(deps, req.body, ctx);
    const asked = readRequest(req.body);
    const { body, messages, stream } = asked;
    // A preset's params go under the request's own; its knowledge is searched beside the request's files.
    const params = preset ? { ...preset.params, ...asked.params } : asked.params;
    const ragRequest = preset ? withPresetKnowledge(presetKnowledge(preset), asked.ragRequest) : asked.ragRequest;
    const turn = await openStoredTurn(ctx, user, body, messages, requested, selectedModelId);
    const reply = new Reply();
    const a: Answer = { deps, out, hctx, idleMs, model: target.id, selectedModelId, turn, reply, upstreamBody: {}, sourcesEvent: null, metaSent: false };
    try {
      const upstreamMessages = await upstreamConversation(ctx, deps, { turn, messages, body, params, modelId: target.id, ragRequest, reply, signal: hctx.signal });
      a.sourcesEvent = reply.sources.length ? sseData({ sources: reply.sources }) : null;
      a.upstreamBody = upstreamBodyOf(body, params, upstreamMessages);
      if (stream) await streamAnswer(a);
      else await jsonAnswer(a);
      if (turn) await settle(ctx, turn, reply, 'done');
      out.end({});
    } catch (err) {
      await answerFailure(ctx, a, err);
    }
  };
}
