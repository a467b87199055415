import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { changelogDialog, fillSignIn, fillSignUp, openSession, person, type BrowserSession, type WebStack } from './browser-fixture.ts';

/**
 * A second platform, whose admin closes the change log with Escape and signs out; then sign-in in
 * the browser against the edge's rate limit (2 attempts per account in a long window):
 * a wrong password shows the API's message; the attempt over the limit shows the 429 as a message
 * with the wait, and the right password does not get through while limited.
 */
let session: BrowserSession;
let web: WebStack;
let page: Page;
const admin = person('Grace');

beforeAll(async () => {
  session = await openSession({ SIGNIN_RATE_LIMIT_PER_ACCOUNT: '2', SIGNIN_RATE_LIMIT_PER_ADDRESS: '50', SIGNIN_RATE_LIMIT_WINDOW_SECONDS: '600' });
  ({ web, page } = session);
  // The admin account exists (signed up in the browser), then signs out.
  await page.goto(web.url + '/auth');
  await page.getByRole('button', { name: 'Create Admin Account' }).waitFor();
  await fillSignUp(page, admin);
  await page.waitForURL((u) => !u.pathname.startsWith('/auth'));
});

afterAll(() => session?.close());

describe('web UI: change log', () => {
  it('closes with Escape too', async () => {
    const dialog = changelogDialog(page);
    await dialog.getByRole('button', { name: "Okay, Let's Go!" }).waitFor();
    // Escape where the focus is in the dialog (locator.press focuses it first): the Modal listens on
    // itself, so a key pressed while something else on the page holds the focus does not reach it.
    await dialog.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await page.reload();
    await page.locator('#model-selector-0-button').waitFor();
    expect(await page.getByRole('dialog').count()).toBe(0);
    // Signed out for what follows.
    await page.context().clearCookies();
    await page.evaluate(() => localStorage.clear());
  });
});

describe('web UI: sign-in rate limit', () => {
  it('a wrong password is refused with the API message, the third attempt with the 429 and its wait', async () => {
    await page.goto(web.url + '/auth');
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    const alert = page.locator('#auth-error');
    for (let i = 0; i < 2; i++) {
      await fillSignIn(page, admin.email, `${admin.password}-wrong`);
      await alert.filter({ hasText: OWUI_ERRORS.invalidCredentials }).waitFor();
      await page.locator('form button[type="submit"]:not([disabled])').waitFor();
    }
    await fillSignIn(page, admin.email, admin.password);
    await alert.filter({ hasText: /Too many attempts — try again in \d+ seconds?/ }).waitFor();
    const text = (await alert.textContent()) ?? '';
    const wait = Number(/in (\d+) second/.exec(text)?.[1]);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(600);
    // Still on the sign-in page, not signed in.
    expect(new URL(page.url()).pathname).toBe('/auth');
    const session = await page.evaluate(async () => (await fetch('/api/v1/auths/')).status);
    expect(session).toBe(401);
  });
});
