import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { AdminConfigForm, OWUI_ERRORS, type ChatOpReplyBody } from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type OpContext, type OpReply, type OpRequest, type Tx, type UserRow } from '../context.ts';
import {
  claimFirstUser,
  emailTaken,
  groupPermissionsOf,
  hasUsers,
  insertUser,
  joinGroupIfExists,
  loadUser,
  nameByEmail,
  passwordHashOf,
  primaryAdminId,
  recordSignin,
  setPasswordHash,
  updateProfile as updateProfileRow,
  userWithPasswordHash,
  type NewAccount,
} from '../users/users.store.ts';
import { loadSettings, saveSettings, type ChatSettings } from '../config/settings.ts';
import { hashPassword, needsRehash, verifyAgainstPlaceholder, verifyPassword } from './passwords.ts';

/**
 * Accounts and sessions (Open WebUI 0.10.2's routers/auths.py): sign-in, sign-up, admin-added
 * users, sign-out, the session user, profile and password changes, admin details and the admin
 * config. The worker never mints tokens: sign-in, sign-up and add reply with `issueSession` and the
 * edge signs the JWT, adds `token`/`token_type`/`expires_at` and sets the cookie. Password hashes
 * are read only here and never leave this module.
 */

/** Open WebUI messages used here beyond the shared OWUI_ERRORS (its constants.py). */
export const MORE_ERRORS = {
  actionProhibited: 'The requested action has been restricted as a security measure.',
  incorrectPassword: 'The password provided is incorrect. Please check for typos and try again.',
  userNotFound: "We could not find what you're looking for :/",
} as const;

/**
 * Open WebUI's DEFAULT_USER_PERMISSIONS (config.py, every USER_PERMISSIONS_* variable at its
 * default). Admins get the same object, as there.
 */
export const DEFAULT_USER_PERMISSIONS = {
  workspace: {
    models: false, knowledge: false, prompts: false, tools: false, skills: false,
    models_import: false, models_export: false, prompts_import: false, prompts_export: false, tools_import: false, tools_export: false,
  },
  sharing: {
    models: false, public_models: false, knowledge: false, public_knowledge: false, prompts: false, public_prompts: false,
    tools: false, public_tools: false, skills: false, public_skills: false, notes: false, public_notes: false,
    public_chats: false, public_calendars: false,
  },
  access_grants: { allow_users: true },
  chat: {
    controls: true, valves: true, system_prompt: true, params: true, file_upload: true, web_upload: true, delete: true,
    delete_message: true, continue_response: true, regenerate_response: true, rate_response: true, edit: true, share: true,
    export: true, stt: true, tts: true, call: true, multiple_models: true, temporary: true, temporary_enforced: false,
  },
  features: {
    api_keys: false, notes: true, folders: true, channels: true, direct_tool_servers: false, web_search: true,
    image_generation: true, code_interpreter: true, memories: true, automations: false, calendar: true,
  },
  settings: { interface: true },
};

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Open WebUI's combine_permissions: a group can only grant more (`a or b`), never take away. */
function combinePermissions(into: Json, group: Json): Json {
  for (const [k, v] of Object.entries(group)) {
    if (isObject(v)) into[k] = combinePermissions(isObject(into[k]) ? into[k] : {}, v);
    else into[k] = k in into ? into[k] || v : v;
  }
  return into;
}

/** get_permissions: the defaults, widened by the permissions of every group the user is in. */
export async function permissionsFor(db: Sql, userId: string): Promise<Json> {
  const out = structuredClone(DEFAULT_USER_PERMISSIONS) as Json;
  for (const p of await groupPermissionsOf(db, userId)) if (isObject(p)) combinePermissions(out, p);
  return out;
}

/** Open WebUI's validate_email_format: `x@y.z` at the start (the rest is not checked), or `…@localhost`. */
export function validEmail(email: string): boolean {
  return email.endsWith('@localhost') || /^[^@]+@[^@]+\.[^@]+/.test(email);
}

export const ROLES = ['admin', 'user', 'pending'] as const;
export type Role = (typeof ROLES)[number];
export const isRole = (r: unknown): r is Role => typeof r === 'string' && (ROLES as readonly string[]).includes(r);

/** The profile image route Open WebUI puts in sign-in answers. */
export const profileImagePath = (id: string) => `/api/v1/users/${id}/profile/image`;

export const asSql = (tx: Tx): Sql => tx as unknown as Sql;

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint_name?: string };
  return e?.code === '23505' && (!constraint || e.constraint_name === constraint);
}

/** Open WebUI's apply_default_group_assignment: new accounts join DEFAULT_GROUP_ID when it exists. */
async function joinDefaultGroup(tx: Tx, settings: ChatSettings, userId: string, t: number): Promise<void> {
  if (settings.DEFAULT_GROUP_ID) await joinGroupIfExists(tx, settings.DEFAULT_GROUP_ID, userId, t);
}

async function newUser(tx: Tx, a: NewAccount, t: number): Promise<UserRow> {
  try {
    return await insertUser(tx, a, t);
  } catch (err) {
    // Two sign-ups with the same address at once: the unique index decides, the loser hears "taken".
    if (isUniqueViolation(err, 'user_email_key')) fail(400, OWUI_ERRORS.emailTaken);
    throw err;
  }
}

/** The body of a sign-in/sign-up answer, before the edge adds the token fields. */
async function sessionBody(db: Sql, u: UserRow): Promise<ChatOpReplyBody<'auths.signin'>> {
  return {
    id: u.id,
    email: u.email,
    name: u.name,
    role: u.role,
    profile_image_url: profileImagePath(u.id),
    permissions: await permissionsFor(db, u.id),
  };
}

const sessionReply = async (db: Sql, u: UserRow, settings: ChatSettings): Promise<OpReply<'auths.signin'>> => ({
  body: await sessionBody(db, u),
  issueSession: { userId: u.id, expiresIn: settings.JWT_EXPIRES_IN },
});

/** Checks shared by sign-up and admin add, in Open WebUI's order: format, then duplicate. */
async function checkNewEmail(db: Sql, email: string): Promise<void> {
  if (!validEmail(email)) fail(400, OWUI_ERRORS.invalidEmail);
  if (await emailTaken(db, email)) fail(400, OWUI_ERRORS.emailTaken);
}

const subjectUser = (u: { id: string }) => ({ type: 'user', id: u.id });

// ---- handlers ------------------------------------------------------------------------------

async function signin(req: OpRequest<'auths.signin'>, ctx: OpContext): Promise<OpReply<'auths.signin'>> {
  const form = req.body;
  const row = await userWithPasswordHash(ctx.sql, form.email);
  // Unknown email and wrong password take the same time and give the same answer.
  const valid = row ? await verifyPassword(form.password, row.password_hash) : await verifyAgainstPlaceholder(form.password);
  if (!row || !valid) fail(400, OWUI_ERRORS.invalidCredentials);
  const { password_hash: stored, ...user } = row;
  const rehash = needsRehash(stored) ? await hashPassword(form.password) : undefined;
  const settings = await ctx.settings();
  const t = now();
  await ctx.sql.begin(async (tx) => {
    await recordSignin(tx, user.id, t, rehash ? { from: stored, to: rehash } : undefined);
    await ctx.emit(tx, 'auth.login', { actor: user, subject: subjectUser(user), source: 'password', data: { auth_method: 'password' } });
  });
  return sessionReply(ctx.sql, user, settings);
}

async function signup(req: OpRequest<'auths.signup'>, ctx: OpContext): Promise<OpReply<'auths.signup'>> {
  const form = req.body;
  const settings = await ctx.settings();
  // The first account is never gated on ENABLE_SIGNUP (Open WebUI 0.10: it may be stale from a reset).
  if ((await hasUsers(ctx.sql)) && !settings.ENABLE_SIGNUP) fail(403, OWUI_ERRORS.signupDisabled);
  const email = form.email.toLowerCase();
  await checkNewEmail(ctx.sql, email);
  const passwordHash = await hashPassword(form.password);
  const t = now();
  const user = await ctx.sql.begin(async (tx) => {
    const id = randomUUID();
    // One row decides who is first: concurrent first sign-ups block here on the primary key and
    // exactly one insert returns a row. The others then see the committed ENABLE_SIGNUP=false.
    const won = await claimFirstUser(tx, id);
    let role: Role = settings.DEFAULT_USER_ROLE;
    if (won) role = 'admin';
    else if (!(await loadSettings(asSql(tx))).ENABLE_SIGNUP) fail(403, OWUI_ERRORS.signupDisabled);
    const u = await newUser(tx, { id, name: form.name, email, passwordHash, profileImageUrl: form.profile_image_url ?? '/user.png', role }, t);
    // Open WebUI switches sign-up off once the admin exists.
    if (won) await saveSettings(asSql(tx), { ENABLE_SIGNUP: false }, t, ctx.saved);
    await joinDefaultGroup(tx, settings, u.id, t);
    await ctx.emit(tx, 'user.created', { actor: u, subject: subjectUser(u), data: { role: u.role } });
    await ctx.emit(tx, 'auth.signup', { actor: u, subject: subjectUser(u), data: { email: u.email } });
    await ctx.emit(tx, 'auth.login', { actor: u, subject: subjectUser(u), data: { auth_method: 'api' } });
    return u;
  });
  return sessionReply(ctx.sql, user, settings);
}

async function addUser(req: OpRequest<'auths.add'>, ctx: OpContext): Promise<OpReply<'auths.add'>> {
  const admin = me(ctx);
  const form = req.body;
  const role = form.role ?? 'pending';
  if (!isRole(role)) fail(400, `Invalid role "${role}": use one of ${ROLES.join(', ')}.`);
  const email = form.email.toLowerCase();
  await checkNewEmail(ctx.sql, email);
  const passwordHash = await hashPassword(form.password);
  const settings = await ctx.settings();
  const t = now();
  const user = await ctx.sql.begin(async (tx) => {
    const u = await newUser(tx, { id: randomUUID(), name: form.name, email, passwordHash, profileImageUrl: form.profile_image_url ?? '/user.png', role }, t);
    await joinDefaultGroup(tx, settings, u.id, t);
    await ctx.emit(tx, 'user.created', { actor: admin, subject: subjectUser(u), source: 'admin', data: { role: u.role } });
    return u;
  });
  // Open WebUI's SigninResponse: no permissions here.
  return {
    body: { id: user.id, email: user.email, name: user.name, role: user.role, profile_image_url: profileImagePath(user.id) },
    issueSession: { userId: user.id, expiresIn: settings.JWT_EXPIRES_IN },
  };
}

async function signout(_req: OpRequest<'auths.signout'>, ctx: OpContext): Promise<OpReply<'auths.signout'>> {
  const user = me(ctx);
  // The edge has already revoked the token; this records it.
  await ctx.sql.begin((tx) => ctx.emit(tx, 'auth.logout', { actor: user, subject: subjectUser(user), data: {} }));
  return ok({ status: true });
}

async function session(req: OpRequest<'auths.session'>, ctx: OpContext): Promise<OpReply<'auths.session'>> {
  const u = me(ctx);
  return ok({
    token_type: 'Bearer',
    expires_at: req.identity?.expiresAt ?? null,
    id: u.id,
    email: u.email,
    name: u.name,
    role: u.role,
    profile_image_url: u.profile_image_url || profileImagePath(u.id),
    bio: u.bio,
    gender: u.gender,
    date_of_birth: u.date_of_birth,
    status_emoji: null,
    status_message: null,
    status_expires_at: null,
    permissions: await permissionsFor(ctx.sql, u.id),
  });
}

async function updateProfile(req: OpRequest<'auths.updateProfile'>, ctx: OpContext): Promise<OpReply<'auths.updateProfile'>> {
  const user = me(ctx);
  const form = req.body;
  const t = now();
  const updated = await ctx.sql.begin(async (tx) => {
    // Open WebUI writes the whole form: optional fields left out become null.
    const row = await updateProfileRow(
      tx,
      user.id,
      {
        name: form.name,
        profile_image_url: form.profile_image_url ?? user.profile_image_url,
        bio: form.bio ?? null,
        gender: form.gender ?? null,
        date_of_birth: form.date_of_birth ?? null,
      },
      t,
    );
    if (!row) fail(400, OWUI_ERRORS.default);
    await ctx.emit(tx, 'user.profile_updated', {
      actor: row,
      subject: subjectUser(row),
      data: { updated_fields: ['profile_image_url', 'name', 'bio', 'gender', 'date_of_birth'] },
    });
    return row;
  });
  return ok({ id: updated.id, name: updated.name, role: updated.role, email: updated.email, profile_image_url: updated.profile_image_url });
}

async function updatePassword(req: OpRequest<'auths.updatePassword'>, ctx: OpContext): Promise<OpReply<'auths.updatePassword'>> {
  const user = me(ctx);
  const form = req.body;
  const stored = await passwordHashOf(ctx.sql, user.id);
  if (!stored || !(await verifyPassword(form.password, stored))) fail(400, MORE_ERRORS.incorrectPassword);
  const hashed = await hashPassword(form.new_password);
  const t = now();
  await ctx.sql.begin(async (tx) => {
    await setPasswordHash(tx, user.id, hashed, t);
    await ctx.emit(tx, 'auth.password_changed', { actor: user, subject: subjectUser(user), data: {} });
  });
  return ok(true);
}

async function adminDetails(_req: OpRequest<'auths.adminDetails'>, ctx: OpContext): Promise<OpReply<'auths.adminDetails'>> {
  const settings = await ctx.settings();
  if (!settings.SHOW_ADMIN_DETAILS) fail(400, MORE_ERRORS.actionProhibited);
  if (settings.ADMIN_EMAIL) {
    return ok({ name: (await nameByEmail(ctx.sql, settings.ADMIN_EMAIL)) ?? null, email: settings.ADMIN_EMAIL });
  }
  const id = await primaryAdminId(ctx.sql);
  const admin = id ? await loadUser(ctx.sql, id) : undefined;
  return ok({ name: admin?.name ?? null, email: admin?.email ?? null });
}

/** Open WebUI's AdminConfig keys only (other settings, e.g. compaction, have their own routes). */
const adminConfigOf = (s: ChatSettings) => Object.fromEntries(Object.keys(AdminConfigForm.shape).map((k) => [k, s[k as keyof ChatSettings]])) as ChatOpReplyBody<'auths.adminConfig.get'>;

async function adminConfigGet(_req: OpRequest<'auths.adminConfig.get'>, ctx: OpContext): Promise<OpReply<'auths.adminConfig.get'>> {
  return ok(adminConfigOf(await ctx.settings()));
}

async function adminConfigSet(req: OpRequest<'auths.adminConfig.set'>, ctx: OpContext): Promise<OpReply<'auths.adminConfig.set'>> {
  const admin = me(ctx);
  const values = req.body as Partial<ChatSettings>;
  const keys = Object.keys(values).filter((k) => (values as Json)[k] !== undefined);
  const t = now();
  const saved = await ctx.sql.begin(async (tx) => {
    await saveSettings(asSql(tx), values, t, ctx.saved);
    await ctx.emit(tx, 'config.updated', { actor: admin, subject: { type: 'config', id: 'auth' }, data: { keys } });
    return loadSettings(asSql(tx));
  });
  return ok(adminConfigOf(saved));
}

export const accountsOps = opTable({
  'auths.signin': signin,
  'auths.signup': signup,
  'auths.add': addUser,
  'auths.signout': signout,
  'auths.session': session,
  'auths.updateProfile': updateProfile,
  'auths.updatePassword': updatePassword,
  'auths.adminDetails': adminDetails,
  'auths.adminConfig.get': adminConfigGet,
  'auths.adminConfig.set': adminConfigSet,
});
