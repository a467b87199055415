import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { axeAudit } from './axe-audit.ts';
import { answerTo, MODEL, openSession, person, pickModel, shotsEverySize, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';

/**
 * Workspace → Prompts in a real chromium against the real stack: create prompts on the page (one
 * with a `{{name}}` variable), search them, then in a chat type `/`, move to the prompt with the
 * arrow keys and pick it with Enter, fill its variable in the dialog and see the text inserted
 * into `#chat-input` and sent (the fake model echoes it); a click picks too; edit and delete on the
 * page. axe finds no serious violation on the page, the editor, the `/` menu or the dialog.
 * Screenshots (SCREENSHOTS_DIR): `workspace-prompts`, `workspace-prompts-editor`,
 * `chat-prompt-menu`, `chat-prompt-variables`, each wide/narrow × light/dark.
 */
let session: BrowserSession;
let page: Page;
const who = person('Priya');
const GREET = 'Write a short greeting to {{name}} in French.';
const FAREWELL = 'Say goodbye politely.';

const item = (command: string) => page.locator(`.prompt-item[data-command="${command}"]`);

beforeAll(async () => {
  session = await openSession();
  page = session.page;
  await signUpIntoApp(page, session.web.url, who);
});
afterAll(async () => {
  await session?.close();
});

async function createOnPage(name: string, command: string, content: string): Promise<void> {
  await page.locator('#prompt-create-button').click();
  await page.locator('#prompt-name').fill(name);
  await page.locator('#prompt-command').fill(command);
  await page.locator('#prompt-content').fill(content);
  await page.locator('#prompt-save-button').click();
  await item(command.replace(/^\//, '')).waitFor();
}

describe('Workspace → Prompts', () => {
  it('the sidebar opens the page; prompts are created there (the command typed with its /)', async () => {
    await page.locator('#sidebar-workspace-prompts-button').click();
    await page.waitForURL((u) => u.pathname === '/workspace/prompts');
    await page.getByText('No prompts yet.').waitFor();
    await createOnPage('Greeting', '/greet', GREET);
    await page.locator('#prompt-create-button').click();
    await page.locator('#prompt-name').fill('Farewell');
    await page.locator('#prompt-command').fill('farewell');
    await page.locator('#prompt-content').fill(FAREWELL);
    expect(await axeAudit(page, 'prompt editor', ['[role="dialog"]'])).toEqual([]);
    await shotsEverySize(page, 'workspace-prompts-editor');
    await page.locator('#prompt-save-button').click();
    await item('farewell').waitFor();
    expect(await page.locator('.prompt-item').count()).toBe(2);
    await expect.poll(() => item('greet').textContent()).toContain('Greeting');
  });

  it('a repeated command shows Open WebUI’s message in the editor', async () => {
    await page.locator('#prompt-create-button').click();
    await page.locator('#prompt-name').fill('Again');
    await page.locator('#prompt-command').fill('greet');
    await page.locator('#prompt-content').fill('x');
    await page.locator('#prompt-save-button').click();
    await page.getByRole('alert').filter({ hasText: 'This command is already registered' }).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
  });

  it('search asks the server and shows what matches', async () => {
    await page.locator('#prompts-search').fill('goodbye');
    await expect.poll(() => page.locator('.prompt-item').count()).toBe(1);
    expect(await page.locator('.prompt-item').getAttribute('data-command')).toBe('farewell');
    await page.locator('#prompts-search').fill('');
    await expect.poll(() => page.locator('.prompt-item').count()).toBe(2);
    expect(await axeAudit(page, 'prompts page', ['#main'])).toEqual([]);
    await shotsEverySize(page, 'workspace-prompts');
  });
});

describe('`/` in the chat input', () => {
  it('offers the prompts; arrow keys and Enter pick one; its variable is asked for, then the text is inserted and sent', async () => {
    await page.locator('#sidebar-new-chat-button').click();
    await page.waitForURL((u) => u.pathname === '/');
    await pickModel(page, MODEL);
    const input = page.locator('#chat-input');
    await input.click();
    await input.pressSequentially('/');
    const menu = page.locator('#command-options-container');
    await menu.waitFor();
    await expect.poll(() => menu.getByRole('option').count()).toBe(2);
    expect(await axeAudit(page, 'prompt menu', ['#command-options-container'])).toEqual([]);
    await shotsEverySize(page, 'chat-prompt-menu');
    // Move with the arrow keys until /greet is the active option (the order is the server's).
    for (let i = 0; i < 3 && (await menu.locator('.selected-command-option-button').getAttribute('data-command')) !== 'greet'; i++) await page.keyboard.press('ArrowDown');
    expect(await menu.locator('.selected-command-option-button').getAttribute('data-command')).toBe('greet');
    await page.keyboard.press('Enter');
    await menu.waitFor({ state: 'detached' });
    const dialog = page.locator('#input-variables-modal');
    await dialog.waitFor();
    expect(await dialog.locator('.input-variable').count()).toBe(1);
    expect(await dialog.locator('.input-variable').getAttribute('data-variable')).toBe('name');
    await dialog.locator('.input-variable').fill('Marie');
    expect(await axeAudit(page, 'prompt variables', ['[role="dialog"]'])).toEqual([]);
    await shotsEverySize(page, 'chat-prompt-variables');
    await page.locator('#input-variables-save-button').click();
    await dialog.waitFor({ state: 'detached' });
    const sent = 'Write a short greeting to Marie in French.';
    await expect.poll(() => input.textContent()).toBe(sent);
    await page.keyboard.press('Enter');
    const messages = page.locator('#messages-container');
    await messages.getByText(answerTo(sent)).first().waitFor();
    await expect.poll(() => input.textContent()).toBe('');
  });

  it('a click picks too; a prompt without variables goes in at once, after what was typed', async () => {
    const input = page.locator('#chat-input');
    await input.click();
    await input.pressSequentially('Then: /fare');
    const menu = page.locator('#command-options-container');
    await expect.poll(() => menu.getByRole('option').count()).toBe(1);
    await menu.getByRole('option').filter({ hasText: '/farewell' }).click();
    await expect.poll(() => input.textContent()).toBe(`Then: ${FAREWELL}`);
    expect(await page.locator('#input-variables-modal').count()).toBe(0);
    // Escape closes the menu and leaves the text as typed.
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    await input.pressSequentially('/zzz');
    await page.getByText('No prompt matches “/zzz”.').waitFor();
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'detached' });
    await expect.poll(() => input.textContent()).toBe('/zzz');
  });
});

describe('edit and delete on the page', () => {
  it('edit changes the text the menu inserts; delete asks, then removes it', async () => {
    await page.goto(`${session.web.url}/workspace/prompts`);
    await item('farewell').waitFor();
    await item('farewell').locator('.prompt-edit-button').click();
    await page.locator('#prompt-content').fill('Say goodbye warmly.');
    await page.locator('#prompt-save-button').click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await item('greet').locator('.prompt-delete-button').click();
    await page.locator('#prompt-delete-confirm-button').waitFor();
    expect(await axeAudit(page, 'prompt delete', ['[role="dialog"]'])).toEqual([]);
    await page.locator('#prompt-delete-confirm-button').click();
    await item('greet').waitFor({ state: 'detached' });
    expect(await page.locator('.prompt-item').count()).toBe(1);

    await page.locator('#sidebar-new-chat-button').click();
    const input = page.locator('#chat-input');
    await input.click();
    await input.pressSequentially('/');
    const menu = page.locator('#command-options-container');
    await expect.poll(() => menu.getByRole('option').count()).toBe(1);
    await page.keyboard.press('Enter');
    await expect.poll(() => input.textContent()).toBe('Say goodbye warmly.');
    expect(session.errors).toEqual([]);
  });
});
