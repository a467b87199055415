import { BusError } from '@gatehouse/common';
import { OWUI_ERRORS, type ChatOpRequest } from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type OpContext, type OpReply, type OpRequest, type UserRow } from '../context.ts';
import { hashPassword } from '../auth/passwords.ts';
import { allUsers, deleteUser, emailTaken, groupIdsOf, groupsOfUser, loadUser, primaryAdminId, updateUser, userPage } from './users.store.ts';
import { isUniqueViolation, MORE_ERRORS, profileImagePath, validEmail } from '../auth/accounts.ops.ts';

/**
 * Admin user management (Open WebUI 0.10.2's routers/users.py): the paged list, everyone, one
 * user, update (role, profile, optional new password) and delete. The primary admin (the first
 * sign-up) can be neither demoted nor deleted, and only they may edit their own account; nobody
 * deletes themselves. Bodies carry no password hash or other secret.
 */

/** Open WebUI's PAGE_ITEM_COUNT for GET /api/v1/users/. */
const PAGE_SIZE = 30;
/** Users.is_user_active: seen within the last three minutes. */
const ACTIVE_WINDOW_S = 3 * 60;

/** Open WebUI's UserModel, with the fields this platform does not keep (yet) as null. */
export function userModel(u: UserRow) {
  return {
    id: u.id,
    email: u.email,
    username: null,
    role: u.role,
    name: u.name,
    profile_image_url: u.profile_image_url || profileImagePath(u.id),
    profile_banner_image_url: null,
    bio: u.bio,
    gender: u.gender,
    date_of_birth: u.date_of_birth,
    timezone: null,
    presence_state: null,
    status_emoji: null,
    status_message: null,
    status_expires_at: null,
    info: u.info,
    settings: u.settings,
    oauth: null,
    last_active_at: u.last_active_at,
    updated_at: u.updated_at,
    created_at: u.created_at,
  };
}

/** UserInfoResponse: what GET /users/all lists. */
const userInfo = (u: UserRow) => ({
  id: u.id,
  name: u.name,
  email: u.email,
  role: u.role,
  status_emoji: null,
  status_message: null,
  status_expires_at: null,
});

/** FastAPI's 422 for a query parameter that is not an integer. */
function intQuery(req: ChatOpRequest, name: string): number | undefined {
  const raw = req.query[name];
  if (raw === undefined || raw === '') return undefined;
  if (!/^[+-]?\d+$/.test(raw.trim())) {
    throw new BusError(422, 'validation failed', {
      detail: [{ type: 'int_parsing', loc: ['query', name], msg: 'Input should be a valid integer, unable to parse string as an integer', input: raw }],
    });
  }
  return Number(raw);
}

async function list(req: OpRequest<'users.list'>, ctx: OpContext): Promise<OpReply<'users.list'>> {
  const { rows, total } = await userPage(ctx.sql, {
    page: Math.max(1, intQuery(req, 'page') ?? 1),
    size: PAGE_SIZE,
    query: req.query.query?.trim() || undefined,
    orderBy: req.query.order_by,
    ascending: req.query.direction === 'asc',
  });
  const groupsOf = await groupIdsOf(ctx.sql, rows.map((r) => r.id));
  return ok({ users: rows.map((u) => ({ ...userModel(u), group_ids: groupsOf.get(u.id) ?? [] })), total });
}

async function all(_req: OpRequest<'users.all'>, ctx: OpContext): Promise<OpReply<'users.all'>> {
  const rows = await allUsers(ctx.sql);
  return ok({ users: rows.map(userInfo), total: rows.length });
}

async function get(req: OpRequest<'users.get'>, ctx: OpContext): Promise<OpReply<'users.get'>> {
  const caller = me(ctx);
  const user = await loadUser(ctx.sql, req.params.id ?? '');
  if (!user) fail(400, MORE_ERRORS.userNotFound);
  const isActive = user.last_active_at > now() - ACTIVE_WINDOW_S;
  if (caller.role !== 'admin') {
    // What any signed-in user may see of another (UserActiveResponse's own fields): no email, role
    // or settings.
    return ok({
      id: user.id,
      name: user.name,
      profile_image_url: user.profile_image_url || profileImagePath(user.id),
      status_emoji: null,
      status_message: null,
      status_expires_at: null,
      is_active: isActive,
    });
  }
  const groups = await groupsOfUser(ctx.sql, user.id);
  return ok({ ...userModel(user), groups, is_active: isActive });
}

async function update(req: OpRequest<'users.update'>, ctx: OpContext): Promise<OpReply<'users.update'>> {
  const admin = me(ctx);
  const id = req.params.id ?? '';
  const form = req.body;
  const primary = await primaryAdminId(ctx.sql);
  if (id === primary) {
    // Only the primary admin edits the primary admin, and never out of the admin role.
    if (admin.id !== id) fail(403, MORE_ERRORS.actionProhibited);
    if (form.role !== 'admin') fail(403, MORE_ERRORS.actionProhibited);
  }
  const user = await loadUser(ctx.sql, id);
  if (!user) fail(400, MORE_ERRORS.userNotFound);
  const email = form.email.toLowerCase();
  if (email !== user.email.toLowerCase()) {
    if (!validEmail(email)) fail(400, OWUI_ERRORS.invalidEmail);
    if (await emailTaken(ctx.sql, email, id)) fail(400, OWUI_ERRORS.emailTaken);
  }
  const hashed = form.password ? await hashPassword(form.password) : undefined;
  const t = now();
  const changed: string[] = (['role', 'name', 'email', 'profile_image_url'] as const).filter((k) => (k === 'email' ? email : form[k]) !== user[k]);
  if (hashed) changed.push('password');
  const updated = await ctx.sql
    .begin(async (tx) => {
      const row = await updateUser(tx, id, { role: form.role, name: form.name, email, profile_image_url: form.profile_image_url, passwordHash: hashed }, t);
      // Deleted between the check and here.
      if (!row) fail(400, MORE_ERRORS.userNotFound);
      await ctx.emit(tx, 'user.updated', { actor: admin, subject: { type: 'user', id }, data: { updated_fields: changed } });
      if (row.role !== user.role) {
        await ctx.emit(tx, 'user.role_updated', { actor: admin, subject: { type: 'user', id }, data: { role: row.role, previous_role: user.role } });
      }
      return row;
    })
    .catch((err: unknown) => {
      if (isUniqueViolation(err, 'user_email_key')) fail(400, OWUI_ERRORS.emailTaken);
      throw err;
    });
  return ok(userModel(updated));
}

async function remove(req: OpRequest<'users.delete'>, ctx: OpContext): Promise<OpReply<'users.delete'>> {
  const admin = me(ctx);
  const id = req.params.id ?? '';
  if (id === (await primaryAdminId(ctx.sql))) fail(403, MORE_ERRORS.actionProhibited);
  if (id === admin.id) fail(403, MORE_ERRORS.actionProhibited);
  const user = await loadUser(ctx.sql, id);
  if (!user) fail(400, MORE_ERRORS.userNotFound);
  await ctx.sql.begin(async (tx) => {
    if (!(await deleteUser(tx, id))) fail(400, MORE_ERRORS.userNotFound);
    await ctx.emit(tx, 'user.deleted', { actor: admin, subject: { type: 'user', id }, data: { email: user.email, role: user.role } });
  });
  return ok(true);
}

export const usersOps = opTable({
  'users.list': list,
  'users.all': all,
  'users.get': get,
  'users.update': update,
  'users.delete': remove,
});
