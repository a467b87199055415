import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { answerTo, apiJson, ask, MODEL, openSession, person, pickModel, REASONING, signUpIntoApp, type BrowserSession, type WebStack } from './browser-fixture.ts';

/**
 * The turn protocol as the web UI runs it (services/web-ui/src/lib/chat/README.md): the
 * completion goes out first and the stored chat is the same as if the chat had been saved first.
 * - a new chat: `POST /api/chat/completions` before `POST /api/v1/chats/new`; the chat is in the
 *   sidebar while its first answer still streams; the answer is stored with its links at the end;
 * - an existing chat: nothing is saved before the completion, the worker stores the turn;
 * - a page reloaded mid-answer keeps what arrived, marked stopped.
 * `slow-reasoning` streams 300 ms apart, so "while it streams" is observable without timing.
 */
let session: BrowserSession;
let web: WebStack;
let page: Page;
let token = '';
let chatId = '';
/** Requests the page sent, in order (method and path). */
let sent: string[] = [];

interface Stored {
  id: string;
  parentId: string | null;
  childrenIds: string[];
  role: string;
  content: string;
  done?: boolean;
  stopped?: boolean;
  model?: string;
  reasoning_content?: string;
}
type ChatJson = { chat: { history: { currentId: string; messages: Record<string, Stored> } } };

const stored = (id: string) => apiJson<ChatJson>(web.url, token, 'GET', `/api/v1/chats/${id}`).then((c) => c.chat.history);
const chatIdOf = (p: Page) => new URL(p.url()).pathname.split('/').pop()!;

beforeAll(async () => {
  session = await openSession();
  ({ web, page } = session);
  await signUpIntoApp(page, web.url, person('Turner'));
  await pickModel(page, MODEL);
  token = await page.evaluate(() => localStorage.token as string);
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/api/')) sent.push(`${r.method()} ${u.pathname}`);
  });
});

afterAll(() => session?.close());

describe('web UI: a turn sends the completion first', () => {
  const q1 = `First question ${Math.floor(Math.random() * 1e6)}`;

  it('a new chat: the completion is asked before the chat is created, the sidebar shows the chat while the answer streams', async () => {
    sent = [];
    await ask(page, q1);
    // Still streaming (the stop button), and the chat is already a sidebar link.
    await page.locator('#stop-response-button').waitFor();
    await page.waitForURL(/\/c\/[^/]+$/);
    chatId = chatIdOf(page);
    await page.locator(`#sidebar a[href="/c/${chatId}"]`).first().waitFor();
    expect(await page.locator('#stop-response-button').count()).toBe(1);
    await page.locator('#messages-container').getByText(answerTo(q1)).first().waitFor();
    await page.locator('#send-message-button').waitFor();
    const completion = sent.indexOf('POST /api/chat/completions');
    const create = sent.indexOf('POST /api/v1/chats/new');
    expect(completion).toBeGreaterThanOrEqual(0);
    expect(create).toBeGreaterThan(completion);
  });

  it('the first answer is stored in the new chat with its parent/child links', async () => {
    // Stored just after the stream ends: read until it is there (bounded).
    await expect.poll(async () => Object.keys((await stored(chatId)).messages).length, { timeout: 10_000, interval: 200 }).toBe(2);
    const h = await stored(chatId);
    const user = Object.values(h.messages).find((m) => m.role === 'user')!;
    const answer = Object.values(h.messages).find((m) => m.role === 'assistant')!;
    expect({ parent: user.parentId, children: user.childrenIds, content: user.content }).toEqual({ parent: null, children: [answer.id], content: q1 });
    expect({ parent: answer.parentId, content: answer.content, done: answer.done, model: answer.model, current: h.currentId }).toEqual({
      parent: user.id,
      content: answerTo(q1),
      done: true,
      model: MODEL,
      current: answer.id,
    });
    expect(answer.reasoning_content).toContain(REASONING);
    expect(answer.stopped).toBeUndefined();
  });

  it('a second message in that chat: nothing is saved before the completion, the worker stores the turn', async () => {
    const q2 = `Second question ${Math.floor(Math.random() * 1e6)}`;
    sent = [];
    await ask(page, q2);
    await page.locator('#messages-container').getByText(answerTo(q2)).first().waitFor();
    await page.locator('#send-message-button').waitFor();
    const completion = sent.indexOf('POST /api/chat/completions');
    expect(completion).toBeGreaterThanOrEqual(0);
    expect(sent.slice(0, completion).filter((r) => r.includes(`/api/v1/chats/${chatId}`))).toEqual([]);
    await expect.poll(async () => {
      const h = await stored(chatId);
      return h.messages[h.currentId]?.done === true && Object.keys(h.messages).length;
    }, { timeout: 10_000, interval: 200 }).toBe(4);
    const h = await stored(chatId);
    // One branch: user → answer → user → answer, the new leaf current.
    const chain: Stored[] = [];
    for (let m: Stored | undefined = h.messages[h.currentId]; m && chain.length < 10; m = m.parentId ? h.messages[m.parentId] : undefined) chain.unshift(m);
    expect(chain.map((m) => [m.role, m.content])).toEqual([
      ['user', q1],
      ['assistant', answerTo(q1)],
      ['user', q2],
      ['assistant', answerTo(q2)],
    ]);
    for (let i = 0; i < 3; i++) expect(chain[i]!.childrenIds).toContain(chain[i + 1]!.id);
  });

  it('a page reloaded while a new chat’s first answer streams keeps what arrived, marked stopped', async () => {
    await page.locator('#sidebar-new-chat-button').click();
    await page.waitForURL((u) => u.pathname === '/');
    await ask(page, 'Leave me halfway');
    await page.waitForURL(/\/c\/[^/]+$/);
    const id = chatIdOf(page);
    await page.locator('#messages-container').getByText('Thinking…').first().waitFor();
    await page.reload();
    await expect.poll(async () => Object.values((await stored(id)).messages).find((m) => m.role === 'assistant')?.stopped ?? false, { timeout: 10_000, interval: 200 }).toBe(true);
    const answer = Object.values((await stored(id)).messages).find((m) => m.role === 'assistant')!;
    expect(answer.done).toBe(true);
    expect(answer.reasoning_content ?? '').not.toBe('');
    // The reloaded page shows it as a stopped answer, not one still generating.
    await page.locator(`#message-${answer.id} .message-stopped`).waitFor();
  });

  it('a second message sent while the first answer of a new chat is still being stored keeps both turns', async () => {
    await page.locator('#sidebar-new-chat-button').click();
    await page.waitForURL((u) => u.pathname === '/');
    // The store of the first answer is slow (held 600 ms on its way out): the next turn must not
    // be stored by the worker before it, or the history written by that store would drop it.
    const slowStore = /\/api\/v1\/chats\/[0-9a-f-]{36}$/;
    await page.route(slowStore, (route) =>
      route.request().method() === 'POST' ? new Promise<void>((r) => setTimeout(() => void route.continue().then(r, r), 600)) : route.continue(),
    );
    try {
      const a = `Quick one ${Math.floor(Math.random() * 1e6)}`;
      const b = `Quick two ${Math.floor(Math.random() * 1e6)}`;
      await ask(page, a);
      await page.locator('#messages-container').getByText(answerTo(a)).first().waitFor();
      await page.locator('#send-message-button').waitFor();
      await ask(page, b);
      await page.locator('#messages-container').getByText(answerTo(b)).first().waitFor();
      await page.locator('#send-message-button').waitFor();
      const id = chatIdOf(page);
      await expect.poll(async () => {
        const h = await stored(id);
        const chain: string[] = [];
        for (let m: Stored | undefined = h.messages[h.currentId]; m && chain.length < 10; m = m.parentId ? h.messages[m.parentId] : undefined) chain.unshift(`${m.role}:${m.content}${m.done === false ? ':pending' : ''}`);
        return chain;
      }, { timeout: 10_000, interval: 200 }).toEqual([`user:${a}`, `assistant:${answerTo(a)}`, `user:${b}`, `assistant:${answerTo(b)}`]);
    } finally {
      await page.unroute(slowStore);
    }
  });

  it('the input: Shift+Enter is a new line inside the message, Ctrl+Z takes typing back', async () => {
    await page.locator('#sidebar-new-chat-button').click();
    await page.waitForURL((u) => u.pathname === '/');
    const input = page.locator('#chat-input');
    await input.click();
    await input.pressSequentially('taken back');
    await page.keyboard.press('Control+z');
    expect((await input.textContent())?.trim()).toBe('');
    await input.pressSequentially('line one');
    await page.keyboard.press('Shift+Enter');
    await input.pressSequentially('line two');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/c\/[^/]+$/);
    const id = chatIdOf(page);
    await page.locator('#send-message-button').waitFor();
    await expect.poll(async () => Object.values((await stored(id)).messages).find((m) => m.role === 'user')?.content, { timeout: 10_000, interval: 200 }).toBe('line one\nline two');
  });

  it('the app is a production build even though the tests (NODE_ENV=test) built it', async () => {
    // Svelte's development mode (dev runtime, component tags, ownership checks) is several times
    // slower to start and render; its compiled components name themselves with `componentTag`.
    const scripts = await page.evaluate(() => [...document.querySelectorAll('script[src], link[rel="modulepreload"]')].map((e) => (e as HTMLScriptElement).src || (e as HTMLLinkElement).href));
    expect(scripts.length).toBeGreaterThan(0);
    for (const src of scripts) {
      const text = await (await fetch(src)).text();
      expect([src, text.includes('componentTag')]).toEqual([src, false]);
    }
  });

  it('a page whose chunk is gone (a newer build since the page loaded) loads after one reload', async () => {
    // Pages other than the chat are chunks of their own (routes.ts); the first request for the
    // settings page's chunk fails as it would after a redeploy removed it.
    const seen: string[] = [];
    await page.route(/\/assets\/SettingsPage-[^/]+\.js$/, (route) => {
      seen.push(seen.length ? 'served' : 'refused');
      return seen.length === 1 ? route.abort() : route.continue();
    });
    await page.goto(web.url + '/settings');
    await page.locator('#settings-general').waitFor();
    expect(seen).toEqual(['refused', 'served']);
    await page.unroute(/\/assets\/SettingsPage-[^/]+\.js$/);
  });

  it('the page raised no uncaught errors', () => {
    expect(session.errors).toEqual([]);
  });
});
