import type { z } from 'zod';
import type { ChatOp } from './bus.ts';
import * as F from './forms.ts';

/**
 * The chat face's HTTP routes (Open WebUI 0.10.2 paths). The edge registers each one, answers the
 * same path with and without its trailing slash, validates `body` with the form, and sends the
 * request to `chat.<op>`. Routes marked `session` get the edge's session handling on top (token
 * minting, cookie, revocation, rate limit) — see services/edge/src/faces/chat.
 */
export interface ChatRoute {
  method: 'GET' | 'POST' | 'DELETE' | 'PUT';
  url: string;
  op: ChatOp;
  body?: z.ZodType;
}

export const CHAT_ROUTES: readonly ChatRoute[] = [
  // accounts and sessions (/api/v1/auths)
  { method: 'POST', url: '/api/v1/auths/signin', op: 'auths.signin', body: F.SigninForm },
  { method: 'POST', url: '/api/v1/auths/signup', op: 'auths.signup', body: F.SignupForm },
  { method: 'POST', url: '/api/v1/auths/signout', op: 'auths.signout' },
  // Open WebUI also answers GET here; its front end calls GET.
  { method: 'GET', url: '/api/v1/auths/signout', op: 'auths.signout' },
  { method: 'GET', url: '/api/v1/auths/', op: 'auths.session' },
  { method: 'POST', url: '/api/v1/auths/add', op: 'auths.add', body: F.AddUserForm },
  { method: 'POST', url: '/api/v1/auths/update/profile', op: 'auths.updateProfile', body: F.UpdateProfileForm },
  { method: 'POST', url: '/api/v1/auths/update/password', op: 'auths.updatePassword', body: F.UpdatePasswordForm },
  { method: 'GET', url: '/api/v1/auths/admin/details', op: 'auths.adminDetails' },
  { method: 'GET', url: '/api/v1/auths/admin/config', op: 'auths.adminConfig.get' },
  { method: 'POST', url: '/api/v1/auths/admin/config', op: 'auths.adminConfig.set', body: F.AdminConfigForm },
  // admin user management (/api/v1/users)
  { method: 'GET', url: '/api/v1/users/', op: 'users.list' },
  { method: 'GET', url: '/api/v1/users/all', op: 'users.all' },
  { method: 'GET', url: '/api/v1/users/:id', op: 'users.get' },
  { method: 'POST', url: '/api/v1/users/:id/update', op: 'users.update', body: F.UserUpdateForm },
  { method: 'DELETE', url: '/api/v1/users/:id', op: 'users.delete' },
  // groups (/api/v1/groups)
  { method: 'GET', url: '/api/v1/groups/', op: 'groups.list' },
  { method: 'POST', url: '/api/v1/groups/create', op: 'groups.create', body: F.GroupForm },
  { method: 'GET', url: '/api/v1/groups/id/:id', op: 'groups.get' },
  { method: 'POST', url: '/api/v1/groups/id/:id/update', op: 'groups.update', body: F.GroupUpdateForm },
  { method: 'POST', url: '/api/v1/groups/id/:id/users', op: 'groups.users' },
  { method: 'POST', url: '/api/v1/groups/id/:id/users/add', op: 'groups.addUsers', body: F.UserIdsForm },
  { method: 'POST', url: '/api/v1/groups/id/:id/users/remove', op: 'groups.removeUsers', body: F.UserIdsForm },
  { method: 'DELETE', url: '/api/v1/groups/id/:id/delete', op: 'groups.delete' },
  // memories (/api/v1/memories)
  { method: 'GET', url: '/api/v1/memories/', op: 'memories.list' },
  { method: 'POST', url: '/api/v1/memories/add', op: 'memories.add', body: F.AddMemoryForm },
  { method: 'POST', url: '/api/v1/memories/update', op: 'memories.batchUpdate', body: F.MemoryBatchUpdateForm },
  { method: 'POST', url: '/api/v1/memories/query', op: 'memories.query', body: F.QueryMemoryForm },
  { method: 'POST', url: '/api/v1/memories/search', op: 'memories.search', body: F.SearchMemoriesForm },
  { method: 'POST', url: '/api/v1/memories/paths', op: 'memories.paths', body: F.MemoryPathsForm },
  { method: 'POST', url: '/api/v1/memories/path', op: 'memories.path', body: F.MemoryPathForm },
  { method: 'POST', url: '/api/v1/memories/reset', op: 'memories.reset' },
  { method: 'DELETE', url: '/api/v1/memories/delete/user', op: 'memories.deleteAll' },
  { method: 'POST', url: '/api/v1/memories/:id/update', op: 'memories.update', body: F.MemoryUpdateModel },
  { method: 'DELETE', url: '/api/v1/memories/:id', op: 'memories.delete' },
  // folders and sharing (/api/v1/folders)
  { method: 'GET', url: '/api/v1/folders/', op: 'folders.list' },
  { method: 'POST', url: '/api/v1/folders/', op: 'folders.create', body: F.FolderForm },
  { method: 'GET', url: '/api/v1/folders/shared', op: 'folders.shared' },
  { method: 'GET', url: '/api/v1/folders/:id', op: 'folders.get' },
  { method: 'POST', url: '/api/v1/folders/:id/update', op: 'folders.update', body: F.FolderUpdateForm },
  { method: 'POST', url: '/api/v1/folders/:id/update/parent', op: 'folders.updateParent', body: F.FolderParentForm },
  { method: 'POST', url: '/api/v1/folders/:id/update/expanded', op: 'folders.updateExpanded', body: F.FolderExpandedForm },
  { method: 'POST', url: '/api/v1/folders/:id/access/update', op: 'folders.updateAccess', body: F.AccessGrantsForm },
  { method: 'GET', url: '/api/v1/folders/:id/shared/chats', op: 'folders.sharedChats' },
  { method: 'DELETE', url: '/api/v1/folders/:id', op: 'folders.delete' },
  // chats (/api/v1/chats); static paths win over `:id` in the edge's router
  { method: 'GET', url: '/api/v1/chats/', op: 'chats.list' },
  { method: 'GET', url: '/api/v1/chats/list', op: 'chats.list' },
  { method: 'DELETE', url: '/api/v1/chats/', op: 'chats.deleteAll' },
  { method: 'POST', url: '/api/v1/chats/new', op: 'chats.create', body: F.ChatForm },
  { method: 'GET', url: '/api/v1/chats/pinned', op: 'chats.pinned' },
  { method: 'GET', url: '/api/v1/chats/archived', op: 'chats.archived' },
  { method: 'GET', url: '/api/v1/chats/all/archived', op: 'chats.allArchived' },
  { method: 'POST', url: '/api/v1/chats/archive/all', op: 'chats.archiveAll' },
  { method: 'POST', url: '/api/v1/chats/unarchive/all', op: 'chats.unarchiveAll' },
  { method: 'GET', url: '/api/v1/chats/folder/:folder_id', op: 'chats.byFolder' },
  { method: 'GET', url: '/api/v1/chats/search', op: 'chats.search' },
  { method: 'GET', url: '/api/v1/chats/all/tags', op: 'chats.allTags' },
  { method: 'POST', url: '/api/v1/chats/tags', op: 'chats.tagged', body: F.TagFilterForm },
  { method: 'GET', url: '/api/v1/chats/config', op: 'chats.config.get' },
  { method: 'POST', url: '/api/v1/chats/config', op: 'chats.config.set', body: F.ChatConfigForm },
  { method: 'GET', url: '/api/v1/chats/:id', op: 'chats.get' },
  { method: 'POST', url: '/api/v1/chats/:id', op: 'chats.update', body: F.ChatForm },
  { method: 'DELETE', url: '/api/v1/chats/:id', op: 'chats.delete' },
  { method: 'GET', url: '/api/v1/chats/:id/pinned', op: 'chats.pinnedStatus' },
  { method: 'POST', url: '/api/v1/chats/:id/pin', op: 'chats.pin' },
  { method: 'POST', url: '/api/v1/chats/:id/archive', op: 'chats.archive' },
  { method: 'POST', url: '/api/v1/chats/:id/folder', op: 'chats.updateFolder', body: F.ChatFolderIdForm },
  { method: 'POST', url: '/api/v1/chats/:id/compact', op: 'chats.compact', body: F.CompactChatForm },
  { method: 'GET', url: '/api/v1/chats/:id/tags', op: 'chats.tags' },
  { method: 'POST', url: '/api/v1/chats/:id/tags', op: 'chats.addTag', body: F.TagForm },
  { method: 'DELETE', url: '/api/v1/chats/:id/tags', op: 'chats.deleteTag', body: F.TagForm },
  // Gone from Open WebUI by 0.10 but still called by older clients (pyopenwebui, owui_client).
  { method: 'DELETE', url: '/api/v1/chats/:id/tags/all', op: 'chats.deleteAllTags' },
  // models (Open WebUI serves the list on both paths)
  { method: 'GET', url: '/api/models', op: 'models.list' },
  { method: 'GET', url: '/api/v1/models', op: 'models.list' },
];
