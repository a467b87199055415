import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { openSession, person, signUpIntoApp, apiJson, type BrowserSession } from './browser-fixture.ts';

/**
 * Live updates (docs/chat.md, Events): two tabs of the same user; a chat created and renamed
 * through the API with that user's token (as another tab or device would) shows up in the other
 * tab's sidebar without a reload, and an open chat that is deleted elsewhere says so.
 */
let session: BrowserSession;
let tab1: Page;
let tab2: Page;
let token = '';
const me = person('Lena');

const call = <T>(method: string, path: string, body?: unknown): Promise<T> => apiJson<T>(session.web.url, token, method, path, body);

beforeAll(async () => {
  session = await openSession();
  tab1 = session.page;
  await signUpIntoApp(tab1, session.web.url, me);
  token = await tab1.evaluate(() => localStorage.getItem('token') ?? '');
  expect(token).not.toBe('');
  // A second tab of the same browser profile: the same session (cookie and storage).
  tab2 = await tab1.context().newPage();
  tab2.on('pageerror', (e) => session.errors.push(e.message));
  const streamed = tab2.waitForResponse((r) => r.url().includes('/api/v1/events/stream') && r.status() === 200);
  await tab2.goto(session.web.url + '/');
  await tab2.locator('#sidebar').waitFor();
  await streamed;
});

afterAll(() => session?.close());

describe('web UI: live updates between two tabs', () => {
  it('a chat created elsewhere appears in the other tab’s sidebar, then its new title', async () => {
    const chat = await call<{ id: string }>('POST', '/api/v1/chats/new', { chat: { title: 'Made in tab one', messages: [] } });
    const link = tab2.locator(`#sidebar a[href="/c/${chat.id}"]`);
    await link.filter({ hasText: 'Made in tab one' }).waitFor();
    await call('POST', `/api/v1/chats/${chat.id}`, { chat: { title: 'Renamed in tab one' } });
    await link.filter({ hasText: 'Renamed in tab one' }).waitFor();
    // Neither tab was reloaded: the page is still the one opened at the start.
    expect(await tab2.evaluate(() => performance.getEntriesByType('navigation').length)).toBe(1);
  });

  it('an open chat deleted elsewhere is re-read: it says it is gone and leaves the sidebar', async () => {
    const chat = await call<{ id: string }>('POST', '/api/v1/chats/new', { chat: { title: 'Short lived', messages: [] } });
    const link = tab2.locator(`#sidebar a[href="/c/${chat.id}"]`);
    await link.waitFor();
    await link.click();
    await tab2.waitForURL(new RegExp(`/c/${chat.id}$`));
    await call('DELETE', `/api/v1/chats/${chat.id}`);
    await tab2.locator('.chat-load-error').filter({ hasText: 'does not exist' }).waitFor();
    await link.waitFor({ state: 'detached' });
    expect(session.errors).toEqual([]);
  });
});
