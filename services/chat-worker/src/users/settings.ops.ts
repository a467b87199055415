import { Readable } from 'node:stream';
import { fail, me, now, ok, opTable, type OpContext, type OpReply, type OpRequest, type Tx } from '../context.ts';
import { contentDisposition, replyWithBytes } from '../knowledge/object-reply.ts';
import { MORE_ERRORS, permissionsFor } from '../auth/accounts.ops.ts';
import { loadUser } from './users.store.ts';
import { avatarFromDataUrl, DEFAULT_AVATAR } from './avatar.ts';

/**
 * A user's own settings, info and permissions, and anyone's avatar (Open WebUI 0.10.2
 * routers/users.py `/user/settings`, `/user/info`, `/permissions`, `/{id}/profile/image`, `/{id}/active`;
 * auths.py `/update/timezone`).
 * Settings and info are JSON objects kept on the user's row; an update replaces the top-level keys
 * it sends and keeps the rest, in one statement, so two tabs saving different keys both land.
 */

type Json = Record<string, unknown>;

/** Merge `patch` into the user's `column` (settings or info) and return the result; undefined when the user is gone. */
async function mergeInto(tx: Tx, userId: string, column: 'settings' | 'info', patch: Json): Promise<Json | undefined> {
  const [row] = await tx<{ value: Json }[]>`
    update "user" set ${tx(column)} = coalesce(${tx(column)}, '{}'::jsonb) || ${tx.json(patch as never)}
    where id = ${userId} returning ${tx(column)} as value`;
  return row?.value;
}

async function getSettings(_req: OpRequest<'users.settings.get'>, ctx: OpContext): Promise<OpReply<'users.settings.get'>> {
  const user = await loadUser(ctx.sql, me(ctx).id);
  if (!user) fail(400, MORE_ERRORS.userNotFound);
  return ok(user.settings as OpReply<'users.settings.get'>['body']);
}

async function updateSettings(req: OpRequest<'users.settings.update'>, ctx: OpContext): Promise<OpReply<'users.settings.update'>> {
  const user = me(ctx);
  const form = req.body as Json & { ui?: Json | null };
  // Tool servers the browser calls directly are a permission of their own (features.direct_tool_servers):
  // without it they are left out of what is saved, as Open WebUI does, and the rest is saved.
  if (user.role !== 'admin' && form.ui && 'toolServers' in form.ui) {
    const perms = (await permissionsFor(ctx.sql, user.id)) as { features?: { direct_tool_servers?: unknown } };
    if (perms.features?.direct_tool_servers !== true) {
      const { toolServers: _dropped, ...ui } = form.ui;
      form.ui = ui;
    }
  }
  const settings = await ctx.sql.begin(async (tx) => {
    const value = await mergeInto(tx, user.id, 'settings', form);
    if (!value) fail(400, MORE_ERRORS.userNotFound);
    await ctx.emit(tx, 'user.settings_updated', { actor: user, subject: { type: 'user', id: user.id }, data: { updated_fields: Object.keys(form) } });
    return value;
  });
  return ok(settings as OpReply<'users.settings.update'>['body']);
}

async function getInfo(_req: OpRequest<'users.info.get'>, ctx: OpContext): Promise<OpReply<'users.info.get'>> {
  const user = await loadUser(ctx.sql, me(ctx).id);
  if (!user) fail(400, MORE_ERRORS.userNotFound);
  return ok(user.info);
}

async function updateInfo(req: OpRequest<'users.info.update'>, ctx: OpContext): Promise<OpReply<'users.info.update'>> {
  const user = me(ctx);
  const info = await ctx.sql.begin(async (tx) => {
    const value = await mergeInto(tx, user.id, 'info', req.body);
    if (!value) fail(400, MORE_ERRORS.userNotFound);
    await ctx.emit(tx, 'user.profile_updated', { actor: user, subject: { type: 'user', id: user.id }, data: { updated_fields: ['info'] } });
    return value;
  });
  return ok(info);
}

/** Stored only when it changed (the front end sends it on every load), with its event then. */
async function updateTimezone(req: OpRequest<'auths.updateTimezone'>, ctx: OpContext): Promise<OpReply<'auths.updateTimezone'>> {
  const user = me(ctx);
  await ctx.sql.begin(async (tx) => {
    const changed = await tx`update "user" set timezone = ${req.body.timezone} where id = ${user.id} and timezone is distinct from ${req.body.timezone} returning id`;
    if (changed.length) await ctx.emit(tx, 'user.profile_updated', { actor: user, subject: { type: 'user', id: user.id }, data: { updated_fields: ['timezone'] } });
  });
  return ok({ status: true as const });
}

/** Users.is_user_active: seen within the last three minutes; an unknown id is simply not active. */
const ACTIVE_WINDOW_S = 3 * 60;
async function active(req: OpRequest<'users.active'>, ctx: OpContext): Promise<OpReply<'users.active'>> {
  me(ctx);
  const user = await loadUser(ctx.sql, req.params.id ?? '');
  return ok({ active: !!user && user.last_active_at > now() - ACTIVE_WINDOW_S });
}

async function getPermissions(_req: OpRequest<'users.permissions.get'>, ctx: OpContext): Promise<OpReply<'users.permissions.get'>> {
  return ok(await permissionsFor(ctx.sql, me(ctx).id));
}

async function profileImage(req: OpRequest<'users.profileImage'>, ctx: OpContext): Promise<OpReply<'users.profileImage'>> {
  me(ctx);
  const user = await loadUser(ctx.sql, req.params.id ?? '');
  if (!user) fail(400, MORE_ERRORS.userNotFound);
  const uploaded = avatarFromDataUrl(user.profile_image_url ?? '');
  if (uploaded) {
    return replyWithBytes(ctx.blobs.bus, Readable.from([uploaded.bytes]), {
      contentType: uploaded.contentType,
      disposition: contentDisposition('inline', `image.${uploaded.ext}`),
    });
  }
  return replyWithBytes(ctx.blobs.bus, Readable.from([DEFAULT_AVATAR]), { contentType: 'image/svg+xml', disposition: contentDisposition('inline', 'user.svg') });
}

export const userSettingsOps = opTable({
  'users.settings.get': getSettings,
  'users.settings.update': updateSettings,
  'users.info.get': getInfo,
  'users.info.update': updateInfo,
  'users.permissions.get': getPermissions,
  'users.active': active,
  'auths.updateTimezone': updateTimezone,
  'users.profileImage': profileImage,
});
