import { z } from 'zod';

/**
 * Request bodies of the chat face, as Open WebUI 0.10.2 declares them (its pydantic forms;
 * ../shared/reference/open-webui-0.10.md). The edge validates with these and answers 422 in
 * FastAPI's shape on a mismatch; the worker parses again to get the defaults.
 */
const json = z.record(z.string(), z.unknown());

// ---- accounts ------------------------------------------------------------------------------
export const SigninForm = z.object({ email: z.string(), password: z.string() });
export const SignupForm = z.object({
  name: z.string(),
  email: z.string(),
  password: z.string(),
  profile_image_url: z.string().nullish().default('/user.png'),
});
export const AddUserForm = SignupForm.extend({ role: z.string().nullish().default('pending') });
export const UpdateProfileForm = z.object({
  name: z.string(),
  profile_image_url: z.string().nullish(),
  bio: z.string().nullish(),
  gender: z.string().nullish(),
  /** FastAPI parses it as a date: a string that is not one is its 422. */
  date_of_birth: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, 'Input should be a valid date in the format YYYY-MM-DD')
    .refine((s) => !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s), 'Input should be a valid date')
    .nullish(),
});
export const UpdatePasswordForm = z.object({ password: z.string(), new_password: z.string() });
export const UserUpdateForm = z.object({
  role: z.enum(['admin', 'user', 'pending']),
  name: z.string(),
  email: z.string(),
  profile_image_url: z.string(),
  password: z.string().nullish(),
});

/** FOLDER_MAX_FILE_COUNT and friends: Open WebUI takes a number, a numeric string, or empty for "no limit". */
const OptionalCount = z
  .union([z.number().int().min(0), z.string().regex(/^\d*$/, 'Input should be a valid integer'), z.null()])
  .transform((v) => (v === null || v === '' ? null : Number(v)));

/** The AdminConfig keys with their types: any subset may be sent, other keys are dropped. */
export const AdminConfigForm = z
  .object({
    SHOW_ADMIN_DETAILS: z.boolean(),
    ADMIN_EMAIL: z.string().nullable(),
    WEBUI_URL: z.string(),
    ENABLE_SIGNUP: z.boolean(),
    ENABLE_API_KEYS: z.boolean(),
    ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: z.boolean(),
    API_KEYS_ALLOWED_ENDPOINTS: z.string(),
    DEFAULT_USER_ROLE: z.enum(['admin', 'user', 'pending']),
    DEFAULT_GROUP_ID: z.string(),
    JWT_EXPIRES_IN: z.string().regex(/^(-1|0|(-?\d+(\.\d+)?)(ms|s|m|h|d|w))$/, 'must be -1 or a duration like 30m, 12h, 4w'),
    ENABLE_COMMUNITY_SHARING: z.boolean(),
    ENABLE_MESSAGE_RATING: z.boolean(),
    ENABLE_FOLDERS: z.boolean(),
    FOLDER_MAX_FILE_COUNT: OptionalCount,
    AUTOMATION_MAX_COUNT: OptionalCount,
    AUTOMATION_MIN_INTERVAL: OptionalCount,
    ENABLE_AUTOMATIONS: z.boolean(),
    ENABLE_CHANNELS: z.boolean(),
    ENABLE_CALENDAR: z.boolean(),
    ENABLE_MEMORIES: z.boolean(),
    ENABLE_MEMORY_SYSTEM_CONTEXT: z.boolean(),
    ENABLE_NOTES: z.boolean(),
    ENABLE_USER_WEBHOOKS: z.boolean(),
    ENABLE_USER_STATUS: z.boolean(),
    PENDING_USER_OVERLAY_TITLE: z.string().nullable(),
    PENDING_USER_OVERLAY_CONTENT: z.string().nullable(),
    RESPONSE_WATERMARK: z.string().nullable(),
  })
  .partial();

// ---- groups --------------------------------------------------------------------------------
export const GroupForm = z.object({
  name: z.string(),
  description: z.string(),
  permissions: json.nullish(),
  data: json.nullish(),
});
export const GroupUpdateForm = GroupForm.partial().extend({ user_ids: z.array(z.string()).nullish() });
export const UserIdsForm = z.object({ user_ids: z.array(z.string()).nullish().default([]) });

// ---- memories ------------------------------------------------------------------------------
export const MemoryType = z.enum(['user', 'context']);
export const AddMemoryForm = z.object({
  content: z.string(),
  type: MemoryType.default('context'),
  path: z.string().nullish(),
});
export const MemoryUpdateModel = z.object({
  content: z.string().nullish(),
  type: MemoryType.nullish(),
  path: z.string().nullish(),
});
export const MemoryOperation = z.object({
  action: z.enum(['add', 'replace', 'remove', 'move']),
  id: z.string().nullish(),
  content: z.string().nullish(),
  type: MemoryType.nullish(),
  path: z.string().nullish(),
});
export const MemoryBatchUpdateForm = z.object({
  operations: z.array(MemoryOperation),
  source: z.enum(['tool', 'background_review']).nullish(),
});
// Open WebUI clamps k and the limits instead of refusing them; the worker does the same.
export const QueryMemoryForm = z.object({ content: z.string(), k: z.number().int().nullish().default(1) });
export const MemoryTypeFilter = z.enum(['user', 'context', 'all']);
export const SearchMemoriesForm = z.object({
  query: z.string().nullish(),
  type: MemoryTypeFilter.default('all'),
  path: z.string().nullish(),
  memory_id: z.string().nullish(),
  limit: z.number().int().default(20),
});
export const MemoryPathsForm = z.object({
  query: z.string().nullish(),
  type: MemoryTypeFilter.default('all'),
  limit: z.number().int().default(100),
});
export const MemoryPathForm = z.object({
  path: z.string(),
  type: MemoryTypeFilter.default('all'),
  include_children: z.boolean().default(true),
  limit: z.number().int().default(50),
});

// ---- folders and sharing -------------------------------------------------------------------
export const FolderForm = z.strictObject({
  name: z.string(),
  data: json.nullish(),
  meta: json.nullish(),
  parent_id: z.string().nullish(),
});
export const FolderUpdateForm = z.strictObject({
  name: z.string().nullish(),
  data: json.nullish(),
  meta: json.nullish(),
});
export const FolderParentForm = z.object({ parent_id: z.string().nullish().default(null) });
export const FolderExpandedForm = z.object({ is_expanded: z.boolean() });
export const AccessGrantForm = z.object({
  principal_type: z.enum(['user', 'group']),
  /** A user id, a group id, or `*` (with `user`: every signed-in user). */
  principal_id: z.string().min(1),
  permission: z.enum(['read', 'write']),
});
export const AccessGrantsForm = z.object({ access_grants: z.array(AccessGrantForm) });

// ---- chats ---------------------------------------------------------------------------------
/** Create (`/new`) and update (`/{id}`): `chat` is Open WebUI's chat JSON (title, history…). */
export const ChatForm = z.object({ chat: json, folder_id: z.string().nullish() });
/** `POST /{id}/folder`: null (or absent) moves the chat out of any folder. */
export const ChatFolderIdForm = z.object({ folder_id: z.string().nullish().default(null) });
/** `POST /api/v1/chats/config` (admin): automatic context compaction, all three required. */
export const ChatConfigForm = z.object({
  ENABLE_CONTEXT_COMPACTION: z.boolean(),
  CONTEXT_COMPACTION_TOKEN_THRESHOLD: z.number().int(),
  CONTEXT_COMPACTION_PROMPT_TEMPLATE: z.string(),
});
/** `POST /{id}/compact`: the body is optional (`CompactChatForm | None`). */
export const CompactChatForm = z.object({ model: z.string().nullish() }).nullish();
/** `POST`/`DELETE /{id}/tags`: the tag's name (its id is the name lower-cased, spaces → `_`). */
export const TagForm = z.object({ name: z.string() });
/** `POST /tags`: the caller's chats carrying a tag, `skip`/`limit` as Open WebUI's defaults. */
export const TagFilterForm = TagForm.extend({
  skip: z.number().int().nullish().default(0),
  limit: z.number().int().nullish().default(50),
});

// ---- files (/api/v1/files) -----------------------------------------------------------------
/**
 * `POST /api/v1/files/` as the worker receives it: the edge streamed the multipart `file` part
 * into the bus's object store (it never holds the bytes whole) and names the object here, with
 * the part's name and type, the bytes it counted and the raw `metadata` form field.
 */
export const FileUploadForm = z.object({
  object: z.string().min(1),
  filename: z.string(),
  content_type: z.string().nullable(),
  size: z.number().int().min(0),
  /** The form field as sent (Open WebUI parses it as JSON: knowledge_id, directory_id, file_hash…). */
  metadata: z.string().nullable(),
});
/** `POST /{id}/data/content/update`: replace the extracted text (it is chunked and embedded again). */
export const FileContentForm = z.object({ content: z.string() });
/** `POST /{id}/rename`. */
export const FileRenameForm = z.object({ filename: z.string() });
