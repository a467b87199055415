import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, isPrivateAddress } from '@gatehouse/common';
import { ExtractError, extractText } from '../knowledge/extract.ts';

/**
 * Fetching one web page for retrieval (Open WebUI 0.10.2's process_web with its SafeWebBaseLoader
 * and validate_url), with the SSRF rule: unless ENABLE_LOCAL_WEB_FETCH allows local fetches, a URL
 * whose host is, or resolves to, a private, loopback, link-local, shared or metadata address is
 * refused. The name is resolved once, by the connection's own `lookup` (guardedLookup), and the
 * socket goes to the address that was checked — a name that answers differently on a second query
 * cannot slip through. Redirects are followed by hand (at most MAX_REDIRECTS), each hop checked the
 * same way, so a public page redirecting to loopback is refused too. The body is read up to
 * MAX_BYTES and the whole fetch ends at the timeout.
 */

export class WebFetchError extends Error {}

/** Open WebUI's ERROR_MESSAGES.INVALID_URL. */
export const INVALID_URL = 'Oops! The URL you provided is invalid. Please double-check and try again.';

const MAX_REDIRECTS = 5;
const MAX_BYTES = 5 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * ENABLE_LOCAL_WEB_FETCH as 0.10.2 reads it: the new name, else the old ENABLE_RAG_LOCAL_WEB_FETCH,
 * else False; only "true" (any case) turns it on.
 */
export function localWebFetchAllowed(env: Record<string, string | undefined>): boolean {
  return (env.ENABLE_LOCAL_WEB_FETCH ?? env.ENABLE_RAG_LOCAL_WEB_FETCH ?? 'False').toLowerCase() === 'true';
}

/** The worker's ENABLE_LOCAL_WEB_FETCH, set once at start (main.ts); off until then. */
let allowLocal = false;
export const configureWebFetch = (opts: { allowLocal: boolean }) => {
  allowLocal = opts.allowLocal;
};
export const webFetchAllowsLocal = () => allowLocal;

/** WEB_LOADER_TIMEOUT (seconds, '' = the default) as milliseconds. */
export function timeoutMs(raw: string): number {
  const n = Number(raw);
  return raw.trim() !== '' && Number.isFinite(n) && n > 0 ? n * 1000 : DEFAULT_TIMEOUT_MS;
}

const BLOCKED_NAMES = new Set(['localhost', 'metadata.google.internal', 'metadata.azure.com']);

/** The URL's form and, for an address written in it, the address rule (names are checked at connect time). */
export function checkWebUrl(raw: string, allowLocal: boolean, isBlocked: (ip: string) => boolean = isPrivateAddress): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new WebFetchError(INVALID_URL);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) throw new WebFetchError(INVALID_URL);
  if (allowLocal) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (BLOCKED_NAMES.has(host) || host.endsWith('.localhost')) throw new WebFetchError(INVALID_URL);
  if (isIP(host) && isBlocked(host)) throw new WebFetchError(INVALID_URL);
  return url;
}

export interface FetchedPage {
  /** The URL asked for. */
  url: string;
  /** Where the last redirect led. */
  finalUrl: string;
  title: string;
  text: string;
}

function once(url: URL, opts: FetchOptions, signal: AbortSignal): Promise<IncomingMessage> {
  const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
    method: 'GET',
    headers: { 'user-agent': 'Mozilla/5.0 (compatible; Gatehouse web loader)', accept: 'text/html,text/plain;q=0.9,*/*;q=0.5' },
    lookup: guardedLookup(opts.allowLocal, opts.isBlocked) as never,
    signal,
  });
  return new Promise((resolve, reject) => {
    req.on('response', resolve);
    req.on('error', reject);
    req.end();
  });
}

async function readCapped(res: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    size += (chunk as Buffer).length;
    if (size > MAX_BYTES) {
      res.destroy();
      throw new WebFetchError(`The page is larger than ${MAX_BYTES / 1024 / 1024} MB`);
    }
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts);
}

const titleOf = (html: string) => /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1]?.replace(/\s+/g, ' ').trim() ?? '';

/** Fetch a page and extract its readable text. Throws WebFetchError with a reason a client may read. */
export interface FetchOptions {
  allowLocal: boolean;
  timeoutMs: number;
  /** Which addresses are refused (default: private, loopback, link-local… — isPrivateAddress). */
  isBlocked?: (ip: string) => boolean;
}

export async function fetchPage(raw: string, opts: FetchOptions): Promise<FetchedPage> {
  const signal = AbortSignal.timeout(opts.timeoutMs);
  let url = checkWebUrl(raw, opts.allowLocal, opts.isBlocked);
  try {
    for (let hop = 0; ; hop++) {
      const res = await once(url, opts, signal);
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        if (hop >= MAX_REDIRECTS) throw new WebFetchError('Too many redirects');
        url = checkWebUrl(new URL(res.headers.location, url).href, opts.allowLocal, opts.isBlocked);
        continue;
      }
      if (status < 200 || status >= 300) {
        res.resume();
        throw new WebFetchError(`The page answered HTTP ${status}`);
      }
      const bytes = await readCapped(res);
      const contentType = String(res.headers['content-type'] ?? '').split(';')[0]!.trim();
      const isHtml = /html/i.test(contentType) || (!contentType && /^\s*</.test(bytes.subarray(0, 200).toString('utf8')));
      const filename = isHtml ? 'page.html' : (url.pathname.split('/').pop() || 'page.txt');
      const text = await extractText(new Uint8Array(bytes), { filename, contentType: isHtml ? 'text/html' : contentType || 'text/plain' });
      return { url: raw, finalUrl: url.href, title: isHtml ? titleOf(bytes.toString('utf8')) : '', text: text.trim() };
    }
  } catch (err) {
    if (err instanceof WebFetchError) throw err;
    if (err instanceof ExtractError) throw new WebFetchError(err.message);
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EPRIVATEADDR') throw new WebFetchError(INVALID_URL);
    if (e.name === 'AbortError' || e.name === 'TimeoutError' || signal.aborted) throw new WebFetchError(`The page did not answer within ${opts.timeoutMs / 1000} seconds`);
    throw new WebFetchError(`The page could not be fetched: ${e.code ?? e.message}`);
  }
}
