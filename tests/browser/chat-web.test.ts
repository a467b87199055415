import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { axeAudit } from './axe-audit.ts';
import { apiJson, openSession, person, pickModel, PYTHON_MODEL, shotsEverySize, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';

/**
 * Web pages and web search in the chat, in a real chromium against the real stack (local fetches
 * on: the pages are served on loopback). `#http://127.0.0.1:<port>/page` typed in `#chat-input`
 * offers to attach the page; attached, it rides in the completion's `files` as a web item and the
 * answer lists the page as its source. The Web Search toggle sends `features.web_search`; with a
 * fake SearXNG configured, the answer's sources are the result pages.
 */
let session: BrowserSession;
let page: Page;
let site: Server;
let base = '';
const FACT = 'The Okavango lighthouse is painted teal and blinks every nine seconds.';
const HERON = 'Grey herons nest in tall reed beds along the Thames every March.';

beforeAll(async () => {
  site = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/page') {
      res.setHeader('content-type', 'text/html');
      return res.end(`<html><head><title>Lighthouse notes</title></head><body><p>${FACT}</p></body></html>`);
    }
    if (url.pathname === '/heron') {
      res.setHeader('content-type', 'text/html');
      return res.end(`<html><head><title>Heron facts</title></head><body><p>${HERON}</p></body></html>`);
    }
    if (url.pathname === '/searxng/search') {
      res.setHeader('content-type', 'application/json');
      return res.end(JSON.stringify({ query: url.searchParams.get('q'), results: [{ url: `${base}/heron`, title: 'Heron facts', content: 'Herons nest in reeds.', score: 1 }] }));
    }
    res.statusCode = 404;
    res.end('not found');
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  session = await openSession({}, { ENABLE_LOCAL_WEB_FETCH: 'true' });
  page = session.page;
  await signUpIntoApp(page, session.web.url, person('Wendy'));
});

afterAll(async () => {
  await session?.close();
  site?.closeAllConnections();
  await new Promise((r) => (site ? site.close(() => r(undefined)) : r(undefined)));
});

const sentBodies = () => page.waitForRequest((r) => new URL(r.url()).pathname === '/api/chat/completions' && r.method() === 'POST');
const lastUpstream = () => JSON.stringify(session.web.upstream.requests.filter((r) => r.path.startsWith('/v1/chat/completions')).at(-1)?.json);

describe('web UI: web pages and web search in the chat', () => {
  it('#http://127.0.0.1:<port>/page attaches the page; the answer lists it as its source', async () => {
    await pickModel(page, PYTHON_MODEL);
    const input = page.locator('#chat-input');
    await input.click();
    const url = `${base}/page`;
    await input.pressSequentially(`#${url}`);
    const attach = page.locator('#attach-web-page-button');
    await attach.waitFor();
    expect(await attach.textContent()).toContain(url);
    await page.keyboard.press('Enter');
    const chip = page.locator(`.knowledge-chip[data-type="web"][data-id="${url}"]`);
    await chip.waitFor();
    expect((await input.textContent())?.includes('#http')).toBe(false);
    const sent = sentBodies();
    await input.pressSequentially('What colour is the lighthouse?');
    await page.keyboard.press('Enter');
    const body = (await sent).postDataJSON() as { files?: Record<string, unknown>[]; features?: unknown };
    expect(body.files).toEqual([{ type: 'web', id: url, name: url, url, collection_name: expect.stringMatching(/^[0-9a-f]{63}$/) }]);
    expect(body.features).toBeUndefined();
    const answer = page.locator('.assistant-message[data-done="true"]').last();
    await answer.waitFor({ timeout: 60_000 });
    await answer.getByRole('button', { name: `View source: 1 ${url}` }).waitFor();
    expect(lastUpstream()).toContain(FACT);
  });

  it('the Web Search toggle sends features.web_search; the answer cites the result page', async () => {
    const token = await page.evaluate(() => localStorage.getItem('token') ?? '');
    await apiJson(session.web.url, token, 'POST', '/api/v1/retrieval/config/update', { web: { ENABLE_WEB_SEARCH: true, WEB_SEARCH_ENGINE: 'searxng', SEARXNG_QUERY_URL: `${base}/searxng/search` } });
    await page.locator('#sidebar-new-chat-button').click();
    await page.waitForURL((u) => u.pathname === '/');
    await pickModel(page, PYTHON_MODEL);
    const toggle = page.locator('#web-search-toggle');
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    await toggle.click();
    expect(await toggle.getAttribute('aria-pressed')).toBe('true');
    const input = page.locator('#chat-input');
    await input.click();
    const sent = sentBodies();
    await input.pressSequentially('Where do herons nest?');
    await page.keyboard.press('Enter');
    const body = (await sent).postDataJSON() as { features?: Record<string, unknown> };
    expect(body.features).toEqual({ web_search: true });
    const answer = page.locator('.assistant-message[data-done="true"]').last();
    await answer.waitFor({ timeout: 60_000 });
    await answer.getByRole('button', { name: 'View source: 1 Heron facts' }).waitFor();
    expect(lastUpstream()).toContain(HERON);
    expect(await axeAudit(page, 'chat with web sources', ['#message-input-container', '.sources'])).toEqual([]);
    await shotsEverySize(page, 'chat-web-sources');
    await toggle.click();
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
  });
});
