import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page, Request } from 'playwright-core';
import { answerTo, ask, MODEL, openSession, person, pickModel, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';

/**
 * Settings → General reaches the model: the system prompt and the advanced parameters saved there
 * go with every completion the chat sends (Open WebUI's chat: a first `system` message, the
 * parameters as `params`, which the chat worker applies to the upstream request), and still do
 * after a reload (they are kept on the server).
 */
let session: BrowserSession;
let page: Page;
const who = person('Sol');

/** The body of the next POST /api/chat/completions the page sends. */
const nextCompletion = (): Promise<Record<string, unknown>> =>
  page
    .waitForRequest((r: Request) => r.method() === 'POST' && new URL(r.url()).pathname === '/api/chat/completions', { timeout: 30_000 })
    .then((r) => r.postDataJSON() as Record<string, unknown>);

beforeAll(async () => {
  session = await openSession();
  page = session.page;
  await signUpIntoApp(page, session.web.url, who);
});

afterAll(() => session?.close());

describe('web UI: Settings → General applies to completions', () => {
  it('sends no system message and no params while nothing is saved', async () => {
    await pickModel(page, MODEL);
    const sent = nextCompletion();
    await ask(page, 'first question');
    const body = await sent;
    expect((body.messages as { role: string }[]).map((m) => m.role)).toEqual(['user']);
    expect(body.params).toBeUndefined();
    await page.locator('.chat-assistant').filter({ hasText: answerTo('first question') }).waitFor();
  });

  it('sends the saved system prompt first and the parameters as params, also after a reload', async () => {
    await page.locator('button[aria-label="User Menu"]').click();
    await page.getByRole('menuitem', { name: 'Settings' }).click();
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    await dialog.waitFor();
    await dialog.getByRole('tab', { name: 'General' }).click();
    await dialog.getByLabel('System Prompt').fill('Answer in one sentence.');
    await dialog.locator('#settings-params-toggle').click();
    await dialog.getByLabel('Temperature').fill('0.2');
    await dialog.getByLabel('Max Tokens').fill('64');
    await dialog.locator('#settings-general-save').click();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });

    for (const question of ['second question', 'after a reload']) {
      if (question === 'after a reload') {
        await page.reload();
        await page.locator('#chat-input').waitFor();
      }
      await page.locator('#new-chat-button').first().click();
      await pickModel(page, MODEL);
      const sent = nextCompletion();
      await ask(page, question);
      const body = await sent;
      expect((body.messages as { role: string; content: string }[]).slice(0, 2)).toEqual([
        { role: 'system', content: 'Answer in one sentence.' },
        { role: 'user', content: question },
      ]);
      expect(body.params).toMatchObject({ temperature: 0.2, max_tokens: 64 });
      await page.locator('.chat-assistant').filter({ hasText: answerTo(question) }).waitFor();
    }
  });
});
