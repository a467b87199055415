import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import {
  answerTo,
  ask,
  changelogDialog,
  FAILING_MODEL,
  PYTHON_MODEL,
  fillSignUp,
  MODEL,
  openSession,
  person,
  pickModel,
  shot,
  type BrowserSession,
  type WebStack,
} from './browser-fixture.ts';

/**
 * The web UI in a real chromium against a real stack, as a first user meets it: sign up on an
 * empty platform (becomes admin), the change log once, pick a model, type a question, watch the
 * reasoning and the answer stream in, reload and find the chat again; a failing upstream shown in
 * the conversation. The tests run in order on one page (one user's session).
 */
let session: BrowserSession;
let web: WebStack;
let page: Page;
/** How the app's own files arrived: path → [content-encoding, cache-control]. */
const assets = new Map<string, [string | undefined, string | undefined]>();
const admin = person('Ada');
const question = `What is ${Math.floor(Math.random() * 900 + 100)} times two?`;
let chatPath = '';

beforeAll(async () => {
  session = await openSession();
  ({ web, page } = session);
  page.on('response', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/assets/') || u.pathname === '/') assets.set(u.pathname, [r.headers()['content-encoding'], r.headers()['cache-control']]);
  });
});

afterAll(() => session?.close());

describe('web UI: first visit', () => {
  it('the first visitor signs up on the empty platform, becomes admin and lands in the app', async () => {
    await page.goto(web.url + '/');
    await page.waitForURL(/\/auth/);
    await page.locator('#email').waitFor();
    // Onboarding: the form offers the admin account.
    await page.getByRole('button', { name: 'Create Admin Account' }).waitFor();
    await shot(page, 'sign-in');
    await fillSignUp(page, admin);
    await page.waitForURL((u) => !u.pathname.startsWith('/auth'));
    await page.locator('#sidebar').waitFor();
    const me = await page.evaluate(async () => (await fetch('/api/v1/auths/', { headers: { authorization: `Bearer ${localStorage.token ?? ''}` } })).json());
    expect([me.email, me.role]).toEqual([admin.email, 'admin']);
    // The page itself is revalidated every time; the fingerprinted scripts came pre-compressed and immutable.
    expect(assets.get('/')?.[1]).toBe('no-cache');
    const scripts = [...assets].filter(([p]) => p.endsWith('.js'));
    expect(scripts.length).toBeGreaterThan(0);
    for (const [p, [encoding, cache]] of scripts) expect([p, encoding, cache]).toEqual([p, 'br', 'public, max-age=31536000, immutable']);
  });

  it('the change log is shown once to the admin, and dismissed stays dismissed after a reload', async () => {
    const dialog = changelogDialog(page);
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('0.10.2');
    await shot(page, 'changelog');
    await dialog.getByRole('button', { name: "Okay, Let's Go!" }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.reload();
    await page.locator('#sidebar').waitFor();
    await page.locator('#model-selector-0-button').waitFor();
    // The app has settled (models loaded) and no dialog came back.
    expect(await page.getByRole('dialog').count()).toBe(0);
  });
});

describe('web UI: a conversation', () => {
  it('the model selector lists the connection models and picks one', async () => {
    await page.locator('#model-selector-0-button').click();
    const list = page.getByRole('listbox', { name: 'Available models' });
    await list.waitFor();
    await list.getByRole('option').filter({ hasText: MODEL }).waitFor();
    const options = await list.getByRole('option').allTextContents();
    expect(options.some((o) => o.includes(MODEL))).toBe(true);
    expect(options.some((o) => o.includes(FAILING_MODEL))).toBe(true);
    await page.locator('#model-search-input').fill('slow');
    await shot(page, 'model-selector');
    await page.keyboard.press('Escape');
    await pickModel(page, MODEL);
  });

  it('a typed question streams its reasoning ("Thinking…" then "Thought for") and its answer', async () => {
    await ask(page, question);
    const messages = page.locator('#messages-container');
    // The user's message is shown at once; the reasoning is shown while it streams.
    await messages.getByText(question).first().waitFor();
    await messages.getByText('Thinking…').first().waitFor();
    await shot(page, 'chat-thinking');
    await messages.getByText(answerTo(question)).first().waitFor();
    await messages.getByText(/Thought for/).first().waitFor();
    expect(await messages.getByText('Thinking…').count()).toBe(0);
    // The stop button goes away once the answer is complete; the send button is back.
    await page.locator('#send-message-button').waitFor();
    await page.waitForURL(/\/c\/[^/]+$/);
    chatPath = new URL(page.url()).pathname;
    await shot(page, 'chat');
    // The reasoning itself can be opened from its block.
    await messages.getByText(/Thought for/).first().click();
    await messages.getByText('Let me think about this step by step.').first().waitFor();
  });

  it('after a reload the chat is in the sidebar and its messages are back', async () => {
    await page.reload();
    const sidebar = page.locator('#sidebar');
    await sidebar.waitFor();
    const link = sidebar.locator(`a[href="${chatPath}"]`);
    await link.first().waitFor();
    const messages = page.locator('#messages-container');
    await messages.getByText(question).first().waitFor();
    await messages.getByText(answerTo(question)).first().waitFor();
    await messages.getByText(/Thought for/).first().waitFor();
    await shot(page, 'sidebar');
    // And from a fresh start page, the sidebar link opens it.
    await page.goto(web.url + '/');
    await page.locator('#sidebar').waitFor();
    await page.locator(`#sidebar a[href="${chatPath}"]`).first().click();
    await page.waitForURL((u) => u.pathname === chatPath);
    await page.locator('#messages-container').getByText(answerTo(question)).first().waitFor();
  });

  it('a server error from the upstream is shown in the conversation', async () => {
    await page.locator('#sidebar-new-chat-button').click();
    await page.waitForURL((u) => u.pathname === '/');
    await pickModel(page, FAILING_MODEL);
    const q = 'Will this one fail?';
    await ask(page, q);
    const messages = page.locator('#messages-container');
    await messages.getByText(q).first().waitFor();
    await messages.getByText('The server had an error while processing your request (fake upstream).').first().waitFor();
    await page.locator('#send-message-button').waitFor();
  });

  it('Python runs in the sandboxed frame, prints there, and the frame cannot reach the app', async () => {
    await page.locator('#sidebar-new-chat-button').click();
    await page.waitForURL((u) => u.pathname === '/');
    await pickModel(page, PYTHON_MODEL);
    await ask(page, 'Some Python please');
    const messages = page.locator('#messages-container');
    await messages.locator('pre, code').filter({ hasText: 'print(sum(range(10)) * 7)' }).first().waitFor();
    await page.locator('#send-message-button').waitFor();
    await messages.getByRole('button', { name: 'Run', exact: true }).first().click();
    // Pyodide loads on the first Run (several seconds, from /pyodide/ on the edge).
    const sandbox = page.frameLocator('.python-sandbox').first();
    await sandbox.getByText('315').first().waitFor({ timeout: 90_000 });
    await shot(page, 'python');
    // The frame has an opaque origin: neither its own cookie jar nor the app's document is reachable.
    const frame = page.frames().find((f) => f !== page.mainFrame() && f.parentFrame() === page.mainFrame() && f.url() === 'about:srcdoc');
    expect(frame, 'the sandbox frame').toBeDefined();
    const seen = await frame!.evaluate(() => {
      const attempt = (f: () => unknown) => {
        try {
          return `read:${String(f())}`;
        } catch (e) {
          return `blocked:${(e as Error).name}`;
        }
      };
      return { origin: self.origin, own: attempt(() => document.cookie), app: attempt(() => window.parent.document.cookie) };
    });
    expect(seen).toEqual({ origin: 'null', own: 'blocked:SecurityError', app: 'blocked:SecurityError' });
  });

  it('the page raised no uncaught errors', () => {
    expect(session.errors).toEqual([]);
  });
});
