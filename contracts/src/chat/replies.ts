import { z } from 'zod';

/**
 * What the chat platform answers (the 200 bodies), in Open WebUI 0.10.2's response models. Loose
 * objects: the fields listed must be there with these types, anything else passes untouched (Open
 * WebUI adds fields between releases, and settings, chat JSON and model entries are open by
 * nature). The worker checks every reply against its operation's schema before answering; the
 * edge relays the worker's bytes as they are.
 */
const loose = z.looseObject;
const json = z.record(z.string(), z.unknown());
const epoch = z.number().int();
const Role = z.enum(['admin', 'user', 'pending']);

export const TrueReply = z.literal(true);
export const BoolReply = z.boolean();

// ---- accounts and users --------------------------------------------------------------------
/** SigninResponse without the token fields (the edge adds `token`, `token_type`, `expires_at`). */
export const SigninUser = loose({ id: z.string(), email: z.string(), name: z.string(), role: Role, profile_image_url: z.string() });
export const SessionUser = SigninUser.extend({ permissions: json });
/** `GET /api/v1/auths/`: SessionUserInfoResponse (the edge adds the caller's `token`). */
export const SessionInfo = SessionUser.extend({
  token_type: z.literal('Bearer'),
  expires_at: epoch.nullable(),
  bio: z.string().nullable(),
  gender: z.string().nullable(),
  date_of_birth: z.string().nullable(),
});
export const SignoutReply = z.object({ status: z.literal(true) });
export const ProfileReply = SigninUser;
export const AdminDetails = z.object({ name: z.string().nullable(), email: z.string().nullable() });
export const AdminConfig = loose({ SHOW_ADMIN_DETAILS: z.boolean(), ENABLE_SIGNUP: z.boolean(), DEFAULT_USER_ROLE: Role, JWT_EXPIRES_IN: z.string() });

export const UserModel = loose({
  id: z.string(),
  email: z.string(),
  role: Role,
  name: z.string(),
  profile_image_url: z.string(),
  info: json.nullable(),
  settings: json.nullable(),
  last_active_at: epoch,
  updated_at: epoch,
  created_at: epoch,
});
export const UserInfo = loose({ id: z.string(), name: z.string(), email: z.string(), role: Role });
export const UserList = z.object({ users: z.array(UserModel.extend({ group_ids: z.array(z.string()) })), total: z.number().int() });
export const UserInfoList = z.object({ users: z.array(UserInfo), total: z.number().int() });
/** An admin sees the UserModel with `groups`; anyone else UserActiveResponse's public fields. */
export const UserActive = loose({ id: z.string(), name: z.string(), profile_image_url: z.string(), is_active: z.boolean() });

// ---- groups --------------------------------------------------------------------------------
export const GroupResponse = loose({
  id: z.string(),
  user_id: z.string().nullable(),
  name: z.string(),
  description: z.string(),
  data: json.nullable(),
  permissions: json.nullable(),
  created_at: epoch,
  updated_at: epoch,
  member_count: z.number().int(),
});

// ---- memories ------------------------------------------------------------------------------
export const MemoryModel = loose({
  id: z.string(),
  user_id: z.string(),
  type: z.string(),
  path: z.string().nullable(),
  content: z.string(),
  meta: json.nullable(),
  updated_at: epoch,
  created_at: epoch,
});
export const MemoryBatchResult = z.array(
  loose({ action: z.string(), status: z.enum(['created', 'updated', 'skipped', 'deleted']), memory: MemoryModel.optional(), id: z.string().optional() }),
);
/** Open WebUI's SearchResult (one inner list per query vector). */
export const MemorySearchResult = z.object({
  ids: z.array(z.array(z.string())),
  documents: z.array(z.array(z.string())),
  metadatas: z.array(z.array(json)),
  distances: z.array(z.array(z.number())),
});
export const MemoryPaths = loose({ paths: z.array(loose({ path: z.string().nullable(), count: z.number().int() })), count: z.number().int() });
export const MemoryPathRead = loose({ path: z.string(), parents: z.array(z.string()), children: z.array(z.string()), memories: z.array(MemoryModel) });

// ---- folders -------------------------------------------------------------------------------
export const FolderModel = loose({
  id: z.string(),
  parent_id: z.string().nullable(),
  user_id: z.string(),
  name: z.string(),
  meta: json.nullable(),
  data: json.nullable(),
  is_expanded: z.boolean(),
  created_at: epoch,
  updated_at: epoch,
});
export const FolderNameId = loose({ id: z.string(), name: z.string(), parent_id: z.string().nullable(), is_expanded: z.boolean() });
export const AccessGrant = loose({
  id: z.string(),
  principal_type: z.enum(['user', 'group']),
  principal_id: z.string(),
  permission: z.enum(['read', 'write']),
});
export const FolderWithGrants = FolderModel.extend({ access_grants: z.array(AccessGrant) });
export const SharedFolder = FolderModel.extend({ owner_name: z.string(), permission: z.enum(['read', 'write']) });
export const FolderSharedChats = loose({
  chats: z.array(loose({ id: z.string(), title: z.string(), user_id: z.string(), owner_name: z.string(), readonly: z.boolean() })),
  folder_permission: z.enum(['read', 'write']),
  total: z.number().int().optional(),
  has_more: z.boolean().optional(),
});

// ---- chats ---------------------------------------------------------------------------------
export const ChatTitleId = loose({ id: z.string(), title: z.string(), updated_at: epoch, created_at: epoch });
export const ChatResponse = loose({
  id: z.string(),
  user_id: z.string(),
  title: z.string(),
  chat: json,
  updated_at: epoch,
  created_at: epoch,
  share_id: z.string().nullable(),
  archived: z.boolean(),
  pinned: z.boolean().nullable(),
  meta: json,
  folder_id: z.string().nullable(),
});
export const ChatWithAccess = ChatResponse.extend({ readonly: z.boolean() });
export const TagModel = loose({ id: z.string(), name: z.string(), user_id: z.string(), meta: json.nullable() });
export const CompactionConfig = z.object({
  ENABLE_CONTEXT_COMPACTION: z.boolean(),
  CONTEXT_COMPACTION_TOKEN_THRESHOLD: z.number().int(),
  CONTEXT_COMPACTION_PROMPT_TEMPLATE: z.string(),
});
export const CompactResult = loose({
  ok: z.literal(true),
  compacted: z.boolean(),
  reason: z.string().optional(),
  dropped_messages: z.number().int().optional(),
  kept_messages: z.number().int().optional(),
  summary_chars: z.number().int().optional(),
});

// ---- models --------------------------------------------------------------------------------
export const ModelList = z.object({
  data: z.array(loose({ id: z.string(), name: z.string(), object: z.literal('model'), created: z.number(), owned_by: z.enum(['openai', 'ollama', 'arena']) })),
});

// ---- app config (GET /api/config, main.py get_app_config) ------------------------------------
/** What the front end reads before anyone signs in; `onboarding` only while no account exists. */
export const AppConfig = loose({
  onboarding: z.literal(true).optional(),
  status: z.literal(true),
  name: z.string(),
  version: z.string(),
  default_locale: z.string(),
  oauth: z.object({ providers: z.record(z.string(), z.string()) }),
  features: loose({ auth: z.boolean(), enable_signup: z.boolean(), enable_login_form: z.boolean() }),
});

// ---- files (/api/v1/files) -----------------------------------------------------------------
/** `meta` of a file: name, content type, size in bytes (and whatever else the upload carried). */
export const FileMeta = loose({ name: z.string().nullable().optional(), content_type: z.string().nullable().optional(), size: z.number().int().nullable().optional() });
/** Open WebUI's FileModelResponse: `data` {status, error?, content?}; no `path`. */
export const FileModelResponse = loose({
  id: z.string(),
  user_id: z.string(),
  hash: z.string().nullable(),
  filename: z.string(),
  data: json.nullable(),
  meta: FileMeta,
  created_at: epoch,
  updated_at: epoch,
});
/** `GET /{id}`: FileModel (with `path` and `access_control`). */
export const FileModel = FileModelResponse.extend({ path: z.string().nullable(), access_control: json.nullable() });
/** `GET /api/v1/files/?page=`: 50 a page, newest first. */
export const FileListResponse = z.object({ items: z.array(FileModelResponse), total: z.number().int() });
/** `status` null: never processed (the edge's event stream, `?stream=true`, tells that apart). */
export const FileStatus = loose({ status: z.string().nullable(), error: z.string().nullable().optional() });
export const FileDataContent = z.object({ content: z.string() });
export const MessageReply = z.object({ message: z.string() });
/** Bytes, not JSON: the reply names an object the edge streams (ChatOpReply.download). */
export const Bytes = z.null();
