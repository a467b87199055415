import { randomUUID } from 'node:crypto';
import { LDAP_ERRORS, type LdapServerConfig, OWUI_ERRORS } from '@gatehouse/contracts';
import { fail, me, now, ok, opTable, type OpContext, type OpReply, type OpRequest, type Tx, type UserRow } from '../context.ts';
import { loadSettings, saveSettings, type ChatSettings } from '../config/settings.ts';
import { claimFirstUser, insertUser, joinGroupIfExists, recordSignin } from '../users/users.store.ts';
import { hashPassword } from './passwords.ts';
import { LdapError, configProblem, ldapAuthenticate, ldapTest, type LdapServer } from './ldap.ts';
import { syncGroupsByName } from './ldap-groups.ts';
import { asSql, isUniqueViolation, permissionsFor, profileImagePath, validEmail } from './accounts.ops.ts';

/**
 * LDAP sign-in and its settings (Open WebUI 0.10.2 routers/auths.py ldap_auth and the
 * /admin/config/ldap routes; the differences are listed in contracts' catalog-auth-ldap.ts).
 *
 * Sign-in answers exactly like a password sign-in (`issueSession`; the edge mints the token and
 * applies the same rate limit). A wrong password, an unknown user and a user name that would
 * smuggle filter syntax (escaped, so it matches nobody) all get the local account's 400. A server
 * that cannot be reached is a 503 that names LDAP; local accounts never touch it. The account is
 * created on the first LDAP sign-in (the first account on the platform becomes admin, as
 * everywhere), found by email afterwards — an existing local account with the same email is the
 * same person, as in Open WebUI.
 */

const subjectUser = (u: { id: string }) => ({ type: 'user', id: u.id });

/** The LDAP_* settings the client needs. */
const serverOf = (s: ChatSettings): LdapServer => ({
  LDAP_SERVER_HOST: s.LDAP_SERVER_HOST,
  LDAP_SERVER_PORT: s.LDAP_SERVER_PORT,
  LDAP_ATTRIBUTE_FOR_MAIL: s.LDAP_ATTRIBUTE_FOR_MAIL,
  LDAP_ATTRIBUTE_FOR_USERNAME: s.LDAP_ATTRIBUTE_FOR_USERNAME,
  LDAP_APP_DN: s.LDAP_APP_DN,
  LDAP_APP_PASSWORD: s.LDAP_APP_PASSWORD,
  LDAP_SEARCH_BASE: s.LDAP_SEARCH_BASE,
  LDAP_SEARCH_FILTERS: s.LDAP_SEARCH_FILTERS,
  LDAP_USE_TLS: s.LDAP_USE_TLS,
  LDAP_USE_STARTTLS: s.LDAP_USE_STARTTLS,
  LDAP_CA_CERT_FILE: s.LDAP_CA_CERT_FILE,
  LDAP_VALIDATE_CERT: s.LDAP_VALIDATE_CERT,
  LDAP_CIPHERS: s.LDAP_CIPHERS,
});

/** GET's shape: the password withheld. */
const serverReply = (s: ChatSettings) => ({
  label: s.LDAP_SERVER_LABEL,
  host: s.LDAP_SERVER_HOST,
  port: s.LDAP_SERVER_PORT,
  attribute_for_mail: s.LDAP_ATTRIBUTE_FOR_MAIL,
  attribute_for_username: s.LDAP_ATTRIBUTE_FOR_USERNAME,
  app_dn: s.LDAP_APP_DN,
  app_dn_password: '' as const,
  search_base: s.LDAP_SEARCH_BASE,
  search_filters: s.LDAP_SEARCH_FILTERS,
  use_tls: s.LDAP_USE_TLS,
  certificate_path: s.LDAP_CA_CERT_FILE,
  validate_cert: s.LDAP_VALIDATE_CERT,
  ciphers: s.LDAP_CIPHERS,
  use_starttls: s.LDAP_USE_STARTTLS,
});

const configReply = (s: ChatSettings) => ({
  ENABLE_LDAP: s.ENABLE_LDAP,
  ENABLE_LDAP_GROUP_MANAGEMENT: s.ENABLE_LDAP_GROUP_MANAGEMENT,
  ENABLE_LDAP_GROUP_CREATION: s.ENABLE_LDAP_GROUP_CREATION,
  LDAP_ATTRIBUTE_FOR_GROUPS: s.LDAP_ATTRIBUTE_FOR_GROUPS,
});

/** A form's values as settings; an empty password keeps `current`'s. */
function serverSettings(form: Partial<LdapServerConfig>, current: ChatSettings): Partial<ChatSettings> {
  return {
    LDAP_SERVER_LABEL: form.label ?? current.LDAP_SERVER_LABEL,
    LDAP_SERVER_HOST: form.host ?? current.LDAP_SERVER_HOST,
    LDAP_SERVER_PORT: form.port === undefined ? current.LDAP_SERVER_PORT : form.port,
    LDAP_ATTRIBUTE_FOR_MAIL: form.attribute_for_mail ?? current.LDAP_ATTRIBUTE_FOR_MAIL,
    LDAP_ATTRIBUTE_FOR_USERNAME: form.attribute_for_username ?? current.LDAP_ATTRIBUTE_FOR_USERNAME,
    LDAP_APP_DN: form.app_dn ?? current.LDAP_APP_DN,
    LDAP_APP_PASSWORD: form.app_dn_password ? form.app_dn_password : current.LDAP_APP_PASSWORD,
    LDAP_SEARCH_BASE: form.search_base ?? current.LDAP_SEARCH_BASE,
    LDAP_SEARCH_FILTERS: form.search_filters ?? current.LDAP_SEARCH_FILTERS,
    LDAP_USE_TLS: form.use_tls ?? current.LDAP_USE_TLS,
    LDAP_USE_STARTTLS: form.use_starttls ?? current.LDAP_USE_STARTTLS,
    LDAP_CA_CERT_FILE: form.certificate_path === undefined ? current.LDAP_CA_CERT_FILE : form.certificate_path,
    LDAP_VALIDATE_CERT: form.validate_cert ?? current.LDAP_VALIDATE_CERT,
    LDAP_CIPHERS: form.ciphers === undefined ? current.LDAP_CIPHERS : form.ciphers,
  };
}

// ---- sign-in -----------------------------------------------------------------------------

async function ldapSignin(req: OpRequest<'auths.ldap'>, ctx: OpContext): Promise<OpReply<'auths.ldap'>> {
  const form = req.body;
  const settings = await ctx.settings();
  if (!settings.ENABLE_LDAP) fail(400, LDAP_ERRORS.notEnabled);
  const groupsOn = settings.ENABLE_LDAP_GROUP_MANAGEMENT;
  let identity;
  try {
    identity = await ldapAuthenticate(serverOf(settings), groupsOn ? { attribute: settings.LDAP_ATTRIBUTE_FOR_GROUPS } : null, form.user, form.password);
  } catch (err) {
    if (!(err instanceof LdapError)) throw err;
    // The server's own words go to the log (never the user name's password); the user hears ours.
    ctx.log.info({ kind: err.kind, reason: err.message }, 'ldap sign-in refused');
    switch (err.kind) {
      case 'unavailable':
        return fail(503, LDAP_ERRORS.unavailable);
      case 'app_bind':
        ctx.log.warn({ reason: err.message }, 'ldap: the application DN was refused; check the LDAP server settings');
        return fail(503, LDAP_ERRORS.appBindFailed);
      case 'config':
        ctx.log.warn({ reason: err.message }, 'ldap: settings cannot work');
        return fail(503, LDAP_ERRORS.misconfigured);
      default:
        return fail(400, OWUI_ERRORS.invalidCredentials);
    }
  }
  if (!identity.email || !validEmail(identity.email)) fail(400, LDAP_ERRORS.noEmail);

  const t = now();
  const user = await ctx.sql.begin(async (tx) => {
    let u = await findByEmail(tx, identity.email);
    if (!u) {
      const id = randomUUID();
      // Same first-user rule as sign-up: the first account on the platform becomes admin.
      const won = await claimFirstUser(tx, id);
      const role = won ? 'admin' : settings.DEFAULT_USER_ROLE;
      // A password nobody knows (Open WebUI: a random UUID's hash): local sign-in never matches it.
      const passwordHash = await hashPassword(randomUUID());
      try {
        u = await tx.savepoint((sp) => insertUser(sp, { id, name: identity.name, email: identity.email, passwordHash, profileImageUrl: '/user.png', role }, t));
      } catch (err) {
        // A second sign-in of the same new user at the same moment: the other one created it.
        if (!isUniqueViolation(err, 'user_email_key')) throw err;
        u = await findByEmail(tx, identity.email);
        if (!u) throw err;
      }
      if (u.id === id) {
        if (won) await saveSettings(asSql(tx), { ENABLE_SIGNUP: false }, t, ctx.saved);
        if (settings.DEFAULT_GROUP_ID) await joinGroupIfExists(tx, settings.DEFAULT_GROUP_ID, u.id, t);
        await ctx.emit(tx, 'user.created', { actor: u, subject: subjectUser(u), source: 'ldap', data: { role: u.role } });
      }
    }
    // Open WebUI: admins keep their groups; an empty list from the directory changes nothing.
    if (groupsOn && identity.groups && identity.groups.length && u.role !== 'admin') {
      await syncGroupsByName(tx, ctx, u, identity.groups, { create: settings.ENABLE_LDAP_GROUP_CREATION }, t);
    }
    await recordSignin(tx, u.id, t);
    await ctx.emit(tx, 'auth.login', { actor: u, subject: subjectUser(u), source: 'ldap', data: { auth_method: 'ldap' } });
    return u;
  });
  return {
    body: { id: user.id, email: user.email, name: user.name, role: user.role, profile_image_url: profileImagePath(user.id), permissions: await permissionsFor(ctx.sql, user.id) },
    issueSession: { userId: user.id, expiresIn: settings.JWT_EXPIRES_IN },
  };
}

async function findByEmail(tx: Tx, email: string): Promise<UserRow | undefined> {
  const [row] = await tx<UserRow[]>`select id, email, name, role, profile_image_url, bio, gender, date_of_birth, info, settings, last_active_at, created_at, updated_at
    from "user" where lower(email) = ${email.toLowerCase()}`;
  return row;
}

// ---- settings ----------------------------------------------------------------------------

async function configGet(_req: OpRequest<'auths.ldapConfig.get'>, ctx: OpContext): Promise<OpReply<'auths.ldapConfig.get'>> {
  return ok(configReply(await ctx.settings()));
}

async function configSet(req: OpRequest<'auths.ldapConfig.set'>, ctx: OpContext): Promise<OpReply<'auths.ldapConfig.set'>> {
  const admin = me(ctx);
  const form = req.body;
  const values: Partial<ChatSettings> = {};
  // Open WebUI stores enable_ldap as sent (None when missing, which reads as off); an explicit null is off here, a missing key leaves it.
  if (form.enable_ldap !== undefined) values.ENABLE_LDAP = form.enable_ldap ?? false;
  if (form.enable_ldap_group_management !== undefined) values.ENABLE_LDAP_GROUP_MANAGEMENT = form.enable_ldap_group_management ?? false;
  if (form.enable_ldap_group_creation !== undefined) values.ENABLE_LDAP_GROUP_CREATION = form.enable_ldap_group_creation ?? false;
  if (form.ldap_attribute_for_groups != null) {
    const attr = form.ldap_attribute_for_groups.trim();
    const problem = configProblem({ ...(await ctx.settings()), LDAP_SEARCH_FILTERS: '' }, attr);
    if (problem) fail(400, problem);
    values.LDAP_ATTRIBUTE_FOR_GROUPS = attr;
  }
  const t = now();
  const saved = await ctx.sql.begin(async (tx) => {
    await saveSettings(asSql(tx), values, t, ctx.saved);
    await ctx.emit(tx, 'config.updated', { actor: admin, subject: { type: 'config', id: 'ldap' }, data: { keys: Object.keys(values) } });
    return loadSettings(asSql(tx));
  });
  return ok(configReply(saved));
}

async function serverGet(_req: OpRequest<'auths.ldapServer.get'>, ctx: OpContext): Promise<OpReply<'auths.ldapServer.get'>> {
  return ok(serverReply(await ctx.settings()));
}

/** Open WebUI's required fields, checked in its order; the password may be omitted when one is stored. */
const REQUIRED = ['label', 'host', 'attribute_for_mail', 'attribute_for_username', 'app_dn', 'app_dn_password', 'search_base'] as const;

async function serverSet(req: OpRequest<'auths.ldapServer.set'>, ctx: OpContext): Promise<OpReply<'auths.ldapServer.set'>> {
  const admin = me(ctx);
  const form = req.body;
  const t = now();
  const saved = await ctx.sql.begin(async (tx) => {
    // Read inside the transaction: the password kept is the one stored now.
    const current = await loadSettings(asSql(tx));
    const values = serverSettings(form, current);
    for (const key of REQUIRED) {
      const v = key === 'app_dn_password' ? values.LDAP_APP_PASSWORD : (form[key] as string);
      if (!v) fail(400, LDAP_ERRORS.requiredField(key));
    }
    const problem = configProblem(values as ChatSettings);
    if (problem) fail(400, problem);
    await saveSettings(asSql(tx), values, t, ctx.saved);
    await ctx.emit(tx, 'config.updated', { actor: admin, subject: { type: 'config', id: 'ldap.server' }, data: { keys: Object.keys(values) } });
    return loadSettings(asSql(tx));
  });
  return ok(serverReply(saved));
}

async function serverTest(req: OpRequest<'auths.ldapServer.test'>, ctx: OpContext): Promise<OpReply<'auths.ldapServer.test'>> {
  me(ctx);
  const form = req.body ?? {};
  const s = { ...(await ctx.settings()), ...serverSettings(form, await ctx.settings()) } as ChatSettings;
  const problem = configProblem(s);
  if (problem) fail(400, problem);
  return ok(await ldapTest(serverOf(s)));
}

export const authLdapOps = opTable({
  'auths.ldap': ldapSignin,
  'auths.ldapConfig.get': configGet,
  'auths.ldapConfig.set': configSet,
  'auths.ldapServer.get': serverGet,
  'auths.ldapServer.set': serverSet,
  'auths.ldapServer.test': serverTest,
});
