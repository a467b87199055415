/**
 * What the search engines share: the result shape (Open WebUI's SearchResult: link, title,
 * snippet), the engine's error, and a JSON request with a deadline and a size cap, so an engine
 * that hangs or answers something else than its format becomes a WebSearchError with the reason.
 */
export type SearchResult = {
  link: string;
  title: string | null;
  snippet: string | null;
};

export class WebSearchError extends Error {}

export interface EngineCall {
  query: string;
  count: number;
  timeoutMs: number;
}

const MAX_BYTES = 4 * 1024 * 1024;

export const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);
export const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

export async function engineJson(engine: string, url: string, init: RequestInit, timeoutMs: number): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
  } catch (err) {
    const e = err as Error;
    if (e.name === 'TimeoutError' || e.name === 'AbortError') throw new WebSearchError(`${engine} did not answer within ${timeoutMs / 1000} seconds`);
    throw new WebSearchError(`${engine} could not be reached: ${(e.cause as NodeJS.ErrnoException | undefined)?.code ?? e.message}`);
  }
  let text: string;
  try {
    const buf = await res.arrayBuffer();
    if (buf.byteLength > MAX_BYTES) throw new WebSearchError(`${engine} answered more than ${MAX_BYTES / 1024 / 1024} MB`);
    text = new TextDecoder().decode(buf);
  } catch (err) {
    if (err instanceof WebSearchError) throw err;
    throw new WebSearchError(`${engine} did not finish its answer within ${timeoutMs / 1000} seconds`);
  }
  if (!res.ok) throw new WebSearchError(`${engine} answered HTTP ${res.status}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new WebSearchError(`${engine} answered something that is not JSON`);
  }
}

/** A list of result objects with a string `url`, or the engine's format was not kept. */
export function resultList(engine: string, v: unknown): Record<string, unknown>[] {
  if (!Array.isArray(v)) throw new WebSearchError(`${engine} answered in an unexpected format`);
  return v.filter((r): r is Record<string, unknown> => isObject(r) && typeof r.url === 'string' && r.url !== '');
}
