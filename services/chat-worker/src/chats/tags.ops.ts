import type { Sql } from 'postgres';
import { BusError } from '@gatehouse/common';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { fail, me, ok, opTable, type Tx, type UserRow } from '../context.ts';
import { queryInt, stripNul } from '../access.ts';
import { chatTitleId, ownChatRow, searchChats, type ChatRow, type ChatSearch } from './chats.store.ts';
import { dropUnusedTags, ensureTag, tagModels, taggedChats, userTags, writeChatTags } from './tags.store.ts';

/**
 * Chat search and chat tags (Open WebUI 0.10.2 routers/chats.py, models/chats.py, models/tags.py):
 * `GET /search?text=&page=`, `GET /all/tags`, `POST /tags` (chats carrying a tag), and
 * `GET|POST|DELETE /{id}/tags` plus `DELETE /{id}/tags/all` (dropped by Open WebUI before 0.10,
 * kept for older clients).
 *
 * A tag is a row of `tag` per user — id = the name lower-cased with spaces as underscores, name =
 * the spelling it was first added with — and a chat lists its tag ids in `meta.tags`. Only the
 * owner reads or changes a chat's tags (anyone else: 404, as for a missing chat). Adding or
 * removing a tag does not move the chat in lists (updated_at stays, as in Open WebUI). Tag rows
 * nobody uses any more go away through the triggers of infra/migrations/chat/0003_tags.sql, so
 * chat deletes and archives elsewhere keep them right too.
 */

/** Search pages, as the chat lists (Open WebUI: 60). */
const PAGE = 60;
const FILTER_PREFIXES = ['tag:', 'folder:', 'pinned:', 'archived:', 'shared:'];

/** Open WebUI's tag id for a name. */
export const tagId = (name: string): string => name.replaceAll(' ', '_').toLowerCase();

/** The ids a chat's meta lists, in order (nothing when `tags` is missing or not a list). */
export function chatTagIds(meta: Record<string, unknown> | null | undefined): string[] {
  const tags = meta?.tags;
  return Array.isArray(tags) ? tags.filter((t): t is string => typeof t === 'string') : [];
}

/** The caller's own chat (tags are the owner's alone), locked when changing it; else 404. */
async function ownChat(db: Sql | Tx, user: UserRow, id: string, lock = false): Promise<ChatRow> {
  return (await ownChatRow(db, user.id, id, lock)) ?? fail(404, OWUI_ERRORS.notFound);
}

/** A missing required query parameter, as FastAPI reports it. */
function missingQuery(name: string): never {
  throw new BusError(422, 'validation failed', { detail: [{ type: 'missing', loc: ['query', name], msg: 'Field required', input: null }] });
}

/** Open WebUI's folder name comparison: runs of spaces and underscores are one space, case ignored. */
const folderKey = (name: string): string => name.replace(/[\s_]+/g, ' ').trim().toLowerCase();

/**
 * A search text as Open WebUI reads it: lower-cased and trimmed, split on spaces; `tag:<name>`
 * (all must match; `tag:none` = untagged), `folder:<name>` (with sub-folders), `pinned:`,
 * `archived:` and `shared:` `true|false` filter; the other words, joined again, must appear in the
 * title or in a message's content.
 */
function parseSearch(lowered: string): ChatSearch {
  const words = lowered.split(' ');
  const flag = (name: string): boolean | null => (words.includes(`${name}:true`) ? true : words.includes(`${name}:false`) ? false : null);
  return {
    tagIds: words.filter((w) => w.startsWith('tag:')).map((w) => tagId(w.replaceAll('tag:', ''))),
    folders: words.filter((w) => w.startsWith('folder:')).map((w) => folderKey(w.replaceAll('folder:', ''))),
    pinned: flag('pinned'),
    archived: flag('archived'),
    shared: flag('shared'),
    text: words.filter((w) => !FILTER_PREFIXES.some((p) => w.startsWith(p))).join(' '),
  };
}

export const chatTagsOps = opTable({
  /**
   * `GET /search?text=&page=`: the caller's chats (never anyone else's, shared folders included)
   * whose title or any message matches, newest first, 60 a page; archived ones only with
   * `archived:true`. An empty text is the plain list of unarchived chats. Like Open WebUI, a
   * lone `tag:<name>` that finds nothing on page 1 drops that tag's row if no chat uses it.
   */
  'chats.search': async (req, ctx) => {
    const user = me(ctx);
    const raw = req.query.text;
    if (raw === undefined) missingQuery('text');
    const page = queryInt(req.query, 'page', 1) ?? 1;
    const lowered = stripNul(raw).toLowerCase().trim();
    // An empty text parses to no filter at all: the unarchived chats.
    const rows = await searchChats(ctx.sql, user.id, parseSearch(lowered), page, PAGE);
    const words = stripNul(raw).trim().split(' ');
    if (page === 1 && !rows.length && words.length === 1 && words[0]!.startsWith('tag:')) {
      await dropUnusedTags(ctx.sql, user.id, [tagId(words[0]!.replace('tag:', ''))]);
    }
    return ok(rows.map(chatTitleId));
  },

  /** `POST /tags` `{name, skip, limit}`: the caller's chats carrying the tag (archived too). */
  'chats.tagged': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const id = tagId(form.name);
    // Open WebUI applies skip and limit only when they are truthy; a negative one is its SQL error.
    const skip = Math.max(0, form.skip ?? 0);
    const limit = form.limit && form.limit > 0 ? form.limit : null;
    const rows = await taggedChats(ctx.sql, user.id, id, { skip, limit });
    if (!rows.length) await dropUnusedTags(ctx.sql, user.id, [id]);
    return ok(rows.map(chatTitleId));
  },

  /** `GET /all/tags`: every tag row of the caller. */
  'chats.allTags': async (_req, ctx) => {
    const user = me(ctx);
    return ok(await userTags(ctx.sql, user.id));
  },

  'chats.tags': async (req, ctx) => {
    const user = me(ctx);
    const chat = await ownChat(ctx.sql, user, req.params.id ?? '');
    return ok(await tagModels(ctx.sql, user.id, chatTagIds(chat.meta)));
  },

  /** `POST /{id}/tags` `{name}`: add the tag (its row made if new); answers the chat's tags. */
  'chats.addTag': async (req, ctx) => {
    const user = me(ctx);
    const { name } = stripNul(req.body);
    const id = tagId(name);
    if (id === 'none') fail(400, "[ERROR: Tag name cannot be 'None']");
    // Open WebUI would store a tag with an empty id; nothing could show or filter it.
    if (!id.trim()) fail(400, '[ERROR: Tag name cannot be empty]');
    const tags = await ctx.sql.begin(async (tx) => {
      const chat = await ownChat(tx, user, req.params.id ?? '', true);
      const ids = chatTagIds(chat.meta);
      if (ids.includes(id)) return tagModels(tx, user.id, ids);
      await ensureTag(tx, user.id, id, name);
      await writeChatTags(tx, chat, [...ids, id]);
      await ctx.emit(tx, 'chat.tag_added', { actor: user, subject: { type: 'chat', id: chat.id }, data: { tag: name } });
      return tagModels(tx, user.id, [...ids, id]);
    });
    return ok(tags);
  },

  /**
   * `DELETE /{id}/tags` `{name}`: take the tag off the chat; its row goes when no unarchived chat
   * of the caller lists it (checked even when this chat did not, as Open WebUI does). Answers the
   * chat's remaining tags.
   */
  'chats.deleteTag': async (req, ctx) => {
    const user = me(ctx);
    const { name } = stripNul(req.body);
    const id = tagId(name);
    const tags = await ctx.sql.begin(async (tx) => {
      const chat = await ownChat(tx, user, req.params.id ?? '', true);
      const ids = chatTagIds(chat.meta);
      const rest = ids.filter((t) => t !== id);
      if (rest.length !== ids.length) {
        await writeChatTags(tx, chat, rest);
        await ctx.emit(tx, 'chat.tag_removed', { actor: user, subject: { type: 'chat', id: chat.id }, data: { tag: name } });
      }
      await dropUnusedTags(tx, user.id, [id]);
      return tagModels(tx, user.id, rest);
    });
    return ok(tags);
  },

  /** `DELETE /{id}/tags/all`: take every tag off the chat (Open WebUI ≤ 0.6 answered `true`). */
  'chats.deleteAllTags': async (req, ctx) => {
    const user = me(ctx);
    await ctx.sql.begin(async (tx) => {
      const chat = await ownChat(tx, user, req.params.id ?? '', true);
      const ids = chatTagIds(chat.meta);
      if (!ids.length) return;
      const names = new Map((await tagModels(tx, user.id, ids)).map((t) => [t.id, t.name]));
      await writeChatTags(tx, chat, []);
      for (const id of ids) {
        await ctx.emit(tx, 'chat.tag_removed', { actor: user, subject: { type: 'chat', id: chat.id }, data: { tag: names.get(id) ?? id } });
      }
    });
    return ok(true);
  },
});
