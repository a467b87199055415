import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type Tx } from '../context.ts';
import { queryBool, stripNul } from '../access.ts';
import {
  addMembers,
  deleteGroup,
  groupMembers,
  insertGroup,
  listGroups,
  loadGroup,
  removeMembers,
  replaceMembers,
  touchGroup,
  updateGroup,
  validUserIds,
  type GroupRow,
} from './groups.store.ts';

/**
 * Groups (Open WebUI 0.10.2 routers/groups.py): admins create them and manage members; a user
 * lists the groups they belong to (folder sharing grants to groups resolve through membership).
 * Where Open WebUI answers an unknown group id with 401 (which its front end treats as "sign
 * out") or quietly succeeds, this answers 404, as for every unknown id on this platform.
 */
/** Open WebUI's DEFAULT_GROUP_SHARE_PERMISSION: only members may share to a new group. */
const DEFAULT_SHARE = 'members';

/** GroupResponse: GroupModel + member_count. */
function groupResponse(g: GroupRow) {
  return {
    id: g.id,
    user_id: g.user_id,
    name: g.name,
    description: g.description,
    data: g.data,
    meta: g.meta,
    permissions: g.permissions,
    created_at: g.created_at,
    updated_at: g.updated_at,
    member_count: g.member_count,
  };
}

async function existingGroup(db: Sql | Tx, id: string): Promise<GroupRow> {
  return (await loadGroup(db, id)) ?? fail(404, OWUI_ERRORS.notFound);
}

export const groupsOps = opTable({
  'groups.list': async (req, ctx) => {
    const user = me(ctx);
    const share = req.query.share === undefined ? undefined : queryBool(req.query, 'share', true);
    return ok((await listGroups(ctx.sql, user, share)).map(groupResponse));
  },

  'groups.create': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const data = { ...(form.data ?? {}) } as Record<string, unknown>;
    const config = { ...((data.config as Record<string, unknown> | undefined) ?? {}) };
    if (!('share' in config)) config.share = DEFAULT_SHARE;
    data.config = config;
    const id = randomUUID();
    const t = now();
    const group = await ctx.sql.begin(async (tx) => {
      await insertGroup(tx, { id, userId: user.id, name: form.name, description: form.description, data, permissions: form.permissions }, t);
      await ctx.emit(tx, 'group.created', { actor: user, subject: { type: 'group', id }, data: { name: form.name } });
      return existingGroup(tx, id);
    });
    return ok(groupResponse(group));
  },

  'groups.get': async (req, ctx) => ok(groupResponse(await existingGroup(ctx.sql, req.params.id ?? ''))),

  'groups.update': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(req.body);
    const id = req.params.id ?? '';
    const group = await ctx.sql.begin(async (tx) => {
      const before = await existingGroup(tx, id);
      // Open WebUI writes only the fields that are not null (model_dump(exclude_none=True)).
      const name = form.name ?? before.name;
      const description = form.description ?? before.description;
      await updateGroup(tx, id, { name, description, data: form.data, permissions: form.permissions }, now());
      let affected: string[] | undefined;
      if (form.user_ids != null) {
        const members = await validUserIds(tx, form.user_ids);
        // Whoever was or is a member: their folder grants through the group may have changed.
        affected = [...new Set([...(await groupMembers(tx, id)).map((m) => m.id), ...members])].sort();
        await replaceMembers(tx, id, members, now());
      }
      await ctx.emit(tx, 'group.updated', { actor: user, subject: { type: 'group', id }, data: { name, ...(affected ? { user_ids: affected } : {}) } });
      return existingGroup(tx, id);
    });
    return ok(groupResponse(group));
  },

  'groups.users': async (req, ctx) => {
    const group = await existingGroup(ctx.sql, req.params.id ?? '');
    // UserInfoResponse: the status fields are part of the shape; this platform has no user status.
    const rows = await groupMembers(ctx.sql, group.id);
    return ok(rows.map((u) => ({ status_emoji: null, status_message: null, status_expires_at: null, id: u.id, name: u.name, email: u.email, role: u.role })));
  },

  'groups.addUsers': async (req, ctx) => {
    const user = me(ctx);
    const form = req.body;
    const id = req.params.id ?? '';
    const group = await ctx.sql.begin(async (tx) => {
      await existingGroup(tx, id);
      // Unknown user ids are dropped, as Open WebUI does; the event names only the real ones.
      const userIds = await validUserIds(tx, form.user_ids ?? []);
      const t = now();
      await addMembers(tx, id, userIds, t);
      await touchGroup(tx, id, t);
      await ctx.emit(tx, 'group.member_added', { actor: user, subject: { type: 'group', id }, data: { user_ids: userIds } });
      return existingGroup(tx, id);
    });
    return ok(groupResponse(group));
  },

  'groups.removeUsers': async (req, ctx) => {
    const user = me(ctx);
    const form = req.body;
    const id = req.params.id ?? '';
    const group = await ctx.sql.begin(async (tx) => {
      await existingGroup(tx, id);
      const userIds = [...new Set(form.user_ids ?? [])];
      if (userIds.length) {
        await removeMembers(tx, id, userIds);
        await touchGroup(tx, id, now());
      }
      await ctx.emit(tx, 'group.member_removed', { actor: user, subject: { type: 'group', id }, data: { user_ids: userIds } });
      return existingGroup(tx, id);
    });
    return ok(groupResponse(group));
  },

  'groups.delete': async (req, ctx) => {
    const user = me(ctx);
    const id = req.params.id ?? '';
    await ctx.sql.begin(async (tx) => {
      const group = await existingGroup(tx, id);
      const members = (await groupMembers(tx, id)).map((m) => m.id).sort();
      await deleteGroup(tx, id);
      await ctx.emit(tx, 'group.deleted', { actor: user, subject: { type: 'group', id }, data: { name: group.name, ...(members.length ? { user_ids: members } : {}) } });
    });
    return ok(true);
  },
});
