import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, Stack, type Edge, type Proc } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream } from '../../scripts/src/fake-upstreams/common.ts';
import { rememberSecret } from '../../scripts/src/log-scan.ts';
import { fetchPage, localWebFetchAllowed, WebFetchError } from '../../services/chat-worker/src/retrieval/web-fetch.ts';
import { webEnv } from '../../services/chat-worker/src/config/settings.ts';
import { chatClient, chatDb, PROHIBITED, type Account } from './chat-fixture.ts';

/**
 * Web fetch and web search on the real stack (chat worker, proxy worker with a fake OpenAI, edge):
 * a loopback web server serves the pages and fakes each search engine in its own response format
 * (SearXNG JSON, Brave's web search API, Tavily's, You.com's), plus an engine answering garbage and
 * one that never answers. The chat worker first runs with local fetches off (the SSRF refusals),
 * then again with the old ENABLE_RAG_LOCAL_WEB_FETCH=true and the new YDC_API_KEY (the fallbacks).
 */
const stack = new Stack();
const db = chatDb(stack);
const openaiKey = newKey();
const braveKey = rememberSecret(randomBytes(12).toString('hex'));
const tavilyKey = rememberSecret(randomBytes(12).toString('hex'));
const ydcKey = rememberSecret(randomBytes(12).toString('hex'));
let edge: Edge;
let oa: FakeUpstream;
let admin: Account;
let worker: Proc;
const { call, signup, addUser } = chatClient(() => edge.chatUrl, { json: false });

const ZEBRA = 'Zebras in the Okavango delta sleep standing up in groups of seven.';
const HERON = 'Grey herons nest in tall reed beds along the Thames every March.';
const KIWI = 'The kiwi bird lays an egg one fifth of its own body weight.';
const page = (title: string, text: string) =>
  `<!doctype html><html><head><title>${title}</title><style>.x{color:red}</style></head><body><nav>Menu</nav><main><h1>${title}</h1><p>${text}</p></main><script>var hidden = 1;</script></body></html>`;

let site: Server;
let other: Server;
let base = '';
let otherBase = '';
const seen: { path: string; headers: IncomingMessage['headers']; body: string }[] = [];

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = '';
    req.on('data', (d) => (s += d));
    req.on('end', () => resolve(s));
  });
}

const results = () => [
  { url: `${base}/zebra`, title: 'Zebra facts', snippet: 'Zebras sleep standing.' },
  { url: `${base}/heron`, title: 'Heron facts', snippet: 'Herons nest in reeds.' },
];

async function serve(req: IncomingMessage, res: import('node:http').ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://x');
    const body = await readBody(req);
    seen.push({ path: url.pathname + url.search, headers: req.headers, body });
    const json = (v: unknown) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(v));
    };
    switch (url.pathname) {
      case '/zebra':
        res.setHeader('content-type', 'text/html; charset=utf-8');
        return res.end(page('Zebra facts', ZEBRA));
      case '/heron':
        res.setHeader('content-type', 'text/html');
        return res.end(page('Heron facts', HERON));
      case '/kiwi.txt':
        res.setHeader('content-type', 'text/plain');
        return res.end(KIWI);
      case '/redirect':
        res.statusCode = 302;
        res.setHeader('location', `${base}/zebra`);
        return res.end();
      case '/searxng/search':
        // SearXNG's JSON: results with a score, not in score order.
        return json({
          query: url.searchParams.get('q'),
          number_of_results: 2,
          results: results().map((r, i) => ({ url: r.url, title: r.title, content: r.snippet, engine: 'duckduckgo', score: i === 1 ? 2 : 1 })),
        });
      case '/brave/res/v1/web/search':
        if (req.headers['x-subscription-token'] !== braveKey) return ((res.statusCode = 401), json({ error: 'bad key' }));
        return json({ type: 'search', query: { original: url.searchParams.get('q') }, web: { type: 'search', results: results().map((r) => ({ url: r.url, title: r.title, description: r.snippet, type: 'search_result' })) } });
      case '/tavily/search':
        if (req.headers.authorization !== `Bearer ${tavilyKey}`) return ((res.statusCode = 401), json({ detail: { error: 'Unauthorized' } }));
        return json({ query: JSON.parse(body).query, answer: null, results: results().map((r, i) => ({ url: r.url, title: r.title, content: r.snippet, score: 0.5 + i / 10 })), response_time: 0.4 });
      case '/ydc/v1/search':
        if (req.headers['x-api-key'] !== ydcKey) return ((res.statusCode = 401), json({ message: 'Unauthorized' }));
        return json({ results: { web: results().map((r) => ({ url: r.url, title: r.title, description: r.snippet, snippets: ['More about it.'] })), news: [] }, metadata: { query: url.searchParams.get('query') } });
      case '/garbage/search':
        res.setHeader('content-type', 'text/html');
        return res.end('<html>Service unavailable</html>');
      case '/hang/search':
        return; // never answers: only the deadline ends the wait
      default:
        res.statusCode = 404;
        return res.end('not found');
    }
}

beforeAll(async () => {
  site = createServer(serve);
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  // The same pages on a second loopback address, for the redirect-hop case.
  other = createServer(serve);
  await new Promise<void>((r) => other.listen(0, '127.0.0.2', () => r()));
  otherBase = `http://127.0.0.2:${(other.address() as AddressInfo).port}`;

  oa = await startFakeOpenAI({ apiKey: openaiKey });
  await stack.startProxyWorker({ OPENAI_API_BASE_URLS: oa.url, OPENAI_API_KEYS: openaiKey });
  // First run: local fetches off (neither name set).
  worker = await stack.startChatWorker({ ENABLE_LOCAL_WEB_FETCH: undefined, ENABLE_RAG_LOCAL_WEB_FETCH: undefined }, { ingest: false });
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
});

afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
  await oa?.close();
  for (const s of [site, other]) {
    s?.closeAllConnections();
    await new Promise((r) => (s ? s.close(() => r(undefined)) : r(undefined)));
  }
});

const web = (url: string, who: Account = admin) => call('/api/v1/retrieval/process/web', who, 'POST', { url });
const INVALID = '[ERROR: Oops! The URL you provided is invalid. Please double-check and try again.]';

describe('web fetch with local fetches off (the default)', () => {
  it('refuses loopback, private, link-local and metadata addresses, and a redirect to loopback', async () => {
    for (const url of [`${base}/zebra`, `http://localhost:${new URL(base).port}/zebra`, 'http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data/', 'http://[::1]/', `${base}/redirect`, 'ftp://example.com/x', 'not a url']) {
      const r = await web(url);
      expect({ url, status: r.status, body: r.body }).toEqual({ url, status: 400, body: { detail: INVALID } });
    }
    // The page server was never reached.
    expect(seen.filter((s) => s.path === '/zebra' || s.path === '/redirect')).toEqual([]);
  });

  it('checks every redirect hop: a page allowed by the rule that redirects to a refused address is refused', async () => {
    // 127.0.0.2 stands for a public host here (the rule given refuses only 127.0.0.1).
    const hop = `${otherBase}/redirect`;
    const onlyOne = (ip: string) => ip === '127.0.0.1';
    const err = await fetchPage(hop, { allowLocal: false, timeoutMs: 5000, isBlocked: onlyOne }).catch((e) => e);
    expect(err).toBeInstanceOf(WebFetchError);
    expect(err.message).toBe('Oops! The URL you provided is invalid. Please double-check and try again.');
    // …and the same rule lets a page on the allowed address through, its text extracted from the HTML.
    const ok = await fetchPage(`${otherBase}/zebra`, { allowLocal: false, timeoutMs: 5000, isBlocked: onlyOne });
    expect(ok.title).toBe('Zebra facts');
    expect(ok.text).toContain(ZEBRA);
    expect(ok.text).not.toContain('hidden');
  });

  it('reads ENABLE_LOCAL_WEB_FETCH, then the old ENABLE_RAG_LOCAL_WEB_FETCH, as 0.10.2 does', () => {
    expect(localWebFetchAllowed({})).toBe(false);
    expect(localWebFetchAllowed({ ENABLE_RAG_LOCAL_WEB_FETCH: 'True' })).toBe(true);
    expect(localWebFetchAllowed({ ENABLE_LOCAL_WEB_FETCH: 'true' })).toBe(true);
    // The new name wins when both are set, even when empty.
    expect(localWebFetchAllowed({ ENABLE_LOCAL_WEB_FETCH: 'false', ENABLE_RAG_LOCAL_WEB_FETCH: 'true' })).toBe(false);
    expect(localWebFetchAllowed({ ENABLE_LOCAL_WEB_FETCH: '', ENABLE_RAG_LOCAL_WEB_FETCH: 'true' })).toBe(false);
    expect(localWebFetchAllowed({ ENABLE_LOCAL_WEB_FETCH: '1' })).toBe(false);
    // You.com: YOUCOM_API_KEY, else YDC_API_KEY (the old name wins when both are set, as 0.10.2 reads them).
    expect(webEnv({ YDC_API_KEY: 'new' }).YOUCOM_API_KEY).toBe('new');
    expect(webEnv({ YOUCOM_API_KEY: 'old', YDC_API_KEY: 'new' }).YOUCOM_API_KEY).toBe('old');
    expect(webEnv({}).YOUCOM_API_KEY).toBeUndefined();
  });

  it('web search is 403 with Open WebUI’s message while ENABLE_WEB_SEARCH is off; the config says so', async () => {
    const r = await call('/api/v1/retrieval/process/web/search', admin, 'POST', { queries: ['zebras'] });
    expect(r).toEqual({ status: 403, body: { detail: PROHIBITED } });
    const cfg = await call('/api/v1/retrieval/config', admin);
    expect(cfg.status).toBe(200);
    expect(cfg.body.web).toMatchObject({ ENABLE_WEB_SEARCH: false, WEB_SEARCH_ENGINE: '', WEB_SEARCH_RESULT_COUNT: 3, ENABLE_LOCAL_WEB_FETCH: false, YOUCOM_API_KEY: '' });
    const bad = await call('/api/v1/retrieval/process/web/search', admin, 'POST', { queries: 'zebras' });
    expect(bad.status).toBe(422);
  });
});

describe('with local fetches on (the old variable name) and You.com’s key under its new name', () => {
  beforeAll(async () => {
    await worker.stop();
    worker = await stack.startChatWorker({ ENABLE_RAG_LOCAL_WEB_FETCH: 'true', YDC_API_KEY: ydcKey, WEB_SEARCH_RESULT_COUNT: '2', CHUNK_SIZE: '200', CHUNK_OVERLAP: '0' }, { ingest: false });
  });

  it('fetches a page (redirect followed), stores its text in a collection query/collection finds', async () => {
    const url = `${base}/redirect`;
    const r = await web(url);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ status: true, filename: url, file: { meta: { name: url, source: url } } });
    expect(r.body.collection_name).toMatch(/^[0-9a-f]{63}$/);
    expect(r.body.file.data.content).toContain(ZEBRA);
    expect(r.body.file.data.content).not.toContain('var hidden');
    const q = await call('/api/v1/retrieval/query/collection', admin, 'POST', { collection_names: [r.body.collection_name], query: 'zebras sleep' });
    expect(q.status).toBe(200);
    expect(q.body.documents[0].join(' ')).toContain(ZEBRA);
    expect(q.body.metadatas[0][0]).toMatchObject({ source: url, name: url });
    // A plain-text page, into a named collection.
    const t = await call('/api/v1/retrieval/process/web', admin, 'POST', { url: `${base}/kiwi.txt`, collection_name: 'birds' });
    expect(t.status).toBe(200);
    expect(t.body).toMatchObject({ collection_name: 'birds', file: { data: { content: KIWI } } });
    // A missing page is a clear 400, not a 500.
    const gone = await web(`${base}/nowhere`);
    expect(gone).toEqual({ status: 400, body: { detail: '[ERROR: The page answered HTTP 404]' } });
  });

  it('GET /config carries every web setting; /config/update saves them (admin only); the seeded You.com key shows', async () => {
    const before = await call('/api/v1/retrieval/config', admin);
    expect(before.body.web).toMatchObject({ ENABLE_LOCAL_WEB_FETCH: true, YOUCOM_API_KEY: ydcKey, WEB_SEARCH_RESULT_COUNT: 2 });
    const form = { web: { ENABLE_WEB_SEARCH: true, WEB_SEARCH_ENGINE: 'searxng', SEARXNG_QUERY_URL: `${base}/searxng/search`, WEB_LOADER_TIMEOUT: '2', BRAVE_SEARCH_API_KEY: braveKey, BRAVE_SEARCH_API_URL: `${base}/brave/res/v1/web/search`, TAVILY_API_KEY: tavilyKey, TAVILY_API_URL: `${base}/tavily/search`, YOUCOM_API_URL: `${base}/ydc/v1/search` } };
    const up = await call('/api/v1/retrieval/config/update', admin, 'POST', form);
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.web).toMatchObject({ ...form.web, WEB_SEARCH_RESULT_COUNT: 2, YOUCOM_API_KEY: ydcKey });
    expect((await call('/api/v1/retrieval/config', admin)).body.web).toMatchObject(form.web);
    const wrong = await call('/api/v1/retrieval/config/update', admin, 'POST', { web: { WEB_SEARCH_ENGINE: 'altavista' } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.detail).toContain('WEB_SEARCH_ENGINE');
    const uma = await addUser(admin, 'Uma');
    expect(await call('/api/v1/retrieval/config/update', uma, 'POST', form)).toMatchObject({ status: 401, body: { detail: PROHIBITED } });
  });

  for (const engine of ['searxng', 'brave', 'tavily', 'youcom'] as const) {
    it(`searches with ${engine} in its own format, fetches the results and answers Open WebUI’s shape`, async () => {
      expect((await call('/api/v1/retrieval/config/update', admin, 'POST', { web: { WEB_SEARCH_ENGINE: engine } })).status).toBe(200);
      const from = seen.length;
      const q = `zebra sleep ${randomUUID().slice(0, 6)}`;
      const r = await call('/api/v1/retrieval/process/web/search', admin, 'POST', { queries: [q] });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const links = r.body.items.map((i: any) => i.link);
      // SearXNG and Tavily rank by score (the heron result scores higher there).
      expect(links).toEqual(engine === 'searxng' || engine === 'tavily' ? [`${base}/heron`, `${base}/zebra`] : [`${base}/zebra`, `${base}/heron`]);
      expect(r.body.filenames).toEqual(links);
      expect(r.body.loaded_count).toBe(2);
      expect(r.body.collection_names).toHaveLength(1);
      const zebra = r.body.items.find((i: any) => i.link.endsWith('/zebra'));
      expect(zebra.title).toBe('Zebra facts');
      expect(zebra.snippet).toBe(engine === 'youcom' ? 'Zebras sleep standing.\n\nMore about it.' : 'Zebras sleep standing.');
      const asked = seen.slice(from).find((s) => s.path.includes('search'))!;
      if (engine === 'searxng') expect(new URL(asked.path, base).searchParams.get('format')).toBe('json');
      if (engine === 'tavily') expect(JSON.parse(asked.body)).toMatchObject({ query: q, max_results: 2 });
      if (engine !== 'tavily') expect(decodeURIComponent(asked.path)).toContain(q.replaceAll(' ', '+'));
      // The pages themselves were fetched and stored.
      const found = await call('/api/v1/retrieval/query/collection', admin, 'POST', { collection_names: r.body.collection_names, query: 'herons nest reeds', k: 5 });
      expect(found.body.documents[0].join(' ')).toContain(HERON);
    });
  }

  it('an engine answering garbage, refusing the key, or hanging is a clear 400, never a 500', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ WEB_SEARCH_ENGINE: 'searxng', SEARXNG_QUERY_URL: `${base}/garbage/search` }, 'SearXNG answered something that is not JSON'],
      [{ WEB_SEARCH_ENGINE: 'brave', BRAVE_SEARCH_API_KEY: 'wrong' }, 'Brave Search answered HTTP 401'],
      [{ WEB_SEARCH_ENGINE: 'searxng', SEARXNG_QUERY_URL: `${base}/hang/search` }, 'SearXNG did not answer within 2 seconds'],
      [{ WEB_SEARCH_ENGINE: 'tavily', TAVILY_API_KEY: '' }, 'TAVILY_API_KEY is not set'],
    ];
    for (const [web, detail] of cases) {
      expect((await call('/api/v1/retrieval/config/update', admin, 'POST', { web })).status).toBe(200);
      const r = await call('/api/v1/retrieval/process/web/search', admin, 'POST', { queries: ['zebras'] });
      expect({ web, status: r.status, body: r.body }).toEqual({ web, status: 400, body: { detail } });
    }
    const restore = { WEB_SEARCH_ENGINE: 'searxng', SEARXNG_QUERY_URL: `${base}/searxng/search`, BRAVE_SEARCH_API_KEY: braveKey, TAVILY_API_KEY: tavilyKey };
    expect((await call('/api/v1/retrieval/config/update', admin, 'POST', { web: restore })).status).toBe(200);
  });

  async function stream(body: Record<string, unknown>) {
    const r = await fetch(`${edge.chatUrl}/api/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin.token}` },
      body: JSON.stringify({ model: 'echo', stream: true, ...body }),
    });
    const text = await r.text();
    const data = text
      .split('\n\n')
      .filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]')
      .map((e) => JSON.parse(e.slice(6)));
    return { status: r.status, data };
  }
  const upstreamUser = (mark: string): string => {
    const rec = [...oa.requests].reverse().find((r) => r.method === 'POST' && r.raw.toString('utf8').includes(mark));
    expect(rec, `the upstream got ${mark}`).toBeDefined();
    return ((rec!.json as any).messages as any[]).filter((m) => m.role === 'user').at(-1).content;
  };

  it('features.web_search: the message is searched first, the results go upstream and the answer lists them as sources', async () => {
    const q = `Where do zebras and herons sleep? ${randomUUID().slice(0, 6)}`;
    const r = await stream({ messages: [{ role: 'user', content: q }], features: { web_search: true } });
    expect(r.status).toBe(200);
    const [first] = r.data;
    expect(Object.keys(first)).toEqual(['sources']);
    const src = first.sources.find((s: any) => s.source.type === 'web_search');
    expect(src.source).toMatchObject({ name: q, urls: [`${base}/heron`, `${base}/zebra`], queries: [q] });
    expect(new Set(src.metadata.map((m: any) => m.source))).toEqual(new Set([`${base}/heron`, `${base}/zebra`]));
    const sent = upstreamUser(q);
    expect(sent).toContain(ZEBRA);
    expect(sent).toContain(HERON);
    expect(sent).toMatch(/<source id="\d" name="[^"]+">/);
    expect(sent.endsWith(q)).toBe(true);
    // Without the toggle no search runs.
    const before = seen.length;
    const plain = await stream({ messages: [{ role: 'user', content: `plain ${randomUUID()}` }] });
    expect(plain.data[0].sources).toBeUndefined();
    expect(seen.slice(before).filter((s) => s.path.includes('search'))).toEqual([]);
  });

  it('a failing search engine leaves the chat answering without web sources', async () => {
    expect((await call('/api/v1/retrieval/config/update', admin, 'POST', { web: { SEARXNG_QUERY_URL: `${base}/garbage/search` } })).status).toBe(200);
    const q = `still answered ${randomUUID().slice(0, 6)}`;
    const r = await stream({ messages: [{ role: 'user', content: q }], features: { web_search: true } });
    expect(r.status).toBe(200);
    expect(r.data[0].sources).toBeUndefined();
    expect(upstreamUser(q)).toBe(q);
    expect((await call('/api/v1/retrieval/config/update', admin, 'POST', { web: { SEARXNG_QUERY_URL: `${base}/searxng/search` } })).status).toBe(200);
  });

  it('a page attached with #url (a files item of type web) is context with the URL as its source', async () => {
    const url = `${base}/heron`;
    const p = await web(url);
    expect(p.status).toBe(200);
    const q = `When do herons nest? ${randomUUID().slice(0, 6)}`;
    const r = await stream({ messages: [{ role: 'user', content: q }], files: [{ type: 'web', url, name: url, collection_name: p.body.collection_name }] });
    expect(r.status).toBe(200);
    const [src] = r.data[0].sources;
    expect(src.source).toMatchObject({ type: 'web', url, name: url, collection_name: p.body.collection_name });
    expect(src.document.join(' ')).toContain(HERON);
    expect(src.metadata[0]).toMatchObject({ source: url, url });
    expect(upstreamUser(q)).toContain(`<source id="1" name="${url}">`);
  });
});
