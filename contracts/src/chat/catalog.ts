import { z } from 'zod';
import { requestContract, type HttpRoute } from '../catalog.ts';
import { ChatOpReply, ChatOpRequest } from './bus.ts';
import { catalog, DELETE, GET, POST, type ChatAuth, type ChatCatalogEntry } from './catalog-kit.ts';
import { AUTH_KEYS_OPS } from './catalog-auth-keys.ts';
import { AUTH_LDAP_OPS } from './catalog-auth-ldap.ts';
import { AUTH_OAUTH_OPS } from './catalog-auth-oauth.ts';
import { CHAT_SHARING_OPS } from './catalog-chat-sharing.ts';
import { CONNECTIONS_OPS } from './catalog-connections.ts';
import { FILES_OPS } from './catalog-files.ts';
import { KNOWLEDGE_OPS } from './catalog-knowledge.ts';
import { KNOWLEDGE_EXTERNAL_OPS } from './catalog-knowledge-external.ts';
import { RETRIEVAL_OPS } from './catalog-retrieval.ts';
import { WEBHOOKS_OPS } from './catalog-webhooks.ts';
import { USER_SETTINGS_OPS } from './catalog-user-settings.ts';
import { EVALUATIONS_OPS } from './catalog-evaluations.ts';
import { AUDIO_OPS } from './catalog-audio.ts';
import { PROMPTS_OPS } from './catalog-prompts.ts';
import { WORKSPACE_MODELS_OPS } from './catalog-workspace-models.ts';
import * as F from './forms.ts';
import * as R from './replies.ts';

/**
 * The chat platform (Open WebUI 0.10.2's API) — one entry per operation: its bus subject, its
 * HTTP route(s) (Fastify syntax; the edge answers each with and without the trailing slash, and
 * static paths win over `:id`), the body form the edge validates (FastAPI's 422 on a mismatch),
 * the reply the worker answers, who may call it and the events it may emit. The edge's routes and
 * the worker's handler table (exhaustive by type) are derived from it: adding an operation is one
 * entry here plus one handler. Completions are the one streamed operation (completions.ts).
 */
export const CHAT_CATALOG = catalog({
  // ---- accounts and sessions (/api/v1/auths) ----
  'auths.signin': { subject: 'chat.auths.signin', routes: [POST('/api/v1/auths/signin')], body: F.SigninForm, reply: R.SessionUser, auth: 'none', events: ['auth.login'], edge: { session: 'issue', signinLimit: 'email', trustedHeader: 'signin' } },
  'auths.signup': {
    subject: 'chat.auths.signup',
    routes: [POST('/api/v1/auths/signup')],
    body: F.SignupForm,
    reply: R.SessionUser,
    auth: 'none',
    events: ['user.created', 'auth.signup', 'auth.login'],
    edge: { session: 'issue' },
  },
  // Open WebUI also answers GET here; its front end calls GET.
  'auths.signout': { subject: 'chat.auths.signout', routes: [POST('/api/v1/auths/signout'), GET('/api/v1/auths/signout')], reply: R.SignoutReply, auth: 'any', events: ['auth.logout'], edge: { session: 'end' } },
  'auths.session': { subject: 'chat.auths.session', routes: [GET('/api/v1/auths/')], reply: R.SessionInfo, auth: 'any', events: [], edge: { session: 'show' } },
  'auths.add': { subject: 'chat.auths.add', routes: [POST('/api/v1/auths/add')], body: F.AddUserForm, reply: R.SigninUser, auth: 'admin', events: ['user.created'], edge: { session: 'issueForAnother' } },
  'auths.updateProfile': {
    subject: 'chat.auths.updateProfile',
    routes: [POST('/api/v1/auths/update/profile')],
    body: F.UpdateProfileForm,
    reply: R.ProfileReply,
    auth: 'verified',
    events: ['user.profile_updated'],
  },
  'auths.updatePassword': {
    subject: 'chat.auths.updatePassword',
    routes: [POST('/api/v1/auths/update/password')],
    body: F.UpdatePasswordForm,
    reply: R.TrueReply,
    auth: 'verified',
    events: ['auth.password_changed'],
  },
  'auths.adminDetails': { subject: 'chat.auths.adminDetails', routes: [GET('/api/v1/auths/admin/details')], reply: R.AdminDetails, auth: 'any', events: [] },
  'auths.adminConfig.get': { subject: 'chat.auths.adminConfig.get', routes: [GET('/api/v1/auths/admin/config')], reply: R.AdminConfig, auth: 'admin', events: [], edge: { trustedHeader: 'adminConfig' } },
  'auths.adminConfig.set': {
    subject: 'chat.auths.adminConfig.set',
    routes: [POST('/api/v1/auths/admin/config')],
    body: F.AdminConfigForm,
    reply: R.AdminConfig,
    auth: 'admin',
    events: ['config.updated'],
    edge: { trustedHeader: 'adminConfig' },
  },
  // per-user API keys (one file)
  ...AUTH_KEYS_OPS,
  // LDAP sign-in and its admin settings (one file)
  ...AUTH_LDAP_OPS,
  // OAuth / OIDC: the admin config and the browser flow's operations (one file)
  ...AUTH_OAUTH_OPS,

  // ---- admin user management (/api/v1/users) ----
  'users.list': { subject: 'chat.users.list', routes: [GET('/api/v1/users/')], reply: R.UserList, auth: 'admin', events: [] },
  'users.all': { subject: 'chat.users.all', routes: [GET('/api/v1/users/all')], reply: R.UserInfoList, auth: 'admin', events: [] },
  'users.get': { subject: 'chat.users.get', routes: [GET('/api/v1/users/:id')], reply: R.UserActive, auth: 'verified', events: [] },
  'users.update': {
    subject: 'chat.users.update',
    routes: [POST('/api/v1/users/:id/update')],
    body: F.UserUpdateForm,
    reply: R.UserModel,
    auth: 'admin',
    events: ['user.updated', 'user.role_updated'],
  },
  'users.delete': { subject: 'chat.users.delete', routes: [DELETE('/api/v1/users/:id')], reply: R.TrueReply, auth: 'admin', events: ['user.deleted'] },
  // the caller's own settings, info, permissions; anyone's avatar (one file)
  ...USER_SETTINGS_OPS,

  // ---- groups (/api/v1/groups) ----
  'groups.list': { subject: 'chat.groups.list', routes: [GET('/api/v1/groups/')], reply: z.array(R.GroupResponse), auth: 'verified', events: [] },
  'groups.create': { subject: 'chat.groups.create', routes: [POST('/api/v1/groups/create')], body: F.GroupForm, reply: R.GroupResponse, auth: 'admin', events: ['group.created'] },
  'groups.get': { subject: 'chat.groups.get', routes: [GET('/api/v1/groups/id/:id')], reply: R.GroupResponse, auth: 'admin', events: [] },
  'groups.update': {
    subject: 'chat.groups.update',
    routes: [POST('/api/v1/groups/id/:id/update')],
    body: F.GroupUpdateForm,
    reply: R.GroupResponse,
    auth: 'admin',
    events: ['group.updated'],
  },
  'groups.users': { subject: 'chat.groups.users', routes: [POST('/api/v1/groups/id/:id/users')], reply: z.array(R.UserInfo), auth: 'admin', events: [] },
  'groups.addUsers': {
    subject: 'chat.groups.addUsers',
    routes: [POST('/api/v1/groups/id/:id/users/add')],
    body: F.UserIdsForm,
    reply: R.GroupResponse,
    auth: 'admin',
    events: ['group.member_added'],
  },
  'groups.removeUsers': {
    subject: 'chat.groups.removeUsers',
    routes: [POST('/api/v1/groups/id/:id/users/remove')],
    body: F.UserIdsForm,
    reply: R.GroupResponse,
    auth: 'admin',
    events: ['group.member_removed'],
  },
  'groups.delete': { subject: 'chat.groups.delete', routes: [DELETE('/api/v1/groups/id/:id/delete')], reply: R.TrueReply, auth: 'admin', events: ['group.deleted'] },

  // ---- memories (/api/v1/memories) ----
  'memories.list': { subject: 'chat.memories.list', routes: [GET('/api/v1/memories/')], reply: z.array(R.MemoryModel), auth: 'verified', events: [] },
  'memories.add': { subject: 'chat.memories.add', routes: [POST('/api/v1/memories/add')], body: F.AddMemoryForm, reply: R.MemoryModel, auth: 'verified', events: ['memory.created'] },
  'memories.batchUpdate': {
    subject: 'chat.memories.batchUpdate',
    routes: [POST('/api/v1/memories/update')],
    body: F.MemoryBatchUpdateForm,
    reply: R.MemoryBatchResult,
    auth: 'verified',
    events: ['memory.created', 'memory.updated', 'memory.deleted'],
  },
  'memories.query': { subject: 'chat.memories.query', routes: [POST('/api/v1/memories/query')], body: F.QueryMemoryForm, reply: R.MemorySearchResult, auth: 'verified', events: [] },
  'memories.search': { subject: 'chat.memories.search', routes: [POST('/api/v1/memories/search')], body: F.SearchMemoriesForm, reply: z.array(R.MemoryModel), auth: 'verified', events: [] },
  'memories.paths': { subject: 'chat.memories.paths', routes: [POST('/api/v1/memories/paths')], body: F.MemoryPathsForm, reply: R.MemoryPaths, auth: 'verified', events: [] },
  'memories.path': { subject: 'chat.memories.path', routes: [POST('/api/v1/memories/path')], body: F.MemoryPathForm, reply: R.MemoryPathRead, auth: 'verified', events: [] },
  'memories.reset': { subject: 'chat.memories.reset', routes: [POST('/api/v1/memories/reset')], reply: R.TrueReply, auth: 'verified', events: ['memory.reset'] },
  'memories.deleteAll': { subject: 'chat.memories.deleteAll', routes: [DELETE('/api/v1/memories/delete/user')], reply: R.TrueReply, auth: 'verified', events: ['memory.deleted'] },
  'memories.update': {
    subject: 'chat.memories.update',
    routes: [POST('/api/v1/memories/:id/update')],
    body: F.MemoryUpdateModel,
    reply: R.MemoryModel,
    auth: 'verified',
    events: ['memory.updated'],
  },
  'memories.delete': { subject: 'chat.memories.delete', routes: [DELETE('/api/v1/memories/:id')], reply: R.TrueReply, auth: 'verified', events: ['memory.deleted'] },

  // ---- folders and sharing (/api/v1/folders) ----
  'folders.list': { subject: 'chat.folders.list', routes: [GET('/api/v1/folders/')], reply: z.array(R.FolderNameId), auth: 'verified', events: [] },
  'folders.create': { subject: 'chat.folders.create', routes: [POST('/api/v1/folders/')], body: F.FolderForm, reply: R.FolderModel, auth: 'verified', events: ['folder.created'] },
  'folders.shared': { subject: 'chat.folders.shared', routes: [GET('/api/v1/folders/shared')], reply: z.array(R.SharedFolder), auth: 'verified', events: [] },
  'folders.get': { subject: 'chat.folders.get', routes: [GET('/api/v1/folders/:id')], reply: R.FolderWithGrants, auth: 'verified', events: [] },
  'folders.update': {
    subject: 'chat.folders.update',
    routes: [POST('/api/v1/folders/:id/update')],
    body: F.FolderUpdateForm,
    reply: R.FolderModel,
    auth: 'verified',
    events: ['folder.updated'],
  },
  'folders.updateParent': {
    subject: 'chat.folders.updateParent',
    routes: [POST('/api/v1/folders/:id/update/parent')],
    body: F.FolderParentForm,
    reply: R.FolderModel,
    auth: 'verified',
    events: ['folder.parent_updated'],
  },
  'folders.updateExpanded': {
    subject: 'chat.folders.updateExpanded',
    routes: [POST('/api/v1/folders/:id/update/expanded')],
    body: F.FolderExpandedForm,
    reply: R.FolderModel,
    auth: 'verified',
    events: [],
  },
  'folders.updateAccess': {
    subject: 'chat.folders.updateAccess',
    routes: [POST('/api/v1/folders/:id/access/update')],
    body: F.AccessGrantsForm,
    reply: R.FolderWithGrants,
    auth: 'verified',
    events: ['folder.access_updated'],
  },
  'folders.sharedChats': { subject: 'chat.folders.sharedChats', routes: [GET('/api/v1/folders/:id/shared/chats')], reply: R.FolderSharedChats, auth: 'verified', events: [] },
  'folders.delete': { subject: 'chat.folders.delete', routes: [DELETE('/api/v1/folders/:id')], reply: R.TrueReply, auth: 'verified', events: ['folder.deleted'] },

  // ---- chats (/api/v1/chats) ----
  'chats.list': { subject: 'chat.chats.list', routes: [GET('/api/v1/chats/'), GET('/api/v1/chats/list')], reply: z.array(R.ChatTitleId), auth: 'verified', events: [] },
  'chats.create': { subject: 'chat.chats.create', routes: [POST('/api/v1/chats/new')], body: F.ChatForm, reply: R.ChatResponse, auth: 'verified', events: ['chat.created'] },
  'chats.get': { subject: 'chat.chats.get', routes: [GET('/api/v1/chats/:id')], reply: R.ChatWithAccess, auth: 'verified', events: [] },
  'chats.update': { subject: 'chat.chats.update', routes: [POST('/api/v1/chats/:id')], body: F.ChatForm, reply: R.ChatResponse, auth: 'verified', events: ['chat.updated'] },
  'chats.delete': { subject: 'chat.chats.delete', routes: [DELETE('/api/v1/chats/:id')], reply: R.TrueReply, auth: 'verified', events: ['chat.deleted'] },
  'chats.deleteAll': { subject: 'chat.chats.deleteAll', routes: [DELETE('/api/v1/chats/')], reply: R.TrueReply, auth: 'verified', events: ['chat.deleted_all'] },
  'chats.pinned': { subject: 'chat.chats.pinned', routes: [GET('/api/v1/chats/pinned')], reply: z.array(R.ChatTitleId), auth: 'verified', events: [] },
  'chats.pinnedStatus': { subject: 'chat.chats.pinnedStatus', routes: [GET('/api/v1/chats/:id/pinned')], reply: R.BoolReply, auth: 'verified', events: [] },
  'chats.pin': { subject: 'chat.chats.pin', routes: [POST('/api/v1/chats/:id/pin')], reply: R.ChatResponse, auth: 'verified', events: ['chat.pinned', 'chat.unpinned'] },
  'chats.archived': { subject: 'chat.chats.archived', routes: [GET('/api/v1/chats/archived')], reply: z.array(R.ChatTitleId), auth: 'verified', events: [] },
  'chats.allArchived': { subject: 'chat.chats.allArchived', routes: [GET('/api/v1/chats/all/archived')], reply: z.array(R.ChatResponse), auth: 'verified', events: [] },
  'chats.archive': { subject: 'chat.chats.archive', routes: [POST('/api/v1/chats/:id/archive')], reply: R.ChatResponse, auth: 'verified', events: ['chat.archived', 'chat.unarchived'] },
  'chats.archiveAll': { subject: 'chat.chats.archiveAll', routes: [POST('/api/v1/chats/archive/all')], reply: R.TrueReply, auth: 'verified', events: ['chat.archived'] },
  'chats.unarchiveAll': { subject: 'chat.chats.unarchiveAll', routes: [POST('/api/v1/chats/unarchive/all')], reply: R.TrueReply, auth: 'verified', events: ['chat.unarchived'] },
  'chats.updateFolder': {
    subject: 'chat.chats.updateFolder',
    routes: [POST('/api/v1/chats/:id/folder')],
    body: F.ChatFolderIdForm,
    reply: R.ChatResponse,
    auth: 'verified',
    events: ['chat.folder_updated'],
  },
  'chats.byFolder': { subject: 'chat.chats.byFolder', routes: [GET('/api/v1/chats/folder/:folder_id')], reply: z.array(R.ChatResponse), auth: 'verified', events: [] },
  'chats.config.get': { subject: 'chat.chats.config.get', routes: [GET('/api/v1/chats/config')], reply: R.CompactionConfig, auth: 'admin', events: [] },
  'chats.config.set': {
    subject: 'chat.chats.config.set',
    routes: [POST('/api/v1/chats/config')],
    body: F.ChatConfigForm,
    reply: R.CompactionConfig,
    auth: 'admin',
    events: ['config.updated'],
  },
  'chats.compact': { subject: 'chat.chats.compact', routes: [POST('/api/v1/chats/:id/compact')], body: F.CompactChatForm, reply: R.CompactResult, auth: 'verified', events: ['chat.compacted'] },

  // ---- chat search and tags ----
  'chats.search': { subject: 'chat.chats.search', routes: [GET('/api/v1/chats/search')], reply: z.array(R.ChatTitleId), auth: 'verified', events: [] },
  'chats.tagged': { subject: 'chat.chats.tagged', routes: [POST('/api/v1/chats/tags')], body: F.TagFilterForm, reply: z.array(R.ChatTitleId), auth: 'verified', events: [] },
  'chats.allTags': { subject: 'chat.chats.allTags', routes: [GET('/api/v1/chats/all/tags')], reply: z.array(R.TagModel), auth: 'verified', events: [] },
  'chats.tags': { subject: 'chat.chats.tags', routes: [GET('/api/v1/chats/:id/tags')], reply: z.array(R.TagModel), auth: 'verified', events: [] },
  'chats.addTag': { subject: 'chat.chats.addTag', routes: [POST('/api/v1/chats/:id/tags')], body: F.TagForm, reply: z.array(R.TagModel), auth: 'verified', events: ['chat.tag_added'] },
  'chats.deleteTag': { subject: 'chat.chats.deleteTag', routes: [DELETE('/api/v1/chats/:id/tags')], body: F.TagForm, reply: z.array(R.TagModel), auth: 'verified', events: ['chat.tag_removed'] },
  // Gone from Open WebUI by 0.10 but still called by older clients (pyopenwebui, owui_client).
  'chats.deleteAllTags': { subject: 'chat.chats.deleteAllTags', routes: [DELETE('/api/v1/chats/:id/tags/all')], reply: R.TrueReply, auth: 'verified', events: ['chat.tag_removed'] },
  // sharing, clone, export and import (one file)
  ...CHAT_SHARING_OPS,

  // ---- models (Open WebUI's main.py serves the list on both paths) ----
  'models.list': { subject: 'chat.models.list', routes: [GET('/api/models'), GET('/api/v1/models')], reply: R.ModelList, auth: 'verified', events: [] },
  // the admin's read-only view of the connections behind it (/openai/config, /ollama/config)
  ...CONNECTIONS_OPS,

  // ---- the front end's start-up config (main.py get_app_config; read before sign-in) ----
  'config.get': { subject: 'chat.config.get', routes: [GET('/api/config')], reply: R.AppConfig, auth: 'none', events: [], edge: { trustedHeader: 'appConfig' } },

  // ---- files, knowledge bases, retrieval (one file each) ----
  ...FILES_OPS,
  ...KNOWLEDGE_OPS,
  ...KNOWLEDGE_EXTERNAL_OPS,
  ...RETRIEVAL_OPS,

  // ---- the webhook registry and its delivery log (/api/events/webhooks) ----
  ...WEBHOOKS_OPS,

  // ---- ratings, the leaderboard and the arena settings (/api/v1/evaluations) ----
  ...EVALUATIONS_OPS,

  // ---- workspace prompts (/api/v1/prompts) ----
  ...PROMPTS_OPS,
  // workspace models (/api/v1/models)
  ...WORKSPACE_MODELS_OPS,

  // ---- read-aloud, transcription and their admin settings (/api/v1/audio) ----
  ...AUDIO_OPS,
});

// The external-knowledge forms and answers, for the worker's handlers and clients.
export * from './catalog-knowledge-external.ts';
export * from './catalog-webhooks.ts';
export * from './catalog-auth-oauth.ts';
export * from './catalog-auth-keys.ts';
export * from './catalog-auth-ldap.ts';
export * from './catalog-user-settings.ts';
export * from './catalog-evaluations.ts';
export * from './catalog-prompts.ts';
export * from './catalog-workspace-models.ts';
export * from './catalog-chat-sharing.ts';
export * from './catalog-audio.ts';

export type ChatOp = keyof typeof CHAT_CATALOG;
export const CHAT_OP_NAMES = Object.keys(CHAT_CATALOG) as ChatOp[];

/** The bus contract of each operation (one envelope for all; the catalog's `reply` is its body). */
export const chatContracts = Object.fromEntries(
  CHAT_OP_NAMES.map((op) => [op, requestContract(CHAT_CATALOG[op].subject, 1, ChatOpRequest, ChatOpReply)]),
) as { [Op in ChatOp]: ReturnType<typeof requestContract<typeof ChatOpRequest, typeof ChatOpReply>> & { subject: `chat.${Op}` } };

/** One HTTP route of the chat face, with the operation it serves (derived from the catalog). */
export interface ChatRoute extends HttpRoute {
  op: ChatOp;
  auth: ChatAuth;
  body?: z.ZodType;
}
export const CHAT_ROUTES: readonly ChatRoute[] = CHAT_OP_NAMES.flatMap((op) => {
  const e: ChatCatalogEntry = CHAT_CATALOG[op];
  return e.routes.map((r) => ({ ...r, op, auth: e.auth, ...(e.body ? { body: e.body } : {}) }));
});
