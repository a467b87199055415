// The web UI's one way to the API (Open WebUI 0.10.2's HTTP API on the edge): JSON in and out, the
// bearer token, errors as ApiError. The resource modules beside it (apis/<resource>/index.ts, as in
// Open WebUI's own front end) name the routes; their bodies and replies are typed by the chat
// catalog (CHAT_CATALOG in @gatehouse/contracts), type-only, so zod never reaches the bundle.
import type { z } from 'zod';
import type { CHAT_CATALOG } from '@gatehouse/contracts';

type Catalog = typeof CHAT_CATALOG;
/** An operation of the chat catalog (`'chats.get'`, `'memories.add'`…). */
export type ChatOp = keyof Catalog;
/** What the operation answers: its catalog entry's `reply`. */
export type Reply<Op extends ChatOp> = z.output<Catalog[Op]['reply']>;
/** The JSON body the operation takes: its entry's `body`, as a client may write it (defaults optional). */
export type Body<Op extends ChatOp> = Catalog[Op] extends { body: infer B extends z.ZodType } ? z.input<B> : never;

// ---- errors --------------------------------------------------------------------------------

/** A non-2xx answer: the status and the API's `detail` as text (FastAPI 422 lists joined). */
export class ApiError extends Error {
  readonly status: number;
  readonly detail: string;
  /** Seconds from `Retry-After` (429), when given. */
  readonly retryAfter: number | null;
  constructor(status: number, detail: string, retryAfter: number | null = null) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.detail = detail;
    this.retryAfter = retryAfter;
  }
}

function detailText(body: unknown, fallback: string): string {
  if (body && typeof body === 'object' && 'detail' in body) {
    const d = (body as { detail: unknown }).detail;
    if (typeof d === 'string') return d;
    if (Array.isArray(d)) {
      return d
        .map((e) => (e && typeof e === 'object' && 'msg' in e ? String((e as { msg: unknown }).msg) : JSON.stringify(e)))
        .join('; ');
    }
    if (d != null) return JSON.stringify(d);
  }
  if (body && typeof body === 'object' && 'error' in body) {
    const e = (body as { error: unknown }).error;
    if (typeof e === 'string') return e;
    if (e && typeof e === 'object' && 'message' in e) return String((e as { message: unknown }).message);
  }
  return fallback;
}

// ---- token ---------------------------------------------------------------------------------

const TOKEN_KEY = 'token';

/** The bearer token kept in localStorage (the API also sets an HttpOnly `token` cookie). */
export function getToken(): string | null {
  try {
    return localStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function setToken(token: string | null): void {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage unavailable: the cookie still carries the session */
  }
}

/** Headers for a request made outside `api` (e.g. a streamed completion with fetch). */
export function authHeaders(extra: Record<string, string> = {}): Record<string, string> {
  const token = getToken();
  return token ? { ...extra, Authorization: `Bearer ${token}` } : { ...extra };
}

// ---- requests ------------------------------------------------------------------------------

export interface RequestOptions {
  /** Extra query parameters (undefined/null values are left out). */
  query?: Record<string, string | number | boolean | null | undefined>;
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** Don't send the user to /auth on a 401 (sign-in form, session probe). */
  noAuthRedirect?: boolean;
  /** Let the request outlive the page (fetch keepalive; small bodies only). */
  keepalive?: boolean;
}

function withQuery(path: string, query?: RequestOptions['query']): string {
  if (!query) return path;
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) qs.set(k, String(v));
  const s = qs.toString();
  return s ? `${path}${path.includes('?') ? '&' : '?'}${s}` : path;
}

/** What a 401 does (the session module forgets the user and sends them to /auth). */
let unauthorized: () => void = () => {};
export function onUnauthorized(handler: () => void): void {
  unauthorized = handler;
}

/**
 * Answers index.html asked for before the app's script ran (the session, the chat of a /c/{id}
 * load): each is taken once, only with the token it was asked with and within 30 s of the page
 * load; anything else is a normal request.
 */
interface EarlyRequests {
  token: string | null;
  at: number;
  requests: Record<string, Promise<Response> | undefined>;
}
function takeEarly(path: string): Promise<Response> | null {
  const early = (globalThis as { __gatehouseEarly?: EarlyRequests }).__gatehouseEarly;
  const p = early?.requests[path];
  if (!early || !p) return null;
  delete early.requests[path];
  return early.token === getToken() && Date.now() - early.at < 30_000 ? p : null;
}

/** When this tab last changed something (a non-GET answered 2xx), epoch ms. */
let lastChange = 0;
export const lastChangeAt = (): number => lastChange;

/** Raw request: returns the Response for 2xx, throws ApiError otherwise. */
export async function request(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = authHeaders({ Accept: 'application/json', ...opts.headers });
  let payload: BodyInit | undefined;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let res: Response;
  try {
    const early = method === 'GET' && !opts.query && !opts.signal && !opts.headers ? takeEarly(path) : null;
    res = (early && (await early.catch(() => null))) || (await fetch(withQuery(path, opts.query), {
      method,
      headers,
      body: payload,
      credentials: 'same-origin',
      signal: opts.signal,
      keepalive: opts.keepalive,
    }));
  } catch (err) {
    if ((err as Error)?.name === 'AbortError') throw err;
    throw new ApiError(0, 'Network error: the server could not be reached');
  }
  if (res.ok) {
    if (method !== 'GET' && method !== 'HEAD') lastChange = Date.now();
    return res;
  }
  let parsed: unknown = null;
  const text = await res.text().catch(() => '');
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  const ra = res.headers.get('Retry-After');
  const retryAfter = ra !== null && ra.trim() !== '' && Number.isFinite(Number(ra)) ? Math.max(0, Math.ceil(Number(ra))) : null;
  const err = new ApiError(res.status, detailText(parsed, text || res.statusText || `HTTP ${res.status}`), retryAfter);
  if (res.status === 401 && !opts.noAuthRedirect) unauthorized();
  throw err;
}

/** What went wrong, as one line: the API's detail, an error's message, or the value as text. */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) return err.detail;
  if (err instanceof Error) return err.message;
  return String(err);
}

async function json<T>(method: string, path: string, body?: unknown, opts?: RequestOptions): Promise<T> {
  const res = await request(method, path, body, opts);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : null) as T;
}

export const api = {
  get: <T = unknown>(path: string, opts?: RequestOptions): Promise<T> => json<T>('GET', path, undefined, opts),
  post: <T = unknown>(path: string, body?: unknown, opts?: RequestOptions): Promise<T> => json<T>('POST', path, body ?? {}, opts),
  put: <T = unknown>(path: string, body?: unknown, opts?: RequestOptions): Promise<T> => json<T>('PUT', path, body ?? {}, opts),
  del: <T = unknown>(path: string, opts?: RequestOptions): Promise<T> => json<T>('DELETE', path, undefined, opts),
  request,
};
