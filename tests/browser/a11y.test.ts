import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { answerTo, ask, changelogDialog, fillSignUp, MODEL, openSession, person, pickModel, PYTHON_MODEL, type BrowserSession } from './browser-fixture.ts';

/**
 * Accessibility: axe-core (injected from its own file) on the main screens — sign-in, the chat
 * view with a streamed answer, the model selector open, settings (and its personalization page), the admin pages,
 * Workspace → Knowledge (list, create form, a knowledge base with a file and search results), the
 * chat's `#` knowledge picker and an answer's sources (chips and the cited-chunk dialog).
 * No `serious` or `critical` violation is allowed; the lesser ones are printed.
 */
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let session: BrowserSession;
let page: Page;
const who = person('Alma');

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/** Run axe on the page; print every violation, return the serious and critical ones. */
/** `exclude`: selectors of parts another screen's audit is about (axe's context `exclude`). */
async function audit(screen: string, exclude: string[] = []): Promise<string[]> {
  // Colours are measured as painted: let fade-ins (the modal's) finish first.
  await page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity));
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async (skip) => {
    const axe = (window as unknown as { axe: { run(ctx: Document | object, opts: object): Promise<{ violations: unknown[] }> } }).axe;
    return (await axe.run(skip.length ? { exclude: skip.map((s) => [s]) } : document, { resultTypes: ['violations'] })).violations;
  }, exclude) as Violation[];
  const lines = violations.map(
    (v) => `[${screen}] ${v.impact} ${v.id}: ${v.help} — ${v.nodes.map((n) => `${n.target.join(' ')}${n.failureSummary ? ` (${n.failureSummary.replace(/\s+/g, ' ')})` : ''}`).join('; ')}`,
  );
  for (const l of lines) console.log(l);
  return lines.filter((_, i) => violations[i]!.impact === 'serious' || violations[i]!.impact === 'critical');
}

beforeAll(async () => {
  session = await openSession();
  page = session.page;
});

afterAll(() => session?.close());

describe('web UI: accessibility (axe-core)', () => {
  it('sign-in', async () => {
    await page.goto(session.web.url + '/auth');
    await page.locator('#email').waitFor();
    expect(await audit('sign-in')).toEqual([]);
    await fillSignUp(page, who);
    await page.waitForURL((u) => !u.pathname.startsWith('/auth'));
    const dialog = changelogDialog(page);
    await dialog.waitFor();
    const found = await audit('change log');
    await dialog.getByRole('button', { name: "Okay, Let's Go!" }).click();
    await dialog.waitFor({ state: 'detached' });
    expect(found).toEqual([]);
  });

  it('the model selector open', async () => {
    await page.locator('#model-selector-0-button').click();
    await page.locator('#model-search-input').waitFor();
    expect(await audit('model selector')).toEqual([]);
  });

  it('the chat view with a streamed answer', async () => {
    await pickModel(page, MODEL);
    const question = 'Is this page accessible?';
    await ask(page, question);
    await page.locator('.assistant-message[data-done="true"]').filter({ hasText: answerTo(question) }).waitFor();
    expect(await audit('chat')).toEqual([]);
  });

  it('settings and personalization', async () => {
    await page.locator('#sidebar-user-menu-button').click();
    await page.locator('#sidebar-user-menu').waitFor();
    expect(await audit('user menu')).toEqual([]);
    await page.locator('#sidebar-user-menu').getByRole('menuitem', { name: 'Settings' }).click();
    await page.getByRole('dialog', { name: 'Settings' }).waitFor();
    expect(await audit('settings')).toEqual([]);
    await page.getByRole('tab', { name: 'Personalization' }).click();
    await page.getByRole('heading', { name: 'Memories' }).waitFor();
    await page.locator('#memory-add-content').fill('I like accessible pages');
    await page.locator('#memory-add-button').click();
    await page.locator('.memory-item').waitFor();
    expect(await audit('personalization')).toEqual([]);
    await page.keyboard.press('Escape');
    await page.getByRole('dialog', { name: 'Settings' }).waitFor({ state: 'detached' });
  });

  it('knowledge: the list, the create form, a knowledge base with a file and search results', async () => {
    await page.locator('#sidebar-workspace-knowledge-button').click();
    await page.getByRole('heading', { name: 'Knowledge', exact: true }).waitFor();
    await page.getByText('No knowledge bases yet.').waitFor();
    expect(await audit('knowledge list')).toEqual([]);
    await page.locator('#knowledge-create-link').click();
    await page.locator('#knowledge-name').fill('Accessible docs');
    expect(await audit('knowledge create')).toEqual([]);
    await page.locator('#knowledge-create-button').click();
    await page.getByRole('heading', { name: 'Accessible docs' }).waitFor();
    await page.locator('#knowledge-files-input').setInputFiles({ name: 'guide.md', mimeType: 'text/markdown', buffer: Buffer.from('# Guide\n\nEvery control here has a label.\n') });
    await page.locator('.tree-file[data-path="guide.md"][data-status="completed"]').waitFor({ timeout: 60_000 });
    await page.getByLabel('Search this knowledge base').fill('label');
    await page.locator('#knowledge-search-button').click();
    await page.locator('.search-result').first().waitFor();
    expect(await audit('knowledge base')).toEqual([]);
  });

  it('knowledge in the chat: the # picker open, an answer with its sources, a source opened', async () => {
    await page.locator('#sidebar-new-chat-button').click();
    await page.waitForURL((u) => u.pathname === '/');
    await pickModel(page, PYTHON_MODEL);
    const input = page.locator('#chat-input');
    await input.click();
    await input.pressSequentially('#Access');
    await page.getByRole('option').filter({ hasText: 'Accessible docs' }).waitFor();
    expect(await audit('knowledge picker')).toEqual([]);
    await page.keyboard.press('Enter');
    await page.locator('.knowledge-chip').waitFor();
    await input.pressSequentially('Which controls have a label?');
    await page.keyboard.press('Enter');
    const answer = page.locator('.assistant-message[data-done="true"]').last();
    await answer.locator('.source-chip').first().waitFor();
    // This model answers with a Python block: its syntax colours are audited here too.
    expect(await audit('answer with sources')).toEqual([]);
    await answer.locator('.source-chip').first().click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await audit('source dialog')).toEqual([]);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
  });

  it('admin: users (with the delete dialog), settings general and connections', async () => {
    const token = await page.evaluate(() => localStorage.getItem('token') ?? '');
    const other = person('Otto');
    const added = await fetch(session.web.url + '/api/v1/auths/add', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...other, role: 'user' }),
    });
    expect(added.status).toBe(200);
    await page.goto(session.web.url + '/admin/users');
    await page.locator('tbody tr[data-user-id]').nth(1).waitFor();
    expect(await audit('admin users')).toEqual([]);
    await page.getByRole('button', { name: `Delete ${other.name}` }).click();
    await page.getByRole('dialog').filter({ hasText: 'Are you sure?' }).waitFor();
    expect(await audit('admin delete dialog')).toEqual([]);
    await page.keyboard.press('Escape');
    await page.goto(session.web.url + '/admin/settings/general');
    await page.locator('#admin-settings-save-button').waitFor();
    expect(await audit('admin settings general')).toEqual([]);
    await page.goto(session.web.url + '/admin/settings/connections');
    await page.locator('#admin-connections-openai').waitFor();
    expect(await audit('admin settings connections')).toEqual([]);
  });
});
