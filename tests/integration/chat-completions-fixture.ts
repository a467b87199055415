import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';
import { startFakeOllama } from '../../scripts/src/fake-upstreams/ollama.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream, Recorded } from '../../scripts/src/fake-upstreams/common.ts';
import { chatClient, chatDb, type Account } from './chat-fixture.ts';

/**
 * What the `POST /api/chat/completions` test files share (chat-completions.test.ts: answers on the
 * wire; chat-completions-stored.test.ts: memories, stored chats, compaction;
 * chat-completions-errors.test.ts: cancellation, upstream errors, bad requests): the chat face over
 * real HTTP, as Open WebUI clients call it: the chat worker, the proxy worker's connection registry
 * and an edge, with a fake OpenAI server (connection 0, and connection 1 = the same server under
 * prefix `bad` listing error models) and a fake Ollama. What the fakes recorded shows what went
 * upstream; the chat worker's schema shows what was stored. Arena model `duel` = {echo (OpenAI),
 * echo:latest (Ollama)}; compaction on. Each test file imports its own instance of this module
 * (vitest isolates files) and calls useCompletionsStack() for its own stack; the `let` exports are
 * live bindings, set in its beforeAll.
 */
const stack = new Stack();
const db = chatDb(stack);
const openaiKey = newKey();
export let edge: Edge;
export let oa: FakeUpstream;
export let ol: FakeUpstream;

export let admin: Account;
export let alice: Account;
export let bob: Account;
export let carol: Account;

export const marker = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

// Content types are asserted where they matter (completions: SSE, JSON or error), as before.
export const { call, signup, addUser } = chatClient(() => edge.chatUrl, { json: false });

export function complete(who: Account | null, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${edge.chatUrl}/api/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(who ? { authorization: `Bearer ${who.token}` } : {}) },
    body: JSON.stringify(body),
    signal,
  });
}

/** A non-streamed completion: status, content type and the parsed body. */
export async function completeJson(who: Account | null, body: Record<string, unknown>): Promise<{ status: number; type: string; body: any; text: string }> {
  const r = await complete(who, { stream: false, ...body });
  const text = await r.text();
  return { status: r.status, type: r.headers.get('content-type') ?? '', body: JSON.parse(text), text };
}

/** SSE events as sent: each `data: …\n\n` whole. */
export function splitEvents(text: string): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length) {
    const end = rest.indexOf('\n\n');
    if (end < 0) {
      out.push(rest);
      break;
    }
    out.push(rest.slice(0, end + 2));
    rest = rest.slice(end + 2);
  }
  return out;
}

/** A streamed completion: the raw text, its events and the JSON of each data event but [DONE]. */
export async function completeStream(who: Account | null, body: Record<string, unknown>): Promise<{ status: number; type: string; text: string; events: string[]; data: any[] }> {
  const r = await complete(who, { stream: true, ...body });
  const text = await r.text();
  const events = splitEvents(text);
  const data = events.filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]\n\n').map((e) => JSON.parse(e.slice(6)));
  return { status: r.status, type: r.headers.get('content-type') ?? '', text, events, data };
}

/** What a fake received for the request carrying `mark` (the newest one). */
export function sentTo(fake: FakeUpstream, mark: string): Recorded | undefined {
  return [...fake.requests].reverse().find((r) => r.method === 'POST' && r.raw.toString('utf8').includes(mark));
}

export const deltas = (data: any[]) => data.flatMap((d) => (d.choices ?? []).map((c: any) => c.delta ?? {}));
export const joined = (data: any[], key: string) => deltas(data).map((d: any) => d[key] ?? '').join('');

export async function newChat(who: Account, title = 'Chat'): Promise<string> {
  const r = await call('/api/v1/chats/new', who, 'POST', { chat: { title, models: ['echo'], history: { messages: {}, currentId: null } } });
  expect(r.status).toBe(200);
  return r.body.id;
}

export type Row = { id: string; role: string; parent_id: string | null; content: string; reasoning: string | null; tool_calls: any; model_id: string | null; selected_model_id: string | null; usage: any; context_summary: string | null; done: boolean };
export async function rows(chatId: string): Promise<Record<string, Row>> {
  const rs = await db<Row[]>`select id, role, parent_id, content, reasoning, tool_calls, model_id, selected_model_id, usage, context_summary, done
    from chat_message where chat_id = ${chatId}`;
  return Object.fromEntries(rs.map((r) => [r.id, r]));
}
export async function eventsOf(chatId: string): Promise<{ name: string; subject: string; data: any }[]> {
  return db<{ name: string; subject: string; data: any }[]>`
    select event ->> 'event' as name, event -> 'subject' ->> 'id' as subject, event -> 'data' as data from outbox
    where event -> 'subject' ->> 'id' = ${chatId} or event -> 'data' ->> 'chat_id' = ${chatId} order by seq`;
}

/** Starts the fakes, workers and edge and signs up the four users before the file's tests; stops them after. */
export function useCompletionsStack(): void {
  beforeAll(async () => {
    oa = await startFakeOpenAI({ apiKey: openaiKey });
    ol = await startFakeOllama();
    await stack.startProxyWorker({
      OPENAI_API_BASE_URLS: `${oa.url};${oa.url}`,
      OPENAI_API_KEYS: `${openaiKey};${openaiKey}`,
      OPENAI_API_CONFIGS: JSON.stringify({ '1': { prefix_id: 'bad', model_ids: ['error-429', 'error-500'] } }),
      OLLAMA_BASE_URLS: ol.url,
    });
    await stack.startChatWorker({
      EVALUATION_ARENA_MODELS: JSON.stringify([{ id: 'duel', name: 'Duel', meta: { model_ids: ['echo', 'echo:latest'] } }]),
      ENABLE_CONTEXT_COMPACTION: 'true',
    });
    edge = await stack.startEdge({ EDGE_FACES: 'chat' });
    admin = await signup();
    alice = await addUser(admin, 'Alice');
    bob = await addUser(admin, 'Bob');
    carol = await addUser(admin, 'Carol');
  });

  afterAll(async () => {
    await db.end({ timeout: 5 });
    await stack.close();
    await Promise.all([oa?.close(), ol?.close()]);
  });
}
