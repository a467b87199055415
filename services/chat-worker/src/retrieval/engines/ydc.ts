import { engineJson, isObject, resultList, str, WebSearchError, type EngineCall, type SearchResult } from './http.ts';

export const YDC_URL = 'https://ydc-index.io/v1/search';

/**
 * You.com (Open WebUI's ydc.py, engine `youcom`): GET /v1/search?query=&count=&language=EN with the
 * key in X-API-Key; results are `results.web[]` with `url`, `title`, `description` and a
 * `snippets` list, joined into one snippet.
 */
export async function searchYdc(cfg: { apiKey: string; url: string }, call: EngineCall): Promise<SearchResult[]> {
  if (!cfg.apiKey) throw new WebSearchError('YDC_API_KEY is not set');
  const url = new URL(cfg.url || YDC_URL);
  url.searchParams.set('query', call.query);
  url.searchParams.set('count', String(call.count));
  url.searchParams.set('language', 'EN');
  const body = await engineJson('You.com', url.href, { headers: { accept: 'application/json', 'x-api-key': cfg.apiKey } }, call.timeoutMs);
  if (!isObject(body) || !isObject(body.results ?? {})) throw new WebSearchError('You.com answered in an unexpected format');
  const web = (body.results as Record<string, unknown> | undefined)?.web ?? [];
  return resultList('You.com', web).slice(0, call.count).map((r) => {
    const parts = [str(r.description), ...(Array.isArray(r.snippets) ? r.snippets.map(str) : [])].filter((p): p is string => Boolean(p));
    return { link: r.url as string, title: str(r.title), snippet: parts.join('\n\n') };
  });
}
