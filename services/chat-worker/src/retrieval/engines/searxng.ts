import { engineJson, isObject, resultList, str, WebSearchError, type EngineCall, type SearchResult } from './http.ts';

/**
 * SearXNG (Open WebUI's searxng.py): GET SEARXNG_QUERY_URL with `q`, `format=json` and the
 * language; `results` sorted by `score`, best first; `content` is the snippet.
 */
export async function searchSearxng(cfg: { queryUrl: string; language: string }, call: EngineCall): Promise<SearchResult[]> {
  if (!cfg.queryUrl) throw new WebSearchError('SEARXNG_QUERY_URL is not set');
  let url: URL;
  try {
    url = new URL(cfg.queryUrl);
  } catch {
    throw new WebSearchError('SEARXNG_QUERY_URL is not a URL');
  }
  const params = { q: call.query, format: 'json', pageno: '1', safesearch: '1', language: cfg.language || 'all', time_range: '', categories: '', theme: 'simple', image_proxy: '0' };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const body = await engineJson('SearXNG', url.href, { headers: { accept: 'application/json' } }, call.timeoutMs);
  if (!isObject(body)) throw new WebSearchError('SearXNG answered in an unexpected format');
  const results = resultList('SearXNG', body.results).sort((a, b) => Number(b.score ?? 0) - Number(a.score ?? 0));
  return results.slice(0, call.count).map((r) => ({ link: r.url as string, title: str(r.title), snippet: str(r.content) }));
}
