import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { atLeast, folderAccess, stripNul } from '../access.ts';
import { insertChat, syncMessages, type ChatRow } from './chats.store.ts';
import { fail, type Tx, type UserRow } from '../context.ts';
import { permissionsFor } from '../auth/accounts.ops.ts';
import { setImportedColumns } from './sharing.store.ts';

/**
 * Creating chats from documents the caller brings (import) or copies (clone): Open WebUI's
 * import_chats — a new id, the title from `chat.title` ("New Chat" without one), meta, pinned,
 * archived, folder and timestamps as given — with the history mirrored into chat_message rows in
 * the same transaction (syncMessages), so an imported chat can be continued like any other.
 */

export interface ImportedChat {
  chat: Record<string, unknown>;
  folder_id?: string | null | undefined;
  meta?: Record<string, unknown> | null | undefined;
  pinned?: boolean | null | undefined;
  archived?: boolean | null | undefined;
  created_at?: number | null | undefined;
  updated_at?: number | null | undefined;
}

/**
 * Open WebUI's chat.import permission (USER_PERMISSIONS_CHAT_IMPORT, on unless a group setting
 * turns it off): clone and import need it, admins always have it; without it, its 403.
 */
export async function requireImport(sql: Sql, user: UserRow): Promise<void> {
  if (user.role === 'admin') return;
  const chat = (await permissionsFor(sql, user.id)).chat as Record<string, unknown> | undefined;
  if (chat?.import === false) fail(403, OWUI_ERRORS.accessProhibited);
}

/** Open WebUI's title rule for imports: `chat.title` as given; a non-string one is its 400. */
function importTitle(chat: Record<string, unknown>): string {
  if (!('title' in chat)) return 'New Chat';
  if (typeof chat.title !== 'string') fail(400, OWUI_ERRORS.default);
  return chat.title;
}

/**
 * Insert one chat for `user` in `tx`. A folder the caller may not write to (gone, someone else's,
 * shared read-only) is dropped rather than stored: the chat lands at the top level, where the
 * caller can still see it.
 */
export async function importChat(tx: Tx, user: UserRow, form: ImportedChat, t: number): Promise<ChatRow> {
  const chat = stripNul(form.chat);
  const title = importTitle(chat);
  let folderId = form.folder_id ?? null;
  if (folderId !== null) {
    const found = await folderAccess(tx as unknown as Sql, user, folderId);
    if (!found || !atLeast(found.access, 'write')) folderId = null;
  }
  const id = randomUUID();
  const created = form.created_at ?? t;
  await insertChat(tx, { id, userId: user.id, folderId, title, chat }, created);
  const row = await setImportedColumns(tx, id, {
    meta: stripNul(form.meta ?? {}),
    pinned: form.pinned ?? false,
    archived: form.archived ?? false,
    updatedAt: form.updated_at ?? t,
  });
  await syncMessages(tx, id, user.id, chat);
  return row;
}

/** Open WebUI's clone document: the source's JSON marked with where it came from, retitled. */
export function cloneDocument(source: { id: string; title: string; chat: Record<string, unknown> }, title?: string | null): Record<string, unknown> {
  const history = source.chat.history;
  const currentId = history && typeof history === 'object' && !Array.isArray(history) ? ((history as Record<string, unknown>).currentId ?? null) : null;
  return { ...source.chat, originalChatId: source.id, branchPointMessageId: currentId, title: title ? title : `Clone of ${source.title}` };
}
