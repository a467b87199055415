import { flattenHeaders, type RequestOptions, sendWithRetries } from './http.ts';

/**
 * Raw relay to an Anthropic Messages API (first-party "native" pass-through, or a `type: "anthropic"`
 * provider), plus the header policy the glue applies around it. Nothing is parsed: the body bytes go out as
 * given, the answer (any status) comes back as it arrives.
 */

export interface AnthropicTarget {
  /** Without `/v1`, no trailing slash needed: e.g. https://api.anthropic.com */
  baseUrl: string;
  /** Path and query appended to baseUrl; default `/v1/messages` (Claude Code sends `/v1/messages?beta=true`). */
  path?: string;
}

export interface RelayedResponse {
  status: number;
  /** Every response header, lower-cased, repeated ones joined with ", ". Filter with relayResponseHeaders. */
  headers: Record<string, string>;
  /**
   * The body as it arrives. Throws UpstreamTimeoutError (idle), UpstreamStreamError (connection lost) or an
   * AbortError; leaving the iteration early closes the upstream connection.
   */
  body: AsyncIterable<Uint8Array>;
  /** Drops the response and closes its connection when the body will not be read (idempotent). */
  release(): void;
}

/** 429 and every 5xx (Anthropic's 529 overloaded included). */
export const ANTHROPIC_RETRYABLE = (status: number): boolean => status === 429 || status >= 500;

/**
 * POSTs `body` unchanged to `baseUrl + path` with exactly `headers` (plus content-length). Retries 429/5xx and
 * network failures before any byte was returned; when retries end, the last upstream answer comes back as is.
 */
export async function forwardMessages(target: AnthropicTarget, body: Uint8Array, headers: Record<string, string>, opts: RequestOptions): Promise<RelayedResponse> {
  const url = `${target.baseUrl.replace(/\/+$/, '')}${target.path ?? '/v1/messages'}`;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (lower !== 'content-length' && lower !== 'host' && !HOP_BY_HOP.has(lower)) out[lower] = value;
  }
  // Compressed answers would need decoding before relaying; ask for none.
  out['accept-encoding'] = 'identity';
  const res = await sendWithRetries({ url, method: 'POST', headers: out, body }, opts, ANTHROPIC_RETRYABLE);
  return { status: res.status, headers: flattenHeaders(res.headers), body: res.body, release: res.release };
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authorization', 'proxy-authenticate']);

const FORWARDED_EXACT = new Set(['user-agent', 'x-app', 'content-type', 'accept']);

/**
 * The caller's headers a native (or Anthropic-type) request keeps: every `anthropic-*` (`anthropic-version`,
 * `anthropic-beta`, …), `user-agent`, `x-app`, `content-type`, `accept`. Nothing else — credentials are added
 * by withCredential; hop-by-hop headers, cookies, x-forwarded-* and the rest are dropped. Repeated headers are
 * joined with ", " (right for the comma lists anthropic-beta uses).
 */
export function nativeForwardHeaders(incoming: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (!lower.startsWith('anthropic-') && !FORWARDED_EXACT.has(lower)) continue;
    const joined = Array.isArray(value) ? value.join(', ') : value;
    out[lower] = lower in out ? `${out[lower]}, ${joined}` : joined;
  }
  return out;
}

export type Credential =
  | { kind: 'client'; xApiKey?: string; authorization?: string }
  | { kind: 'server'; apiKey: string }
  | { kind: 'none' };

/**
 * `headers` plus exactly one credential source (any x-api-key/authorization already in `headers` is removed
 * first): the client's own x-api-key and/or authorization forwarded exactly as sent (an OAuth bearer token
 * stays a bearer token), or the server key as `x-api-key` with no authorization, or nothing.
 */
export function withCredential(headers: Record<string, string>, cred: Credential): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (lower !== 'x-api-key' && lower !== 'authorization') out[lower] = value;
  }
  if (cred.kind === 'client') {
    if (cred.xApiKey !== undefined) out['x-api-key'] = cred.xApiKey;
    if (cred.authorization !== undefined) out.authorization = cred.authorization;
  } else if (cred.kind === 'server') {
    out['x-api-key'] = cred.apiKey;
  }
  return out;
}

const RELAYED_EXACT = new Set(['content-type', 'retry-after', 'request-id', 'x-should-retry']);

/** The upstream response headers passed back to the caller: content-type, retry-after, request-id, anthropic-ratelimit-*, x-should-retry. */
export function relayResponseHeaders(h: Headers | Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  const keep = (name: string, value: string) => {
    const lower = name.toLowerCase();
    if (RELAYED_EXACT.has(lower) || lower.startsWith('anthropic-ratelimit-')) out[lower] = value;
  };
  if (h instanceof Headers) {
    h.forEach((value, name) => keep(name, value));
  } else {
    for (const [name, value] of Object.entries(h)) {
      if (value !== undefined) keep(name, Array.isArray(value) ? value.join(', ') : value);
    }
  }
  return out;
}
