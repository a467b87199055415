import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../support/local-stack.ts';
import { alice, bob, call, complete, completeJson, completeStream, joined, marker, newChat, oa, rows, sentTo, splitEvents, useCompletionsStack } from './chat-completions-fixture.ts';

/**
 * `POST /api/chat/completions` when things go wrong: a client that disconnects mid-stream, upstream
 * errors before and after the first byte (streamed or not, stored or not), a slow stream, bad
 * requests. The stack and helpers are chat-completions-fixture.ts's.
 */
useCompletionsStack();

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
