import { engineJson, isObject, resultList, str, WebSearchError, type EngineCall, type SearchResult } from './http.ts';

export const TAVILY_URL = 'https://api.tavily.com/search';

/**
 * Tavily (Open WebUI's tavily.py): POST /search `{query, max_results}` with the key as a Bearer
 * token; `results[]` with `url`, `title`, `content` and a `score` (best first).
 */
export async function searchTavily(cfg: { apiKey: string; url: string }, call: EngineCall): Promise<SearchResult[]> {
  if (!cfg.apiKey) throw new WebSearchError('TAVILY_API_KEY is not set');
  const body = await engineJson(
    'Tavily',
    cfg.url || TAVILY_URL,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${cfg.apiKey}` },
      body: JSON.stringify({ query: call.query, max_results: call.count }),
    },
    call.timeoutMs,
  );
  if (!isObject(body)) throw new WebSearchError('Tavily answered in an unexpected format');
  const results = resultList('Tavily', body.results).sort((a, b) => Number(b.score ?? 0) - Number(a.score ?? 0));
  return results.slice(0, call.count).map((r) => ({ link: r.url as string, title: str(r.title) ?? '', snippet: str(r.content) }));
}
