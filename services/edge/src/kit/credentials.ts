import type { IncomingHttpHeaders } from 'node:http';

/** First value of a header that may repeat; empty counts as absent. */
export function headerValue(h: IncomingHttpHeaders, name: string): string | undefined {
  const v = h[name];
  return (Array.isArray(v) ? v[0] : v) || undefined;
}

/**
 * `Authorization: Bearer <token>`. By default the scheme is case-insensitive and any run of
 * blanks may follow it (RFC 6750); `exact` reads only `Bearer ` followed by the token, as Qdrant does.
 */
export function bearerToken(header: string | undefined, opts: { exact?: boolean } = {}): string | undefined {
  if (!header) return undefined;
  if (opts.exact) return header.startsWith('Bearer ') ? header.slice(7) : undefined;
  const m = /^Bearer[ \t]+(\S.*)$/i.exec(header);
  return m?.[1]?.trim() || undefined;
}
