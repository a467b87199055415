import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { newKey } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream } from '../../scripts/src/fake-upstreams/common.ts';
import { apiJson, FAILING_MODEL, MODEL, openSession, person, PYTHON_MODEL, shotsEverySize, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';
import { axeAudit } from './axe-audit.ts';

/**
 * The admin screens added to Open WebUI's shape, against the real stack: Users → Add User and
 * Edit User (role, name, email, password — the API and a sign-in agree), Users → Groups (a group
 * created with a permission, a member added and removed), Settings → Connections (an OpenAI
 * connection added on a second fake upstream, verified, one where nothing answers that verifies to
 * nothing, both removed) and Evaluations (a rating in the arena puts both models on the
 * leaderboard with their Elo ratings; the feedback list shows it and deletes it). axe-core finds no
 * serious violation in the page's main area or its dialogs; screenshots when SCREENSHOTS_DIR is set.
 */
let session: BrowserSession;
let page: Page;
let token = '';
let extra: FakeUpstream;
const extraKey = newKey();
const admin = person('Ada');
const added = person('Bruno');
let addedId = '';

const call = <T>(method: string, path: string, body?: unknown): Promise<T> => apiJson<T>(session.web.url, token, method, path, body);
const signin = (email: string, password: string) =>
  fetch(session.web.url + '/api/v1/auths/signin', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
const shots = (name: string) => shotsEverySize(page, `admin-${name}`);
const audit = (screen: string) => axeAudit(page, screen, ['#main']);

beforeAll(async () => {
  session = await openSession();
  page = session.page;
  extra = await startFakeOpenAI({ apiKey: extraKey });
  await signUpIntoApp(page, session.web.url, admin);
  token = await page.evaluate(() => localStorage.getItem('token') ?? '');
});

afterAll(async () => {
  await session?.close();
  await extra?.close();
});

describe('web UI: admin users, groups, connections, evaluations', () => {
  it('Users → Add User: the account exists with its role and signs in with its password', async () => {
    await page.goto(session.web.url + '/admin/users');
    await page.locator('#admin-add-user-button').click();
    const dialog = page.getByRole('dialog', { name: 'Add User' });
    await dialog.waitFor();
    await dialog.getByLabel('Role').selectOption('user');
    await dialog.getByLabel('Name').fill(added.name);
    await dialog.getByLabel('Email').fill(added.email);
    await dialog.getByLabel('Password').fill(added.password);
    expect(await audit('admin add user')).toEqual([]);
    await shots('users-add');
    await dialog.getByRole('button', { name: 'Add' }).click();
    await dialog.waitFor({ state: 'detached' });
    const row = page.locator('tr[data-user-id]').filter({ hasText: added.email });
    await row.waitFor();
    addedId = (await row.getAttribute('data-user-id'))!;
    const u = await call<{ name: string; role: string }>('GET', `/api/v1/users/${addedId}`);
    expect([u.name, u.role]).toEqual([added.name, 'user']);
    expect((await signin(added.email, added.password)).status).toBe(200);
  });

  it('Users → Add User: a taken email is the API’s refusal, shown in the dialog', async () => {
    await page.locator('#admin-add-user-button').click();
    const dialog = page.getByRole('dialog', { name: 'Add User' });
    await dialog.getByLabel('Name').fill('Someone');
    await dialog.getByLabel('Email').fill(added.email);
    await dialog.getByLabel('Password').fill('another-password');
    await dialog.getByRole('button', { name: 'Add' }).click();
    await dialog.locator('#user-dialog-error').waitFor();
    expect((await dialog.locator('#user-dialog-error').textContent())!.length).toBeGreaterThan(0);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await call<{ total: number }>('GET', '/api/v1/users/')).total).toBe(2);
  });

  it('Users → Edit User: role, name, email and password change; the API and a sign-in agree', async () => {
    await page.getByRole('button', { name: `Edit ${added.name}` }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit User' });
    await dialog.waitFor();
    expect(await dialog.getByLabel('Email').inputValue()).toBe(added.email);
    expect(await audit('admin edit user')).toEqual([]);
    added.name = 'Bruno Edited';
    added.email = added.email.replace('@', '+edited@');
    const oldPassword = added.password;
    added.password = `${oldPassword}-2`;
    await dialog.getByLabel('Role').selectOption('pending');
    await dialog.getByLabel('Name').fill(added.name);
    await dialog.getByLabel('Email').fill(added.email);
    await dialog.getByLabel('New Password').fill(added.password);
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.locator(`tr[data-user-id="${addedId}"]`).filter({ hasText: added.name }).waitFor();
    const u = await call<{ name: string; email: string; role: string }>('GET', `/api/v1/users/${addedId}`);
    expect([u.name, u.email, u.role]).toEqual([added.name, added.email, 'pending']);
    expect((await signin(added.email, oldPassword)).status).toBe(400);
    expect((await signin(added.email, added.password)).status).toBe(200);
    expect(await page.getByLabel(`Role of ${added.name}`).inputValue()).toBe('pending');
    await shots('users-edited');
  });

  it('Users → Groups: a group created with a permission, a member added and removed', async () => {
    await page.locator('#admin-users-tab-groups').click();
    await page.waitForURL((u) => u.pathname === '/admin/users/groups');
    await page.locator('#admin-create-group-button').click();
    const dialog = page.getByRole('dialog', { name: 'Add User Group' });
    await dialog.getByLabel('Name').fill('Reviewers');
    await dialog.getByLabel('Description').fill('They read first');
    await dialog.getByLabel('Knowledge Access').check();
    await dialog.getByRole('button', { name: 'Create' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit User Group' });
    await edit.waitFor();
    const [group] = await call<{ id: string; name: string; description: string; permissions: { workspace: Record<string, boolean> } }[]>('GET', '/api/v1/groups/');
    expect([group!.name, group!.description, group!.permissions.workspace['knowledge'], group!.permissions.workspace['models']]).toEqual(['Reviewers', 'They read first', true, false]);

    await edit.getByLabel('User to add').selectOption(addedId);
    await edit.getByRole('button', { name: 'Add', exact: true }).click();
    await edit.locator(`.group-member[data-user-id="${addedId}"]`).waitFor();
    expect((await call<{ id: string }[]>('POST', `/api/v1/groups/id/${group!.id}/users`)).map((m) => m.id)).toEqual([addedId]);
    expect(await audit('admin group dialog')).toEqual([]);
    await shots('groups-edit');
    await edit.getByRole('button', { name: `Remove ${added.name} from the group` }).click();
    await edit.locator('.group-member').waitFor({ state: 'detached' });
    expect(await call<unknown[]>('POST', `/api/v1/groups/id/${group!.id}/users`)).toEqual([]);
    await edit.getByLabel('User to add').selectOption(addedId);
    await edit.getByRole('button', { name: 'Add', exact: true }).click();
    await edit.locator(`.group-member[data-user-id="${addedId}"]`).waitFor();
    await edit.getByRole('button', { name: 'Close' }).click();
    await edit.waitFor({ state: 'detached' });
    const row = page.locator(`.group-row[data-group-id="${group!.id}"]`);
    await expect.poll(() => row.locator('.member-count').textContent()).toBe('1');
    expect(await audit('admin groups')).toEqual([]);
    await shots('groups');
  });

  it('Settings → Connections: add an OpenAI connection, verify it, one where nothing answers verifies to nothing, remove both', async () => {
    await page.goto(session.web.url + '/admin/settings/connections');
    const openai = page.locator('#admin-connections-openai');
    await openai.locator(`li.connection[data-url="${session.web.upstream.url}"]`).waitFor();

    const add = async (url: string, key: string, prefix: string, models = '') => {
      await page.locator('#admin-connections-openai-add').click();
      const form = page.locator('#connection-add-form-openai');
      await form.getByLabel('URL').fill(url);
      await form.getByLabel('Key').fill(key);
      await form.getByLabel('Prefix ID').fill(prefix);
      await form.getByLabel('Model IDs').fill(models);
      await form.getByRole('button', { name: 'Save' }).click();
      await form.waitFor({ state: 'detached' });
    };
    await add(extra.url, extraKey, 'extra');
    const conn = openai.locator(`li.connection[data-url="${extra.url}"]`);
    await conn.waitFor();
    expect(await conn.locator('.key-state').textContent()).toBe('Set');
    const stored = await call<{ OPENAI_API_BASE_URLS: string[]; OPENAI_API_KEYS: string[]; OPENAI_API_CONFIGS: Record<string, { prefix_id: string | null; model_ids: string[] }> }>('GET', '/openai/config');
    expect(stored.OPENAI_API_BASE_URLS).toEqual([session.web.upstream.url, extra.url]);
    expect(stored.OPENAI_API_KEYS).toEqual(['', '']);
    expect([stored.OPENAI_API_CONFIGS['1']!.prefix_id, stored.OPENAI_API_CONFIGS['1']!.model_ids]).toEqual(['extra', []]);

    // Verify until the proxy workers run the new list (they apply it live).
    const result = conn.locator('.verify-result');
    await expect
      .poll(async () => {
        await conn.getByRole('button', { name: `Verify connection ${extra.url}` }).click();
        await result.filter({ hasNotText: 'Verifying…' }).waitFor();
        return result.getAttribute('data-ok');
      })
      .toBe('true');
    // No Model IDs: the list is the server's own, each model under the prefix.
    expect(await result.textContent()).toMatch(/^Server connection verified: \d+ models \(/);
    expect(await result.textContent()).toContain(`extra.${MODEL}`);
    expect(await result.textContent()).toContain(`extra.${PYTHON_MODEL}`);
    expect(await audit('admin connections')).toEqual([]);
    await shots('settings-connections-edit');

    // Nothing listens there (port 9, discard): no model can come from it.
    const wrongUrl = 'http://127.0.0.1:9/v1';
    await add(wrongUrl, 'sk-not-the-key', 'wrong');
    const wrong = openai.locator(`li.connection[data-url="${wrongUrl}"]`);
    await wrong.getByRole('button', { name: `Verify connection ${wrongUrl}` }).click();
    await wrong.locator('.verify-result').filter({ hasNotText: 'Verifying…' }).waitFor();
    expect(await wrong.locator('.verify-result').getAttribute('data-ok')).toBe('false');

    for (const url of [wrongUrl, extra.url]) {
      await openai.getByRole('button', { name: `Remove connection ${url}` }).click();
      await openai.locator(`li.connection[data-url="${url}"]`).waitFor({ state: 'detached' });
    }
    // The row leaves at the click; its save is then on its way (the buttons wait for it).
    await expect.poll(async () => (await call<{ OPENAI_API_BASE_URLS: string[] }>('GET', '/openai/config')).OPENAI_API_BASE_URLS).toEqual([session.web.upstream.url]);
    // The first connection kept its stored key: its models still answer.
    await expect.poll(async () => (await call<{ data: { id: string }[] }>('GET', '/api/models?refresh=true')).data.map((m) => m.id).includes(MODEL)).toBe(true);
  });

  it('Evaluations: an arena rating puts both models on the leaderboard; the feedback list shows and deletes it', async () => {
    const feedback = await call<{ id: string }>('POST', '/api/v1/evaluations/feedback', {
      type: 'rating',
      data: { rating: 1, model_id: MODEL, sibling_model_ids: [PYTHON_MODEL], reason: 'Accurate information', comment: 'Clear' },
      meta: { arena: true, chat_id: 'chat-1', message_id: 'message-1', tags: ['science'] },
    });
    await page.getByRole('navigation', { name: 'Admin Panel' }).getByRole('link', { name: 'Evaluations' }).click();
    await page.waitForURL((u) => u.pathname === '/admin/evaluations');
    const table = page.locator('#leaderboard-table');
    await table.waitFor();
    expect(await table.locator('thead th').allTextContents()).toEqual(['RK', 'Model', 'Rating', 'Won', 'Lost']);
    const cells = async (model: string) => (await table.locator(`tr[data-model-id="${model}"] td`).allTextContents()).map((t) => t.trim());
    // Both start at 1000; an even game moves each by K/2 = 16.
    expect(await cells(MODEL)).toEqual(['1', `${MODEL} science`, '1016', '1', '0']);
    expect(await cells(PYTHON_MODEL)).toEqual(['2', `${PYTHON_MODEL} science`, '984', '0', '1']);
    // A model nobody rated follows, unranked (Open WebUI lists every model).
    expect(await cells(FAILING_MODEL)).toEqual(['-', FAILING_MODEL, '-', '-', '-']);
    expect((await table.locator('tbody tr').first().getAttribute('data-model-id'))).toBe(MODEL);
    expect(await audit('admin leaderboard')).toEqual([]);
    await shots('evaluations-leaderboard');

    await page.getByRole('navigation', { name: 'Evaluations' }).getByRole('link', { name: 'Feedbacks' }).click();
    const row = page.locator(`tr.feedback-row[data-feedback-id="${feedback.id}"]`);
    await row.waitFor();
    expect(await row.locator('.result').textContent()).toBe('Won');
    expect(await row.textContent()).toContain(admin.name);
    expect(await audit('admin feedbacks')).toEqual([]);
    await shots('evaluations-feedbacks');
    await row.getByRole('button', { name: `Delete feedback ${feedback.id}` }).click();
    const confirm = page.getByRole('dialog', { name: 'Are you sure?' });
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await page.locator('#feedbacks-empty').waitFor();
    expect((await call<{ total: number }>('GET', '/api/v1/evaluations/feedbacks/list')).total).toBe(0);
    await page.getByRole('navigation', { name: 'Evaluations' }).getByRole('link', { name: 'Leaderboard' }).click();
    await page.locator('#leaderboard-empty').waitFor();
    expect(await cells(MODEL)).toEqual(['-', MODEL, '-', '-', '-']);
  });

  it('the page raised no uncaught errors', () => {
    expect(session.errors).toEqual([]);
  });
});
