import { z } from 'zod';
import { requestContract } from '../catalog.ts';

/**
 * The chat platform on the bus. The edge authenticates (JWT, revocation) and sends every request
 * as one envelope to `chat.<resource>.<verb>`; the chat worker loads the user named by the
 * verified identity, checks the role the operation needs, and answers with the JSON body (and
 * status) the edge sends back as it is.
 */

/** Who the edge verified. Built by the edge only; inbound headers never reach it. */
export const ChatIdentity = z.object({
  userId: z.string(),
  /** The token's id, so sign-out can name what it revoked. */
  jti: z.string(),
  /** Token expiry (epoch seconds), null when the token never expires. */
  expiresAt: z.number().nullable(),
});
export type ChatIdentity = z.infer<typeof ChatIdentity>;

export const ChatOpRequest = z.object({
  /** Null only for the operations whose auth is `none` (sign-in, sign-up…). */
  identity: ChatIdentity.nullable(),
  /** Path parameters (`{id}`…) as sent. */
  params: z.record(z.string(), z.string()),
  /** Query parameters, first value of each. */
  query: z.record(z.string(), z.string()),
  /** The JSON body, already validated by the edge against the route's form. */
  body: z.unknown(),
  /** The client as the edge saw it (events record it; rate limits live at the edge). */
  client: z.object({ ip: z.string(), userAgent: z.string() }),
});
export type ChatOpRequest = z.infer<typeof ChatOpRequest>;

export const ChatOpReply = z.object({
  /** HTTP status when not 200. */
  status: z.number().int().optional(),
  body: z.unknown(),
  /**
   * Set by sign-in / sign-up: the edge mints a session token for this user, adds
   * `token`, `token_type` and `expires_at` to the body and sets the `token` cookie. `expiresIn`
   * is the JWT_EXPIRES_IN setting in force (`-1` = never, else a duration like `4w`).
   */
  issueSession: z.object({ userId: z.string(), expiresIn: z.string() }).optional(),
});
export type ChatOpReply = z.infer<typeof ChatOpReply>;

/**
 * Who may call an operation. The edge checks the token for everything but `none`; the worker
 * checks the role: `any` admits pending users (Open WebUI's get_current_user), `verified` is
 * role user|admin (get_verified_user), `admin` is role admin (get_admin_user).
 */
export type ChatAuth = 'none' | 'any' | 'verified' | 'admin';

/** Operation → who may call it. One bus subject each: `chat.<op>`. */
export const CHAT_OPS = {
  // accounts and sessions
  'auths.signin': 'none',
  'auths.signup': 'none',
  'auths.signout': 'any',
  'auths.session': 'any',
  'auths.add': 'admin',
  'auths.updateProfile': 'verified',
  'auths.updatePassword': 'verified',
  'auths.adminDetails': 'any',
  'auths.adminConfig.get': 'admin',
  'auths.adminConfig.set': 'admin',
  // admin user management
  'users.list': 'admin',
  'users.all': 'admin',
  'users.get': 'verified',
  'users.update': 'admin',
  'users.delete': 'admin',
  // groups
  'groups.list': 'verified',
  'groups.create': 'admin',
  'groups.get': 'admin',
  'groups.update': 'admin',
  'groups.users': 'admin',
  'groups.addUsers': 'admin',
  'groups.removeUsers': 'admin',
  'groups.delete': 'admin',
  // memories
  'memories.list': 'verified',
  'memories.add': 'verified',
  'memories.batchUpdate': 'verified',
  'memories.query': 'verified',
  'memories.search': 'verified',
  'memories.paths': 'verified',
  'memories.path': 'verified',
  'memories.reset': 'verified',
  'memories.deleteAll': 'verified',
  'memories.update': 'verified',
  'memories.delete': 'verified',
  // folders and sharing
  'folders.list': 'verified',
  'folders.create': 'verified',
  'folders.shared': 'verified',
  'folders.get': 'verified',
  'folders.update': 'verified',
  'folders.updateParent': 'verified',
  'folders.updateExpanded': 'verified',
  'folders.updateAccess': 'verified',
  'folders.sharedChats': 'verified',
  'folders.delete': 'verified',
  // chats (/api/v1/chats)
  'chats.list': 'verified',
  'chats.create': 'verified',
  'chats.get': 'verified',
  'chats.update': 'verified',
  'chats.delete': 'verified',
  'chats.deleteAll': 'verified',
  'chats.pinned': 'verified',
  'chats.pinnedStatus': 'verified',
  'chats.pin': 'verified',
  'chats.archived': 'verified',
  'chats.allArchived': 'verified',
  'chats.archive': 'verified',
  'chats.archiveAll': 'verified',
  'chats.unarchiveAll': 'verified',
  'chats.updateFolder': 'verified',
  'chats.byFolder': 'verified',
  'chats.config.get': 'admin',
  'chats.config.set': 'admin',
  'chats.compact': 'verified',
  // chat search and tags
  'chats.search': 'verified',
  'chats.tagged': 'verified',
  'chats.allTags': 'verified',
  'chats.tags': 'verified',
  'chats.addTag': 'verified',
  'chats.deleteTag': 'verified',
  'chats.deleteAllTags': 'verified',
  // models (Open WebUI's main.py /api/models)
  'models.list': 'verified',
} as const satisfies Record<string, ChatAuth>;
export type ChatOp = keyof typeof CHAT_OPS;

export const chatContracts = Object.fromEntries(
  Object.keys(CHAT_OPS).map((op) => [op, requestContract(`chat.${op}`, 1, ChatOpRequest, ChatOpReply)]),
) as Record<ChatOp, ReturnType<typeof requestContract<typeof ChatOpRequest, typeof ChatOpReply>>>;
