import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { axeAudit } from './axe-audit.ts';
import { answerTo, MODEL, openSession, person, shotsEverySize, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';

/**
 * Workspace → Models in a real chromium against the real stack: the sidebar opens the page; a
 * custom model (name, id suggested from the name, base model `slow-reasoning` (the fixture's MODEL), description, system prompt,
 * temperature) is created in the editor; the chat's model selector then lists it by its name,
 * a question asked with it is answered (the fake base model echoes it); the switch turns it off
 * (and the selector drops it); delete asks, then removes it. axe finds no serious violation on
 * the page, the editor or the delete dialog. Screenshots (SCREENSHOTS_DIR): `workspace-models`,
 * `workspace-models-editor`, each wide/narrow × light/dark.
 */
let session: BrowserSession;
let page: Page;
const who = person('Mina');
const item = (id: string) => page.locator(`.model-item[data-model-id="${id}"]`);

beforeAll(async () => {
  session = await openSession();
  page = session.page;
  // The first account is the admin: it may create models without the workspace.models permission.
  await signUpIntoApp(page, session.web.url, who);
});
afterAll(async () => {
  await session?.close();
});

describe('Workspace → Models', () => {
  it('the sidebar opens the page; a custom model is created in the editor', async () => {
    await page.locator('#sidebar-workspace-models-button').click();
    await page.waitForURL((u) => u.pathname === '/workspace/models');
    await page.getByText('No custom models yet.').waitFor();
    await page.locator('#model-create-button').click();
    await page.locator('#model-name').fill('Pirate Helper');
    // The id is suggested from the name.
    await expect.poll(() => page.locator('#model-id').inputValue()).toBe('pirate-helper');
    await page.locator('#model-base').selectOption(MODEL);
    await page.locator('#model-description').fill('Answers like a pirate');
    await page.locator('#model-system').fill('You are a pirate. Answer in pirate speak.');
    await page.locator('#model-temperature').fill('0.4');
    expect(await axeAudit(page, 'model editor', ['[role="dialog"]'])).toEqual([]);
    await shotsEverySize(page, 'workspace-models-editor');
    await page.locator('#model-save-button').click();
    await item('pirate-helper').waitFor();
    await expect.poll(() => item('pirate-helper').textContent()).toContain('Answers like a pirate');
    expect(await item('pirate-helper').locator('.model-toggle').getAttribute('aria-checked')).toBe('true');
  });

  it('a taken id shows Open WebUI’s message in the editor', async () => {
    await page.locator('#model-create-button').click();
    await page.locator('#model-name').fill('Pirate Helper');
    await page.locator('#model-base').selectOption(MODEL);
    await page.locator('#model-save-button').click();
    await page.getByRole('alert').filter({ hasText: 'This model id is already registered' }).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
  });

  it('search asks the server', async () => {
    await page.locator('#models-search').fill('nothing-like-this');
    await page.getByText('No model matches “nothing-like-this”.').waitFor();
    await page.locator('#models-search').fill('pirate');
    await expect.poll(() => page.locator('.model-item').count()).toBe(1);
    expect(await axeAudit(page, 'models page', ['#main'])).toEqual([]);
    await shotsEverySize(page, 'workspace-models');
  });

  it('the model selector lists it by name; a question asked with it is answered', async () => {
    await page.locator('#sidebar-new-chat-button').click();
    await page.waitForURL((u) => u.pathname === '/');
    // The selector shows a custom model by its name, its id beside it.
    await page.locator('#model-selector-0-button').click();
    await page.locator('#model-search-input').fill('pirate');
    const option = page.getByRole('listbox', { name: 'Available models' }).getByRole('option').filter({ hasText: 'Pirate Helper' });
    await expect.poll(() => option.textContent()).toContain('pirate-helper');
    await option.click();
    await page.locator('#model-selector-0-button').filter({ hasText: 'Pirate Helper' }).waitFor();
    const question = 'Where is the treasure?';
    const input = page.locator('#chat-input');
    await input.click();
    await input.pressSequentially(question);
    await page.keyboard.press('Enter');
    await page.locator('#messages-container').getByText(answerTo(question)).first().waitFor();
  });

  it('switched off it leaves the selector; delete asks, then removes it', async () => {
    await page.locator('#sidebar-workspace-models-button').click();
    await page.waitForURL((u) => u.pathname === '/workspace/models');
    const toggle = item('pirate-helper').locator('.model-toggle');
    await toggle.click();
    await expect.poll(() => toggle.getAttribute('aria-checked')).toBe('false');
    await page.locator('#sidebar-new-chat-button').click();
    await page.locator('#model-selector-0-button').click();
    await page.locator('#model-search-input').fill('pirate');
    await page.getByRole('listbox', { name: 'Available models' }).getByText('No results found').waitFor();
    await page.keyboard.press('Escape');

    await page.locator('#sidebar-workspace-models-button').click();
    await item('pirate-helper').locator('.model-delete-button').click();
    await page.locator('#model-delete-confirm-button').waitFor();
    expect(await axeAudit(page, 'model delete', ['[role="dialog"]'])).toEqual([]);
    await page.locator('#model-delete-confirm-button').click();
    await item('pirate-helper').waitFor({ state: 'detached' });
    await page.getByText('No custom models yet.').waitFor();
  });
});
