// /api/v1/chats: the sidebar's lists, one chat (read, create, update, pin, archive, move, delete)
// and the streamed completion (`POST /api/chat/completions`, Open WebUI's SSE stream).
import type { ChatContent } from '../../chat/types.ts';
import { api, authHeaders, type Body, type RequestOptions, type Reply } from '../client.ts';

/** A chat in a list (title and times; pinned and folder when the answer carries them). */
export type ChatListItem = Reply<'chats.list'>[number] & { pinned?: boolean | null; folder_id?: string | null };
/**
 * One chat (ChatResponse) with its `chat` JSON read as the view reads it; `readonly` (from
 * `GET /api/v1/chats/{id}`): someone else's chat, shared with me read-only.
 */
export type ChatRecord = Reply<'chats.create'> & { chat: ChatContent; readonly?: boolean };
/** A chat of a folder of mine (`GET /api/v1/chats/folder/{id}`). */
export type FolderChat = Reply<'chats.byFolder'>[number];
export type ChatForm = Body<'chats.create'>;

const one = (id: string) => `/api/v1/chats/${encodeURIComponent(id)}`;

/** Open WebUI's page size for `GET /api/v1/chats/?page=`. */
export const CHATS_PAGE_SIZE = 60;

/** Loose chats (no folder, not pinned), newest first, one page. */
export const listChats = (page: number): Promise<ChatListItem[]> => api.get<ChatListItem[]>('/api/v1/chats/', { query: { page } });
export const listPinnedChats = (): Promise<ChatListItem[]> => api.get<ChatListItem[]>('/api/v1/chats/pinned');
export const searchChats = (text: string): Promise<ChatListItem[]> => api.get<ChatListItem[]>('/api/v1/chats/search', { query: { text } });
export const listFolderChats = (folderId: string): Promise<FolderChat[]> => api.get<FolderChat[]>(`/api/v1/chats/folder/${encodeURIComponent(folderId)}`);

export const getChat = (id: string): Promise<ChatRecord> => api.get<ChatRecord>(one(id));
export const createChat = (form: ChatForm): Promise<ChatRecord> => api.post<ChatRecord>('/api/v1/chats/new', form);
/** `opts.keepalive`: the request may outlive the page (small bodies only). */
export const updateChat = (id: string, form: Body<'chats.update'>, opts?: RequestOptions): Promise<ChatRecord> => api.post<ChatRecord>(one(id), form, opts);
export const renameChat = (id: string, title: string): Promise<ChatRecord> => updateChat(id, { chat: { title } });
/** Pin or unpin (it toggles). */
export const togglePinChat = (id: string): Promise<Reply<'chats.pin'>> => api.post<Reply<'chats.pin'>>(`${one(id)}/pin`);
/** Archive or unarchive (it toggles). */
export const toggleArchiveChat = (id: string): Promise<Reply<'chats.archive'>> => api.post<Reply<'chats.archive'>>(`${one(id)}/archive`);
/** Into a folder, or out of any (null). */
export const moveChatToFolder = (id: string, folderId: string | null): Promise<Reply<'chats.updateFolder'>> =>
  api.post<Reply<'chats.updateFolder'>>(`${one(id)}/folder`, { folder_id: folderId } satisfies Body<'chats.updateFolder'>);
export const deleteChat = (id: string): Promise<Reply<'chats.delete'>> => api.del<Reply<'chats.delete'>>(one(id));

/** Chromium's limit for keepalive request bodies in flight is 64 KiB. */
export const KEEPALIVE_MAX = 60_000;

/**
 * A chat update that outlives the page (unload): fetch keepalive, nothing awaited, no 401
 * handling (the page is going). Bodies over the limit are not sent.
 */
export function updateChatOnLeave(id: string, form: Body<'chats.update'>): void {
  const text = JSON.stringify(form);
  if (text.length >= KEEPALIVE_MAX) return;
  try {
    void fetch(one(id), {
      method: 'POST',
      keepalive: true,
      headers: authHeaders({ 'Content-Type': 'application/json', Accept: 'application/json' }),
      body: text,
      credentials: 'same-origin',
    }).catch(() => {});
  } catch {
    /* refused (quota): the user message is stored, the partial answer is not */
  }
}

/**
 * `POST /api/chat/completions` asking for a stream: the raw Response (any status; its body is the
 * SSE stream when it is `text/event-stream`). Network failures reject as fetch does.
 */
export const streamCompletion = (body: Record<string, unknown>, signal: AbortSignal): Promise<Response> =>
  fetch('/api/chat/completions', {
    method: 'POST',
    headers: authHeaders({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
    body: JSON.stringify(body),
    credentials: 'same-origin',
    signal,
  });
