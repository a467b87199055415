import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import {
  answerTo,
  apiJson,
  ask,
  changelogDialog,
  fillSignIn,
  MODEL,
  newPage,
  openSession,
  person,
  pickModel,
  shotsEverySize,
  signUpIntoApp,
  type BrowserSession,
} from './browser-fixture.ts';

/**
 * The chat menu and what hangs off an answer, in a real browser on a real stack: Generation Info
 * from the stored usage, a thumbs-up with its reason form (Open WebUI's feedback call) still shown
 * after a reload, the Share dialog (link and who may open it), the shared page opened by a second
 * user (signed out first: sign-in and back) who clones it, "Only me" taking the link away, downloads (JSON, text, Markdown, the PDF's print page) and the JSON export
 * imported back through Settings → Chats with its history. axe-core on the new screens: no
 * serious or critical violation. With SCREENSHOTS_DIR: chat-share-dialog-*, chat-shared-page-*,
 * chat-rate-comment-*, chat-reply-info-* (wide/narrow × light/dark).
 */
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let session: BrowserSession;
let page: Page;
let reader: Page;
const owner = person('Ada');
const second = person('Grace');
const question = 'What is worth sharing here?';
let ownerToken = '';
let chatId = '';
let answerId = '';
let shareId = '';
let title = '';

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}
/** axe-core on `p`; the serious and critical violations as lines (all are printed). */
async function audit(p: Page, screen: string): Promise<string[]> {
  await p.waitForFunction(() => document.getAnimations().every((a) => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity));
  if (!(await p.evaluate(() => 'axe' in window))) await p.addScriptTag({ path: AXE });
  const violations = (await p.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: unknown[] }> } }).axe;
    return (await axe.run(document, { resultTypes: ['violations'] })).violations;
  })) as Violation[];
  const lines = violations.map((v) => `[${screen}] ${v.impact} ${v.id}: ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join('; ')}`);
  for (const l of lines) console.log(l);
  return lines.filter((_, i) => violations[i]!.impact === 'serious' || violations[i]!.impact === 'critical');
}

const api = <T>(token: string, method: string, path: string, body?: unknown) => apiJson<T>(session.web.url, token, method, path, body);
type Msg = { id: string; role: string; content: string; usage?: Record<string, number>; annotation?: Record<string, unknown>; feedbackId?: string };
type ChatRec = { id: string; user_id: string; title: string; chat: { title?: string; history: { currentId: string; messages: Record<string, Msg> } } };

beforeAll(async () => {
  session = await openSession();
  page = session.page;
  await signUpIntoApp(page, session.web.url, owner);
  ownerToken = (await page.evaluate(() => localStorage.getItem('token'))) ?? '';
});

afterAll(() => session?.close());

describe('web UI: an answer, its rating, sharing and copies', () => {
  it('an answer shows its Generation Info: tokens in and out from the stored usage', async () => {
    await pickModel(page, MODEL);
    await ask(page, question);
    const answer = page.locator('.assistant-message[data-done="true"]').filter({ hasText: answerTo(question) });
    await answer.waitFor();
    await page.waitForURL(/\/c\//);
    chatId = new URL(page.url()).pathname.split('/').pop()!;
    answerId = (await answer.getAttribute('id'))!.replace(/^message-/, '');
    const info = answer.locator('div[aria-label="Generation Info"]');
    await info.waitFor();
    await info.locator('button').focus();
    const tip = info.getByRole('tooltip');
    await tip.waitFor();
    // The numbers are the stored usage's (read back once the chat holds the finished answer).
    await expect.poll(async () => (await api<ChatRec>(ownerToken, 'GET', `/api/v1/chats/${chatId}`)).chat.history.messages[answerId]?.usage?.output_tokens ?? null).not.toBeNull();
    const rec = await api<ChatRec>(ownerToken, 'GET', `/api/v1/chats/${chatId}`);
    title = rec.title;
    const usage = rec.chat.history.messages[answerId]!.usage!;
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(await tip.locator('[data-key="input"] dd').textContent()).toBe(String(usage.input_tokens));
    expect(await tip.locator('[data-key="output"] dd').textContent()).toBe(String(usage.output_tokens));
    expect(await tip.locator('[data-key="total"] dd').textContent()).toBe(String(usage.total_tokens));
    // The fake connection reports no timing: the answer's own (measured where it was stored) is shown.
    const timing = usage as unknown as { total_duration: number; 'response_token/s': number };
    expect(timing.total_duration).toBeGreaterThan(0);
    expect(timing['response_token/s']).toBeGreaterThan(0);
    expect(await tip.locator('[data-key="time"] dd').textContent()).toMatch(/^\d+(\.\d+)? (s|min)/);
    expect(await tip.locator('[data-key="tps"] dd').textContent()).toBe(timing['response_token/s'].toFixed(1));
  });

  it('a thumbs-up and its reason form post the feedback and stay shown after a reload', async () => {
    const answer = page.locator(`#message-${answerId}`);
    const created = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/api/v1/evaluations/feedback');
    await answer.locator('button[aria-label="Good Response"]').click();
    const feedback = (await (await created).json()) as { id: string };
    const form = answer.locator(`#rate-comment-${answerId}`);
    await form.waitFor();
    await form.getByRole('button', { name: 'Accurate information' }).click();
    await form.getByRole('button', { name: '8 of 10' }).click();
    await form.getByLabel('Comment').fill('Clear and short.');
    expect(await audit(page, 'rating form')).toEqual([]);
    await shotsEverySize(page, 'chat-rate-comment');
    const updated = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === `/api/v1/evaluations/feedback/${feedback.id}`);
    await form.getByRole('button', { name: 'Save' }).click();
    expect((await updated).status()).toBe(200);
    await form.waitFor({ state: 'detached' });

    const stored = await api<{ data: Record<string, unknown>; meta: Record<string, unknown>; snapshot: { chat: { id: string } } }>(ownerToken, 'GET', `/api/v1/evaluations/feedback/${feedback.id}`);
    expect(stored.data).toMatchObject({ rating: 1, model_id: MODEL, reason: 'Accurate information', comment: 'Clear and short.', details: { rating: 8 } });
    expect(stored.data.sibling_model_ids ?? null).toBeNull(); // one answer: no arena opponents
    expect(stored.meta).toMatchObject({ arena: false, chat_id: chatId, message_id: answerId });
    expect(stored.snapshot.chat.id).toBe(chatId);
    const msg = (await api<ChatRec>(ownerToken, 'GET', `/api/v1/chats/${chatId}`)).chat.history.messages[answerId]!;
    expect({ annotation: msg.annotation, feedbackId: msg.feedbackId }).toEqual({
      annotation: { rating: 1, reason: 'Accurate information', comment: 'Clear and short.', tags: ['Accurate information'], details: { rating: 8 } },
      feedbackId: feedback.id,
    });

    await page.reload();
    const good = page.locator(`#message-${answerId} button[aria-label="Good Response"]`);
    await good.waitFor();
    expect(await good.getAttribute('aria-pressed')).toBe('true');
    expect(await page.locator(`#message-${answerId} button[aria-label="Bad Response"]`).getAttribute('aria-pressed')).toBe('false');
    await page.locator(`#info-${answerId}`).click(); // pinned open for the pictures
    await page.locator(`#generation-info-${answerId}`).waitFor();
    expect(await audit(page, 'answer with generation info and rating')).toEqual([]);
    await shotsEverySize(page, 'chat-reply-info');
  });

  it('Share: the dialog creates the link, copies it and says who may open it', async () => {
    await page.locator('#chat-context-menu-button').click();
    await page.locator('#chat-download-button').click();
    await page.locator('#chat-download-json-button').waitFor();
    expect(await audit(page, 'chat menu with downloads')).toEqual([]);
    await page.locator('#chat-share-button').click();
    const dialog = page.getByRole('dialog', { name: 'Share Chat' });
    await dialog.waitFor();
    // Nothing is shared by opening the dialog.
    expect((await api<{ share_id: string | null }>(ownerToken, 'GET', `/api/v1/chats/${chatId}`)).share_id ?? null).toBeNull();
    // Read once the dialog has loaded the chat and my permissions (the Copy button waits for them).
    await expect.poll(() => page.locator('#copy-and-share-chat-button').isEnabled()).toBe(true);
    expect(await dialog.getByLabel('Anyone signed in who has the link').isChecked()).toBe(true);
    await page.locator('#copy-and-share-chat-button').click();
    const link = page.locator('#share-chat-link');
    await link.waitFor();
    const url = await link.inputValue();
    expect(url).toMatch(new RegExp(`^${session.web.url}/s/[\\w-]+$`));
    shareId = url.split('/s/')[1]!;
    expect((await api<{ share_id: string }>(ownerToken, 'GET', `/api/v1/chats/${chatId}`)).share_id).toBe(shareId);
    const grants = await api<{ principal_type: string; principal_id: string; permission: string }[]>(ownerToken, 'GET', `/api/v1/chats/shared/${chatId}/access`);
    expect(grants.map((g) => [g.principal_type, g.principal_id, g.permission])).toEqual([['user', '*', 'read']]);
    expect(await page.locator('#copy-and-share-chat-button').textContent()).toContain('Update and Copy Link');
    expect(await audit(page, 'share dialog')).toEqual([]);
    await shotsEverySize(page, 'chat-share-dialog');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
  });

  it('a second user opens the shared page (read-only) and clones it into their chats', async () => {
    await api(ownerToken, 'POST', '/api/v1/auths/add', { name: second.name, email: second.email, password: second.password, role: 'user' });
    reader = await newPage(session.browser);
    // Signed out, the link leads to sign-in and back to the shared page.
    await reader.goto(`${session.web.url}/s/${shareId}`);
    await reader.waitForURL((u) => u.pathname === '/auth' && u.searchParams.get('redirect') === `/s/${shareId}`);
    await fillSignIn(reader, second.email, second.password);
    await reader.waitForURL((u) => u.pathname === `/s/${shareId}`);
    const readerToken = (await reader.evaluate(() => localStorage.getItem('token'))) ?? '';
    await reader.locator('#shared-chat-title').waitFor();
    expect(await reader.locator('#shared-chat-title').textContent()).toBe(title);
    expect(await reader.locator('.chat-user').first().textContent()).toContain(question);
    await reader.locator('.chat-assistant').filter({ hasText: answerTo(question) }).waitFor();
    // Read-only: no input, no edit, no rating.
    expect(await reader.locator('#chat-input').count()).toBe(0);
    expect(await reader.locator('.edit-user-message-button, button[aria-label="Good Response"]').count()).toBe(0);
    expect(await audit(reader, 'shared page')).toEqual([]);
    await shotsEverySize(reader, 'chat-shared-page');

    await reader.locator('#clone-shared-chat-button').click();
    await reader.waitForURL(/\/c\//);
    const dialog = changelogDialog(reader);
    await dialog.getByRole('button', { name: "Okay, Let's Go!" }).click();
    await dialog.waitFor({ state: 'detached' });
    const cloneId = new URL(reader.url()).pathname.split('/').pop()!;
    expect(cloneId).not.toBe(chatId);
    await reader.locator('.chat-assistant').filter({ hasText: answerTo(question) }).waitFor();
    const me = await apiJson<{ id: string }>(session.web.url, readerToken, 'GET', '/api/v1/auths/');
    const clone = await apiJson<ChatRec>(session.web.url, readerToken, 'GET', `/api/v1/chats/${cloneId}`);
    const original = await api<ChatRec>(ownerToken, 'GET', `/api/v1/chats/${chatId}`);
    expect({ owner: clone.user_id, title: clone.title }).toEqual({ owner: me.id, title: `Clone of ${title}` });
    expect(Object.keys(clone.chat.history.messages).sort()).toEqual(Object.keys(original.chat.history.messages).sort());

    // A user without sharing.public_chats (the default) cannot give a link to everyone.
    await reader.locator('#chat-context-menu-button').click();
    await reader.locator('#chat-share-button').click();
    const share = reader.getByRole('dialog', { name: 'Share Chat' });
    await expect.poll(() => reader.locator('#copy-and-share-chat-button').isEnabled()).toBe(true);
    expect(await share.getByRole('radio', { name: /Anyone signed in who has the link/ }).isDisabled()).toBe(true);
    expect(await share.getByLabel('Only me (and admins)').isChecked()).toBe(true);
    await reader.keyboard.press('Escape');
    await share.waitFor({ state: 'detached' });

    // Given the permission through a group, the choice opens up.
    const group = await api<{ id: string }>(ownerToken, 'POST', '/api/v1/groups/create', { name: 'Publishers', description: 'may share with everyone', permissions: { sharing: { public_chats: true } } });
    await api(ownerToken, 'POST', `/api/v1/groups/id/${group.id}/users/add`, { user_ids: [me.id] });
    await reader.locator('#chat-context-menu-button').click();
    await reader.locator('#chat-share-button').click();
    await expect.poll(() => reader.locator('#copy-and-share-chat-button').isEnabled()).toBe(true);
    expect(await share.getByRole('radio', { name: /Anyone signed in who has the link/ }).isDisabled()).toBe(false);
    expect(await share.getByRole('radio', { name: /Members of these groups/ }).isDisabled()).toBe(false);
    await reader.keyboard.press('Escape');
    await share.waitFor({ state: 'detached' });
  });

  it('"Only me" in the dialog takes the link away from the second user', async () => {
    await page.locator('#chat-context-menu-button').click();
    await page.locator('#chat-share-button').click();
    const dialog = page.getByRole('dialog', { name: 'Share Chat' });
    await expect.poll(() => page.locator('#copy-and-share-chat-button').isEnabled()).toBe(true);
    await dialog.getByLabel('Only me (and admins)').check();
    await dialog.getByRole('status').filter({ hasText: 'Access saved' }).waitFor();
    expect(await api<unknown[]>(ownerToken, 'GET', `/api/v1/chats/shared/${chatId}/access`)).toEqual([]);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await reader.goto(`${session.web.url}/s/${shareId}`);
    await reader.getByRole('alert').filter({ hasText: 'This shared chat does not exist or is not shared with you.' }).waitFor();
    expect(await reader.locator('#clone-shared-chat-button').count()).toBe(0);
    await reader.context().close();
  });

  it('downloads: text and Markdown of the shown branch, the PDF as a print page', async () => {
    await page.goto(`${session.web.url}/c/${chatId}`);
    await page.locator(`#message-${answerId}`).waitFor();
    const download = async (format: string) => {
      await page.locator('#chat-context-menu-button').click();
      await page.locator('#chat-download-button').click();
      const got = page.waitForEvent('download');
      await page.locator(`#chat-download-${format}-button`).click();
      const d = await got;
      return { name: d.suggestedFilename(), text: readFileSync((await d.path())!, 'utf8') };
    };
    const txt = await download('txt');
    expect(txt.name).toMatch(/\.txt$/);
    expect(txt.text).toBe(`### USER\n${question}\n\n### ASSISTANT\n${answerTo(question)}\n`);
    const md = await download('md');
    expect(md.name).toMatch(/\.md$/);
    expect(md.text).toBe(`# ${title}\n\n## User\n\n${question}\n\n## Assistant (${MODEL})\n\n${answerTo(question)}\n`);
    // PDF: the browser's print dialog on a printable page of the chat (headless: nothing to click).
    await page.locator('#chat-context-menu-button').click();
    await page.locator('#chat-download-button').click();
    await page.locator('#chat-download-pdf-button').click();
    const frame = page.locator('iframe.chat-print-frame');
    await frame.waitFor({ state: 'attached' });
    expect(await frame.getAttribute('srcdoc')).toContain(answerTo(question));
  });

  it("a sidebar item's menu: Clone opens the copy, Download gives the text file", async () => {
    const item = page.locator(`#sidebar [data-chat-id="${chatId}"]`);
    await item.hover();
    await item.getByRole('button', { name: `Chat menu: ${title}` }).click();
    const menu = item.getByRole('menu', { name: 'Chat actions' });
    await menu.getByRole('menuitem', { name: 'Download' }).click();
    const got = page.waitForEvent('download');
    await menu.getByRole('menuitem', { name: 'Plain text (.txt)' }).click();
    expect(readFileSync((await (await got).path())!, 'utf8')).toBe(`### USER\n${question}\n\n### ASSISTANT\n${answerTo(question)}\n`);
    await item.hover();
    await item.getByRole('button', { name: `Chat menu: ${title}` }).click();
    await menu.getByRole('menuitem', { name: 'Clone' }).click();
    await page.waitForURL((u) => u.pathname.startsWith('/c/') && !u.pathname.endsWith(chatId));
    const copyId = new URL(page.url()).pathname.split('/').pop()!;
    await page.locator(`#sidebar [data-chat-id="${copyId}"]`).filter({ hasText: `Clone of ${title}` }).waitFor();
    await page.locator('.chat-assistant').filter({ hasText: answerTo(question) }).waitFor();
    await page.goto(`${session.web.url}/c/${chatId}`);
    await page.locator(`#message-${answerId}`).waitFor();
  });

  it('Export chat (.json), then Settings → Chats → Import restores it with its history', async () => {
    await page.locator('#chat-context-menu-button').click();
    await page.locator('#chat-download-button').click();
    const got = page.waitForEvent('download');
    await page.locator('#chat-download-json-button').click();
    const d = await got;
    expect(d.suggestedFilename()).toMatch(/^chat-export-\d+\.json$/);
    const path = (await d.path())!;
    const exported = JSON.parse(readFileSync(path, 'utf8')) as ChatRec[];
    expect(exported.map((c) => c.id)).toEqual([chatId]);
    const original = exported[0]!.chat.history;

    const before = new Set((await api<{ id: string }[]>(ownerToken, 'GET', '/api/v1/chats/')).map((c) => c.id));
    await page.goto(`${session.web.url}/settings`);
    await page.locator('#settings-tab-chats').click();
    await page.locator('#chat-import-input').setInputFiles(path);
    await page.locator('#settings-chats-status').filter({ hasText: 'Imported 1 chat.' }).waitFor();
    const added = (await api<{ id: string; title: string }[]>(ownerToken, 'GET', '/api/v1/chats/')).filter((c) => !before.has(c.id));
    expect(added.map((c) => c.title)).toEqual([title]);
    const imported = await api<ChatRec>(ownerToken, 'GET', `/api/v1/chats/${added[0]!.id}`);
    const shape = (h: ChatRec['chat']['history']) => ({
      currentId: h.currentId,
      messages: Object.values(h.messages)
        .map((m) => ({ id: m.id, role: m.role, content: m.content }))
        .sort((a, b) => a.id.localeCompare(b.id)),
    });
    expect(shape(imported.chat.history)).toEqual(shape(original));
    await page.goto(`${session.web.url}/c/${added[0]!.id}`);
    await page.locator('.chat-assistant').filter({ hasText: answerTo(question) }).waitFor();
    expect(await page.locator('.chat-user').first().textContent()).toContain(question);
  });
});
