// The web UI's one way to the API (Open WebUI 0.10.2's HTTP API on the edge), plus the shared
// client state: the signed-in user, models, the selected model and the sidebar's chat lists.
// Types come type-only from @gatehouse/contracts (zod is never bundled).
import { writable, get, type Writable } from 'svelte/store';
import type { z } from 'zod';
import type {
  SessionInfo as SessionInfoSchema,
  ChatTitleId as ChatTitleIdSchema,
  ChatResponse as ChatResponseSchema,
  FolderModel as FolderModelSchema,
  SharedFolder as SharedFolderSchema,
  ModelList as ModelListSchema,
  UserModel as UserModelSchema,
} from '@gatehouse/contracts';
import { navigate } from './router.ts';

export type SessionUser = z.infer<typeof SessionInfoSchema> & { token?: string };
export type ChatListItem = z.infer<typeof ChatTitleIdSchema> & { pinned?: boolean | null; folder_id?: string | null };
export type Chat = z.infer<typeof ChatResponseSchema> & { readonly?: boolean };
export type Folder = z.infer<typeof FolderModelSchema>;
export type SharedFolder = z.infer<typeof SharedFolderSchema>;
export type Model = z.infer<typeof ModelListSchema>['data'][number];
export type User = z.infer<typeof UserModelSchema>;

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

/** Called on a 401 from any request not marked `noAuthRedirect`: forget the session, go to /auth. */
function onUnauthorized(): void {
  setToken(null);
  user.set(null);
  if (location.pathname !== '/auth') {
    const back = location.pathname + location.search;
    navigate(back && back !== '/' ? `/auth?redirect=${encodeURIComponent(back)}` : '/auth', { replace: true });
  }
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
    if (method !== 'GET' && method !== 'HEAD') lastChangeAt = Date.now();
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
  if (res.status === 401 && !opts.noAuthRedirect) onUnauthorized();
  throw err;
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
  del: <T = unknown>(path: string, opts?: RequestOptions): Promise<T> => json<T>('DELETE', path, undefined, opts),
  request,
};

// ---- persisted stores ----------------------------------------------------------------------

/** A writable store mirrored in localStorage under `key` (JSON). */
export function persisted<T>(key: string, initial: T): Writable<T> {
  let start = initial;
  try {
    const raw = localStorage.getItem(key);
    if (raw !== null) start = JSON.parse(raw) as T;
  } catch {
    /* ignore unreadable values */
  }
  const store = writable<T>(start);
  store.subscribe((v) => {
    try {
      if (v === null || v === undefined) localStorage.removeItem(key);
      else localStorage.setItem(key, JSON.stringify(v));
    } catch {
      /* storage unavailable */
    }
  });
  return store;
}

// ---- session -------------------------------------------------------------------------------

/** The signed-in user (null: signed out; undefined: not checked yet). */
export const user = writable<SessionUser | null | undefined>(undefined);

/** `GET /api/v1/auths/`: who the token or cookie belongs to; null when signed out. */
export async function loadSession(): Promise<SessionUser | null> {
  try {
    const me = await api.get<SessionUser>('/api/v1/auths/', { noAuthRedirect: true });
    if (me.token) setToken(me.token);
    user.set(me);
    return me;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
      setToken(null);
      user.set(null);
      return null;
    }
    throw err;
  }
}

export async function signIn(email: string, password: string): Promise<SessionUser> {
  const s = await api.post<SessionUser>('/api/v1/auths/signin', { email, password }, { noAuthRedirect: true });
  if (s.token) setToken(s.token);
  user.set(s);
  return s;
}

export async function signUp(name: string, email: string, password: string): Promise<SessionUser> {
  const s = await api.post<SessionUser>(
    '/api/v1/auths/signup',
    { name, email, password, profile_image_url: '' },
    { noAuthRedirect: true },
  );
  if (s.token) setToken(s.token);
  user.set(s);
  return s;
}

export async function signOut(): Promise<void> {
  try {
    await api.get('/api/v1/auths/signout', { noAuthRedirect: true });
  } catch {
    /* signed out locally either way */
  }
  setToken(null);
  user.set(null);
  pagesLoaded = 1;
  chatsHasMore.set(false);
  chats.set([]);
  pinnedChats.set([]);
  folders.set([]);
  sharedFolders.set([]);
  models.set([]);
  navigate('/auth', { replace: true });
}

// ---- models --------------------------------------------------------------------------------

/** Models from `GET /api/models` (arena models included). */
export const models = writable<Model[]>([]);
/** The id of the model new messages go to; the model selector writes it; remembered. */
export const selectedModel = persisted<string | null>('selectedModel', null);
/** Settings: the model picked when nothing (valid) was chosen before. */
export const defaultModel = persisted<string | null>('defaultModel', null);

export async function loadModels(): Promise<Model[]> {
  const res = await api.get<{ data: Model[] }>('/api/models');
  const list = Array.isArray(res?.data) ? res.data : [];
  models.set(list);
  const current = get(selectedModel);
  if (!current || !list.some((m) => m.id === current)) {
    const def = get(defaultModel);
    const pick = def && list.some((m) => m.id === def) ? def : (list[0]?.id ?? null);
    if (pick !== current && (list.length > 0 || current === null)) selectedModel.set(pick);
  }
  return list;
}

// ---- chats and folders (the sidebar's lists) -------------------------------------------------

/** Loose chats (no folder, not pinned), newest first: `GET /api/v1/chats/?page=1`. */
export const chats = writable<ChatListItem[]>([]);
/** `GET /api/v1/chats/pinned`. */
export const pinnedChats = writable<ChatListItem[]>([]);
/** My folders: `GET /api/v1/folders/`. */
export const folders = writable<Folder[]>([]);
/** Folders shared with me (with `permission` read|write): `GET /api/v1/folders/shared`. */
export const sharedFolders = writable<SharedFolder[]>([]);
/** Bumped by refreshChats() so open folders reload their chats. */
export const chatsVersion = writable(0);

/** Open WebUI's page size for `GET /api/v1/chats/?page=`. */
export const CHATS_PAGE_SIZE = 60;
/** Whether another page of loose chats may exist (the last page read was full). */
export const chatsHasMore = writable(false);
let pagesLoaded = 1;

async function chatPages(pages: number): Promise<ChatListItem[]> {
  const all = await Promise.all(
    Array.from({ length: pages }, (_, i) => api.get<ChatListItem[]>('/api/v1/chats/', { query: { page: i + 1 } })),
  );
  const seen = new Set<string>();
  const out: ChatListItem[] = [];
  for (const page of all) for (const c of Array.isArray(page) ? page : []) {
      if (seen.has(c.id)) continue;
      seen.add(c.id);
      out.push(c);
    }
  chatsHasMore.set((all[all.length - 1]?.length ?? 0) >= CHATS_PAGE_SIZE);
  return out;
}

/**
 * A chat just created by this tab, at the top of the loose chats at once (no refresh needed
 * before the first answer; the live event's refresh brings the server's list later).
 */
export function addChatToSidebar(c: { id: string; title: string; updated_at?: number; created_at?: number; folder_id?: string | null }): void {
  if (c.folder_id) return;
  const now = Math.floor(Date.now() / 1000);
  chats.update((list) => (list.some((x) => x.id === c.id) ? list : [{ id: c.id, title: c.title, updated_at: c.updated_at ?? now, created_at: c.created_at ?? now } as ChatListItem, ...list]));
}

let refreshing: Promise<void> | null = null;
let again = false;

/** While a reply streams, sidebar refreshes wait (at most this long) so they do not compete with it. */
const HOLD_MAX_MS = 5000;
/**
 * A refresh asked for this soon after a change this tab made (rename, move, delete… then
 * refreshChats()) answers that change at once; background ones (live events, debounced) wait.
 */
const OWN_CHANGE_MS = 250;
let lastChangeAt = 0;
let holds = 0;
let held: { promise: Promise<void>; resolve: () => void; timer: ReturnType<typeof setTimeout> } | null = null;

/**
 * Hold sidebar refreshes while a reply streams (live events mostly: the chat this tab just created,
 * already shown by addChatToSidebar): they are coalesced into one that runs when the last hold is
 * released, or after HOLD_MAX_MS if the stream is long. A refresh right after a change this tab
 * made (OWN_CHANGE_MS) is not held. Returns the release (idempotent; true when it ran a held
 * refresh, so the caller need not ask for another).
 */
export function holdChatRefresh(): () => boolean {
  holds++;
  let released = false;
  return () => {
    if (released) return false;
    released = true;
    holds = Math.max(0, holds - 1);
    return !holds && runHeld();
  };
}

/** Run the held refresh, if any (true when there was one). */
function runHeld(): boolean {
  const h = held;
  if (!h) return false;
  held = null;
  clearTimeout(h.timer);
  void refreshNow().then(h.resolve, h.resolve);
  return true;
}

/**
 * Reload the sidebar (chats, pinned, folders, shared folders). Call after creating, renaming,
 * moving or updating a chat. Concurrent calls coalesce; failures leave the old lists. While a
 * reply streams (holdChatRefresh) the refresh is deferred, and the promise waits for it.
 */
export function refreshChats(): Promise<void> {
  if (holds > 0 && Date.now() - lastChangeAt > OWN_CHANGE_MS) {
    if (!held) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      held = { promise, resolve, timer: setTimeout(runHeld, HOLD_MAX_MS) };
    }
    return held.promise;
  }
  return refreshNow();
}

function refreshNow(): Promise<void> {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = (async () => {
    do {
      again = false;
      const [list, pinned, own, shared] = await Promise.allSettled([
        chatPages(pagesLoaded),
        api.get<ChatListItem[]>('/api/v1/chats/pinned'),
        api.get<Folder[]>('/api/v1/folders/'),
        api.get<SharedFolder[]>('/api/v1/folders/shared'),
      ]);
      // Lists equal to what is shown are not set again: the sidebar is not re-rendered for nothing.
      // (chatsVersion still moves: open folders re-read their own chats, which may have changed.)
      const put = <T>(store: Writable<T[]>, value: T[]) => {
        if (JSON.stringify(value) !== JSON.stringify(get(store))) store.set(value);
      };
      if (list.status === 'fulfilled') put(chats, list.value);
      if (pinned.status === 'fulfilled' && Array.isArray(pinned.value)) put(pinnedChats, pinned.value);
      if (own.status === 'fulfilled' && Array.isArray(own.value)) put(folders, own.value);
      if (shared.status === 'fulfilled' && Array.isArray(shared.value)) put(sharedFolders, shared.value);
      chatsVersion.update((n) => n + 1);
    } while (again);
  })().finally(() => {
    refreshing = null;
  });
  return refreshing;
}

let loadingMore: Promise<void> | null = null;

/** The next page of loose chats (the sidebar calls it when its list is scrolled to the end). */
export function loadMoreChats(): Promise<void> {
  if (loadingMore || !get(chatsHasMore)) return loadingMore ?? Promise.resolve();
  loadingMore = (async () => {
    const page = pagesLoaded + 1;
    const next = await api.get<ChatListItem[]>('/api/v1/chats/', { query: { page } });
    const items = Array.isArray(next) ? next : [];
    pagesLoaded = page;
    chatsHasMore.set(items.length >= CHATS_PAGE_SIZE);
    chats.update((list) => {
      const ids = new Set(list.map((c) => c.id));
      return [...list, ...items.filter((c) => !ids.has(c.id))];
    });
  })()
    .catch(() => chatsHasMore.set(false))
    .finally(() => {
      loadingMore = null;
    });
  return loadingMore;
}
