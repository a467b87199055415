import { createHash } from 'node:crypto';
import { fail, me, ok, type OpContext, type OpRequest } from '../context.ts';
import type { ChatSettings } from '../config/settings.ts';
import { embedderFor } from './rag.ts';
import type { Source } from './rag-template.ts';
import { chunkerFor } from './chunk.ts';
import { searchChunks } from './search.ts';
import { fetchPage, timeoutMs, webFetchAllowsLocal, WebFetchError, type FetchedPage } from './web-fetch.ts';
import { searchAll, webSearchError, WebSearchError, type SearchResult } from './web-search.ts';

/**
 * Web fetch and web search (Open WebUI 0.10.2's process_web and process_web_search): a page is
 * fetched under the SSRF rule (web-fetch.ts), its text stored and chunked as process/text stores
 * text (a file row in a named collection, so query/collection and a chat's `files` find it); a
 * search asks the configured engine, fetches each result (its snippet stands in when the page
 * cannot be had) into one collection. In a chat, an attached page (`#https://…`: a files item of
 * type `web`, or any item carrying `url` and `collection_name`) and the web-search toggle
 * (`features.web_search`: a search for the user's message) become sources, ranked by the usual
 * search for the message.
 */

type Settings = ChatSettings;
type StoreText = (req: OpRequest<'retrieval.processText'>, ctx: OpContext) => Promise<unknown>;

/** Open WebUI's collection name for a URL or a set of queries: the SHA-256, 63 characters. */
const collectionFor = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex').slice(0, 63);

const keep = (s: Settings, text: string) => (s.WEB_FETCH_MAX_CONTENT_LENGTH > 0 ? text.slice(0, s.WEB_FETCH_MAX_CONTENT_LENGTH) : text);

async function load(s: Settings, url: string): Promise<FetchedPage> {
  return fetchPage(url, { allowLocal: webFetchAllowsLocal(), timeoutMs: timeoutMs(s.WEB_LOADER_TIMEOUT) });
}

async function store(storeText: StoreText, ctx: OpContext, name: string, content: string, collection: string): Promise<void> {
  await storeText({ body: { name, content, collection_name: collection } } as OpRequest<'retrieval.processText'>, ctx);
}

export function webOps(storeText: StoreText) {
  return {
    'retrieval.processWeb': async (req: OpRequest<'retrieval.processWeb'>, ctx: OpContext) => {
      me(ctx);
      const s = await ctx.settings();
      const form = req.body;
      let page: FetchedPage;
      try {
        page = await load(s, form.url);
      } catch (err) {
        if (err instanceof WebFetchError) fail(400, `[ERROR: ${err.message}]`);
        throw err;
      }
      const content = keep(s, page.text);
      if (!content.trim()) fail(400, `[ERROR: The page at ${form.url} has no readable text]`);
      const collection = form.collection_name || collectionFor(form.url);
      await store(storeText, ctx, form.url, content, collection);
      return ok({
        status: true as const,
        collection_name: collection,
        filename: form.url,
        file: { data: { content }, meta: { name: form.url, source: form.url, ...(page.title ? { title: page.title } : {}) } },
      });
    },
    'retrieval.processWebSearch': async (req: OpRequest<'retrieval.processWebSearch'>, ctx: OpContext) => {
      const user = me(ctx);
      const s = await ctx.settings();
      if (!s.ENABLE_WEB_SEARCH) fail(403, 'You do not have permission to access this resource. Please contact your administrator for assistance.');
      const queries = req.body.queries.filter((q) => q.trim());
      if (!queries.length) fail(400, webSearchError('No search query was given'));
      const r = await searchIntoCollection(storeText, ctx, s, queries).catch((err) => {
        if (err instanceof WebSearchError) {
          ctx.log.warn({ user: user.id, reason: err.message }, 'web search failed');
          fail(400, webSearchError(err.message));
        }
        throw err;
      });
      return ok({ status: true as const, collection_names: [r.collection], filenames: r.items.map((i) => i.link), items: r.items, loaded_count: r.loaded });
    },
  };
}

/** Search, fetch every result and store them in one collection. */
async function searchIntoCollection(storeText: StoreText, ctx: OpContext, s: Settings, queries: string[]) {
  const items = await searchAll(s, queries);
  if (!items.length) throw new WebSearchError(`No web search results found for query: ${queries.join(', ')}`);
  const collection = collectionFor(queries.join('\n'));
  const texts = await loadTexts(ctx, s, items);
  let loaded = 0;
  for (const [i, item] of items.entries()) {
    if (!texts[i]) continue;
    await store(storeText, ctx, item.link, texts[i]!, collection);
    loaded++;
  }
  return { collection, items, loaded };
}

/** Every result's page text (three at a time; its title and snippet when the page cannot be had). */
async function loadTexts(ctx: OpContext, s: Settings, items: readonly SearchResult[]): Promise<(string | null)[]> {
  const texts: (string | null)[] = new Array(items.length).fill(null);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      const item = items[i]!;
      const page = await load(s, item.link).catch((err: Error) => {
        ctx.log.info({ url: item.link, reason: err.message }, 'web search result not fetched; its snippet is used');
        return null;
      });
      const text = page?.text ? keep(s, page.text) : [item.title, item.snippet].filter(Boolean).join('\n');
      texts[i] = text.trim() ? text : null;
    }
  };
  await Promise.all(Array.from({ length: Math.min(3, items.length) }, lane));
  return texts;
}

const cosine = (a: readonly number[], b: readonly number[]) => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * (b[i] ?? 0);
    na += a[i]! * a[i]!;
    nb += (b[i] ?? 0) * (b[i] ?? 0);
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
};

/**
 * A chat's web search: the results' pages chunked and ranked against the message in memory (the
 * completion stores nothing; process/web/search is the route that keeps a collection), the best
 * RAG_TOP_K chunks — at least one per result count — kept, each citing its page's URL.
 */
async function searchForChat(ctx: OpContext, s: Settings, query: string): Promise<Source | null> {
  const items = await searchAll(s, [query]);
  if (!items.length) return null;
  const texts = await loadTexts(ctx, s, items);
  const chunk = await chunkerFor(s);
  const pieces = items.flatMap((item, i) => (texts[i] ? chunk(texts[i]!).map((c) => ({ content: c.content, item })) : []));
  if (!pieces.length) return null;
  const [qv, ...vs] = await embedderFor(s).embed([query, ...pieces.map((p) => p.content)]);
  const ranked = pieces.map((p, i) => ({ ...p, score: cosine(qv!, vs[i]!) })).sort((a, b) => b.score - a.score);
  const best = ranked.slice(0, Math.max(s.RAG_TOP_K, s.WEB_SEARCH_RESULT_COUNT));
  const links = items.map((i) => i.link);
  return {
    source: { type: 'web_search', id: collectionFor(query), name: query, urls: links, queries: [query] },
    document: best.map((b) => b.content),
    metadata: best.map((b) => ({ source: b.item.link, name: b.item.title || b.item.link, title: b.item.title, url: b.item.link, snippet: b.item.snippet })),
    distances: best.map((b) => b.score),
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);

/** The chat's web attachments: `{type: 'web', url, collection_name}` (or any item with both). */
function webItems(body: Record<string, unknown>): Record<string, unknown>[] {
  const raw = body.files ?? (isObject(body.metadata) ? body.metadata.files : undefined);
  if (!Array.isArray(raw)) return [];
  return raw.filter((i): i is Record<string, unknown> => isObject(i) && typeof i.collection_name === 'string' && i.collection_name !== '' && (i.type === 'web' || typeof i.url === 'string'));
}

async function collectionSource(ctx: OpContext, s: Settings, collection: string, query: string, source: Source['source']): Promise<Source | null> {
  const hits = await searchChunks(ctx.searchSql, embedderFor(s), {
    query,
    userId: me(ctx).id,
    fileIds: [],
    knowledgeIds: [collection],
    collectionNames: [collection],
    k: Math.max(s.RAG_TOP_K, s.WEB_SEARCH_RESULT_COUNT),
    hybrid: false,
    bm25Weight: s.RAG_HYBRID_BM25_WEIGHT,
    threshold: 0,
  });
  if (!hits.length) return null;
  return {
    source,
    document: hits.map((h) => h.content),
    metadata: hits.map((h) => ({ ...h.meta, name: h.filename, source: h.filename, url: h.filename })),
    distances: hits.map((h) => h.score),
  };
}

/**
 * The completion's web sources: each attached page searched for the message, and with
 * `features.web_search` a search for the message first (when web search is on). A failed search
 * is logged and the chat answers without it, as Open WebUI does.
 */
export async function webSources(ctx: OpContext, body: Record<string, unknown>, query: string): Promise<Source[]> {
  if (!query.trim()) return [];
  const s = await ctx.settings();
  const out: Source[] = [];
  for (const item of webItems(body)) {
    const url = typeof item.url === 'string' ? item.url : String(item.name ?? item.collection_name);
    const found = await collectionSource(ctx, s, item.collection_name as string, query, { type: 'web', id: url, name: url, url, collection_name: item.collection_name as string });
    if (found) out.push(found);
  }
  const features = isObject(body.features) ? body.features : {};
  if (features.web_search === true && s.ENABLE_WEB_SEARCH) {
    try {
      const found = await searchForChat(ctx, s, query);
      if (found) out.push(found);
    } catch (err) {
      ctx.log.warn({ err: (err as Error).message }, 'web search for the completion failed; answering without it');
    }
  }
  return out;
}

/** The `web` section of GET /config. */
export function webConfig(s: Settings) {
  return {
    ENABLE_WEB_SEARCH: s.ENABLE_WEB_SEARCH,
    WEB_SEARCH_ENGINE: s.WEB_SEARCH_ENGINE,
    WEB_SEARCH_RESULT_COUNT: s.WEB_SEARCH_RESULT_COUNT,
    WEB_LOADER_TIMEOUT: s.WEB_LOADER_TIMEOUT,
    WEB_FETCH_MAX_CONTENT_LENGTH: s.WEB_FETCH_MAX_CONTENT_LENGTH || null,
    ENABLE_LOCAL_WEB_FETCH: webFetchAllowsLocal(),
    SEARXNG_QUERY_URL: s.SEARXNG_QUERY_URL,
    SEARXNG_LANGUAGE: s.SEARXNG_LANGUAGE,
    BRAVE_SEARCH_API_KEY: s.BRAVE_SEARCH_API_KEY,
    BRAVE_SEARCH_API_URL: s.BRAVE_SEARCH_API_URL,
    TAVILY_API_KEY: s.TAVILY_API_KEY,
    TAVILY_API_URL: s.TAVILY_API_URL,
    YOUCOM_API_KEY: s.YOUCOM_API_KEY,
    YOUCOM_API_URL: s.YOUCOM_API_URL,
  };
}

type WebForm = Record<string, unknown> | null | undefined;
const pickStr = (v: unknown, d: string) => (typeof v === 'string' ? v : d);

/** The settings after a /config/update's `web` section (missing or null fields keep their value). */
export function withWebConfig(before: Settings, web: WebForm): Settings {
  if (!web) return before;
  const engine = pickStr(web.WEB_SEARCH_ENGINE, before.WEB_SEARCH_ENGINE).trim().toLowerCase();
  if (engine !== '' && !['searxng', 'brave', 'tavily', 'youcom', 'ydc'].includes(engine)) {
    fail(400, `[ERROR: WEB_SEARCH_ENGINE must be one of '', 'searxng', 'brave', 'tavily', 'youcom']`);
  }
  const count = typeof web.WEB_SEARCH_RESULT_COUNT === 'number' ? web.WEB_SEARCH_RESULT_COUNT : before.WEB_SEARCH_RESULT_COUNT;
  if (count < 1) fail(400, '[ERROR: WEB_SEARCH_RESULT_COUNT must be positive]');
  const timeout = web.WEB_LOADER_TIMEOUT === null || web.WEB_LOADER_TIMEOUT === undefined ? before.WEB_LOADER_TIMEOUT : String(web.WEB_LOADER_TIMEOUT);
  const maxLen = typeof web.WEB_FETCH_MAX_CONTENT_LENGTH === 'number' ? web.WEB_FETCH_MAX_CONTENT_LENGTH : before.WEB_FETCH_MAX_CONTENT_LENGTH;
  if (maxLen < 0) fail(400, '[ERROR: WEB_FETCH_MAX_CONTENT_LENGTH must not be negative]');
  return {
    ...before,
    ENABLE_WEB_SEARCH: typeof web.ENABLE_WEB_SEARCH === 'boolean' ? web.ENABLE_WEB_SEARCH : before.ENABLE_WEB_SEARCH,
    WEB_SEARCH_ENGINE: engine === 'ydc' ? 'youcom' : engine,
    WEB_SEARCH_RESULT_COUNT: count,
    WEB_LOADER_TIMEOUT: timeout,
    WEB_FETCH_MAX_CONTENT_LENGTH: maxLen,
    SEARXNG_QUERY_URL: pickStr(web.SEARXNG_QUERY_URL, before.SEARXNG_QUERY_URL),
    SEARXNG_LANGUAGE: pickStr(web.SEARXNG_LANGUAGE, before.SEARXNG_LANGUAGE),
    BRAVE_SEARCH_API_KEY: pickStr(web.BRAVE_SEARCH_API_KEY, before.BRAVE_SEARCH_API_KEY),
    BRAVE_SEARCH_API_URL: pickStr(web.BRAVE_SEARCH_API_URL, before.BRAVE_SEARCH_API_URL),
    TAVILY_API_KEY: pickStr(web.TAVILY_API_KEY, before.TAVILY_API_KEY),
    TAVILY_API_URL: pickStr(web.TAVILY_API_URL, before.TAVILY_API_URL),
    YOUCOM_API_KEY: pickStr(web.YOUCOM_API_KEY, pickStr(web.YDC_API_KEY, before.YOUCOM_API_KEY)),
    YOUCOM_API_URL: pickStr(web.YOUCOM_API_URL, before.YOUCOM_API_URL),
  };
}
