import type { ChatSettings } from '../config/settings.ts';
import { searchBrave } from './engines/brave.ts';
import { WebSearchError, type SearchResult } from './engines/http.ts';
import { searchSearxng } from './engines/searxng.ts';
import { searchTavily } from './engines/tavily.ts';
import { searchYdc } from './engines/ydc.ts';
import { timeoutMs } from './web-fetch.ts';

export { WebSearchError, type SearchResult } from './engines/http.ts';

/**
 * Web search (Open WebUI 0.10.2's search_web): WEB_SEARCH_ENGINE picks the engine — `searxng`,
 * `brave`, `tavily` or `youcom` (`ydc` is read as `youcom`) — each asked with its URL and key
 * settings for WEB_SEARCH_RESULT_COUNT results. Engines are asked one query at a time; results of
 * several queries are merged, a link seen twice kept once (the first, best-ranked).
 */
export const WEB_SEARCH_ENGINES = ['searxng', 'brave', 'tavily', 'youcom', 'ydc'] as const;

/** Open WebUI's WEB_SEARCH_ERROR: the reason, or its generic sentence. */
export const webSearchError = (reason?: string) => reason || 'Oops! Something went wrong while searching the web.';

export async function searchOnce(s: ChatSettings, query: string): Promise<SearchResult[]> {
  const call = { query, count: Math.max(1, s.WEB_SEARCH_RESULT_COUNT), timeoutMs: timeoutMs(s.WEB_LOADER_TIMEOUT) };
  switch (s.WEB_SEARCH_ENGINE) {
    case 'searxng':
      return searchSearxng({ queryUrl: s.SEARXNG_QUERY_URL, language: s.SEARXNG_LANGUAGE }, call);
    case 'brave':
      return searchBrave({ apiKey: s.BRAVE_SEARCH_API_KEY, url: s.BRAVE_SEARCH_API_URL }, call);
    case 'tavily':
      return searchTavily({ apiKey: s.TAVILY_API_KEY, url: s.TAVILY_API_URL }, call);
    case 'youcom':
    case 'ydc':
      return searchYdc({ apiKey: s.YOUCOM_API_KEY, url: s.YOUCOM_API_URL }, call);
    case '':
      throw new WebSearchError('No web search engine is set (WEB_SEARCH_ENGINE)');
    default:
      throw new WebSearchError(`Unknown web search engine: ${s.WEB_SEARCH_ENGINE}`);
  }
}

/** Every query's results, merged in order without repeated links. */
export async function searchAll(s: ChatSettings, queries: readonly string[]): Promise<SearchResult[]> {
  const lists = await Promise.all(queries.filter((q) => q.trim()).map((q) => searchOnce(s, q)));
  const seen = new Set<string>();
  const out: SearchResult[] = [];
  for (const r of lists.flat()) {
    if (seen.has(r.link)) continue;
    seen.add(r.link);
    out.push(r);
  }
  return out;
}
