import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { urlToHttpOptions } from 'node:url';
import { guardedLookup, isPrivateAddress, UrlRefused } from '@gatehouse/common';

/**
 * One HTTP POST to a receiver, following redirects itself (at most 5) so that every hop goes
 * through the SSRF guard: the connection's DNS lookup refuses private addresses unless local
 * fetches are allowed, whatever host a redirect names. As `requests` does, 307/308 repeat the
 * POST, 301/302/303 continue as a GET without body. Never throws: the outcome says what happened.
 */
export interface SendOutcome {
  /** HTTP status of the final response; null when none came (timeout, connection error, refusal). */
  status: number | null;
  retryAfterMs: number | null;
  error: string | null;
  /** The guard refused the address: retrying cannot help. */
  refused: boolean;
}

const MAX_REDIRECTS = 5;
/** Parsed targets kept (one per webhook URL and redirect target); cleared when it grows past this. */
const PARSED_CACHE = 1000;
type Parsed = { url: URL; options: http.RequestOptions } | null;

export class Sender {
  private readonly agents: { http: http.Agent; https: https.Agent };
  private readonly lookup: ReturnType<typeof guardedLookup>;
  /** A busy endpoint's URL is parsed once, not per request (a measurable share of each delivery's CPU). */
  private readonly parsed = new Map<string, Parsed>();

  constructor(
    private readonly allowLocal: boolean,
    private readonly timeoutMs: number,
    maxSocketsPerHost: number,
    /** Which addresses the guard refuses (tests narrow it to reach loopback receivers but not others). */
    private readonly isBlocked: (ip: string) => boolean = isPrivateAddress,
  ) {
    this.lookup = guardedLookup(allowLocal, isBlocked);
    // Keep-alive: a busy endpoint reuses its connections instead of a handshake per event.
    this.agents = {
      http: new http.Agent({ keepAlive: true, maxSockets: maxSocketsPerHost, lookup: this.lookup as never }),
      https: new https.Agent({ keepAlive: true, maxSockets: maxSocketsPerHost, lookup: this.lookup as never }),
    };
  }

  async post(url: string, headers: Record<string, string>, body: string): Promise<SendOutcome> {
    let target = url;
    let method = 'POST';
    let payload: string | null = body;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const r = await this.once(target, method, headers, payload);
      if (r.kind === 'error') return { status: null, retryAfterMs: null, error: r.error, refused: r.refused };
      if (r.status >= 300 && r.status < 400 && r.location) {
        let next: URL;
        try {
          next = new URL(r.location, target);
        } catch {
          return { status: r.status, retryAfterMs: null, error: 'invalid redirect location', refused: false };
        }
        if (next.protocol !== 'http:' && next.protocol !== 'https:') return { status: r.status, retryAfterMs: null, error: 'redirect to a non-http URL refused', refused: true };
        if (r.status !== 307 && r.status !== 308) {
          method = 'GET';
          payload = null;
        }
        target = next.toString();
        continue;
      }
      return { status: r.status, retryAfterMs: r.retryAfterMs, error: r.status >= 200 && r.status < 300 ? null : `HTTP ${r.status}`, refused: false };
    }
    return { status: null, retryAfterMs: null, error: 'too many redirects', refused: false };
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /** The URL and its request options (as `http.request(url)` would derive them), cached per target. */
  private parse(target: string): Parsed {
    let p = this.parsed.get(target);
    if (p !== undefined) return p;
    try {
      const url = new URL(target);
      p = { url, options: urlToHttpOptions(url) };
    } catch {
      p = null;
    }
    if (this.parsed.size >= PARSED_CACHE) this.parsed.clear();
    this.parsed.set(target, p);
    return p;
  }

  private once(
    target: string,
    method: string,
    headers: Record<string, string>,
    body: string | null,
  ): Promise<{ kind: 'response'; status: number; location: string | null; retryAfterMs: number | null } | { kind: 'error'; error: string; refused: boolean }> {
    return new Promise((resolve) => {
      const p = this.parse(target);
      if (!p) return resolve({ kind: 'error', error: 'invalid URL', refused: true });
      const { url } = p;
      // An address written in the URL is never looked up: judge it here.
      const literal = url.hostname.replace(/^\[|\]$/g, '');
      if (!this.allowLocal && isIP(literal) && this.isBlocked(literal)) return resolve({ kind: 'error', error: `refused: ${literal} is a private or local address`, refused: true });
      const isHttps = url.protocol === 'https:';
      const h: Record<string, string> = { ...headers };
      if (body === null) {
        delete h['content-type'];
      } else h['content-length'] = String(Buffer.byteLength(body));
      const req = (isHttps ? https : http).request(
        { ...p.options, method, headers: h, agent: isHttps ? this.agents.https : this.agents.http, timeout: this.timeoutMs },
        (res) => {
          // The body is not needed; read it so the connection goes back to the pool.
          res.resume();
          res.on('end', () =>
            resolve({
              kind: 'response',
              status: res.statusCode ?? 0,
              location: typeof res.headers.location === 'string' ? res.headers.location : null,
              retryAfterMs: retryAfter(res.headers['retry-after']),
            }),
          );
          res.on('error', (err) => resolve({ kind: 'error', error: err.message, refused: false }));
        },
      );
      req.on('timeout', () => req.destroy(new Error(`timed out after ${this.timeoutMs} ms`)));
      req.on('error', (err) => resolve({ kind: 'error', error: err.message, refused: err instanceof UrlRefused || (err as NodeJS.ErrnoException).code === 'EPRIVATEADDR' }));
      req.end(body ?? undefined);
    });
  }
}

/** `Retry-After` as seconds or an HTTP date, in ms (null when absent or unreadable). */
export function retryAfter(v: string | string[] | undefined): number | null {
  const s = Array.isArray(v) ? v[0] : v;
  if (!s) return null;
  if (/^\d+(\.\d+)?$/.test(s.trim())) return Math.round(Number(s) * 1000);
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : Math.max(0, t - Date.now());
}
