import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, Stack, waitFor, type Edge } from '../support/local-stack.ts';
import { startFakeOllama } from '../../scripts/src/fake-upstreams/ollama.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import { tokenCount, type FakeUpstream, type Recorded } from '../../scripts/src/fake-upstreams/common.ts';
import { chatClient, chatDb, NOT_FOUND, type Account } from './chat-fixture.ts';

/**
 * `POST /api/chat/completions` on the chat face over real HTTP, as Open WebUI clients call it: the
 * chat worker, the proxy worker's connection registry and an edge, with a fake OpenAI server
 * (connection 0, and connection 1 = the same server under prefix `bad` listing error models) and a
 * fake Ollama. What the fakes recorded shows what went upstream; the chat worker's schema shows
 * what was stored. Arena model `duel` = {echo (OpenAI), echo:latest (Ollama)}; compaction on.
 */
const stack = new Stack();
const db = chatDb(stack);
const openaiKey = newKey();
let edge: Edge;
let oa: FakeUpstream;
let ol: FakeUpstream;

let admin: Account;
let alice: Account;
let bob: Account;
let carol: Account;

const marker = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

// Content types are asserted where they matter (completions: SSE, JSON or error), as before.
const { call, signup, addUser } = chatClient(() => edge.chatUrl, { json: false });

function complete(who: Account | null, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${edge.chatUrl}/api/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(who ? { authorization: `Bearer ${who.token}` } : {}) },
    body: JSON.stringify(body),
    signal,
  });
}

/** A non-streamed completion: status, content type and the parsed body. */
async function completeJson(who: Account | null, body: Record<string, unknown>): Promise<{ status: number; type: string; body: any; text: string }> {
  const r = await complete(who, { stream: false, ...body });
  const text = await r.text();
  return { status: r.status, type: r.headers.get('content-type') ?? '', body: JSON.parse(text), text };
}

/** SSE events as sent: each `data: …\n\n` whole. */
function splitEvents(text: string): string[] {
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
async function completeStream(who: Account | null, body: Record<string, unknown>): Promise<{ status: number; type: string; text: string; events: string[]; data: any[] }> {
  const r = await complete(who, { stream: true, ...body });
  const text = await r.text();
  const events = splitEvents(text);
  const data = events.filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]\n\n').map((e) => JSON.parse(e.slice(6)));
  return { status: r.status, type: r.headers.get('content-type') ?? '', text, events, data };
}

/** What a fake received for the request carrying `mark` (the newest one). */
function sentTo(fake: FakeUpstream, mark: string): Recorded | undefined {
  return [...fake.requests].reverse().find((r) => r.method === 'POST' && r.raw.toString('utf8').includes(mark));
}

const deltas = (data: any[]) => data.flatMap((d) => (d.choices ?? []).map((c: any) => c.delta ?? {}));
const joined = (data: any[], key: string) => deltas(data).map((d: any) => d[key] ?? '').join('');

async function newChat(who: Account, title = 'Chat'): Promise<string> {
  const r = await call('/api/v1/chats/new', who, 'POST', { chat: { title, models: ['echo'], history: { messages: {}, currentId: null } } });
  expect(r.status).toBe(200);
  return r.body.id;
}

type Row = { id: string; role: string; parent_id: string | null; content: string; reasoning: string | null; tool_calls: any; model_id: string | null; selected_model_id: string | null; usage: any; context_summary: string | null; done: boolean };
async function rows(chatId: string): Promise<Record<string, Row>> {
  const rs = await db<Row[]>`select id, role, parent_id, content, reasoning, tool_calls, model_id, selected_model_id, usage, context_summary, done
    from chat_message where chat_id = ${chatId}`;
  return Object.fromEntries(rs.map((r) => [r.id, r]));
}
async function eventsOf(chatId: string): Promise<{ name: string; subject: string; data: any }[]> {
  return db<{ name: string; subject: string; data: any }[]>`
    select event ->> 'event' as name, event -> 'subject' ->> 'id' as subject, event -> 'data' as data from outbox
    where event -> 'subject' ->> 'id' = ${chatId} or event -> 'data' ->> 'chat_id' = ${chatId} order by seq`;
}

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

describe('streamed and non-streamed answers', () => {
  it('streams OpenAI chunks byte for byte in Open WebUI form, ending with [DONE]', async () => {
    const text = `Grüße 🌍 ${marker('bytes')}`;
    const r = await completeStream(bob, { model: 'echo', messages: [{ role: 'user', content: text }] });
    expect(r.status).toBe(200);
    expect(r.type).toBe('text/event-stream; charset=utf-8');
    const head = /^data: \{"id": "(chatcmpl-[^"]+)", "object": "chat\.completion\.chunk", "created": (\d+), /.exec(r.text);
    expect(head).not.toBeNull();
    const [, id, created] = head!;
    // Python's json.dumps: ", " and ": " separators, every non-ASCII character escaped.
    const esc = (s: string) => JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const chunk = (delta: string, finish: string | null) =>
      `data: {"id": "${id}", "object": "chat.completion.chunk", "created": ${created}, "model": "echo", "choices": [{"index": 0, "logprobs": null, "finish_reason": ${finish ? `"${finish}"` : 'null'}, "delta": ${delta}}]}\n\n`;
    const prompt = tokenCount(text);
    const completion = tokenCount(`echo: ${text}`);
    const words = `echo: ${text}`.match(/\s*\S+/g)!;
    const expected = [
      chunk('{"role": "assistant", "content": "", "refusal": null}', null),
      ...words.map((w) => chunk(`{"content": ${esc(w)}}`, null)),
      chunk('{}', 'stop'),
      `data: {"id": "${id}", "object": "chat.completion.chunk", "created": ${created}, "model": "echo", "choices": [], "usage": {"prompt_tokens": ${prompt}, "completion_tokens": ${completion}, "total_tokens": ${prompt + completion}, "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}, "input_tokens": ${prompt}, "output_tokens": ${completion}}}\n\n`,
      'data: [DONE]\n\n',
    ].join('');
    expect(r.text).toBe(expected);
    expect(r.text).toContain('{"content": " Gr\\u00fc\\u00dfe"}');
    expect(r.text).toContain('\\ud83c\\udf0d');
  });

  it('streams an Ollama model as OpenAI chunks with one shared id, the role first, usage on the last', async () => {
    const text = marker('ollama-stream');
    const r = await completeStream(bob, { model: 'echo:latest', messages: [{ role: 'user', content: text }] });
    expect(r.status).toBe(200);
    expect(r.events.at(-1)).toBe('data: [DONE]\n\n');
    for (const e of r.events.slice(0, -1)) {
      const d = JSON.parse(e.slice(6));
      expect(Object.keys(d).slice(0, 5)).toEqual(['id', 'object', 'created', 'model', 'choices']);
      expect(Object.keys(d.choices[0])).toEqual(['index', 'logprobs', 'finish_reason', 'delta']);
      expect(e).toMatch(/^data: \{"id": "chatcmpl-[0-9a-f-]{36}", "object": "chat\.completion\.chunk", /);
    }
    expect(new Set(r.data.map((d) => d.id)).size).toBe(1);
    expect(r.data.every((d) => d.model === 'echo:latest')).toBe(true);
    expect(r.data[0].choices[0].delta.role).toBe('assistant');
    expect(joined(r.data, 'content')).toBe(`echo: ${text}`);
    const last = r.data.at(-1);
    expect(last.choices[0]).toEqual({ index: 0, logprobs: null, finish_reason: 'stop', delta: {} });
    expect(last.usage).toMatchObject({ input_tokens: tokenCount(text), output_tokens: tokenCount(`echo: ${text}`), prompt_eval_count: tokenCount(text) });
    expect(sentTo(ol, text)!.json).toMatchObject({ model: 'echo:latest', stream: true, messages: [{ role: 'user', content: text }] });
  });

  it('answers one chat.completion object when not streamed, usage with Open WebUI\'s token fields', async () => {
    const text = marker('plain');
    const r = await completeJson(bob, { model: 'echo', messages: [{ role: 'user', content: text }], temperature: 0.3, params: { top_p: 0.5, stop: ['\\n\\n'], function_calling: 'native' } });
    expect(r.status).toBe(200);
    expect(r.type).toBe('application/json');
    const prompt = tokenCount(text);
    const completion = tokenCount(`echo: ${text}`);
    expect(r.body).toEqual({
      id: r.body.id,
      object: 'chat.completion',
      created: r.body.created,
      model: 'echo',
      choices: [{ index: 0, logprobs: null, finish_reason: 'stop', message: { role: 'assistant', content: `echo: ${text}` } }],
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
        input_tokens: prompt,
        output_tokens: completion,
      },
    });
    expect(Object.keys(r.body)).toEqual(['id', 'object', 'created', 'model', 'choices', 'usage']);
    expect(r.body.id).toMatch(/^chatcmpl-/);
    // Params become body fields (stop sequences unescaped); Open WebUI's own fields stay home.
    const sent = sentTo(oa, text)!.json as Record<string, unknown>;
    expect(sent).toMatchObject({ model: 'echo', stream: false, temperature: 0.3, top_p: 0.5, stop: ['\n\n'], messages: [{ role: 'user', content: text }] });
    for (const k of ['params', 'chat_id', 'features', 'function_calling']) expect(sent).not.toHaveProperty(k);
  });
});

describe('reasoning arrives apart from the answer', () => {
  const cases: { model: string; reasoning: (t: string) => string; content: (t: string) => string }[] = [
    { model: 'reasoning', reasoning: () => 'Let me think about this step by step.', content: (t) => `echo: ${t}` },
    { model: 'ollama-reasoning', reasoning: () => 'The user wants an answer. I will give one.', content: (t) => `echo: ${t}` },
    { model: 'think-tags', reasoning: () => 'pondering', content: () => 'The answer.' },
    { model: 'reasoning:latest', reasoning: () => 'Let me think about this step by step.', content: (t) => `echo: ${t}` },
    { model: 'think-tags:latest', reasoning: () => 'pondering', content: () => 'The answer.' },
  ];
  for (const c of cases) {
    it(`${c.model}: streamed as delta.reasoning_content, and message.reasoning_content when not streamed`, async () => {
      const t = marker(c.model);
      const s = await completeStream(bob, { model: c.model, messages: [{ role: 'user', content: t }] });
      expect(s.status).toBe(200);
      expect(joined(s.data, 'reasoning_content')).toBe(c.reasoning(t));
      expect(joined(s.data, 'content')).toBe(c.content(t));
      for (const d of deltas(s.data)) {
        expect(d).not.toHaveProperty('reasoning');
        expect(d).not.toHaveProperty('thinking');
        expect(String(d.content ?? '')).not.toMatch(/<\/?think/);
      }
      const j = await completeJson(bob, { model: c.model, messages: [{ role: 'user', content: t }] });
      expect(j.body.choices[0].message).toEqual({ role: 'assistant', content: c.content(t), reasoning_content: c.reasoning(t) });
    });
  }

  it('a model without reasoning sends none: no reasoning_content anywhere', async () => {
    for (const model of ['echo', 'echo:latest']) {
      const t = marker('plain');
      const s = await completeStream(bob, { model, messages: [{ role: 'user', content: t }] });
      expect(s.text).not.toContain('reasoning_content');
      const j = await completeJson(bob, { model, messages: [{ role: 'user', content: t }] });
      expect(Object.keys(j.body.choices[0].message)).toEqual(['role', 'content']);
    }
  });
});

describe('native tool calling', () => {
  const tools = [
    { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    { type: 'function', function: { name: 'get_time', description: 'Local time', parameters: { type: 'object', properties: {} } } },
  ];

  it('sends tools and tool_choice upstream as given and streams the calls as tool_call deltas', async () => {
    const t = marker('tools-stream');
    const s = await completeStream(bob, { model: 'tools', messages: [{ role: 'user', content: t }], tools, tool_choice: 'auto' });
    expect(s.status).toBe(200);
    const sent = sentTo(oa, t)!.json as Record<string, unknown>;
    expect(sent.tools).toEqual(tools);
    expect(sent.tool_choice).toBe('auto');
    const calls = new Map<number, { id: string; name: string; args: string }>();
    for (const d of deltas(s.data)) {
      for (const tc of d.tool_calls ?? []) {
        const c = calls.get(tc.index) ?? { id: '', name: '', args: '' };
        if (tc.id) c.id = tc.id;
        if (tc.function?.name) c.name = tc.function.name;
        c.args += tc.function?.arguments ?? '';
        calls.set(tc.index, c);
      }
    }
    expect([...calls.values()].map((c) => [c.name, c.args])).toEqual([
      ['get_weather', '{"city":"Paris"}'],
      ['get_time', '{"city":"Paris"}'],
    ]);
    expect([...calls.values()].every((c) => c.id.startsWith('call_'))).toBe(true);
    expect(s.data.flatMap((d) => d.choices.map((c: any) => c.finish_reason)).filter(Boolean)).toEqual(['tool_calls']);
  });

  it('not streamed: tool_calls with content "" (OpenAI and Ollama connections)', async () => {
    const t = marker('tools-json');
    const j = await completeJson(bob, { model: 'tools', messages: [{ role: 'user', content: t }], tools });
    expect(j.body.choices[0].finish_reason).toBe('tool_calls');
    const msg = j.body.choices[0].message;
    expect(Object.keys(msg)).toEqual(['role', 'content', 'tool_calls']);
    expect(msg.content).toBe('');
    expect(msg.tool_calls).toEqual([
      { id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      { id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'get_time', arguments: '{"city":"Paris"}' } },
    ]);
    const o = await completeJson(bob, { model: 'tools:latest', messages: [{ role: 'user', content: marker('ollama-tools') }], tools });
    expect(o.body.choices[0].message.content).toBe('');
    expect(o.body.choices[0].message.tool_calls.map((c: any) => [c.type, c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['function', 'get_weather', { city: 'Paris' }],
      ['function', 'get_time', { city: 'Paris' }],
    ]);
  });
});

describe('memories in the system context', () => {
  const block =
    '<memory_context>\n[User Memory]\n- Prefers green tea\n\n[Memory Neighborhood]\n- projects/zephyr: Zephyr is written in Rust\n\n' +
    '[Relevant Context]\n- Quarterly report due Friday\n</memory_context>';

  beforeAll(async () => {
    for (const m of [
      { content: 'Prefers green tea', type: 'user' },
      { content: 'Zephyr is written in Rust', type: 'context', path: 'projects/zephyr' },
      { content: 'Quarterly report due Friday', type: 'context' },
    ]) {
      expect((await call('/api/v1/memories/add', alice, 'POST', m)).status).toBe(200);
    }
  });

  const systemSent = (t: string) => ((sentTo(oa, t)!.json as { messages: { role: string; content: string }[] }).messages);

  it('appends <memory_context> (user memories, path neighbourhood, relevant context) to the system message', async () => {
    const t = `What do you know about zephyr? ${marker('mem')}`;
    const r = await completeJson(alice, { model: 'echo', messages: [{ role: 'system', content: 'You are helpful.' }, { role: 'user', content: t }] });
    expect(r.status).toBe(200);
    expect(systemSent(t)).toEqual([
      { role: 'system', content: `You are helpful.\n${block}` },
      { role: 'user', content: t },
    ]);
  });

  it('creates the system message when there is none, and replaces a block a client replays', async () => {
    const t = `Tell me about zephyr ${marker('mem2')}`;
    await completeJson(alice, { model: 'echo', messages: [{ role: 'user', content: t }] });
    expect(systemSent(t)).toEqual([{ role: 'system', content: block }, { role: 'user', content: t }]);
    const t2 = `And zephyr again ${marker('mem3')}`;
    await completeJson(alice, { model: 'echo', messages: [{ role: 'system', content: `Be brief.\n<memory_context>\nstale\n</memory_context>` }, { role: 'user', content: t2 }] });
    expect(systemSent(t2)[0]).toEqual({ role: 'system', content: `Be brief.\n${block}` });
  });

  it('injects nothing for features.memory false, nor for a user without memories', async () => {
    const t = `zephyr ${marker('off')}`;
    await completeJson(alice, { model: 'echo', messages: [{ role: 'user', content: t }], features: { memory: false, web_search: false } });
    expect(systemSent(t)).toEqual([{ role: 'user', content: t }]);
    const t2 = `zephyr ${marker('bob')}`;
    await completeJson(bob, { model: 'echo', messages: [{ role: 'user', content: t2 }], features: { memory: true } });
    expect(systemSent(t2)).toEqual([{ role: 'user', content: t2 }]);
  });

  it('ENABLE_MEMORY_SYSTEM_CONTEXT=false injects nothing while memories stay usable', async () => {
    expect((await call('/api/v1/auths/admin/config', admin, 'POST', { ENABLE_MEMORY_SYSTEM_CONTEXT: false })).status).toBe(200);
    try {
      // Settings reach the worker through its cache (dropped by NOTIFY): allow it a moment.
      let t = '';
      await waitFor(
        async () => {
          t = `zephyr ${marker('sysctx')}`;
          await completeJson(alice, { model: 'echo', messages: [{ role: 'user', content: t }] });
          return systemSent(t).length === 1;
        },
        8000,
        () => 'memories were still injected',
      );
      expect(systemSent(t)).toEqual([{ role: 'user', content: t }]);
      const list = await call('/api/v1/memories/', alice);
      expect(list.status).toBe(200);
      expect(list.body.map((m: any) => m.content).sort()).toEqual(['Prefers green tea', 'Quarterly report due Friday', 'Zephyr is written in Rust']);
    } finally {
      expect((await call('/api/v1/auths/admin/config', admin, 'POST', { ENABLE_MEMORY_SYSTEM_CONTEXT: true })).status).toBe(200);
    }
  });
});

describe('arena models', () => {
  it('streamed: the first event names the member picked, which then answers', async () => {
    const t = marker('arena-stream');
    const s = await completeStream(bob, { model: 'duel', messages: [{ role: 'user', content: t }] });
    expect(s.status).toBe(200);
    const m = /^data: \{"selected_model_id": "(echo|echo:latest)"\}\n\n$/.exec(s.events[0]!);
    expect(m).not.toBeNull();
    const picked = m![1]!;
    expect(s.data.slice(1).every((d) => d.model === picked)).toBe(true);
    expect(joined(s.data.slice(1), 'content')).toBe(`echo: ${t}`);
    expect(Boolean(sentTo(picked === 'echo' ? oa : ol, t))).toBe(true);
    expect(sentTo(picked === 'echo' ? ol : oa, t)).toBeUndefined();
  });

  it('not streamed: selected_model_id is the last key; over many requests both members are picked', async () => {
    const picked = new Set<string>();
    for (let i = 0; i < 24 && picked.size < 2; i++) {
      const t = marker('arena');
      const j = await completeJson(bob, { model: 'duel', messages: [{ role: 'user', content: t }] });
      expect(j.status).toBe(200);
      expect(Object.keys(j.body).at(-1)).toBe('selected_model_id');
      expect(j.body.model).toBe(j.body.selected_model_id);
      expect(j.body.choices[0].message.content).toBe(`echo: ${t}`);
      picked.add(j.body.selected_model_id);
    }
    expect([...picked].sort()).toEqual(['echo', 'echo:latest']);
  });
});

describe('stored chats', () => {
  it('stores both turns with their parent links, reasoning, usage and the arena pick; events through the outbox', async () => {
    const chatId = await newChat(alice, 'Stored');
    const [u1, a1, u2, a2] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const q1 = marker('first');
    const s = await completeStream(alice, {
      model: 'reasoning',
      chat_id: chatId,
      id: a1,
      parent_id: u1,
      user_message: { id: u1, parentId: null, childrenIds: [], role: 'user', content: q1, timestamp: Math.floor(Date.now() / 1000), models: ['reasoning'] },
      messages: [{ role: 'user', content: q1 }],
      features: { memory: false },
    });
    expect(s.status).toBe(200);
    expect(joined(s.data, 'content')).toBe(`echo: ${q1}`);
    expect(s.events.at(-1)).toBe('data: [DONE]\n\n');

    const q2 = marker('second');
    const j = await completeJson(alice, {
      model: 'duel',
      chat_id: chatId,
      id: a2,
      parent_id: u2,
      user_message: { id: u2, parentId: a1, role: 'user', content: q2 },
      messages: [{ role: 'user', content: q1 }, { role: 'assistant', content: `echo: ${q1}` }, { role: 'user', content: q2 }],
      features: { memory: false },
    });
    expect(j.status).toBe(200);
    const picked = j.body.selected_model_id as string;
    expect(['echo', 'echo:latest']).toContain(picked);

    const r = await rows(chatId);
    expect(Object.keys(r).sort()).toEqual([u1, a1, u2, a2].sort());
    expect(r[u1]).toMatchObject({ role: 'user', parent_id: null, content: q1, done: true });
    expect(r[a1]).toMatchObject({ role: 'assistant', parent_id: u1, content: `echo: ${q1}`, reasoning: 'Let me think about this step by step.', model_id: 'reasoning', selected_model_id: null, done: true });
    expect(r[a1]!.usage).toMatchObject({ input_tokens: tokenCount(q1), output_tokens: expect.any(Number), total_tokens: expect.any(Number) });
    expect(r[u2]).toMatchObject({ role: 'user', parent_id: a1, content: q2 });
    expect(r[a2]).toMatchObject({ role: 'assistant', parent_id: u2, content: `echo: ${q2}`, model_id: 'duel', selected_model_id: picked, reasoning: null, done: true });

    // The second turn went upstream as the stored thread.
    const sent = sentTo(picked === 'echo' ? oa : ol, q2)!.json as { messages: unknown[] };
    expect(sent.messages).toEqual([
      { role: 'user', content: q1 },
      { role: 'assistant', content: `echo: ${q1}` },
      { role: 'user', content: q2 },
    ]);

    // The chat JSON carries the same history for clients.
    const chat = (await call(`/api/v1/chats/${chatId}`, alice)).body.chat;
    expect(chat.history.currentId).toBe(a2);
    expect(chat.history.messages[u1]).toMatchObject({ parentId: null, childrenIds: [a1], role: 'user', content: q1 });
    expect(chat.history.messages[a1]).toMatchObject({ parentId: u1, childrenIds: [u2], role: 'assistant', content: `echo: ${q1}`, model: 'reasoning', done: true, reasoning_content: 'Let me think about this step by step.' });
    expect(chat.history.messages[a2]).toMatchObject({ parentId: u2, model: 'duel', selectedModelId: picked, arena: true, done: true });

    const evs = (await eventsOf(chatId)).map((e) => `${e.name}:${e.subject === chatId ? 'chat' : e.subject}`);
    expect(evs).toEqual([
      'chat.created:chat',
      `message.created:${u1}`,
      `message.created:${a1}`,
      `message.updated:${a1}`,
      'chat.updated:chat',
      `message.created:${u2}`,
      `message.created:${a2}`,
      `message.updated:${a2}`,
      'chat.updated:chat',
    ]);
  });

  it('takes the last user message when no user_message is given, continuing the current branch', async () => {
    const chatId = await newChat(alice, 'API client');
    const q = marker('api');
    const j = await completeJson(alice, { model: 'echo', chat_id: chatId, messages: [{ role: 'user', content: q }], features: { memory: false } });
    expect(j.status).toBe(200);
    const all = Object.values(await rows(chatId));
    const user = all.find((m) => m.role === 'user')!;
    expect(user).toMatchObject({ parent_id: null, content: q });
    expect(all.find((m) => m.role === 'assistant')).toMatchObject({ parent_id: user.id, content: `echo: ${q}`, done: true });
    const q2 = marker('api2');
    await completeJson(alice, { model: 'echo', chat_id: chatId, messages: [{ role: 'user', content: q }, { role: 'assistant', content: `echo: ${q}` }, { role: 'user', content: q2 }], features: { memory: false } });
    const again = Object.values(await rows(chatId));
    const a1 = again.find((m) => m.role === 'assistant' && m.content === `echo: ${q}`)!;
    expect(again.find((m) => m.content === q2)).toMatchObject({ role: 'user', parent_id: a1.id });
  });

  it("another user's chat is 404 and nothing is stored or sent upstream; a local: chat id is not stored", async () => {
    const chatId = await newChat(alice, 'Private');
    const q = marker('intruder');
    const r = await completeJson(bob, { model: 'echo', chat_id: chatId, id: randomUUID(), parent_id: randomUUID(), user_message: { role: 'user', content: q }, messages: [{ role: 'user', content: q }] });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ detail: NOT_FOUND });
    expect(await rows(chatId)).toEqual({});
    expect(sentTo(oa, q)).toBeUndefined();
    const local = await completeJson(bob, { model: 'echo', chat_id: `local:${randomUUID()}`, messages: [{ role: 'user', content: q }] });
    expect(local.status).toBe(200);
    expect(local.body.choices[0].message.content).toBe(`echo: ${q}`);
  });
});

describe('automatic context compaction', () => {
  it('summarises the older turns, keeps the newest intact, and later turns start from the checkpoint', async () => {
    const chatId = await newChat(carol, 'Long');
    const history: { role: string; content: string }[] = [];
    let parent: string | null = null;
    const ids: { u: string; a: string }[] = [];
    const turn = async (content: string, params: Record<string, unknown> = {}) => {
      const u = randomUUID();
      const a = randomUUID();
      history.push({ role: 'user', content });
      const j = await completeJson(carol, {
        model: 'echo',
        chat_id: chatId,
        id: a,
        parent_id: u,
        user_message: { id: u, parentId: parent, role: 'user', content },
        messages: history,
        params,
      });
      expect(j.status, JSON.stringify(j.body)).toBe(200);
      history.push({ role: 'assistant', content: j.body.choices[0].message.content });
      parent = a;
      ids.push({ u, a });
      return j;
    };
    const texts = [1, 2, 3, 4, 5].map((n) => `Turn ${n} ${marker('t')}: ${'lorem ipsum dolor sit amet '.repeat(4)}`);
    for (const t of texts.slice(0, 3)) await turn(t);
    // Turn 4 with a model threshold far below the conversation's size (the global one is 80 000).
    await turn(texts[3]!, { compact_token_threshold: 50 });

    // The summary request: the task model (the chat's model here) with Open WebUI's prompt.
    const summaryReq = [...oa.requests].reverse().find((r) => String((r.json as any)?.messages?.[0]?.content ?? '').startsWith('### Task:\nSummarize'))!;
    expect(summaryReq).toBeDefined();
    const sreq = summaryReq.json as { model: string; stream: boolean; max_completion_tokens: number; messages: { role: string; content: string }[] };
    expect(sreq).toMatchObject({ model: 'echo', stream: false, max_completion_tokens: 1000 });
    const echo = (t: string) => `echo: ${t}`;
    const prompt = [
      '### Task:',
      'Summarize the conversation history that will be compacted out of the active chat context.',
      '',
      '### Instructions:',
      '- Preserve key decisions, user preferences, and constraints.',
      '- Preserve files, artifacts, tool results, and code changes that matter going forward.',
      '- Preserve the current task state, unresolved questions, and next steps.',
      '- Be factual and specific. Do not invent details.',
      '- Keep the summary concise, but complete enough for the assistant to continue without the removed messages.',
      '',
      '### Previous Summary:',
      '',
      '',
      '### Messages Being Compacted:',
      `USER: ${texts[0]}`,
      `ASSISTANT: ${echo(texts[0]!)}`,
      `USER: ${texts[1]}`,
      `ASSISTANT: ${echo(texts[1]!)}`,
      `USER: ${texts[2]}`,
      '',
      '### Recent Messages Kept In Context:',
      `ASSISTANT: ${echo(texts[2]!)}`,
      `USER: ${texts[3]}`,
    ].join('\n');
    expect(sreq.messages).toEqual([{ role: 'user', content: prompt }]);
    const summary = `echo: ${prompt}`.trim();

    // Turn 4 went upstream as the summary plus the kept messages, intact.
    const sent4 = [...oa.requests].reverse().find((r) => (r.json as any)?.messages?.at(-1)?.content === texts[3])!.json as any;
    expect(sent4.messages).toEqual([
      { role: 'system', content: `[CONVERSATION SUMMARY]\n${summary}` },
      { role: 'assistant', content: echo(texts[2]!) },
      { role: 'user', content: texts[3] },
    ]);
    const r = await rows(chatId);
    expect(r[ids[3]!.u]!.context_summary).toBe(summary);
    expect(Object.values(r).filter((m) => m.context_summary).length).toBe(1);
    const compacted = (await eventsOf(chatId)).filter((e) => e.name === 'chat.compacted');
    expect(compacted).toHaveLength(1);
    expect(compacted[0]!.data).toMatchObject({ dropped_messages: 5, kept_messages: 2 });

    // Turn 5 (under the threshold again) starts from the checkpoint: its summary, then turn 4 on.
    await turn(texts[4]!);
    const sent5 = [...oa.requests].reverse().find((r) => (r.json as any)?.messages?.at(-1)?.content === texts[4])!.json as any;
    expect(sent5.messages).toEqual([
      { role: 'system', content: `[CONVERSATION SUMMARY]\n${summary}` },
      { role: 'user', content: texts[3] },
      { role: 'assistant', content: echo(texts[3]!) },
      { role: 'user', content: texts[4] },
    ]);
  });
});

describe('manual compaction (POST /api/v1/chats/{id}/compact)', () => {
  it('refuses while a reply is generating, then summarises all but the newest message; the next turn starts there', async () => {
    const chatId = await newChat(carol, 'Manual');
    const tag = marker('manual');
    const [u1, a1, u2, a2] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const q1 = `first ${tag}`;
    const q2 = `second ${tag}`;
    await completeJson(carol, { model: 'echo', chat_id: chatId, id: a1, parent_id: u1, user_message: { id: u1, parentId: null, role: 'user', content: q1 }, messages: [{ role: 'user', content: q1 }] });
    // A slow reply is still being written: compaction waits for it.
    const slow = complete(carol, {
      model: 'slow',
      stream: true,
      chat_id: chatId,
      id: a2,
      parent_id: u2,
      user_message: { id: u2, parentId: a1, role: 'user', content: q2 },
      messages: [{ role: 'user', content: q2 }],
    });
    await waitFor(async () => (await rows(chatId))[a2]?.done === false, 5000, () => 'the reply never started');
    expect(await call(`/api/v1/chats/${chatId}/compact`, carol, 'POST', {})).toEqual({ status: 409, body: { detail: 'Wait for the current response to finish before compacting.' } });
    await (await slow).text();
    expect((await rows(chatId))[a2]).toMatchObject({ done: true, model_id: 'slow', content: `echo: ${q2}` });

    const r = await call(`/api/v1/chats/${chatId}/compact`, carol, 'POST', { model: 'echo' });
    expect(r.status).toBe(200);
    const req = [...oa.requests].reverse().find((x) => String((x.json as any)?.messages?.[0]?.content ?? '').startsWith('### Task:') && x.raw.toString().includes(tag))!;
    const prompt = (req.json as any).messages[0].content as string;
    expect(prompt).toContain(`### Messages Being Compacted:\nUSER: ${q1}\nASSISTANT: echo: ${q1}\nUSER: ${q2}\n\n### Recent Messages Kept In Context:\nASSISTANT: echo: ${q2}`);
    const summary = `echo: ${prompt}`.trim();
    expect(r.body).toEqual({ ok: true, compacted: true, dropped_messages: 3, kept_messages: 1, summary_chars: Array.from(summary).length });
    expect((await rows(chatId))[a2]!.context_summary).toBe(summary);
    const evs = (await eventsOf(chatId)).filter((e) => e.name === 'chat.compacted');
    expect(evs.map((e) => e.data)).toEqual([{ dropped_messages: 3 }]);
    const chat = (await call(`/api/v1/chats/${chatId}`, carol)).body.chat;
    expect(chat.history.messages[a2].contextSummary).toBe(summary);

    const [u3, a3] = [randomUUID(), randomUUID()];
    const q3 = `third ${tag}`;
    await completeJson(carol, { model: 'echo', chat_id: chatId, id: a3, parent_id: u3, user_message: { id: u3, parentId: a2, role: 'user', content: q3 }, messages: [{ role: 'user', content: q3 }] });
    expect((sentTo(oa, q3)!.json as any).messages).toEqual([
      { role: 'system', content: `[CONVERSATION SUMMARY]\n${summary}` },
      { role: 'assistant', content: `echo: ${q2}` },
      { role: 'user', content: q3 },
    ]);
    // Too short to compact: a chat of two messages.
    const short = await newChat(carol, 'Short');
    const [u, a] = [randomUUID(), randomUUID()];
    await completeJson(carol, { model: 'echo', chat_id: short, id: a, parent_id: u, user_message: { id: u, parentId: null, role: 'user', content: `hi ${tag}` }, messages: [] });
    expect(await call(`/api/v1/chats/${short}/compact`, carol, 'POST', {})).toEqual({ status: 200, body: { ok: true, compacted: false, reason: 'too_short' } });
  });
});

describe('cancellation and upstream errors', () => {
  it('a client that disconnects mid-stream cancels the upstream request; the partial reply is kept, done and marked stopped', async () => {
    const chatId = await newChat(alice, 'Cancelled');
    const [u, a] = [randomUUID(), randomUUID()];
    const t = marker('cancel');
    const ac = new AbortController();
    const res = await complete(
      alice,
      { model: 'slow', stream: true, chat_id: chatId, id: a, parent_id: u, user_message: { id: u, role: 'user', content: t }, messages: [{ role: 'user', content: t }], features: { memory: false } },
      ac.signal,
    );
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let got = '';
    while ((got.match(/\n\n/g) ?? []).length < 2) {
      const { value, done } = await reader.read();
      if (done) break;
      got += new TextDecoder().decode(value);
    }
    ac.abort();
    const rec = sentTo(oa, t)!;
    await waitFor(() => rec.aborted, 5000, () => 'the fake upstream never saw its connection closed');
    expect(rec.finished).toBe(false);
    await waitFor(async () => (await rows(chatId))[a]?.done === true && (await rows(chatId))[a]!.content !== '', 5000, () => 'the partial reply was not stored');
    const row = (await rows(chatId))[a]!;
    expect(`echo: ${t}`.startsWith(row.content)).toBe(true);
    expect(row.content.length).toBeLessThan(`echo: ${t}`.length);
    expect(row.done).toBe(true);
    const chat = await call(`/api/v1/chats/${chatId}`, alice);
    expect(chat.body.chat.history.messages[a]).toMatchObject({ done: true, stopped: true });
    // A stopped reply is not "in progress": the chat can be compacted (no 409).
    expect((await call(`/api/v1/chats/${chatId}/compact`, alice, 'POST', { model: 'echo' })).status).toBe(200);
  });

  it('an upstream error before the first byte is the HTTP status with {"detail"}, streamed or not', async () => {
    const t = marker('429');
    const s = await complete(bob, { model: 'bad.error-429', stream: true, messages: [{ role: 'user', content: t }] });
    expect(s.status).toBe(429);
    expect(s.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await s.json()).toEqual({ detail: 'Rate limit reached for requests (fake upstream).' });
    const j = await completeJson(bob, { model: 'bad.error-500', messages: [{ role: 'user', content: t }] });
    expect(j.status).toBe(500);
    expect(j.body).toEqual({ detail: 'The server had an error while processing your request (fake upstream).' });
  });

  it('a stored turn whose upstream fails keeps the error on the reply', async () => {
    const chatId = await newChat(alice, 'Failing');
    const [u, a] = [randomUUID(), randomUUID()];
    const t = marker('fail');
    const j = await completeJson(alice, { model: 'bad.error-429', chat_id: chatId, id: a, parent_id: u, user_message: { id: u, role: 'user', content: t }, messages: [{ role: 'user', content: t }] });
    expect(j.status).toBe(429);
    const r = await rows(chatId);
    expect(r[u]).toMatchObject({ role: 'user', content: t });
    expect(r[a]).toMatchObject({ role: 'assistant', parent_id: u, content: '', done: true });
    const chat = (await call(`/api/v1/chats/${chatId}`, alice)).body.chat;
    expect(chat.history.messages[a].error).toEqual({ content: 'Rate limit reached for requests (fake upstream).' });
  });

  it('an upstream failure after the first byte ends the stream with Open WebUI\'s error event, no [DONE]', async () => {
    const d = await completeStream(bob, { model: 'drop', messages: [{ role: 'user', content: marker('drop') }] });
    expect(d.status).toBe(200);
    expect(d.data.length).toBeGreaterThanOrEqual(2);
    expect(d.events.at(-1)).toMatch(/^data: \{"error": \{"detail": "[^"]+"\}\}\n\n$/);
    expect(d.text).not.toContain('[DONE]');
    const o = await completeStream(bob, { model: 'error-midstream:latest', messages: [{ role: 'user', content: marker('mid') }] });
    expect(joined(o.data.slice(0, -1), 'content')).toBe('partial');
    expect(o.events.at(-1)).toBe('data: {"error": {"detail": "llama runner process has terminated: exit status 2"}}\n\n');
    expect(o.text).not.toContain('[DONE]');
  });

  it('a slow stream arrives chunk by chunk, as the upstream sends it', async () => {
    const t = `one two three four ${marker('slow')}`;
    const res = await complete(bob, { model: 'slow', stream: true, messages: [{ role: 'user', content: t }] });
    const reader = res.body!.getReader();
    const arrivals: number[] = [];
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += new TextDecoder().decode(value);
      const n = (buf.match(/\n\n/g) ?? []).length;
      while (arrivals.length < n) arrivals.push(Date.now());
    }
    const events = splitEvents(buf);
    expect(events.at(-1)).toBe('data: [DONE]\n\n');
    expect(joined(events.slice(0, -1).map((e) => JSON.parse(e.slice(6))), 'content')).toBe(`echo: ${t}`);
    // The fake waits 200 ms between chunks: they must not arrive bunched up.
    const gaps = arrivals.slice(1, -2).map((x, i) => x - arrivals[i]!);
    expect(gaps.length).toBeGreaterThanOrEqual(5);
    // (One or two may shrink when a busy machine delays a chunk and the next catches up.)
    expect(gaps.filter((g) => g >= 100).length).toBeGreaterThanOrEqual(gaps.length - 2);
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThanOrEqual(1000);
  });
});

describe('bad requests', () => {
  it('an unknown or missing model is 400 "Model not found"; messages must be a list; a session is required', async () => {
    for (const body of [{ model: 'no-such-model', messages: [] }, { messages: [{ role: 'user', content: 'x' }] }, { model: 7, messages: [] }]) {
      const r = await completeJson(bob, body);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ detail: 'Model not found' });
    }
    const m = await completeJson(bob, { model: 'echo', messages: 'hello' });
    expect(m.status).toBe(400);
    expect(m.body.detail).toMatch(/messages/);
    const anon = await completeJson(null, { model: 'echo', messages: [] });
    expect(anon.status).toBe(401);
    expect(anon.body).toEqual({ detail: 'Not authenticated' });
  });
});
