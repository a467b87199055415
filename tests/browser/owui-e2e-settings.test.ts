import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import { fillSignIn, openSession, person, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';

/**
 * Open WebUI 0.10.2's cypress/e2e/settings.cy.ts, step for step, with its selectors: before each
 * test the admin signs in, opens `/`, clicks `button[aria-label="User Menu"]` and then the first
 * `button` containing "Settings"; each test clicks the tab button by its text and, where upstream
 * does, the first `button` containing "Save". Cypress's `cy.get(sel).contains(text)` is the first
 * element matching `sel` with that text, and its click waits until the element is visible and not
 * covered — Playwright's click waits for the same, so a Save hidden behind the dialog, or a tab
 * button of something other than the open dialog, fails here as it would there.
 *
 * Upstream's `after(() => cy.wait(2000))` only gives Cypress's video recorder its last frames: it
 * asserts nothing and is left out. Upstream asserts nothing after its clicks either (a click that
 * cannot happen is the failure); each test here also checks what the click did — the tab selected,
 * the save confirmed — so a button that does nothing fails too.
 */
let session: BrowserSession;
let page: Page;
const admin = person('Admin');

/** Cypress's `cy.get(selector).contains(text)`: the first element matching `selector` that contains `text`. */
const cyContains = (selector: string, text: string): Locator => page.locator(selector).filter({ hasText: text }).first();
const dialog = () => page.getByRole('dialog').filter({ has: page.locator('#settings-title') });

beforeAll(async () => {
  session = await openSession();
  page = session.page;
  // The admin is the first account (upstream's support file registers it before the suite).
  await signUpIntoApp(page, session.web.url, admin);
});

afterAll(() => session?.close());

beforeEach(async () => {
  // cy.loginAdmin(): a signed-in admin session (signed in again if this page lost it).
  await page.goto(session.web.url + '/');
  if (new URL(page.url()).pathname.startsWith('/auth')) {
    await fillSignIn(page, admin.email, admin.password);
    await page.waitForURL((u) => !u.pathname.startsWith('/auth'));
  }
  await page.locator('button[aria-label="User Menu"]').click();
  await cyContains('button', 'Settings').click();
  await dialog().waitFor();
});

/** The tab is selected and its section is the one shown. */
async function expectTab(id: string): Promise<void> {
  await expect.poll(() => page.locator(`#settings-tab-${id}`).getAttribute('aria-selected')).toBe('true');
  expect(await page.locator('#settings-panel').getAttribute('data-tab')).toBe(id);
}

/** A Save click was confirmed: the section's status says so. */
async function expectSaved(): Promise<void> {
  await dialog().getByRole('status').filter({ hasText: 'Settings saved successfully!' }).waitFor();
}

describe('Settings', () => {
  describe('General', () => {
    it('user can open the General modal and hit save', async () => {
      await cyContains('button', 'General').click();
      await expectTab('general');
      await cyContains('button', 'Save').click();
      await expectSaved();
    });
  });

  describe('Interface', () => {
    it('user can open the Interface modal and hit save', async () => {
      await cyContains('button', 'Interface').click();
      await expectTab('interface');
      await cyContains('button', 'Save').click();
      await expectSaved();
    });
  });

  describe('Audio', () => {
    it('user can open the Audio modal and hit save', async () => {
      await cyContains('button', 'Audio').click();
      await expectTab('audio');
      await cyContains('button', 'Save').click();
      await expectSaved();
    });
  });

  describe('Chats', () => {
    it('user can open the Chats modal', async () => {
      await cyContains('button', 'Chats').click();
      await expectTab('chats');
    });
  });

  describe('Account', () => {
    it('user can open the Account modal and hit save', async () => {
      await cyContains('button', 'Account').click();
      await expectTab('account');
      await cyContains('button', 'Save').click();
      await expectSaved();
    });
  });

  describe('About', () => {
    it('user can open the About modal', async () => {
      await cyContains('button', 'About').click();
      await expectTab('about');
    });
  });

  it('the page raised no uncaught errors', () => {
    expect(session.errors).toEqual([]);
  });
});
