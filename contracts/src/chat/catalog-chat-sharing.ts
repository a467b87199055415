import { z } from 'zod';
import { catalog, DELETE, GET, POST } from './catalog-kit.ts';
import { AccessGrantsForm } from './forms.ts';
import { AccessGrant, BoolReply, Bytes, ChatResponse, ChatTitleId } from './replies.ts';

/**
 * Chat sharing, cloning, export and import (Open WebUI 0.10.2 routers/chats.py and
 * models/shared_chats.py), under /api/v1/chats.
 *
 * Sharing: `POST /{id}/share` takes a snapshot of the owner's chat (title and chat JSON) under a
 * new `share_id`, kept on the chat; sharing again refreshes the same snapshot under the same id.
 * `GET /share/{share_id}` answers the snapshot as a ChatResponse whose `id` and `share_id` are the
 * share id and whose `user_id` is the sharer. Who may read it: the sharer, admins (with
 * ENABLE_ADMIN_CHAT_ACCESS) and whoever a grant on the chat reaches (`POST /shared/{chat id}/access/update`
 * with Open WebUI's access grants: a user, a group, or `user:*` for every signed-in user); anyone
 * else gets Open WebUI's 401. `DELETE /{id}/share` drops the snapshot, the share id and the grants.
 *
 * Clone: a new chat of the caller's with the source's JSON plus `originalChatId` (the source's id:
 * the chat's for `/{id}/clone`, the share id for `/{share_id}/clone/shared`), `branchPointMessageId`
 * (the source's `history.currentId`) and the title `Clone of <title>` (or the form's title).
 *
 * Export / import: `GET /all` streams every chat of the caller as NDJSON (one ChatResponse per
 * line, `application/x-ndjson`); `POST /import` takes ChatsImportForm and creates new chats
 * (new ids) with their history, answering them. Admin reads of everyone's chats are behind the
 * environment variables ENABLE_ADMIN_EXPORT (`GET /all/db`) and ENABLE_ADMIN_CHAT_ACCESS
 * (`GET /list/user/{user_id}`), both true by default; off, they answer 401.
 */

const json = z.record(z.string(), z.unknown());
const epoch = z.number().int();

// ---- forms ---------------------------------------------------------------------------------
/** `POST /{id}/clone`: an optional title (else "Clone of <title>"); the body itself may be absent. */
export const CloneForm = z.object({ title: z.string().nullish() }).nullish();
/** One chat of `POST /import` (Open WebUI's ChatImportForm: ChatForm plus what an export carries). */
export const ChatImportForm = z.object({
  chat: json,
  folder_id: z.string().nullish(),
  meta: json.nullish(),
  pinned: z.boolean().nullish(),
  archived: z.boolean().nullish(),
  created_at: epoch.nullish(),
  updated_at: epoch.nullish(),
});
export const ChatsImportForm = z.object({ chats: z.array(ChatImportForm) });
/** `POST /shared/{id}/access/update`: the grants replace the chat's (an empty list revokes all). */
export const ChatAccessGrantsForm = AccessGrantsForm;

// ---- replies -------------------------------------------------------------------------------
/** `GET /shared`: the caller's shared chats; `id` and `chat_id` are the chat's, `share_id` the link's. */
export const SharedChatResponse = z.looseObject({
  id: z.string(),
  chat_id: z.string(),
  title: z.string(),
  share_id: z.string().nullable(),
  updated_at: epoch,
  created_at: epoch,
});

const CHATS = '/api/v1/chats';

export const CHAT_SHARING_OPS = catalog({
  // ---- sharing ----
  'chats.share': { subject: 'chat.chats.share', routes: [POST(`${CHATS}/:id/share`)], reply: ChatResponse, auth: 'verified', events: ['chat.shared'] },
  'chats.unshare': { subject: 'chat.chats.unshare', routes: [DELETE(`${CHATS}/:id/share`)], reply: BoolReply, auth: 'verified', events: ['chat.unshared'] },
  'chats.unshareAll': { subject: 'chat.chats.unshareAll', routes: [DELETE(`${CHATS}/share/all`)], reply: BoolReply, auth: 'verified', events: ['chat.unshared'] },
  'chats.sharedList': { subject: 'chat.chats.sharedList', routes: [GET(`${CHATS}/shared`)], reply: z.array(SharedChatResponse), auth: 'verified', events: [] },
  'chats.shareGet': { subject: 'chat.chats.shareGet', routes: [GET(`${CHATS}/share/:share_id`)], reply: ChatResponse, auth: 'verified', events: [] },
  'chats.sharedAccess.update': {
    subject: 'chat.chats.sharedAccess.update',
    routes: [POST(`${CHATS}/shared/:id/access/update`)],
    body: ChatAccessGrantsForm,
    reply: ChatResponse,
    auth: 'verified',
    events: [],
  },
  'chats.sharedAccess.get': { subject: 'chat.chats.sharedAccess.get', routes: [GET(`${CHATS}/shared/:id/access`)], reply: z.array(AccessGrant), auth: 'verified', events: [] },

  // ---- clone ----
  'chats.clone': { subject: 'chat.chats.clone', routes: [POST(`${CHATS}/:id/clone`)], body: CloneForm, reply: ChatResponse, auth: 'verified', events: ['chat.cloned'] },
  'chats.cloneShared': { subject: 'chat.chats.cloneShared', routes: [POST(`${CHATS}/:id/clone/shared`)], reply: ChatResponse, auth: 'verified', events: ['chat.cloned'] },

  // ---- export and import ----
  /** NDJSON bytes: one ChatResponse per line, newest first. */
  'chats.exportAll': { subject: 'chat.chats.exportAll', routes: [GET(`${CHATS}/all`)], reply: Bytes, auth: 'verified', events: [] },
  'chats.import': { subject: 'chat.chats.import', routes: [POST(`${CHATS}/import`)], body: ChatsImportForm, reply: z.array(ChatResponse), auth: 'verified', events: ['chat.imported'] },
  'chats.allDb': { subject: 'chat.chats.allDb', routes: [GET(`${CHATS}/all/db`)], reply: z.array(ChatResponse), auth: 'admin', events: [] },
  'chats.listByUser': { subject: 'chat.chats.listByUser', routes: [GET(`${CHATS}/list/user/:user_id`)], reply: z.array(ChatTitleId), auth: 'admin', events: [] },
});
