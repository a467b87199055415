import { Readable } from 'node:stream';
import type { Sql } from 'postgres';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { queryInt } from '../access.ts';
import { chatResponse, chatTitleId } from './chats.store.ts';
import { fail, me, now, ok, opTable } from '../context.ts';
import { replyWithBytes } from '../knowledge/object-reply.ts';
import { importChat, requireImport } from './import.ts';
import { chatTitlesOf, everyChat, userChatsPage } from './sharing.store.ts';

/**
 * Export and import of chats (Open WebUI 0.10.2 routers/chats.py): the caller's chats streamed as
 * NDJSON, ChatsImportForm back in, and the admin reads of other users' chats behind Open WebUI's
 * ENABLE_ADMIN_EXPORT and ENABLE_ADMIN_CHAT_ACCESS (read from the environment once, in main.ts).
 */

export interface ExportOptions {
  /** ENABLE_ADMIN_EXPORT: `GET /all/db` answers every chat; off, its 401. */
  adminExport: boolean;
  /** ENABLE_ADMIN_CHAT_ACCESS: `GET /list/user/{id}` answers that user's chats; off, its 401. */
  adminChatAccess: boolean;
}

/** Chats per query while exporting (Open WebUI's CHAT_EXPORT_BATCH_SIZE). */
const BATCH = 100;
const PAGE = 60;

/** One ChatResponse per line, read a batch at a time so a large account is never held whole. */
function ndjson(sql: Sql, userId: string): Readable {
  async function* lines() {
    for (let skip = 0; ; skip += BATCH) {
      const rows = await userChatsPage(sql, userId, skip, BATCH);
      if (rows.length) yield Buffer.from(rows.map((r) => `${JSON.stringify(chatResponse(r))}\n`).join(''));
      if (rows.length < BATCH) return;
    }
  }
  return Readable.from(lines());
}

export function chatExportOps(o: ExportOptions) {
  return opTable({
    /** `GET /all`: every chat of the caller (archived ones too), newest first, as application/x-ndjson. */
    'chats.exportAll': async (_req, ctx) => replyWithBytes(ctx.blobs.bus, ndjson(ctx.sql, me(ctx).id), { contentType: 'application/x-ndjson' }),

    /** New chats (new ids) from the form, in order, all or none; answers them as created. */
    'chats.import': async (req, ctx) => {
      const user = me(ctx);
      await requireImport(ctx.sql, user);
      const rows = await ctx.sql.begin(async (tx) => {
        const t = now();
        const created = [];
        for (const form of req.body.chats) created.push(await importChat(tx, user, form, t));
        const chatIds = created.map((c) => c.id);
        await ctx.emit(tx, 'chat.imported', { actor: user, subject: { type: 'chat.import', id: null }, data: { count: chatIds.length, chat_ids: chatIds } });
        return created;
      });
      return ok(rows.map(chatResponse));
    },

    'chats.allDb': async (_req, ctx) => {
      if (!o.adminExport) fail(401, OWUI_ERRORS.accessProhibited);
      return ok((await everyChat(ctx.sql)).map(chatResponse));
    },

    /** `GET /list/user/{user_id}?page=&query=&order_by=&direction=`: that user's chats, archived ones included. */
    'chats.listByUser': async (req, ctx) => {
      if (!o.adminChatAccess) fail(401, OWUI_ERRORS.accessProhibited);
      const page = queryInt(req.query, 'page', 1) ?? 1;
      const { order_by: orderBy, direction } = req.query;
      let order: { orderBy: 'title' | 'created_at' | 'updated_at' | undefined; ascending: boolean } = { orderBy: undefined, ascending: false };
      if (orderBy && direction) {
        if (orderBy !== 'title' && orderBy !== 'created_at' && orderBy !== 'updated_at') fail(400, 'Invalid order_by field');
        const dir = direction.toLowerCase();
        if (dir !== 'asc' && dir !== 'desc') fail(400, 'Invalid direction for ordering');
        order = { orderBy, ascending: dir === 'asc' };
      }
      const rows = await chatTitlesOf(ctx.sql, req.params.user_id ?? '', { text: req.query.query, ...order, skip: (page - 1) * PAGE, limit: PAGE });
      return ok(rows.map(chatTitleId));
    },
  });
}
