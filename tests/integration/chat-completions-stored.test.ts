import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/local-stack.ts';
import { tokenCount } from '../../scripts/src/fake-upstreams/common.ts';
import { NOT_FOUND } from './chat-fixture.ts';
import { admin, alice, bob, call, carol, complete, completeJson, completeStream, eventsOf, joined, marker, newChat, ol, oa, rows, sentTo, useCompletionsStack } from './chat-completions-fixture.ts';

/**
 * `POST /api/chat/completions` with what the chat worker adds and keeps: memories in the system
 * context, stored chats (both turns, parent links, events through the outbox), automatic and
 * manual context compaction. The stack and helpers are chat-completions-fixture.ts's.
 */
useCompletionsStack();

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
    // The connection reported no timing: the worker's own is stored, for Generation Info.
    const timing = r[a1]!.usage as { total_duration: number; 'response_token/s': number };
    expect(Number.isInteger(timing.total_duration) && timing.total_duration > 0).toBe(true);
    expect(timing['response_token/s']).toBeGreaterThan(0);
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
