// Live updates: the signed-in user's own changes from other tabs and devices, folders shared with
// them (shared, unshared, renamed, moved, deleted; a group membership that grants one) and an
// admin's change to their account, over the edge's event stream (`GET /api/v1/events/stream`,
// Server-Sent Events). The sidebar refreshes on chat.* / folder.* / group.* events; an open chat
// listens to `chatEvents`; a role change re-reads the session (the shell follows the new role);
// a deleted account is signed out with `accountNotice` for the sign-in page to show.
import { get, writable } from 'svelte/store';
import { refreshChats, user } from './stores.ts';
import { accountChange } from './live-account.ts';
import { path } from './router.ts';
import { eventStreamUrl } from './apis/events/index.ts';

/** Several events in a burst (a move, a delete of a folder's chats) → one sidebar refresh. */
const DEBOUNCE_MS = 300;

/** A chat event as the stream sends it (the fields the UI reads). */
export interface LiveChatEvent {
  event: string;
  /** Who made the change (absent on events the UI makes up itself). */
  actor?: { id: string } | null;
  subject: { type: string; id: string | null } | null;
  data: Record<string, unknown>;
}

/** The latest chat.* event (ChatView re-reads its chat when the id is its own). */
export const chatEvents = writable<LiveChatEvent | null>(null);

/**
 * Open the stream while someone is signed in (pending users too) and close it at sign-out. EventSource
 * sends the `token` cookie and, on its own reconnect, `Last-Event-ID`, so a dropped connection
 * resumes where it stopped. Returns the unsubscribe (the shell calls it once, on mount).
 */
export function startLiveUpdates(): () => void {
  let source: EventSource | null = null;
  let openFor: string | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  /** The last event's stream sequence, for a reconnect by hand. */
  let lastId = '';

  const refreshSoon = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void refreshChats().catch(() => {}), DEBOUNCE_MS);
  };

  const onEvent = (e: MessageEvent<string>) => {
    let ev: LiveChatEvent;
    try {
      ev = JSON.parse(e.data) as LiveChatEvent;
    } catch {
      return;
    }
    const resource = ev.event.split('.')[0];
    if (resource === 'user') return accountChange(ev);
    if (resource !== 'chat' && resource !== 'folder' && resource !== 'group') return;
    // A pending user has no sidebar (and its API answers 401, which would sign them out).
    if (pendingNow()) return;
    refreshSoon();
    if (resource === 'chat') chatEvents.set(ev);
    else if (ACCESS_EVENTS.has(ev.event) && ev.actor?.id !== get(user)?.id) recheckOpenChat();
  };

  const close = () => {
    source?.close();
    source = null;
    openFor = null;
    clearTimeout(timer);
    clearTimeout(retry);
  };

  let pending = false;
  const pendingNow = () => pending;
  // Pending users too: their activation (user.role_updated) lets them in without a reload.
  const unsubscribe = user.subscribe((u) => {
    pending = u?.role === 'pending';
    const id = u ? u.id : null;
    if (id === openFor) return;
    close();
    if (!id || typeof EventSource === 'undefined') return;
    openFor = id;
    lastId = '';
    connect(id);
  });

  function connect(id: string): void {
    // After a refused (re)connect EventSource gives up; this one resumes by hand.
    const url = eventStreamUrl(lastId);
    const es = new EventSource(url, { withCredentials: true });
    source = es;
    // Named events (`event: chat.created`…) reach only listeners of that name, so listen to the
    // ones the UI acts on.
    for (const name of LIVE_EVENT_NAMES) {
      es.addEventListener(name, ((e: MessageEvent<string>) => {
        if (e.lastEventId) lastId = e.lastEventId;
        onEvent(e);
      }) as EventListener);
    }
    es.onerror = () => {
      if (es.readyState !== EventSource.CLOSED || source !== es || openFor !== id) return;
      clearTimeout(retry);
      retry = setTimeout(() => {
        if (source === es && openFor === id) connect(id);
      }, 5000);
    };
  }

  return () => {
    unsubscribe();
    close();
  };
}

/** Someone else changed what I may see of a shared folder: the chat open here may be in it. */
const ACCESS_EVENTS = new Set(['folder.access_updated', 'folder.parent_updated', 'folder.deleted', 'group.member_added', 'group.member_removed', 'group.updated', 'group.deleted']);

/**
 * Have ChatView re-read the open chat (as on a chat.updated of its own), so a permission that
 * changed (read ⇄ write) or access that ended shows at once. ChatView skips it while a reply streams.
 */
function recheckOpenChat(): void {
  const m = /^\/c\/([^/]+)$/.exec(get(path));
  if (m) chatEvents.set({ event: 'chat.updated', subject: { type: 'chat', id: decodeURIComponent(m[1]!) }, data: {} });
}

/** The events that change what the sidebar or an open chat shows. */
const LIVE_EVENT_NAMES = [
  'chat.created', 'chat.updated', 'chat.deleted', 'chat.deleted_all', 'chat.pinned', 'chat.unpinned', 'chat.archived',
  'chat.unarchived', 'chat.folder_updated', 'chat.tag_added', 'chat.tag_removed', 'chat.compacted',
  'folder.created', 'folder.updated', 'folder.parent_updated', 'folder.access_updated', 'folder.deleted',
  'group.member_added', 'group.member_removed', 'group.updated', 'group.deleted',
  'user.role_updated', 'user.updated', 'user.deleted',
];
