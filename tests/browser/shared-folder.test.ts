import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { changelogDialog, fillSignIn, openSession, person, apiJson, type BrowserSession } from './browser-fixture.ts';

/**
 * A second user on a folder shared read-only (docs/chat.md, Folders): the admin (through the API)
 * creates the user, a folder with a chat in it and a `read` grant for that user; the user signs in
 * in the browser, finds the folder under "Shared with me" marked read-only, opens the chat and
 * reads it, cannot type into it, and is never signed out (Open WebUI 0.10.1's fix).
 */
let session: BrowserSession;
let page: Page;
const admin = person('Ada');
const reader = person('Rita');
const folderName = `Team notes ${Math.floor(Math.random() * 1000)}`;
const chatTitle = 'Quarterly plan';
const question = 'What is the plan for this quarter?';
const answer = 'Ship the shared folders, then the memories.';
let folderId = '';
let chatId = '';
/** Every 401 the reader's page got (a 401 would sign them out). */
const unauthorized: string[] = [];

const call = <T>(token: string, method: string, path: string, body?: unknown): Promise<T> => apiJson<T>(session.web.url, token, method, path, body);

beforeAll(async () => {
  session = await openSession();
  page = session.page;
  page.on('response', (r) => {
    if (r.status() === 401) unauthorized.push(r.url());
  });
  // The first sign-up on the empty platform is the admin.
  const signup = await fetch(session.web.url + '/api/v1/auths/signup', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(admin),
  });
  expect(signup.status).toBe(200);
  const { token, role } = (await signup.json()) as { token: string; role: string };
  expect(role).toBe('admin');
  const added = await call<{ id: string; role: string }>(token, 'POST', '/api/v1/auths/add', { ...reader, role: 'user' });
  expect(added.role).toBe('user');
  const folder = await call<{ id: string }>(token, 'POST', '/api/v1/folders/', { name: folderName });
  folderId = folder.id;
  const now = Math.floor(Date.now() / 1000);
  const u = crypto.randomUUID();
  const a = crypto.randomUUID();
  const chat = await call<{ id: string }>(token, 'POST', '/api/v1/chats/new', {
    folder_id: folderId,
    chat: {
      title: chatTitle,
      models: ['slow-reasoning'],
      history: {
        currentId: a,
        messages: {
          [u]: { id: u, parentId: null, childrenIds: [a], role: 'user', content: question, timestamp: now, models: ['slow-reasoning'] },
          [a]: { id: a, parentId: u, childrenIds: [], role: 'assistant', content: answer, timestamp: now, model: 'slow-reasoning', done: true },
        },
      },
      messages: [],
      timestamp: now * 1000,
    },
  });
  chatId = chat.id;
  await call(token, 'POST', `/api/v1/folders/${folderId}/access/update`, {
    access_grants: [{ principal_type: 'user', principal_id: added.id, permission: 'read' }],
  });
});

afterAll(() => session?.close());

describe('web UI: a folder shared read-only', () => {
  it('the reader signs in and sees the folder under "Shared with me", marked read-only', async () => {
    await page.goto(session.web.url + '/auth');
    await fillSignIn(page, reader.email, reader.password);
    await page.waitForURL((u) => !u.pathname.startsWith('/auth'));
    // The /auth page's session probe (before signing in) is an expected 401; count from here on.
    unauthorized.length = 0;
    const dialog = changelogDialog(page);
    await dialog.waitFor();
    await dialog.getByRole('button', { name: "Okay, Let's Go!" }).click();
    await dialog.waitFor({ state: 'detached' });
    const shared = page.locator('#sidebar section').filter({ has: page.getByRole('heading', { name: 'Shared with me' }) });
    const folder = shared.locator(`[data-folder-id="${folderId}"]`);
    await folder.waitFor();
    expect(await folder.locator('.folder-btn .name').textContent()).toBe(folderName);
    await folder.getByLabel('Read only').first().waitFor();
  });

  it('opens the chat and reads its messages; the input is disabled with the read-only notice', async () => {
    const folder = page.locator(`#sidebar [data-folder-id="${folderId}"]`);
    await folder.locator('.folder-btn').click();
    const link = folder.locator(`a[href="/c/${chatId}"]`);
    await link.waitFor();
    await link.click();
    await page.waitForURL(new RegExp(`/c/${chatId}$`));
    const messages = page.locator('#messages-container');
    await messages.locator('.user-message').filter({ hasText: question }).waitFor();
    await messages.locator('.assistant-message').filter({ hasText: answer }).waitFor();
    await page.locator('.readonly-notice').filter({ hasText: 'This chat is shared with you read-only' }).waitFor();
    const input = page.locator('#chat-input');
    expect(await input.getAttribute('contenteditable')).toBe('false');
    expect(await input.getAttribute('aria-disabled')).toBe('true');
    expect(await page.locator('#send-message-button').isDisabled()).toBe(true);
    // No edit / regenerate on someone else's chat.
    expect(await page.locator('.regenerate-response-button').count()).toBe(0);
  });

  it('is never signed out: a reload keeps the reader in the app on the chat', async () => {
    await page.reload();
    await page.locator('#messages-container .assistant-message').filter({ hasText: answer }).waitFor();
    await page.locator('.readonly-notice').waitFor();
    // Give any late request a moment to misbehave.
    await page.waitForTimeout(1000);
    expect(new URL(page.url()).pathname).toBe(`/c/${chatId}`);
    const me = await page.evaluate(async () => (await fetch('/api/v1/auths/', { headers: { authorization: `Bearer ${localStorage.token ?? ''}` } })).status);
    expect(me).toBe(200);
    expect(unauthorized).toEqual([]);
    await page.locator('#sidebar').waitFor();
    expect(session.errors).toEqual([]);
  });
});
