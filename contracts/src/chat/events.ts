import { z } from 'zod';

/**
 * Domain events of the chat platform, in Open WebUI 0.10.2's envelope (its events.py). Each is
 * written to the worker's outbox in the transaction that makes the change, and the outbox relay
 * publishes it on `events.<resource>.<operation>` into the JetStream stream below, with the
 * event id as `Nats-Msg-Id` so a relay that crashes between publish and bookkeeping cannot
 * publish it twice. The webhook dispatcher (a later issue) consumes that stream.
 */
export const EVENTS_STREAM = 'EVENTS';
/** Subjects the stream holds (before the namespace prefix). */
export const EVENTS_SUBJECTS = 'events.>';
/** JetStream's de-duplication window for `Nats-Msg-Id`; a relay retry within it is dropped. */
export const EVENTS_DUPLICATE_WINDOW_MS = 10 * 60 * 1000;
export const EVENT_SCHEMA_VERSION = '0.10.2';

export const EventActor = z.object({
  id: z.string(),
  name: z.string().nullable(),
  email: z.string().nullable(),
  role: z.string().nullable(),
  created_at: z.number().nullable(),
  updated_at: z.number().nullable(),
  type: z.literal('user'),
});

export const ChatEvent = z.object({
  schema: z.string(),
  id: z.string(),
  /** `<resource>.<operation>`, e.g. `memory.created`, `auth.login`, `folder.access_updated`. */
  event: z.string(),
  resource: z.string(),
  operation: z.string(),
  created_at: z.number().int(),
  instance_id: z.string(),
  version: z.string(),
  source: z.string(),
  actor: EventActor.nullable(),
  subject: z.object({ type: z.string(), id: z.string().nullable() }).nullable(),
  data: z.record(z.string(), z.unknown()),
  message: z.string().nullable(),
});
export type ChatEvent = z.infer<typeof ChatEvent>;

/** The bus subject of an event name: `memory.created` → `events.memory.created`. */
export function eventSubject(event: string): string {
  return `events.${event}`;
}

// ---- the event catalog -------------------------------------------------------------------------

const Role = z.enum(['admin', 'user', 'pending']);
const Count = z.object({ count: z.number().int() });
const Name = z.object({ name: z.string() });
const UserIds = z.object({ user_ids: z.array(z.string()) });
const UpdatedFields = z.object({ updated_fields: z.array(z.string()) });
const Tag = z.object({ tag: z.string() });
/** A memory as events describe it: the first 300 characters, its type and path. */
const MemoryData = z.object({
  content_preview: z.string(),
  type: z.string().nullable(),
  path: z.string().nullable(),
  /** Batch updates (`POST /memories/update`) name the operation that caused it. */
  operation: z.enum(['add', 'replace', 'move', 'remove']).optional(),
});
const MessageData = z.object({
  chat_id: z.string(),
  role: z.string(),
  parent_id: z.string().nullable(),
  model: z.string().nullable(),
  content_preview: z.string(),
});
const FileData = z.object({ filename: z.string(), content_type: z.string().nullable(), size: z.number().int(), hash: z.string().nullable(), knowledge_id: z.string().nullable().optional() });
const KnowledgeData = z.object({ name: z.string(), description: z.string().optional() });
const KnowledgeFileData = z.object({ knowledge_id: z.string(), file_id: z.string(), directory_id: z.string().nullable().optional(), filename: z.string().optional() });
/** A rating as events describe it (subject: the feedback). */
const FeedbackData = z.object({
  type: z.string(),
  model_id: z.string().nullable(),
  rating: z.union([z.string(), z.number()]).nullable(),
  chat_id: z.string().nullable(),
  message_id: z.string().nullable(),
});
const DirectoryData = z.object({ knowledge_id: z.string(), name: z.string(), parent_id: z.string().nullable() });

/**
 * Every event the chat platform emits: name (`<resource>.<operation>`) → the schema of its `data`.
 * This is the only list of chat events: the worker's emit is typed by it (an unknown name or
 * data of the wrong shape does not compile) and checks `data` with it before writing the outbox;
 * the catalog of operations (catalog.ts) names, per operation, which of these it may emit.
 *
 * How a consumer (the webhook dispatcher) reads an event: subscribe to the JetStream stream
 * `EVENTS` (subjects `events.<resource>.<operation>`, behind the namespace prefix), parse the
 * message with `ChatEvent` (the envelope), then `parseChatEventData(ev)` — or
 * `CHAT_EVENTS[ev.event].parse(ev.data)` after checking `isChatEventName(ev.event)` — for typed
 * data. `resource` and `operation` are the name split at its first dot. Data was sanitised before
 * it was written: secrets dropped, strings cut at 1000 characters (`…` appended). Deduplicate on
 * `id` (also the `Nats-Msg-Id`): delivery is at least once to a consumer that does not ack.
 * Schemas only ever gain optional fields; a consumer should ignore keys it does not know.
 */
export const CHAT_EVENTS = {
  // accounts and sessions
  'auth.login': z.object({ auth_method: z.enum(['password', 'api', 'oauth', 'ldap']) }),
  'auth.signup': z.object({ email: z.string() }),
  'auth.logout': z.object({}),
  'auth.password_changed': z.object({}),
  /** A user made (or replaced) their API key; never the key. */
  'auth.api_key.created': z.object({}),
  'auth.api_key.deleted': z.object({}),
  // users
  'user.created': z.object({ role: Role }),
  'user.profile_updated': UpdatedFields,
  /** The user saved their own settings (`updated_fields`: the top-level keys sent, e.g. `ui`). */
  'user.settings_updated': UpdatedFields,
  'user.updated': UpdatedFields,
  'user.role_updated': z.object({ role: Role, previous_role: Role }),
  'user.deleted': z.object({ email: z.string(), role: Role }),
  /** An admin saved settings: `auth` (AdminConfig) or `chat` (compaction) as the subject id. */
  'config.updated': z.object({ keys: z.array(z.string()) }),
  /**
   * An admin replaced one API's model connections (subject: config `connections`): which API, whether
   * it is on, its URLs and the config bucket's new revision of the `connections` group. Never a key.
   */
  'config.connections.updated': z.object({ api: z.enum(['openai', 'ollama']), enabled: z.boolean(), urls: z.array(z.string()), revision: z.number().int() }),
  /** The webhook registry changed (subject: the webhook); dispatchers re-read it. Never carries the secret. */
  'config.webhook.updated': z.object({ action: z.enum(['created', 'updated', 'deleted', 'secret_rotated']), name: z.string(), url: z.string(), enabled: z.boolean() }),
  // groups
  'group.created': Name,
  /** `user_ids`: the members before and after, when the update replaced the membership (live streams tell them). */
  'group.updated': Name.extend({ user_ids: z.array(z.string()).optional() }),
  /** `user_ids`: the members it had (their folder grants through it are gone). */
  'group.deleted': Name.extend({ user_ids: z.array(z.string()).optional() }),
  'group.member_added': UserIds,
  'group.member_removed': UserIds,
  // memories
  'memory.created': MemoryData,
  'memory.updated': MemoryData,
  /** One memory (subject memory), a batch removal (with its preview), or all of them (subject user, no data). */
  'memory.deleted': MemoryData.partial(),
  /** Embeddings rebuilt for every memory of the user. */
  'memory.reset': Count,
  // folders
  'folder.created': z.object({ name: z.string(), parent_id: z.string().nullable(), owner_id: z.string() }),
  /** `user_ids` on folder.updated/parent_updated/deleted: as on access_updated, whoever a grant on the folder, an ancestor or (deleted) a sub-folder reaches. */
  'folder.updated': Name.extend({ user_ids: z.array(z.string()).optional() }),
  'folder.parent_updated': z.object({ parent_id: z.string().nullable(), user_ids: z.array(z.string()).optional() }),
  /**
   * `user_ids`: the users who may see the folder through a grant before or after the change (user
   * grants, members of granted groups; `*` for an everyone grant), so a live stream can tell a
   * grantee without asking the worker. Absent on events written before it existed.
   */
  'folder.access_updated': z.object({ grant_count: z.number().int(), user_ids: z.array(z.string()).optional() }),
  'folder.deleted': z.object({ folder_ids: z.array(z.string()), delete_contents: z.boolean(), user_ids: z.array(z.string()).optional() }),
  // chats
  'chat.created': z.object({ title: z.string(), folder_id: z.string().nullable() }),
  /** A change through the API (`title`), or a completion's reply settled (`message_id`, `done`…). */
  'chat.updated': z.object({
    title: z.string().optional(),
    message_id: z.string().optional(),
    done: z.literal(true).optional(),
    stopped: z.literal(true).optional(),
    error: z.literal(true).optional(),
  }),
  'chat.deleted': z.object({ owner_id: z.string() }),
  'chat.deleted_all': Count,
  'chat.pinned': z.object({ pinned: z.literal(true) }),
  'chat.unpinned': z.object({ pinned: z.literal(false) }),
  /** One chat (`archived`, subject chat) or all of the user's at once (`count`, subject user). */
  'chat.archived': z.union([z.object({ archived: z.literal(true) }), Count]),
  'chat.unarchived': z.union([z.object({ archived: z.literal(false) }), Count]),
  'chat.folder_updated': z.object({ folder_id: z.string().nullable() }),
  'chat.tag_added': Tag,
  'chat.tag_removed': Tag,
  /** Manual (`dropped_messages` only) or automatic (all four) context compaction. */
  'chat.compacted': z.object({
    dropped_messages: z.number().int(),
    kept_messages: z.number().int().optional(),
    summary_chars: z.number().int().optional(),
    automatic: z.literal(true).optional(),
  }),
  /** A share link made (`share_id`) or its snapshot refreshed under the same id (`updated`). */
  'chat.shared': z.object({ share_id: z.string(), updated: z.literal(true).optional() }),
  /** One chat's link removed (subject chat), or all of the user's at once (subject user: `count`, `chat_ids`). */
  'chat.unshared': z.union([z.object({ share_id: z.string().nullable() }), z.object({ count: z.number().int(), chat_ids: z.array(z.string()) })]),
  /** The subject is the new chat; `original_chat_id` its source (a chat id, or a share id for a shared clone). */
  'chat.cloned': z.object({ original_chat_id: z.string() }),
  /** `POST /chats/import` (subject type `chat.import`, no id): the chats it created. */
  'chat.imported': z.object({ count: z.number().int(), chat_ids: z.array(z.string()) }),
  // messages (completions)
  'message.created': MessageData,
  'message.updated': MessageData,
  // files: uploads and their processing
  'file.uploaded': FileData,
  /** Extraction, chunking and embedding finished (`completed`) or gave up (`failed`, with `error`). */
  'file.content_updated': z.object({ status: z.enum(['completed', 'failed']), chunk_count: z.number().int().optional(), error: z.string().optional() }),
  'file.renamed': z.object({ filename: z.string() }),
  'file.deleted': z.object({ filename: z.string() }),
  'file.deleted_all': Count,
  // knowledge bases
  'knowledge.created': KnowledgeData,
  'knowledge.updated': KnowledgeData.partial(),
  'knowledge.deleted': KnowledgeData.partial(),
  'knowledge.reset': z.object({ file_count: z.number().int() }),
  'knowledge.reindexed': z.object({ file_count: z.number().int() }),
  /** `user_ids` as for folder.access_updated: who may read it before or after the change. */
  'knowledge.access_updated': z.object({ grant_count: z.number().int(), user_ids: z.array(z.string()).optional() }),
  'knowledge.file.added': KnowledgeFileData,
  'knowledge.file.updated': KnowledgeFileData,
  'knowledge.file.removed': KnowledgeFileData,
  'knowledge.file.moved': KnowledgeFileData,
  'knowledge.directory.created': DirectoryData,
  'knowledge.directory.updated': DirectoryData,
  'knowledge.directory.deleted': DirectoryData.partial(),
  /** An admin's connection to an outside retrieval service (external knowledge bases). */
  'knowledge.external_connection.created': z.object({ name: z.string(), provider: z.string() }),
  'knowledge.external_connection.updated': z.object({ name: z.string(), provider: z.string() }),
  'knowledge.external_connection.deleted': z.object({ name: z.string(), provider: z.string() }),
  // ratings (evaluations): what was rated and how, never the comment or the chat snapshot
  'feedback.created': FeedbackData,
  'feedback.updated': FeedbackData,
  /** One rating (subject feedback, with its data), or many at once (`count`; subject the user, or none for everyone's). */
  'feedback.deleted': FeedbackData.partial().extend({ count: z.number().int().optional() }),
  // workspace prompts (subject: the prompt): its command and name, never its text
  'prompt.created': z.object({ command: z.string(), name: z.string() }),
  /** `version_id`: the active version after the change; `updated_fields`: what the update touched. */
  'prompt.updated': z.object({ command: z.string(), name: z.string(), version_id: z.string().nullable(), updated_fields: z.array(z.string()) }),
  'prompt.deleted': z.object({ command: z.string(), name: z.string() }),
  // workspace models (subject: the model): its name and base model, never its system prompt
  'model.created': z.object({ name: z.string(), base_model_id: z.string().nullable() }),
  /** `updated_fields`: what the change touched (`is_active` for a toggle, `access_grants`…). */
  'model.updated': z.object({ name: z.string(), base_model_id: z.string().nullable(), is_active: z.boolean(), updated_fields: z.array(z.string()) }),
  'model.deleted': z.object({ name: z.string(), base_model_id: z.string().nullable() }),
} as const satisfies Record<`${string}.${string}`, z.ZodType<Record<string, unknown>>>;

export type ChatEventName = keyof typeof CHAT_EVENTS;
/** What an emit site passes as `data` for `N` (before sanitising). */
export type ChatEventData<N extends ChatEventName> = z.input<(typeof CHAT_EVENTS)[N]>;
type Split<N extends string> = N extends `${infer R}.${infer O}` ? { resource: R; operation: O } : never;
/** `memory.created` → `memory`. */
export type ChatEventResource<N extends ChatEventName> = Split<N>['resource'];
/** `memory.created` → `created`. */
export type ChatEventOperation<N extends ChatEventName> = Split<N>['operation'];

export const isChatEventName = (name: string): name is ChatEventName => Object.hasOwn(CHAT_EVENTS, name);

/** An event name's resource and operation (the envelope's fields; the subject is `events.<name>`). */
export function eventParts<N extends ChatEventName>(name: N): { resource: ChatEventResource<N>; operation: ChatEventOperation<N> } {
  const dot = name.indexOf('.');
  return { resource: name.slice(0, dot) as ChatEventResource<N>, operation: name.slice(dot + 1) as ChatEventOperation<N> };
}

/** A received event's data, typed by its name; throws on an unknown name or data that does not match. */
export function parseChatEventData(ev: Pick<ChatEvent, 'event' | 'data'>): { [N in ChatEventName]: { event: N; data: z.output<(typeof CHAT_EVENTS)[N]> } }[ChatEventName] {
  if (!isChatEventName(ev.event)) throw new Error(`unknown chat event ${ev.event}`);
  return { event: ev.event, data: CHAT_EVENTS[ev.event].parse(ev.data) } as never;
}

/** Keys Open WebUI drops from event payloads, and the suffixes it treats the same way. */
const SECRET_KEYS = new Set([
  'password', 'hashed_password', 'password_hash', 'new_password', 'token', 'access_token', 'refresh_token', 'id_token',
  'api_key', 'secret', 'key', 'authorization', 'cookie', 'webhook_token',
]);
const SECRET_SUFFIXES = ['_token', '_secret', '_api_key', '_key'];
const MAX_STRING = 1000;

/** Strip secrets and truncate long strings, recursively (Open WebUI's sanitisation). */
export function sanitiseEventData(value: unknown): unknown {
  if (typeof value === 'string') return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value;
  if (Array.isArray(value)) return value.map(sanitiseEventData);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const lower = k.toLowerCase();
      if (SECRET_KEYS.has(lower) || SECRET_SUFFIXES.some((s) => lower.endsWith(s))) continue;
      out[k] = sanitiseEventData(v);
    }
    return out;
  }
  return value;
}
