import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { apiJson, changelogDialog, fillSignIn, newPage, openSession, person, pickModel, PYTHON_MODEL, shot, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';

/**
 * Workspace → Knowledge in a real chromium against the real stack: create a knowledge base, upload
 * a folder with nested sub-folders through the folder picker (`<input webkitdirectory>`, the
 * 0.10.2 sync/diff flow) and see every relative path in the tree, completed; search finds a
 * file's text with a score; a file that cannot be read shows why; in a chat `#` attaches the
 * knowledge base, the completion carries it in `files`, the answer shows its sources and a source
 * opens the cited chunk — also after a reload; removing a file takes it out of the tree and the API.
 *
 * The chat uses the fake upstream's `python` model: its answer does not echo the (long) prompt with
 * the retrieved context, so it is quick; what the model was sent is read from the fake's record.
 */
let session: BrowserSession;
let page: Page;
const who = person('Kira');
const KB_NAME = 'Handbook';
/** A word found in exactly one file of the folder. */
const RARE = 'zephyrine';
let kbId = '';
let dir = '';
let chatPath = '';

/** The folder, made now: `handbook/…` with sub-folders two levels deep, and a hidden file left out. */
const FILES: Record<string, string> = {
  'handbook/README.md': '# Handbook\n\nHow the plant is run, day to day.\n',
  'handbook/guides/setup.md': `# Setup\n\nThe ${RARE} valve must be calibrated every Monday before the pumps start.\n`,
  'handbook/guides/deep/nested/faq.txt': 'Q: Who opens the gate?\nA: The morning shift opens the gate at six.\n',
  'handbook/notes/shifts.csv': 'day,shift,lead\nmonday,morning,Ana\ntuesday,night,Bo\n',
};
const HIDDEN = 'handbook/notes/.draft.md';
/** A word only the later version of setup.md has. */
const LATER = 'quillback';

const token = (): Promise<string> => page.evaluate(() => localStorage.getItem('token') ?? '');
async function apiGet<T>(path: string): Promise<T> {
  const t = await token();
  return page.evaluate(
    async ([p, tok]) => {
      const r = await fetch(p!, { headers: { authorization: `Bearer ${tok}` } });
      return { status: r.status, body: await r.json() };
    },
    [path, t] as const,
  ).then((r) => {
    if (r.status !== 200) throw new Error(`GET ${path} → ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as T;
  });
}

/**
 * Screenshots (only when SCREENSHOTS_DIR is set, scripts/src/screenshots.ts): `knowledge-<name>-`
 * wide/narrow × light/dark; the page is put back to wide and light after.
 */
async function shots(name: string): Promise<void> {
  if (!process.env.SCREENSHOTS_DIR) return;
  for (const [size, viewport] of [['wide', { width: 1280, height: 800 }], ['narrow', { width: 390, height: 844 }]] as const) {
    await page.setViewportSize(viewport);
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.evaluate(() => document.getAnimations().forEach((a) => a.finish()));
      await shot(page, `knowledge-${name}-${size}-${scheme}`);
    }
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.emulateMedia({ colorScheme: 'light' });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kb-folder-'));
  for (const [rel, text] of Object.entries({ ...FILES, [HIDDEN]: 'not for upload' })) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  // The folder as it is later: setup.md changed, faq.txt (and its folders) gone, the rest as before.
  for (const [rel, text] of Object.entries(FILES)) {
    if (rel.endsWith('faq.txt')) continue;
    const later = join(dir, 'v2', rel);
    mkdirSync(join(later, '..'), { recursive: true });
    writeFileSync(later, rel.endsWith('setup.md') ? `# Setup\n\nThe ${RARE} valve is now calibrated on Fridays, after the ${LATER} check.\n` : text);
  }
  writeFileSync(join(dir, 'broken.pdf'), '%PDF-1.7\nthis is not really a PDF at all\n%%EOF\n');
  session = await openSession();
  page = session.page;
  await signUpIntoApp(page, session.web.url, who);
});

afterAll(async () => {
  await session?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('web UI: knowledge bases (Workspace → Knowledge)', () => {
  it('is reached from the sidebar, starts empty and creates a knowledge base', async () => {
    await page.locator('#sidebar-workspace-knowledge-button').click();
    await page.waitForURL((u) => u.pathname === '/workspace/knowledge');
    await page.getByRole('heading', { name: 'Knowledge', exact: true }).waitFor();
    await page.getByText('No knowledge bases yet.').waitFor();
    await page.locator('#knowledge-create-link').click();
    await page.waitForURL((u) => u.pathname === '/workspace/knowledge/create');
    await page.getByLabel('What are you working on?').fill(KB_NAME);
    await page.getByLabel('What are you trying to achieve?').fill('How the plant is run');
    await page.locator('#knowledge-create-button').click();
    await page.waitForURL((u) => /^\/workspace\/knowledge\/[^/]+$/.test(u.pathname) && !u.pathname.endsWith('/create'));
    kbId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
    await page.getByRole('heading', { name: KB_NAME }).waitFor();
    await page.locator('.files-empty').waitFor();
    const list = await apiGet<{ items: { id: string; name: string }[] }>('/api/v1/knowledge/');
    expect(list.items.map((k) => [k.id, k.name])).toEqual([[kbId, KB_NAME]]);
  });

  it('a picked folder keeps its sub-folders: the tree shows every relative path, completed', async () => {
    await page.locator('#knowledge-folder-input').setInputFiles(join(dir, 'handbook'));
    for (const rel of Object.keys(FILES)) {
      await page.locator(`.tree-file[data-path="${rel}"][data-status="completed"]`).waitFor({ timeout: 60_000 });
    }
    // Every directory is in the tree, each under its parent.
    for (const d of ['handbook', 'handbook/guides', 'handbook/guides/deep', 'handbook/guides/deep/nested', 'handbook/notes']) {
      await page.locator(`.tree-dir[data-path="${d}"]`).waitFor();
    }
    expect(await page.locator('.tree-dir[data-path="handbook/guides/deep/nested"] .tree-file[data-path="handbook/guides/deep/nested/faq.txt"]').count()).toBe(1);
    // The hidden file was left out, as Open WebUI does.
    expect(await page.locator(`.tree-file[data-path="${HIDDEN}"]`).count()).toBe(0);
    expect(await page.locator('.tree-file').count()).toBe(Object.keys(FILES).length);
    // Per-file progress and the overall bar reached the end.
    for (const rel of Object.keys(FILES)) expect(await page.locator(`.upload-item[data-path="${rel}"] progress`).getAttribute('value')).toBe('100');
    expect(await page.locator('#upload-overall-progress').getAttribute('value')).toBe('100');
    // The server agrees: nested directories, each file in its own.
    const root = await apiGet<{ items: unknown[]; directories: { id: string; name: string }[] }>(`/api/v1/knowledge/${kbId}/files?directory_id=`);
    expect(root.items).toEqual([]);
    expect(root.directories.map((d) => d.name)).toEqual(['handbook']);
  });

  it('the same folder again uploads nothing (every file unchanged)', async () => {
    await page.locator('#knowledge-folder-input').setInputFiles(join(dir, 'handbook'));
    await page.locator('.upload-summary').filter({ hasText: `0 uploaded, ${Object.keys(FILES).length} unchanged` }).waitFor();
    expect(await page.locator('.tree-file').count()).toBe(Object.keys(FILES).length);
  });

  it('search finds a file by its text and shows the score', async () => {
    await page.getByLabel('Search this knowledge base').fill(`${RARE} valve calibration`);
    await page.locator('#knowledge-search-button').click();
    const first = page.locator('.search-result').first();
    await first.waitFor();
    expect(await first.locator('.result-name').textContent()).toBe('setup.md');
    expect(await first.locator('.result-text').textContent()).toContain(`The ${RARE} valve must be calibrated`);
    expect(await first.locator('.result-score').textContent()).toMatch(/^score -?\d+\.\d{3}$/);
    await shots('base');
  });

  it('a file that cannot be read shows why', async () => {
    await page.locator('#knowledge-files-input').setInputFiles(join(dir, 'broken.pdf'));
    const item = page.locator('.upload-item[data-path="broken.pdf"][data-status="failed"]');
    await item.waitFor({ timeout: 60_000 });
    const reason = (await item.locator('.upload-error-reason').textContent())?.trim() ?? '';
    expect(reason.length).toBeGreaterThan(0);
    // A failed file never joins the knowledge base (Open WebUI links a file once processed); after
    // a reload it is still listed, under "Not added yet", with the same reason — and can be deleted.
    await page.reload();
    const row = page.locator('.unlinked-file[data-path="broken.pdf"][data-status="failed"]');
    await row.waitFor();
    expect((await row.locator('.file-error').textContent())?.trim()).toBe(reason);
    expect(await page.locator('.tree-file:not(.unlinked-file)[data-path="broken.pdf"]').count()).toBe(0);
    await row.getByRole('button', { name: 'Delete broken.pdf' }).click();
    await row.waitFor({ state: 'detached' });
  });

  it('# in the chat attaches the knowledge base; the answer shows its sources, each opening its chunk', async () => {
    await page.locator('#sidebar-new-chat-button').click();
    await page.waitForURL((u) => u.pathname === '/');
    await pickModel(page, PYTHON_MODEL);
    const input = page.locator('#chat-input');
    await input.click();
    // `#` alone offers the knowledge base and files; arrows move the choice, Escape closes.
    await input.pressSequentially('#');
    const listbox = page.getByRole('listbox');
    await listbox.waitFor();
    const options = listbox.getByRole('option');
    await options.filter({ hasText: 'setup.md' }).waitFor();
    expect(await options.first().getAttribute('data-type')).toBe('collection');
    expect(await options.nth(1).getAttribute('data-type')).toBe('file');
    expect(await options.first().getAttribute('aria-selected')).toBe('true');
    await page.keyboard.press('ArrowDown');
    expect(await options.nth(1).getAttribute('aria-selected')).toBe('true');
    expect(await input.getAttribute('aria-activedescendant')).toBe(await options.nth(1).getAttribute('id'));
    await page.keyboard.press('Escape');
    await listbox.waitFor({ state: 'detached' });
    await page.keyboard.press('Backspace');
    await input.pressSequentially('#Hand');
    const option = page.getByRole('option').filter({ hasText: KB_NAME });
    await option.waitFor();
    expect(await option.getAttribute('data-type')).toBe('collection');
    await page.keyboard.press('Enter');
    await page.locator(`.knowledge-chip[data-id="${kbId}"]`).waitFor();
    // The `#Hand` text itself is gone from the box.
    expect((await input.textContent())?.includes('#Hand')).toBe(false);
    const question = `When is the ${RARE} valve calibrated?`;
    const sent = page.waitForRequest((r) => new URL(r.url()).pathname === '/api/chat/completions' && r.method() === 'POST');
    await input.pressSequentially(question);
    await page.keyboard.press('Enter');
    const body = (await sent).postDataJSON() as { files?: { type: string; id: string }[] };
    expect(body.files?.map((f) => [f.type, f.id])).toEqual([['collection', kbId]]);
    const answer = page.locator('.assistant-message[data-done="true"]').last();
    await answer.waitFor({ timeout: 60_000 });
    const chip = answer.getByRole('button', { name: /^View source: \d+ setup\.md$/ });
    await chip.waitFor();
    expect(await answer.locator('.source-chip .source-number').first().textContent()).toBe('1');
    // The model was given the retrieved text.
    const toModel = session.web.upstream.requests.filter((r) => r.path.startsWith('/v1/chat/completions')).at(-1);
    expect(JSON.stringify(toModel?.json)).toContain(`The ${RARE} valve must be calibrated`);
    await chip.click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(`The ${RARE} valve must be calibrated every Monday`);
    await shots('sources');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    chatPath = new URL(page.url()).pathname;
    expect(chatPath).toMatch(/^\/c\//);
  });

  it('the sources are stored with the answer: they are back after a reload', async () => {
    await page.reload();
    const answer = page.locator('.assistant-message').last();
    await answer.getByRole('button', { name: /^View source: \d+ setup\.md$/ }).waitFor();
  });

  it('removing a file takes it out of the tree and the knowledge base', async () => {
    await page.goto(`${session.web.url}/workspace/knowledge/${encodeURIComponent(kbId)}`);
    const row = page.locator('.tree-file[data-path="handbook/notes/shifts.csv"]');
    await row.waitFor();
    await row.getByRole('button', { name: 'Remove shifts.csv' }).click();
    await row.waitFor({ state: 'detached' });
    const notes = (await apiGet<{ directories: { id: string; name: string }[] }>(`/api/v1/knowledge/${kbId}/files?directory_id=`)).directories;
    const handbook = notes.find((d) => d.name === 'handbook')!;
    const sub = await apiGet<{ directories: { id: string; name: string }[] }>(`/api/v1/knowledge/${kbId}/files?directory_id=${handbook.id}`);
    const notesDir = sub.directories.find((d) => d.name === 'notes')!;
    const inNotes = await apiGet<{ items: { filename: string }[] }>(`/api/v1/knowledge/${kbId}/files?directory_id=${notesDir.id}`);
    expect(inNotes.items).toEqual([]);
  });

  it('Sync folder mirrors the folder: changed file replaced, missing file and its folders removed', async () => {
    // handbook/notes/shifts.csv was removed above, so the folder brings it back (added); setup.md
    // changed (modified); faq.txt is gone (deleted), and with it handbook/guides/deep/nested.
    await page.locator('#knowledge-sync-input').setInputFiles(join(dir, 'v2', 'handbook'));
    await page.locator('.upload-summary').filter({ hasText: '2 uploaded, 1 unchanged, 1 removed' }).waitFor({ timeout: 60_000 });
    await page.locator('.tree-file[data-path="handbook/notes/shifts.csv"][data-status="completed"]').waitFor({ timeout: 60_000 });
    await page.locator('.tree-file[data-path="handbook/guides/deep/nested/faq.txt"]').waitFor({ state: 'detached' });
    await page.locator('.tree-dir[data-path="handbook/guides/deep"]').waitFor({ state: 'detached' });
    const paths = await page.locator('.tree-file:not(.unlinked-file)').evaluateAll((els) => els.map((e) => e.getAttribute('data-path')).sort());
    expect(paths).toEqual(['handbook/README.md', 'handbook/guides/setup.md', 'handbook/notes/shifts.csv']);
    // One setup.md, the new one: search finds the new text, not the old.
    await page.locator('.tree-file[data-path="handbook/guides/setup.md"][data-status="completed"]').waitFor({ timeout: 60_000 });
    await page.getByLabel('Search this knowledge base').fill(`${RARE} valve`);
    await page.locator('#knowledge-search-button').click();
    const first = page.locator('.search-result').first();
    await first.filter({ hasText: LATER }).waitFor();
    expect(await page.locator('.search-result').filter({ hasText: 'every Monday' }).count()).toBe(0);
  });

  it('a dropped file is uploaded to the top level', async () => {
    await page.evaluate(() => {
      const dt = new DataTransfer();
      dt.items.add(new File(['Dropped notes: the kestrel pump hums at night.'], 'dropped.txt', { type: 'text/plain' }));
      const target = document.querySelector('.kb-page')!;
      target.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
      target.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    });
    await page.locator('.tree-file[data-path="dropped.txt"][data-status="completed"]').waitFor({ timeout: 60_000 });
    const root = await apiGet<{ items: { filename: string }[] }>(`/api/v1/knowledge/${kbId}/files?directory_id=`);
    expect(root.items.map((f) => f.filename)).toEqual(['dropped.txt']);
  });

  it('a reader the knowledge base is shared with sees it marked read-only, can search, cannot upload', async () => {
    const reader = person('Remy');
    const admin = await token();
    const added = await apiJson<{ id: string }>(session.web.url, admin, 'POST', '/api/v1/auths/add', { ...reader, role: 'user' });
    await apiJson(session.web.url, admin, 'POST', `/api/v1/knowledge/${kbId}/access/update`, {
      access_grants: [{ principal_type: 'user', principal_id: added.id, permission: 'read' }],
    });
    const other = await newPage(session.browser, session.errors);
    try {
      await other.goto(session.web.url + '/auth');
      await fillSignIn(other, reader.email, reader.password);
      await other.waitForURL((u) => !u.pathname.startsWith('/auth'));
      const dialog = changelogDialog(other);
      await dialog.waitFor();
      await dialog.getByRole('button', { name: "Okay, Let's Go!" }).click();
      await dialog.waitFor({ state: 'detached' });
      await other.goto(session.web.url + '/workspace/knowledge');
      const card = other.locator(`.knowledge-item[data-knowledge-id="${kbId}"]`);
      await card.waitFor();
      expect(await card.locator('.badge').allTextContents()).toEqual([`Shared by ${who.name}`, 'Read Only']);
      await card.click();
      await other.locator('.read-only-badge').waitFor();
      await other.locator('.tree-file[data-path="handbook/guides/setup.md"]').waitFor();
      expect(await other.locator('#knowledge-upload-folder-button, #knowledge-delete-button, .remove-file-button').count()).toBe(0);
      await other.getByLabel('Search this knowledge base').fill('kestrel pump');
      await other.locator('#knowledge-search-button').click();
      expect(await other.locator('.search-result .result-name').first().textContent()).toBe('dropped.txt');
    } finally {
      await other.context().close();
    }
  });

  it('the list shows the knowledge base, filtered by name', async () => {
    await page.locator('#sidebar-workspace-knowledge-button').click();
    await page.waitForURL((u) => u.pathname === '/workspace/knowledge');
    const card = page.locator(`.knowledge-item[data-knowledge-id="${kbId}"]`);
    await card.waitFor();
    expect(await card.locator('.name').textContent()).toBe(KB_NAME);
    // README.md, setup.md, shifts.csv (synced) and dropped.txt.
    expect(await card.locator('.file-count').textContent()).toBe('4 files');
    await shots('list');
    await page.getByLabel('Search Knowledge').fill('no such thing');
    await card.waitFor({ state: 'detached' });
    await page.getByLabel('Search Knowledge').fill('hand');
    await card.waitFor();
  });

  it('the page raised no uncaught errors', () => {
    expect(session.errors).toEqual([]);
  });
});
