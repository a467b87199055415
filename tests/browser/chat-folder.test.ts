import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { openSession, person, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';

/** The chat menu's "Move to folder": POST /api/v1/chats/{id}/folder, the sidebar follows. */
let session: BrowserSession;
let page: Page;
const who = person('Finn');
let folderId = '';
let chatId = '';

const call = <T>(method: string, path: string, body?: unknown): Promise<T> =>
  page.evaluate(
    async ([method, path, body]) => {
      const res = await fetch(path as string, {
        method: method as string,
        headers: { authorization: `Bearer ${localStorage.token ?? ''}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return res.json();
    },
    [method, path, body] as const,
  ) as Promise<T>;

beforeAll(async () => {
  session = await openSession();
  page = session.page;
  await signUpIntoApp(page, session.web.url, who);
  folderId = (await call<{ id: string }>('POST', '/api/v1/folders/', { name: 'Projects' })).id;
  chatId = (await call<{ id: string }>('POST', '/api/v1/chats/new', { chat: { title: 'Roadmap chat', models: [], history: { messages: {}, currentId: null }, messages: [] } })).id;
  await page.reload();
});

afterAll(() => session?.close());

describe('web UI: move a chat to a folder', () => {
  it('moves the chat through its menu into the folder, and back out', async () => {
    const item = page.locator(`#sidebar [data-chat-id="${chatId}"]`);
    await item.waitFor();
    await item.getByRole('button', { name: 'Chat menu: Roadmap chat' }).click();
    await page.getByRole('menuitem', { name: 'Move to folder' }).click();
    const dialog = page.getByRole('dialog', { name: 'Move to folder' });
    await dialog.waitFor();
    await dialog.getByLabel('Folder for Roadmap chat').selectOption({ label: 'Projects' });
    await dialog.locator('#move-chat-confirm-button').click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(async () => (await call<{ folder_id: string | null }>('GET', `/api/v1/chats/${chatId}`)).folder_id).toBe(folderId);
    // The sidebar: inside the folder once it is opened.
    const folder = page.locator(`#sidebar [data-folder-id="${folderId}"]`);
    await folder.locator('.folder-btn').click();
    await folder.locator(`[data-chat-id="${chatId}"]`).waitFor();

    await folder.locator(`[data-chat-id="${chatId}"]`).getByRole('button', { name: 'Chat menu: Roadmap chat' }).click();
    await page.getByRole('menuitem', { name: 'Move to folder' }).click();
    await dialog.getByLabel('Folder for Roadmap chat').selectOption({ label: 'No folder' });
    await dialog.locator('#move-chat-confirm-button').click();
    await expect.poll(async () => (await call<{ folder_id: string | null }>('GET', `/api/v1/chats/${chatId}`)).folder_id).toBe(null);
    await folder.locator(`[data-chat-id="${chatId}"]`).waitFor({ state: 'detached' });
    expect(session.errors).toEqual([]);
  });
});

describe('web UI: share a folder from the sidebar', () => {
  it('the owner grants another user read access, then write, through the share dialog', async () => {
    const other = person('Gus');
    const added = await call<{ id: string }>('POST', '/api/v1/auths/add', { ...other, role: 'user' });
    await page.locator(`#sidebar [data-folder-id="${folderId}"]`).getByRole('button', { name: 'Share folder: Projects' }).click();
    const dialog = page.getByRole('dialog', { name: /Share .Projects./ });
    await dialog.waitFor();
    await dialog.locator('#folder-share-type').selectOption('user');
    await dialog.locator('#folder-share-principal').selectOption(added.id);
    await dialog.locator('#folder-share-permission').selectOption('read');
    await dialog.locator('#folder-share-add-button').click();
    await dialog.locator(`.grant[data-principal-id="${added.id}"]`).waitFor();
    await dialog.locator('#folder-share-save-button').click();
    await dialog.getByText('Saved').waitFor();
    const grants = async () =>
      (await call<{ access_grants: { principal_type: string; principal_id: string; permission: string }[] }>('GET', `/api/v1/folders/${folderId}`)).access_grants.map((g) => [
        g.principal_type,
        g.principal_id,
        g.permission,
      ]);
    expect(await grants()).toEqual([['user', added.id, 'read']]);
    await dialog.getByLabel(`Permission for ${other.name}`).selectOption('write');
    await dialog.locator('#folder-share-save-button').click();
    await expect.poll(grants).toEqual([['user', added.id, 'write']]);
    await dialog.getByRole('button', { name: 'Close' }).first().click();
    await dialog.waitFor({ state: 'detached' });
    expect(session.errors).toEqual([]);
  });
});
