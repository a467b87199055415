import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { apiJson, changelogDialog, fillSignIn, openSession, person, type BrowserSession } from './browser-fixture.ts';

/**
 * Live updates from another user (docs/chat.md, Events): Bruno has the app open; Ada (the admin,
 * through the API) shares a folder with him, renames it, unshares it, grants it to a group and
 * adds him to and removes him from that group, deletes it — Bruno's sidebar follows each change
 * without a reload, and a chat of a shared folder open in his tab follows the folder's grants. Then Ada changes Bruno's role (his tab shows the activation notice, then the
 * app again) and deletes him (his tab is signed out with a message).
 */
let session: BrowserSession;
let page: Page;
let adminToken = '';
const admin = person('Ada');
const bruno = person('Bruno');
let brunoId = '';

const call = <T>(method: string, path: string, body?: unknown): Promise<T> => apiJson<T>(session.web.url, adminToken, method, path, body);
const sharedSection = () => page.locator('#sidebar section').filter({ has: page.getByRole('heading', { name: 'Shared with me' }) });
const sharedFolder = (id: string) => page.locator(`#sidebar [data-folder-id="${id}"]`);
const grant = (folderId: string, grants: { principal_type: 'user' | 'group'; principal_id: string; permission: 'read' | 'write' }[]) =>
  call('POST', `/api/v1/folders/${folderId}/access/update`, { access_grants: grants });
const userForm = async (role: string) => {
  const u = await call<{ name: string; email: string; profile_image_url: string }>('GET', `/api/v1/users/${brunoId}`);
  return { role, name: u.name, email: u.email, profile_image_url: u.profile_image_url };
};

beforeAll(async () => {
  session = await openSession();
  page = session.page;
  const signup = await fetch(session.web.url + '/api/v1/auths/signup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(admin) });
  expect(signup.status).toBe(200);
  adminToken = ((await signup.json()) as { token: string }).token;
  brunoId = (await call<{ id: string }>('POST', '/api/v1/auths/add', { ...bruno, role: 'user' })).id;

  await page.goto(session.web.url + '/auth');
  const streamed = page.waitForResponse((r) => r.url().includes('/api/v1/events/stream') && r.status() === 200);
  await fillSignIn(page, bruno.email, bruno.password);
  await page.waitForURL((u) => !u.pathname.startsWith('/auth'));
  const dialog = changelogDialog(page);
  await dialog.waitFor();
  await dialog.getByRole('button', { name: "Okay, Let's Go!" }).click();
  await dialog.waitFor({ state: 'detached' });
  await page.locator('#sidebar').waitFor();
  await streamed;
});

afterAll(() => session?.close());

describe('web UI: live updates from another user', () => {
  it('a folder shared with me appears, follows its renames, and goes when unshared — no reload', async () => {
    const folder = await call<{ id: string }>('POST', '/api/v1/folders/', { name: 'Roadmap' });
    await grant(folder.id, [{ principal_type: 'user', principal_id: brunoId, permission: 'read' }]);
    const node = sharedSection().locator(`[data-folder-id="${folder.id}"]`);
    await node.locator('.folder-btn .name').filter({ hasText: 'Roadmap' }).waitFor();

    await call('POST', `/api/v1/folders/${folder.id}/update`, { name: 'Roadmap 2027' });
    await node.locator('.folder-btn .name').filter({ hasText: 'Roadmap 2027' }).waitFor();

    await grant(folder.id, []);
    await sharedFolder(folder.id).waitFor({ state: 'detached' });
    expect(await page.evaluate(() => performance.getEntriesByType('navigation').length)).toBe(1);
  });

  it('a group membership that grants a folder brings it and takes it away; a shared folder deleted by its owner goes', async () => {
    const folder = await call<{ id: string }>('POST', '/api/v1/folders/', { name: 'Team space' });
    const group = await call<{ id: string }>('POST', '/api/v1/groups/create', { name: 'Readers', description: '' });
    await grant(folder.id, [{ principal_type: 'group', principal_id: group.id, permission: 'read' }]);
    await call('POST', `/api/v1/groups/id/${group.id}/users/add`, { user_ids: [brunoId] });
    await sharedFolder(folder.id).locator('.folder-btn .name').filter({ hasText: 'Team space' }).waitFor();
    await call('POST', `/api/v1/groups/id/${group.id}/users/remove`, { user_ids: [brunoId] });
    await sharedFolder(folder.id).waitFor({ state: 'detached' });

    await grant(folder.id, [{ principal_type: 'user', principal_id: brunoId, permission: 'write' }]);
    await sharedFolder(folder.id).waitFor();
    await call('DELETE', `/api/v1/folders/${folder.id}`);
    await sharedFolder(folder.id).waitFor({ state: 'detached' });
    expect(await page.evaluate(() => performance.getEntriesByType('navigation').length)).toBe(1);
  });

  it('an open chat in a shared folder follows its folder’s grants: read → write enables the input, unshared says it is gone', async () => {
    const folder = await call<{ id: string }>('POST', '/api/v1/folders/', { name: 'Plans' });
    const now = Math.floor(Date.now() / 1000);
    const [u, a] = [crypto.randomUUID(), crypto.randomUUID()];
    const chat = await call<{ id: string }>('POST', '/api/v1/chats/new', {
      folder_id: folder.id,
      chat: {
        title: 'Q3 plan',
        history: {
          currentId: a,
          messages: {
            [u]: { id: u, parentId: null, childrenIds: [a], role: 'user', content: 'What is the plan?', timestamp: now },
            [a]: { id: a, parentId: u, childrenIds: [], role: 'assistant', content: 'Ship the admin pages.', timestamp: now, done: true },
          },
        },
        messages: [],
      },
    });
    await grant(folder.id, [{ principal_type: 'user', principal_id: brunoId, permission: 'read' }]);
    const node = sharedFolder(folder.id);
    await node.locator('.folder-btn').click();
    await node.locator(`a[href="/c/${chat.id}"]`).click();
    await page.waitForURL(new RegExp(`/c/${chat.id}$`));
    await page.locator('#messages-container .assistant-message').filter({ hasText: 'Ship the admin pages.' }).waitFor();
    await page.locator('.readonly-notice').waitFor();

    await grant(folder.id, [{ principal_type: 'user', principal_id: brunoId, permission: 'write' }]);
    await page.locator('.readonly-notice').waitFor({ state: 'detached' });
    await expect.poll(() => page.locator('#chat-input').getAttribute('contenteditable')).toBe('true');

    await grant(folder.id, []);
    await page.locator('.chat-load-error').waitFor();
    await sharedFolder(folder.id).waitFor({ state: 'detached' });
    expect(await page.evaluate(() => performance.getEntriesByType('navigation').length)).toBe(1);
  });

  it('my role changed by the admin takes effect in the open tab: pending shows the notice, user brings the app back', async () => {
    await call('POST', `/api/v1/users/${brunoId}/update`, await userForm('pending'));
    await page.getByRole('heading', { name: 'Account Activation Pending' }).waitFor();
    await call('POST', `/api/v1/users/${brunoId}/update`, await userForm('user'));
    await page.locator('#sidebar').waitFor();
    await page.getByRole('heading', { name: 'Account Activation Pending' }).waitFor({ state: 'detached' });
    expect(await page.evaluate(() => performance.getEntriesByType('navigation').length)).toBe(1);
  });

  it('deleted by the admin: the open tab is signed out and told why', async () => {
    await call('DELETE', `/api/v1/users/${brunoId}`);
    await page.waitForURL((u) => u.pathname === '/auth');
    expect(await page.locator('#auth-notice').textContent()).toBe('Your account has been deleted by an administrator.');
    expect(await page.evaluate(() => localStorage.getItem('token'))).toBeNull();
    expect(session.errors).toEqual([]);
  });
});
