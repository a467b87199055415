import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';

/**
 * Open WebUI 0.10.2's cypress/support/e2e.ts, for the ports of its e2e specs (owui-e2e-*.test.ts):
 * `registerAdmin` before the specs (a sign-up through the API that may answer 200 or 400), and
 * `login` as `cy.session` does it — the first call signs in through the /auth form (email by
 * `input[autocomplete="email"]`, `input[type="password"]`, `button[type="submit"]`), waits for
 * `#chat-search`, dismisses the change log ("Okay, Let's Go!"); later calls restore that session
 * (its localStorage token) and validate it with `GET /api/v1/auths/`.
 *
 * One difference: upstream's admin password is the literal "password"; here it is generated per
 * run (no fixed credentials in the tree). Name and email are upstream's.
 */
export const adminUser = {
  name: 'Admin User',
  email: 'admin@example.com',
  password: randomBytes(12).toString('base64url'),
};

/** `cy.register`: POST /api/v1/auths/signup, 200 (created) or 400 (already there). */
export async function register(base: string, name: string, email: string, password: string): Promise<void> {
  const res = await fetch(`${base}/api/v1/auths/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, email, password }) });
  await res.text();
  expect([200, 400]).toContain(res.status);
}

export const registerAdmin = (base: string) => register(base, adminUser.name, adminUser.email, adminUser.password);

type StorageState = Awaited<ReturnType<BrowserContext['storageState']>>;
const sessions = new Map<string, StorageState>();

/** `cy.login` (cy.session(email, setup, {validate})): a page signed in as `email`, in a context of its own. */
export async function login(browser: Browser, base: string, email: string, password: string): Promise<Page> {
  const cached = sessions.get(email);
  if (cached) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, storageState: cached });
    const token = cached.origins.flatMap((o) => o.localStorage).find((e) => e.name === 'token')?.value;
    const res = await fetch(`${base}/api/v1/auths/`, { headers: { authorization: `Bearer ${token ?? ''}` } });
    await res.text();
    if (res.ok) return context.newPage();
    await context.close();
    sessions.delete(email);
  }
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${base}/auth`);
  await page.evaluate(() => localStorage.setItem('locale', 'en-US'));
  await page.locator('input[autocomplete="email"]').fill(email);
  await page.locator('input[type="password"]').fill(password);
  await page.locator('button[type="submit"]').click();
  // Wait until the user is redirected to the home page.
  await page.locator('#chat-search').waitFor({ state: 'attached' });
  // The change log shows once per release (our key: changelog-seen:{user}:{version}, upstream's: version).
  const seen = await page.evaluate(() => Object.keys(localStorage).some((k) => k.startsWith('changelog-seen:') || k === 'version'));
  if (!seen) {
    const okay = page.locator('button', { hasText: "Okay, Let's Go!" });
    await okay.click();
    await okay.waitFor({ state: 'detached' });
  }
  sessions.set(email, await context.storageState());
  return page;
}

export const loginAdmin = (browser: Browser, base: string) => login(browser, base, adminUser.email, adminUser.password);
