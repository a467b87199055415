import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { openSession, person, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';

/**
 * Settings → Personalization: the user's memories listed, added, edited and deleted through the
 * Settings modal's Personalization tab, and the API (GET /api/v1/memories/) agrees after each step.
 */
let session: BrowserSession;
let page: Page;
const who = person('Mira');

interface Memory {
  id: string;
  content: string;
  type: string;
  path: string | null;
}
const apiMemories = (): Promise<Memory[]> =>
  page.evaluate(async () => (await fetch('/api/v1/memories/', { headers: { authorization: `Bearer ${localStorage.token ?? ''}` } })).json());

beforeAll(async () => {
  session = await openSession();
  page = session.page;
  await signUpIntoApp(page, session.web.url, who);
});

afterAll(() => session?.close());

describe('web UI: memories (Settings → Personalization)', () => {
  it('is reached from Settings and starts empty', async () => {
    await page.locator('#sidebar-user-menu-button').click();
    await page.locator('#sidebar-user-menu').getByRole('menuitem', { name: 'Settings' }).click();
    await page.getByRole('dialog', { name: 'Settings' }).waitFor();
    await page.getByRole('tab', { name: 'Personalization' }).click();
    await page.getByRole('heading', { name: 'Memories' }).waitFor();
    await page.locator('.memory-empty').waitFor();
    expect(await apiMemories()).toEqual([]);
  });

  it('adds a memory with its type and path', async () => {
    await page.getByLabel('New memory').fill('I prefer short answers');
    await page.getByLabel('Type').selectOption('user');
    await page.getByLabel('Path (optional)').fill('style/answers');
    await page.locator('#memory-add-button').click();
    const item = page.locator('.memory-item').filter({ hasText: 'I prefer short answers' });
    await item.waitFor();
    expect(await item.locator('.memory-type').textContent()).toBe('user');
    expect(await item.locator('.memory-path').textContent()).toBe('style/answers');
    expect(await page.getByLabel('New memory').inputValue()).toBe('');
    const mems = await apiMemories();
    expect(mems.map((m) => [m.content, m.type, m.path])).toEqual([['I prefer short answers', 'user', 'style/answers']]);
    expect(await item.getAttribute('data-memory-id')).toBe(mems[0]!.id);
  });

  it('edits it', async () => {
    const item = page.locator('.memory-item').first();
    await item.getByRole('button', { name: 'Edit memory: I prefer short answers' }).click();
    const content = item.getByLabel('Edit memory');
    await content.fill('I prefer detailed answers');
    await item.locator('.memory-edit-type').selectOption('context');
    await item.locator('.memory-save-button').click();
    await page.locator('.memory-item .memory-content').filter({ hasText: 'I prefer detailed answers' }).waitFor();
    const mems = await apiMemories();
    expect(mems.map((m) => [m.content, m.type, m.path])).toEqual([['I prefer detailed answers', 'context', 'style/answers']]);
    // Still there after a reload (of /settings/personalization: the modal on that tab).
    await page.goto(session.web.url + '/settings/personalization');
    await page.locator('.memory-item .memory-content').filter({ hasText: 'I prefer detailed answers' }).waitFor();
  });

  it('deletes it', async () => {
    await page.getByRole('button', { name: 'Delete memory: I prefer detailed answers' }).click();
    await page.locator('.memory-empty').waitFor();
    expect(await apiMemories()).toEqual([]);
    expect(session.errors).toEqual([]);
  });
});
