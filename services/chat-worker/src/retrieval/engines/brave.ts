import { engineJson, isObject, resultList, str, WebSearchError, type EngineCall, type SearchResult } from './http.ts';

export const BRAVE_URL = 'https://api.search.brave.com/res/v1/web/search';

/**
 * Brave Search (Open WebUI's brave.py): GET /res/v1/web/search?q=&count= with the key in
 * X-Subscription-Token; results are `web.results[]` with `url`, `title`, `description`.
 */
export async function searchBrave(cfg: { apiKey: string; url: string }, call: EngineCall): Promise<SearchResult[]> {
  if (!cfg.apiKey) throw new WebSearchError('BRAVE_SEARCH_API_KEY is not set');
  const url = new URL(cfg.url || BRAVE_URL);
  url.searchParams.set('q', call.query);
  url.searchParams.set('count', String(call.count));
  const body = await engineJson('Brave Search', url.href, { headers: { accept: 'application/json', 'x-subscription-token': cfg.apiKey } }, call.timeoutMs);
  if (!isObject(body)) throw new WebSearchError('Brave Search answered in an unexpected format');
  // A query with no web results has no `web` section at all.
  const web = body.web === undefined ? { results: [] } : body.web;
  if (!isObject(web)) throw new WebSearchError('Brave Search answered in an unexpected format');
  return resultList('Brave Search', web.results ?? []).slice(0, call.count).map((r) => ({ link: r.url as string, title: str(r.title), snippet: str(r.description) }));
}
