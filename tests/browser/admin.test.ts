import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { apiJson, changelogDialog, fillSignIn, MODEL, openSession, person, shotsEverySize, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';

/**
 * The admin panel (Open WebUI's /admin/users and /admin/settings/<tab>) against the real stack: the
 * first sign-up is the admin; a user added through the API gets a new role from the row's select
 * and is deleted through the confirmation dialog (the API agrees each time); General turns sign-up
 * off (a sign-up is then refused with 403) and on again and saves the session lifetime (new tokens
 * carry it); Connections lists the fake upstream's connection with its key only as "Set".
 */
let session: BrowserSession;
let page: Page;
let token = '';
const admin = person('Ada');
const other = person('Olga');
let otherId = '';

const call = <T>(method: string, path: string, body?: unknown): Promise<T> => apiJson<T>(session.web.url, token, method, path, body);
/** A sign-up from outside the browser: its status and body. */
async function signup(who: ReturnType<typeof person>): Promise<{ status: number; body: any }> {
  const r = await fetch(session.web.url + '/api/v1/auths/signup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(who) });
  return { status: r.status, body: await r.json() };
}
const row = (id: string) => page.locator(`tr[data-user-id="${id}"]`);

/** Screenshots (only when SCREENSHOTS_DIR is set, scripts/src/screenshots.ts): `admin-<name>-`wide|narrow`-`light|dark. */
const shots = (name: string) => shotsEverySize(page, `admin-${name}`);

beforeAll(async () => {
  session = await openSession();
  page = session.page;
  await signUpIntoApp(page, session.web.url, admin);
  token = await page.evaluate(() => localStorage.getItem('token') ?? '');
  const me = await call<{ role: string }>('GET', '/api/v1/auths/');
  expect(me.role).toBe('admin');
  const added = await call<{ id: string; role: string }>('POST', '/api/v1/auths/add', { ...other, role: 'user' });
  expect(added.role).toBe('user');
  otherId = added.id;
});

afterAll(() => session?.close());

describe('web UI: admin panel', () => {
  it('Users: reached from the user menu; every user listed; your own role and delete are locked', async () => {
    await page.locator('#sidebar-user-menu-button').click();
    await page.locator('#sidebar-user-menu').getByRole('menuitem', { name: 'Admin Panel' }).click();
    await page.waitForURL((u) => u.pathname === '/admin');
    await row(otherId).waitFor();
    expect(await page.locator('tbody tr[data-user-id]').count()).toBe(2);
    const mine = page.locator('tr[data-user-id]').filter({ hasText: admin.email });
    expect(await mine.getByLabel(`Role of ${admin.name}`).isDisabled()).toBe(true);
    expect(await mine.getByRole('button', { name: `Delete ${admin.name}` }).count()).toBe(0);
    expect(await row(otherId).getByLabel(`Role of ${other.name}`).inputValue()).toBe('user');
    await shots('users');
  });

  it('Users: the row’s select changes the role; the API agrees', async () => {
    const select = row(otherId).getByLabel(`Role of ${other.name}`);
    const saved = page.waitForResponse((r) => r.url().endsWith(`/api/v1/users/${otherId}/update`) && r.request().method() === 'POST');
    await select.selectOption('pending');
    expect((await saved).status()).toBe(200);
    await page.getByRole('status').filter({ hasText: `${other.name} is now pending.` }).waitFor({ state: 'attached' });
    expect((await call<{ role: string }>('GET', `/api/v1/users/${otherId}`)).role).toBe('pending');
    await select.selectOption('admin');
    await expect.poll(async () => (await call<{ role: string }>('GET', `/api/v1/users/${otherId}`)).role).toBe('admin');
    await select.selectOption('user');
    await expect.poll(async () => (await call<{ role: string }>('GET', `/api/v1/users/${otherId}`)).role).toBe('user');
  });

  it('Users: another admin cannot demote or delete the first admin — the API’s refusal is shown and the row stays', async () => {
    const form = { name: other.name, email: other.email, profile_image_url: '' };
    await call('POST', `/api/v1/users/${otherId}/update`, { ...form, role: 'admin' });
    const context = await session.browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const second = await context.newPage();
      second.on('pageerror', (e) => session.errors.push(e.message));
      await second.goto(session.web.url + '/auth');
      await fillSignIn(second, other.email, other.password);
      await second.waitForURL((u) => !u.pathname.startsWith('/auth'));
      const news = changelogDialog(second);
      await news.waitFor();
      await news.getByRole('button', { name: "Okay, Let's Go!" }).click();
      await news.waitFor({ state: 'detached' });
      await second.goto(session.web.url + '/admin/users');
      const first = second.locator('tr[data-user-id]').filter({ hasText: admin.email });
      const select = first.getByLabel(`Role of ${admin.name}`);
      await select.selectOption('user');
      await second.locator('#admin-users-error').filter({ hasText: 'restricted' }).waitFor();
      await expect.poll(() => select.inputValue()).toBe('admin');
      expect((await call<{ role: string }>('GET', '/api/v1/auths/')).role).toBe('admin');
      await first.getByRole('button', { name: `Delete ${admin.name}` }).click();
      const dialog = second.getByRole('dialog').filter({ hasText: 'Are you sure?' });
      await dialog.getByRole('button', { name: 'Delete' }).click();
      await dialog.getByRole('alert').filter({ hasText: 'restricted' }).waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      await first.waitFor();
      expect((await call<{ role: string }>('GET', '/api/v1/auths/')).role).toBe('admin');
    } finally {
      await context.close();
    }
    await call('POST', `/api/v1/users/${otherId}/update`, { ...form, role: 'user' });
  });

  it('Users: delete asks first (Escape keeps the user), then deletes; the API no longer knows them', async () => {
    const del = row(otherId).getByRole('button', { name: `Delete ${other.name}` });
    await del.click();
    const dialog = page.getByRole('dialog').filter({ hasText: 'Are you sure?' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(other.email);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect((await call<{ id: string }>('GET', `/api/v1/users/${otherId}`)).id).toBe(otherId);

    await del.click();
    await dialog.waitFor();
    await shots('users-delete');
    // Keyboard only: focus starts on Cancel, Tab reaches Delete, Enter confirms.
    expect(await page.evaluate(() => document.activeElement?.textContent?.trim())).toBe('Cancel');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    await row(otherId).waitFor({ state: 'detached' });
    const r = await fetch(`${session.web.url}/api/v1/users/${otherId}`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(400);
  });

  it('General: sign-up off refuses a sign-up with 403; on again lets one in', async () => {
    await page.locator('nav[aria-label="Admin Panel"]').getByRole('link', { name: 'Settings' }).click();
    await page.waitForURL((u) => u.pathname === '/admin/settings');
    const signupSwitch = page.getByRole('switch', { name: 'Enable New Sign Ups' });
    await signupSwitch.waitFor();
    const save = page.locator('#admin-settings-save-button');
    const saved = page.getByRole('status').filter({ hasText: 'Settings saved successfully!' });

    await signupSwitch.check();
    await save.click();
    await saved.waitFor();
    expect((await call<{ ENABLE_SIGNUP: boolean }>('GET', '/api/v1/auths/admin/config')).ENABLE_SIGNUP).toBe(true);
    expect((await signup(person('Sam'))).status).toBe(200);

    await signupSwitch.uncheck();
    await save.click();
    await expect.poll(async () => (await call<{ ENABLE_SIGNUP: boolean }>('GET', '/api/v1/auths/admin/config')).ENABLE_SIGNUP).toBe(false);
    const refused = await signup(person('Tom'));
    expect(refused.status).toBe(403);
    expect(typeof refused.body.detail).toBe('string');

    await signupSwitch.check();
    await save.click();
    await expect.poll(async () => (await call<{ ENABLE_SIGNUP: boolean }>('GET', '/api/v1/auths/admin/config')).ENABLE_SIGNUP).toBe(true);
    expect((await signup(person('Uma'))).status).toBe(200);
  });

  it('General: the default role and the session lifetime are saved; a bad lifetime is refused with the API’s message', async () => {
    const jwt = page.getByLabel('JWT Expiration');
    await jwt.fill('forever');
    expect(await jwt.getAttribute('aria-invalid')).toBe('true');
    await page.locator('#admin-settings-save-button').click();
    await page.locator('#admin-settings-error').waitFor();
    expect((await call<{ JWT_EXPIRES_IN: string }>('GET', '/api/v1/auths/admin/config')).JWT_EXPIRES_IN).not.toBe('forever');

    await jwt.fill('12h');
    await page.getByLabel('Default User Role').selectOption('user');
    await page.locator('#admin-settings-save-button').click();
    await expect.poll(async () => (await call<{ JWT_EXPIRES_IN: string }>('GET', '/api/v1/auths/admin/config')).JWT_EXPIRES_IN).toBe('12h');
    const config = await call<{ DEFAULT_USER_ROLE: string }>('GET', '/api/v1/auths/admin/config');
    expect(config.DEFAULT_USER_ROLE).toBe('user');
    await page.locator('#admin-settings-error').waitFor({ state: 'detached' });
    // A new session lasts 12 hours; a new sign-up gets the new default role.
    const before = Math.floor(Date.now() / 1000);
    const fresh = await signup(person('Vic'));
    expect(fresh.status).toBe(200);
    expect(fresh.body.role).toBe('user');
    expect(fresh.body.expires_at - before).toBeGreaterThanOrEqual(12 * 3600 - 5);
    expect(fresh.body.expires_at - before).toBeLessThanOrEqual(12 * 3600 + 5);
    // The form shows what is stored after a reload.
    await page.reload();
    expect(await page.getByLabel('JWT Expiration').inputValue()).toBe('12h');
    await shots('settings-general');
  });

  it('Connections: the fake upstream’s connection, its key only as "Set"', async () => {
    await page.locator('nav[aria-label="Settings"]').getByRole('link', { name: 'Connections' }).click();
    await page.waitForURL((u) => u.pathname === '/admin/settings/connections');
    const openai = page.locator('#admin-connections-openai');
    const conn = openai.locator(`li.connection[data-url="${session.web.upstream.url}"]`);
    await conn.waitFor();
    expect(await conn.locator('.key-state').textContent()).toBe('Set');
    expect(await conn.textContent()).toContain(MODEL);
    // Ollama is switched off in this stack.
    expect(await page.locator('#admin-connections-ollama .badge').first().textContent()).toBe('Disabled');
    const raw = await call<{ OPENAI_API_KEYS: string[] }>('GET', '/openai/config');
    expect(raw.OPENAI_API_KEYS).toEqual(['']);
    await shots('settings-connections');
  });

  it('works on a narrow screen: the user table fits without sideways scrolling; tabs stay reachable', async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto(session.web.url + '/admin/users');
    const first = page.locator('tbody tr[data-user-id]').first();
    await first.waitFor();
    const wrap = page.locator('.table-wrap');
    const [scroll, client] = await wrap.evaluate((el) => [el.scrollWidth, el.clientWidth]);
    expect(scroll).toBeLessThanOrEqual(client);
    await page.locator('nav[aria-label="Admin Panel"]').getByRole('link', { name: 'Settings' }).click();
    await page.locator('nav[aria-label="Settings"]').getByRole('link', { name: 'Connections' }).click();
    await page.locator('#admin-connections-openai').waitFor();
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(session.errors).toEqual([]);
  });
});
