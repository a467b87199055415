import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, MODEL, startWebStack, type WebStack } from './browser-fixture.ts';
import { loginAdmin, registerAdmin } from './owui-e2e-support.ts';

/**
 * Open WebUI 0.10.2's cypress/e2e/chat.cy.ts ("These tests run through the chat flow"), step by
 * step with its selectors and assertions, against Gatehouse's web UI (a real stack whose one
 * connection is the fake upstream: its first model, `slow-reasoning`, streams reasoning then an
 * echo, with usage).
 *
 * Cypress → Playwright: `cy.get(sel).click()` is a locator click (strict: one element, as Cypress
 * refuses to click several); `should('exist')` waits for the element attached, with upstream's
 * timeouts; `cy.intercept` + spy counts the requests the page makes.
 *
 * Not ported: "user can generate image" (`[aria-label="Generate Image"]` →
 * `img[data-cy="image"]`): Gatehouse has no image generation, so there is no button to press.
 */
let web: WebStack;
let browser: Browser;
let page: Page;

/** The chat steps every upstream test starts with: pick the first model, send, wait for the finished answer. */
async function chatTurn(): Promise<void> {
  // Click on the model selector
  await page.locator('button[aria-label="Select a model"]').click();
  // Select the first model
  await page.locator('button[aria-roledescription="model-item"]').first().click();
  // Type a message
  await page.locator('#chat-input').pressSequentially('Hi, what can you do? A single sentence only please.');
  // Send the message
  await page.locator('button[type="submit"]').click();
  // User's message should be visible
  await page.locator('.chat-user').first().waitFor({ state: 'attached' });
  // Wait for the response: .chat-assistant is created after the first token is received
  await page.locator('.chat-assistant').first().waitFor({ state: 'attached', timeout: 10_000 });
  // Generation Info is created after the stop token is received
  await page.locator('div[aria-label="Generation Info"]').first().waitFor({ state: 'attached', timeout: 120_000 });
}

beforeAll(async () => {
  web = await startWebStack();
  browser = await launchBrowser();
  // support/e2e.ts: before(() => cy.registerAdmin())
  await registerAdmin(web.url);
});

afterAll(async () => {
  await browser?.close();
  await web?.close();
});

beforeEach(async () => {
  // Login as the admin user
  page = await loginAdmin(browser, web.url);
  // Visit the home page
  await page.goto(web.url + '/');
});

afterEach(async () => {
  await page?.context().close();
});

describe('Open WebUI e2e: Chat (cypress/e2e/chat.cy.ts)', () => {
  describe('Ollama', () => {
    it('user can select a model', async () => {
      // Click on the model selector
      await page.locator('button[aria-label="Select a model"]').click();
      // Select the first model
      const first = page.locator('button[aria-roledescription="model-item"]').first();
      // (ours: upstream asserts nothing here; the pick must show in the selector and be remembered)
      expect(await first.getAttribute('data-value')).toBe(MODEL);
      await first.click();
      await expect.poll(() => page.locator('button[aria-label="Select a model"]').textContent()).toContain(MODEL);
      expect(await page.evaluate(() => localStorage.getItem('selectedModel'))).toBe(JSON.stringify(MODEL));
    });

    it('user can perform text chat', async () => {
      await chatTurn();
      // (ours) the answer is the fake upstream's echo, in the assistant's element
      await expect.poll(() => page.locator('.chat-assistant').first().textContent()).toContain('echo: Hi, what can you do? A single sentence only please.');
    });

    it('user can share chat', async () => {
      await chatTurn();
      // spy on requests: POST /api/v1/chats/**/share
      const shares: string[] = [];
      page.on('request', (r) => {
        const path = new URL(r.url()).pathname;
        if (r.method() === 'POST' && /^\/api\/v1\/chats\/.+\/share$/.test(path)) shares.push(path);
      });
      // Open context menu
      await page.locator('#chat-context-menu-button').click();
      // Click share button
      await page.locator('#chat-share-button').click();
      // Check if the share dialog is visible
      await page.locator('#copy-and-share-chat-button').waitFor({ state: 'attached' });
      // Click the copy button
      await page.locator('#copy-and-share-chat-button').click();
      // Check if the share request was made (within 5 s): exactly once
      await expect.poll(() => shares.length, { timeout: 5_000 }).toBe(1);
      const chatId = new URL(page.url()).pathname.split('/').pop();
      expect(shares).toEqual([`/api/v1/chats/${chatId}/share`]);
    });
  });
});
