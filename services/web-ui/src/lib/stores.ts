// The client state shared across the app: the signed-in user, the models and the selected model,
// the sidebar's chat and folder lists (with their coalesced refresh), and localStorage-backed
// stores. Svelte stores throughout (`$user` in components, `get(user)` in modules); the calls are
// the resource modules' (apis/<resource>/index.ts).
import { writable, get, type Writable } from 'svelte/store';
import { ApiError, lastChangeAt, onUnauthorized, setToken } from './apis/client.ts';
import { getSession, ldapSignin as ldapSigninCall, signin, signout, signup, type SessionUser } from './apis/auths/index.ts';
import { CHATS_PAGE_SIZE, listChats, listPinnedChats, type ChatListItem } from './apis/chats/index.ts';
import { listFolders, listSharedFolders, type Folder, type SharedFolder } from './apis/folders/index.ts';
import { listModels, type Model } from './apis/models/index.ts';
import { navigate } from './router.ts';

// A 401 from any request not marked `noAuthRedirect`: forget the session, go to /auth.
onUnauthorized(() => {
  setToken(null);
  user.set(null);
  if (location.pathname !== '/auth') {
    const back = location.pathname + location.search;
    navigate(back && back !== '/' ? `/auth?redirect=${encodeURIComponent(back)}` : '/auth', { replace: true });
  }
});


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
    const me = await getSession();
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

/** Keep a session just answered (sign-in, sign-up, LDAP): its token and the user. */
function begin(s: SessionUser): SessionUser {
  if (s.token) setToken(s.token);
  user.set(s);
  return s;
}

export const signIn = async (email: string, password: string): Promise<SessionUser> => begin(await signin({ email, password }));
export const signUp = async (name: string, email: string, password: string): Promise<SessionUser> =>
  begin(await signup({ name, email, password, profile_image_url: '' }));
export const ldapSignIn = async (username: string, password: string): Promise<SessionUser> => begin(await ldapSigninCall({ user: username, password }));

export async function signOut(): Promise<void> {
  try {
    await signout();
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
  const res = await listModels();
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

/** Whether another page of loose chats may exist (the last page read was full). */
export const chatsHasMore = writable(false);
let pagesLoaded = 1;

async function chatPages(pages: number): Promise<ChatListItem[]> {
  const all = await Promise.all(
    Array.from({ length: pages }, (_, i) => listChats(i + 1)),
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
  if (holds > 0 && Date.now() - lastChangeAt() > OWN_CHANGE_MS) {
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
        listPinnedChats(),
        listFolders(),
        listSharedFolders(),
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
    const next = await listChats(page);
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
