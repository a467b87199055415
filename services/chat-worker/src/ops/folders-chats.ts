import { randomUUID } from 'node:crypto';
import { BusError } from '@gatehouse/common';
import { ChatForm, OWUI_ERRORS } from '@gatehouse/contracts';
import { fail, me, now, ok, parseBody, type OpTable } from '../context.ts';
import { atLeast, folderAccess, stripNul } from '../access.ts';

/**
 * The two chat routes folders need before full chat CRUD lands (Open WebUI 0.10.2
 * routers/chats.py): create a chat (optionally in a folder, one's own or one shared with write)
 * and open one (owner, admin, or anyone who can read its folder — then marked read-only).
 */
interface ChatRow {
  id: string;
  user_id: string;
  folder_id: string | null;
  title: string;
  chat: Record<string, unknown>;
  meta: Record<string, unknown>;
  share_id: string | null;
  archived: boolean;
  pinned: boolean;
  created_at: number;
  updated_at: number;
}

/** ChatResponse, in Open WebUI's field order. */
function chatResponse(c: ChatRow) {
  return {
    id: c.id,
    user_id: c.user_id,
    title: c.title,
    chat: c.chat,
    updated_at: c.updated_at,
    created_at: c.created_at,
    share_id: c.share_id,
    archived: c.archived,
    pinned: c.pinned,
    meta: c.meta,
    folder_id: c.folder_id,
  };
}

export const chatsOps: OpTable = {
  'chats.create': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(parseBody(ChatForm, req.body));
    const rawTitle = form.chat.title;
    if (rawTitle !== undefined && typeof rawTitle !== 'string') {
      throw new BusError(422, 'validation failed', {
        detail: [{ type: 'string_type', loc: ['body', 'chat', 'title'], msg: 'Input should be a valid string', input: rawTitle }],
      });
    }
    const folderId = form.folder_id ?? null;
    if (folderId !== null) {
      // Open WebUI: a folder that is neither the caller's nor shared with them for write is 404,
      // read-only sharing included (nothing is created).
      const found = await folderAccess(ctx.sql, user, folderId);
      if (!found || !atLeast(found.access, 'write')) fail(404, OWUI_ERRORS.notFound);
    }
    const id = randomUUID();
    const t = now();
    const chat = await ctx.sql.begin(async (tx) => {
      // Hold the folder (if any) so a delete cannot slip in between the check and the insert.
      if (folderId !== null) {
        const [still] = await tx`select id from folder where id = ${folderId} for key share`;
        if (!still) fail(404, OWUI_ERRORS.notFound);
      }
      const [row] = await tx<ChatRow[]>`
        insert into chat (id, user_id, folder_id, title, chat, meta, share_id, archived, pinned, created_at, updated_at)
        values (${id}, ${user.id}, ${folderId}, ${rawTitle ?? 'New Chat'}, ${tx.json(form.chat as never)}, ${tx.json({})},
          null, false, false, ${t}, ${t})
        returning *`;
      await ctx.emit(tx, {
        event: 'chat.created',
        actor: user,
        subject: { type: 'chat', id },
        data: { title: row!.title, folder_id: folderId },
      });
      return row!;
    });
    return ok(chatResponse(chat));
  },

  'chats.get': async (req, ctx) => {
    const user = me(ctx);
    const [chat] = await ctx.sql<ChatRow[]>`select * from chat where id = ${req.params.id ?? ''}`;
    if (chat && chat.user_id === user.id) return ok({ ...chatResponse(chat), readonly: false });
    // Admins read any chat (Open WebUI's ENABLE_ADMIN_CHAT_ACCESS default); others need read on
    // the chat's folder. Either way it is read-only, and a refusal is a 404, never a 401 (a 401
    // makes Open WebUI's front end sign the user out — the 0.10.1 fix).
    let readable = Boolean(chat && user.role === 'admin');
    if (chat && !readable && chat.folder_id) {
      const found = await folderAccess(ctx.sql, user, chat.folder_id);
      readable = Boolean(found && atLeast(found.access, 'read'));
    }
    if (!chat || !readable) fail(404, OWUI_ERRORS.notFound);
    return ok({ ...chatResponse(chat), readonly: true });
  },
};
