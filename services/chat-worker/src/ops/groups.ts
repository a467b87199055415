import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { GroupForm, GroupUpdateForm, OWUI_ERRORS, UserIdsForm } from '@gatehouse/contracts';
import { fail, me, now, ok, parseBody, type OpTable, type Tx } from '../context.ts';
import { queryBool, stripNul } from '../access.ts';

/**
 * Groups (Open WebUI 0.10.2 routers/groups.py): admins create them and manage members; a user
 * lists the groups they belong to (folder sharing grants to groups resolve through membership).
 * Where Open WebUI answers an unknown group id with 401 (which its front end treats as "sign
 * out") or quietly succeeds, this answers 404, as for every unknown id on this platform.
 */
interface GroupRow {
  id: string;
  user_id: string | null;
  name: string;
  description: string;
  data: Record<string, unknown> | null;
  meta: Record<string, unknown> | null;
  permissions: Record<string, unknown> | null;
  created_at: number;
  updated_at: number;
  member_count: number;
}

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

async function loadGroup(sql: Sql | Tx, id: string): Promise<GroupRow | undefined> {
  const [g] = await sql<GroupRow[]>`
    select g.*, (select count(*)::int from group_member m where m.group_id = g.id) as member_count
    from "group" g where g.id = ${id}`;
  return g;
}

async function existingGroup(sql: Sql | Tx, id: string): Promise<GroupRow> {
  return (await loadGroup(sql, id)) ?? fail(404, OWUI_ERRORS.notFound);
}

/** The ids that name existing users, in the order given, once each (Users.get_valid_user_ids). */
async function validUserIds(tx: Tx, ids: readonly string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  if (!unique.length) return [];
  const rows = await tx<{ id: string }[]>`select id from "user" where id = any(${tx.array(unique)}::text[])`;
  const known = new Set(rows.map((r) => r.id));
  return unique.filter((id) => known.has(id));
}

export const groupsOps = {
  'groups.list': async (req, ctx) => {
    const user = me(ctx);
    const share = req.query.share === undefined ? undefined : queryBool(req.query, 'share', true);
    // Admins see every group; users see their own, or with ?share= the groups they may share to
    // (Open WebUI's filter: data.config.share unset/true → anyone, "members" → members only).
    const shareValue = ctx.sql`lower(coalesce(g.data -> 'config' ->> 'share', ''))`;
    const isMember = ctx.sql`g.id in (select group_id from group_member where user_id = ${user.id})`;
    const where =
      user.role === 'admin'
        ? ctx.sql`true`
        : share === undefined
          ? isMember
          : share
            ? ctx.sql`(g.data is null or g.data -> 'config' ->> 'share' is null or ${shareValue} in ('true', '1') or (${shareValue} = 'members' and ${isMember}))`
            : ctx.sql`(g.data is not null and ${shareValue} = 'false')`;
    const rows = await ctx.sql<GroupRow[]>`
      select g.*, (select count(*)::int from group_member m where m.group_id = g.id) as member_count
      from "group" g where ${where} order by g.updated_at desc, g.id`;
    return ok(rows.map(groupResponse));
  },

  'groups.create': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(parseBody(GroupForm, req.body));
    const data = { ...(form.data ?? {}) } as Record<string, unknown>;
    const config = { ...((data.config as Record<string, unknown> | undefined) ?? {}) };
    if (!('share' in config)) config.share = DEFAULT_SHARE;
    data.config = config;
    const id = randomUUID();
    const t = now();
    const group = await ctx.sql.begin(async (tx) => {
      await tx`insert into "group" (id, user_id, name, description, data, meta, permissions, created_at, updated_at)
        values (${id}, ${user.id}, ${form.name}, ${form.description}, ${tx.json(data as never)}, null,
          ${form.permissions == null ? null : tx.json(form.permissions as never)}, ${t}, ${t})`;
      await ctx.emit(tx, 'group.created', { actor: user, subject: { type: 'group', id }, data: { name: form.name } });
      return existingGroup(tx, id);
    });
    return ok(groupResponse(group));
  },

  'groups.get': async (req, ctx) => ok(groupResponse(await existingGroup(ctx.sql, req.params.id ?? ''))),

  'groups.update': async (req, ctx) => {
    const user = me(ctx);
    const form = stripNul(parseBody(GroupUpdateForm, req.body));
    const id = req.params.id ?? '';
    const group = await ctx.sql.begin(async (tx) => {
      const before = await existingGroup(tx, id);
      // Open WebUI writes only the fields that are not null (model_dump(exclude_none=True)).
      const name = form.name ?? before.name;
      const description = form.description ?? before.description;
      await tx`update "group" set
          name = ${name},
          description = ${description},
          data = ${form.data == null ? tx`data` : tx.json(form.data as never)},
          permissions = ${form.permissions == null ? tx`permissions` : tx.json(form.permissions as never)},
          updated_at = ${now()}
        where id = ${id}`;
      if (form.user_ids != null) {
        const members = await validUserIds(tx, form.user_ids);
        await tx`delete from group_member where group_id = ${id}`;
        const t = now();
        if (members.length) {
          await tx`insert into group_member (group_id, user_id, created_at)
            select ${id}, u.id, ${t} from "user" u where u.id = any(${tx.array(members)}::text[])`;
        }
      }
      await ctx.emit(tx, 'group.updated', { actor: user, subject: { type: 'group', id }, data: { name } });
      return existingGroup(tx, id);
    });
    return ok(groupResponse(group));
  },

  'groups.users': async (req, ctx) => {
    const group = await existingGroup(ctx.sql, req.params.id ?? '');
    // UserInfoResponse: the status fields are part of the shape; this platform has no user status.
    const rows = await ctx.sql<{ id: string; name: string; email: string; role: string }[]>`
      select u.id, u.name, u.email, u.role from group_member m join "user" u on u.id = m.user_id
      where m.group_id = ${group.id} order by m.created_at, u.name, u.id`;
    return ok(rows.map((u) => ({ status_emoji: null, status_message: null, status_expires_at: null, id: u.id, name: u.name, email: u.email, role: u.role })));
  },

  'groups.addUsers': async (req, ctx) => {
    const user = me(ctx);
    const form = parseBody(UserIdsForm, req.body);
    const id = req.params.id ?? '';
    const group = await ctx.sql.begin(async (tx) => {
      await existingGroup(tx, id);
      // Unknown user ids are dropped, as Open WebUI does; the event names only the real ones.
      const userIds = await validUserIds(tx, form.user_ids ?? []);
      const t = now();
      if (userIds.length) {
        await tx`insert into group_member (group_id, user_id, created_at)
          select ${id}, u.id, ${t} from "user" u where u.id = any(${tx.array(userIds)}::text[])
          on conflict do nothing`;
      }
      await tx`update "group" set updated_at = ${t} where id = ${id}`;
      await ctx.emit(tx, 'group.member_added', { actor: user, subject: { type: 'group', id }, data: { user_ids: userIds } });
      return existingGroup(tx, id);
    });
    return ok(groupResponse(group));
  },

  'groups.removeUsers': async (req, ctx) => {
    const user = me(ctx);
    const form = parseBody(UserIdsForm, req.body);
    const id = req.params.id ?? '';
    const group = await ctx.sql.begin(async (tx) => {
      await existingGroup(tx, id);
      const userIds = [...new Set(form.user_ids ?? [])];
      if (userIds.length) {
        await tx`delete from group_member where group_id = ${id} and user_id = any(${tx.array(userIds)}::text[])`;
        await tx`update "group" set updated_at = ${now()} where id = ${id}`;
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
      await tx`delete from "group" where id = ${id}`;
      // Grants to a group that no longer exists would only confuse the sharing dialogs.
      await tx`delete from access_grant where principal_type = 'group' and principal_id = ${id}`;
      await ctx.emit(tx, 'group.deleted', { actor: user, subject: { type: 'group', id }, data: { name: group.name } });
    });
    return ok(true);
  },
} satisfies OpTable;
