import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { apiJson, openSession, person, shotsEverySize, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';
import { Receiver } from '../integration/webhook-receiver.ts';

/**
 * Admin → Settings → Webhooks against the real stack with a webhook dispatcher and a real HTTP
 * receiver on loopback (local fetches allowed for it): create (the secret shown once), send a
 * test that arrives and shows in the delivery log, replay it, disable, edit and delete — the API
 * agrees each time.
 */
let session: BrowserSession;
let page: Page;
let token = '';
const admin = person('Ada');
const receiver = new Receiver();

const call = <T>(method: string, path: string, body?: unknown): Promise<T> => apiJson<T>(session.web.url, token, method, path, body);
const hooks = () => call<{ id: string; name: string; url: string; enabled: boolean; events: string[] }[]>('GET', '/api/events/webhooks');
const shots = (name: string) => shotsEverySize(page, `admin-webhooks-${name}`);

beforeAll(async () => {
  await receiver.start();
  session = await openSession({}, { ENABLE_LOCAL_WEB_FETCH: 'true' });
  await session.web.stack.startWebhookDispatcher({ ENABLE_LOCAL_WEB_FETCH: 'true', WEBHOOK_POLL_MS: '200' });
  page = session.page;
  await signUpIntoApp(page, session.web.url, admin);
  token = await page.evaluate(() => localStorage.getItem('token') ?? '');
});
afterAll(async () => {
  await session?.close();
  await receiver.stop();
});

describe('web UI: admin webhooks', () => {
  it('is a Settings tab; with none yet it says so', async () => {
    await page.goto(session.web.url + '/admin/settings');
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL((u) => u.pathname === '/admin/settings/webhooks');
    await page.locator('#admin-webhooks-empty').waitFor();
  });

  it('creates a webhook and shows its signing secret once', async () => {
    await page.locator('#admin-webhooks-add-button').click();
    await page.locator('#admin-webhook-name').fill('Audit log');
    await page.locator('#admin-webhook-url').fill(receiver.url);
    await page.locator('#admin-webhook-events').fill('group.*, webhook.disabled');
    await page.locator('#admin-webhook-save-button').click();
    const secret = page.locator('#admin-webhooks-secret-value');
    await secret.waitFor();
    expect(await secret.textContent()).toMatch(/^whsec_/);
    const [w] = await hooks();
    expect(w).toMatchObject({ name: 'Audit log', url: receiver.url, enabled: true, events: ['group.*', 'webhook.disabled'] });
    await page.locator(`li[data-id="${w!.id}"]`).waitFor();
    await shots('created');
    await page.locator('#admin-webhooks-secret').getByRole('button', { name: 'Done' }).click();
    expect(await page.locator('#admin-webhooks-secret').count()).toBe(0);
  });

  it('sends a test that arrives, lists it with its status, and replays it', async () => {
    const [w] = await hooks();
    const card = page.locator(`li[data-id="${w!.id}"]`);
    await card.getByRole('button', { name: 'Send test' }).click();
    await receiver.until(() => receiver.got.length === 1, 'test event');
    expect(receiver.got[0]!.body).toMatchObject({ event: 'webhook.test', subject: { id: w!.id } });
    const id = receiver.got[0]!.headers['webhook-id']!;
    // The log refreshes once after a second; re-open it until the row says delivered (bounded).
    const row = card.locator(`tr[data-delivery="${id}"]`);
    for (let i = 0; i < 20 && !((await row.locator('.status').textContent().catch(() => '')) ?? '').includes('delivered'); i++) {
      await card.getByRole('button', { name: 'Deliveries' }).click();
      await card.getByRole('button', { name: 'Deliveries' }).click();
      await page.waitForTimeout(200);
    }
    expect(await row.locator('.status').textContent()).toBe('delivered');
    expect(await row.locator('td').first().textContent()).toBe('webhook.test');
    await shots('deliveries');
    await row.getByRole('button', { name: 'Replay' }).click();
    await receiver.until(() => receiver.got.length === 2, 'replayed test');
    expect(receiver.got[1]!.headers['webhook-id']).toBe(id);
  });

  it('disables, edits and deletes; the API agrees', async () => {
    const [w] = await hooks();
    const card = page.locator(`li[data-id="${w!.id}"]`);
    await card.getByRole('switch', { name: 'Enable Audit log' }).click();
    await expect.poll(async () => (await hooks())[0]!.enabled).toBe(false);
    await card.getByRole('button', { name: 'Edit' }).click();
    await page.locator('#admin-webhook-name').fill('Audit trail');
    await page.locator('#admin-webhook-save-button').click();
    await expect.poll(async () => (await hooks())[0]!.name).toBe('Audit trail');
    expect((await hooks())[0]!.events).toEqual(['group.*', 'webhook.disabled']);
    // A URL the server refuses shows its reason in the form.
    await card.getByRole('button', { name: 'Edit' }).click();
    await page.locator('#admin-webhook-url').fill('ftp://example.com/x');
    await page.locator('#admin-webhook-save-button').click();
    expect(await page.locator('#admin-webhooks-form-error').textContent()).toMatch(/http or https/);
    await shots('edit-error');
    await page.locator('#admin-webhooks-form').getByRole('button', { name: 'Cancel' }).click();
    await card.getByRole('button', { name: 'Delete' }).click();
    await page.locator('#confirm-dialog-confirm-button').click();
    await page.locator('#admin-webhooks-empty').waitFor();
    expect(await hooks()).toEqual([]);
    expect(session.errors).toEqual([]);
  });
});
