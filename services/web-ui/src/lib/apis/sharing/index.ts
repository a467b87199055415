// Chat sharing and copies, as Open WebUI's front end calls them: a share link (`share_id`, read at
// /s/{share_id}), who may open it, its removal, a copy of my chat, a copy of a chat shared with me.
// (Export and import of all chats: apis/chats/transfer.ts.)
import { api, type Body, type Reply } from '../client.ts';
import type { ChatRecord } from '../chats/index.ts';

/** A chat as the share routes answer it: ChatResponse with its `share_id` (null when not shared). */
export type SharedChatRecord = ChatRecord & { share_id?: string | null };

const one = (id: string) => `/api/v1/chats/${encodeURIComponent(id)}`;

/** Create the share link, or refresh its snapshot when there is one: `POST /api/v1/chats/{id}/share`. */
export const shareChat = (id: string): Promise<SharedChatRecord> => api.post<SharedChatRecord>(`${one(id)}/share`);
/** Remove the share link (the snapshot goes too): `DELETE /api/v1/chats/{id}/share`. */
export const unshareChat = (id: string): Promise<Reply<'chats.unshare'>> => api.del<Reply<'chats.unshare'>>(`${one(id)}/share`);
/**
 * The snapshot behind a share link: `GET /api/v1/chats/share/{share_id}`. A link I may not open
 * answers 401 (Open WebUI's way): that is not my session ending, so no sign-out on it.
 */
export const getSharedChat = (shareId: string): Promise<SharedChatRecord> =>
  api.get<SharedChatRecord>(`/api/v1/chats/share/${encodeURIComponent(shareId)}`, { noAuthRedirect: true });
/** A copy of one of my chats ("Clone of {title}" unless a title is given). */
export const cloneChat = (id: string, title?: string): Promise<ChatRecord> => api.post<ChatRecord>(`${one(id)}/clone`, title ? { title } : {});
/** A copy, into my chats, of the snapshot behind a share link (its id is the share id). */
export const cloneSharedChat = (shareId: string): Promise<ChatRecord> => api.post<ChatRecord>(`${one(shareId)}/clone/shared`);

/** Who may open a share link: Open WebUI's access grants on the shared chat (`user:*` = every signed-in user). */
export type ShareGrant = Body<'chats.sharedAccess.update'>['access_grants'][number];
/** The grants of my chat's share link: `GET /api/v1/chats/shared/{chat id}/access`. */
export const getShareAccess = (chatId: string): Promise<Reply<'chats.sharedAccess.get'>> => api.get<Reply<'chats.sharedAccess.get'>>(`/api/v1/chats/shared/${encodeURIComponent(chatId)}/access`);
/** Replace them (an empty list: only me and admins): `POST /api/v1/chats/shared/{chat id}/access/update`. */
export const updateShareAccess = (chatId: string, grants: ShareGrant[]): Promise<SharedChatRecord> =>
  api.post<SharedChatRecord>(`/api/v1/chats/shared/${encodeURIComponent(chatId)}/access/update`, { access_grants: grants } satisfies Body<'chats.sharedAccess.update'>);

/**
 * May I grant a link to everyone signed in? Admins may; others need `sharing.public_chats`
 * (`GET /api/v1/users/permissions`) — without it the server drops a `user:*` grant.
 */
export async function mayShareWithEveryone(isAdmin: boolean): Promise<boolean> {
  if (isAdmin) return true;
  const perms = (await api.get<Reply<'users.permissions.get'>>('/api/v1/users/permissions')) as { sharing?: { public_chats?: unknown } };
  return perms.sharing?.public_chats === true;
}
