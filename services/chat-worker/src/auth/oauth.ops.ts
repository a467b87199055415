import { randomBytes, randomUUID } from 'node:crypto';
import { OAuthConfig, OWUI_ERRORS, type ChatOpRequest, type OAuthClientSettings } from '@gatehouse/contracts';
import { fail, now, ok, opTable, type OpContext, type OpReply, type OpRequest, type Tx, type UserRow } from '../context.ts';
import { claimFirstUser, insertUser, joinGroupIfExists, loadUser, primaryAdminId, recordSignin } from '../users/users.store.ts';
import { addMembers, insertGroup, removeMembers } from '../groups/groups.store.ts';
import { loadSettings, saveSettings, type ChatSettings } from '../config/settings.ts';
import { hashPassword } from './passwords.ts';
import { asSql, isUniqueViolation, permissionsFor, profileImagePath } from './accounts.ops.ts';
import {
  blockedGroups,
  claimAt,
  claimList,
  domainAllowed,
  OIDC_PROVIDER,
  oidcConfigured,
  roleFor,
} from './oauth-settings.ts';
import { findOAuthUser, linkOAuth, oauthGroupsOf, groupsByName, userCount } from './oauth.store.ts';

/**
 * OAuth / OIDC (Open WebUI 0.10.2's `/admin/config/oauth` and utils/oauth.py handle_callback). The
 * edge runs the browser flow and verifies the provider's answer (state, nonce, PKCE, the ID token's
 * signature); these handlers hold the settings and decide the account: found by provider + subject,
 * else merged by email when allowed, else created when OAuth sign-up is on — then the role from the
 * roles claim and the groups from the groups claim, all in one transaction.
 */

/**
 * The admin form's values. The client secret is stored but never answered (`""`), as the LDAP bind
 * password and the connection keys here (Open WebUI returns it in clear); a form that sends `""`
 * keeps the stored one, so the page can post back what it read.
 */
const FORM_KEYS = Object.keys(OAuthConfig.shape) as (keyof OAuthConfig)[];
const oauthConfigOf = (s: ChatSettings): OAuthConfig => ({ ...(Object.fromEntries(FORM_KEYS.map((k) => [k, s[k]])) as OAuthConfig), OAUTH_CLIENT_SECRET: '' });

const CODE_CHALLENGE_METHODS = ['', 'S256', 'plain'];

/** A concurrent first sign-in of the same subject won: run the sign-in again (it finds that account). */
class RaceLost extends Error {}
const TOKEN_AUTH_METHODS = ['', 'client_secret_basic', 'client_secret_post', 'none'];

async function configGet(_req: OpRequest<'auths.oauthConfig.get'>, ctx: OpContext): Promise<OpReply<'auths.oauthConfig.get'>> {
  return ok(oauthConfigOf(await ctx.settings()));
}

/** Open WebUI stores every field the form sends that is not null; values checked here so a typo cannot break sign-in. */
async function configSet(req: OpRequest<'auths.oauthConfig.set'>, ctx: OpContext): Promise<OpReply<'auths.oauthConfig.set'>> {
  const admin = ctx.user!;
  const form = req.body as Record<string, unknown>;
  const values = Object.fromEntries(Object.entries(form).filter(([k, v]) => v !== null && v !== undefined && !(k === 'OAUTH_CLIENT_SECRET' && v === ''))) as Partial<ChatSettings>;
  if (values.OAUTH_CODE_CHALLENGE_METHOD != null && !CODE_CHALLENGE_METHODS.includes(values.OAUTH_CODE_CHALLENGE_METHOD)) {
    fail(400, `OAUTH_CODE_CHALLENGE_METHOD must be S256, plain or empty, not "${values.OAUTH_CODE_CHALLENGE_METHOD}".`);
  }
  if (values.OAUTH_TOKEN_ENDPOINT_AUTH_METHOD != null && !TOKEN_AUTH_METHODS.includes(values.OAUTH_TOKEN_ENDPOINT_AUTH_METHOD)) {
    fail(400, `OAUTH_TOKEN_ENDPOINT_AUTH_METHOD must be client_secret_basic, client_secret_post, none or empty, not "${values.OAUTH_TOKEN_ENDPOINT_AUTH_METHOD}".`);
  }
  if (values.OPENID_PROVIDER_URL) {
    let url: URL | undefined;
    try {
      url = new URL(values.OPENID_PROVIDER_URL);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) fail(400, 'OPENID_PROVIDER_URL must be an http(s) URL (the provider\'s issuer or its /.well-known/openid-configuration).');
  }
  for (const key of ['OAUTH_TIMEOUT', 'OAUTH_CLIENT_TIMEOUT'] as const) {
    const v = values[key];
    if (v !== undefined && v !== '' && !(Number(v) > 0)) fail(400, `${key} must be a number of seconds or empty.`);
  }
  if (values.OAUTH_BLOCKED_GROUPS !== undefined && values.OAUTH_BLOCKED_GROUPS !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(values.OAUTH_BLOCKED_GROUPS);
    } catch {
      parsed = undefined;
    }
    if (!Array.isArray(parsed)) fail(400, 'OAUTH_BLOCKED_GROUPS must be a JSON list of group names, e.g. ["contractors"].');
  }
  const keys = Object.keys(values);
  const t = now();
  const saved = await ctx.sql.begin(async (tx) => {
    await saveSettings(asSql(tx), values, t, ctx.saved);
    await ctx.emit(tx, 'config.updated', { actor: admin, subject: { type: 'config', id: 'oauth' }, data: { keys } });
    return loadSettings(asSql(tx));
  });
  return ok(oauthConfigOf(saved));
}

/** The client settings the edge needs for `/oauth/<provider>/login` (and the callback, sign-out, logout). */
export function clientSettingsOf(s: ChatSettings): OAuthClientSettings {
  const method = s.OAUTH_CODE_CHALLENGE_METHOD === 'plain' ? 'plain' : 'S256';
  const auth = s.OAUTH_TOKEN_ENDPOINT_AUTH_METHOD;
  const timeout = Number(s.OAUTH_TIMEOUT);
  return {
    provider: OIDC_PROVIDER,
    name: s.OAUTH_PROVIDER_NAME || 'SSO',
    discoveryUrl: s.OPENID_PROVIDER_URL,
    clientId: s.OAUTH_CLIENT_ID,
    clientSecret: s.OAUTH_CLIENT_SECRET,
    scopes: s.OAUTH_SCOPES || 'openid email profile',
    codeChallengeMethod: method,
    tokenEndpointAuthMethod:
      auth === 'client_secret_basic' || auth === 'client_secret_post' || auth === 'none' ? auth : s.OAUTH_CLIENT_SECRET ? 'client_secret_basic' : 'none',
    redirectUri: s.OPENID_REDIRECT_URI,
    endSessionEndpoint: s.OPENID_END_SESSION_ENDPOINT,
    timeoutS: timeout > 0 ? timeout : null,
    audience: s.OAUTH_AUDIENCE,
    webuiUrl: s.WEBUI_URL,
    tokenExchange: s.ENABLE_OAUTH_TOKEN_EXCHANGE,
  };
}

/** Open WebUI answers an unknown or unconfigured provider with a bare 404. */
async function configuredProvider(req: ChatOpRequest, ctx: OpContext): Promise<ChatSettings> {
  const s = await ctx.settings();
  if ((req.params.provider ?? (req.body as { provider?: string } | null)?.provider) !== OIDC_PROVIDER || !oidcConfigured(s)) fail(404, 'Not Found');
  return s;
}

async function login(req: OpRequest<'oauth.login'>, ctx: OpContext): Promise<OpReply<'oauth.login'>> {
  return ok(clientSettingsOf(await configuredProvider(req, ctx)));
}

const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');

async function callback(req: OpRequest<'oauth.callback'>, ctx: OpContext): Promise<OpReply<'oauth.callback'>> {
  const body = req.body;
  const s = await configuredProvider({ ...req, params: { provider: body.provider } }, ctx);
  const claims = body.claims;
  const sub = str(claims[s.OAUTH_SUB_CLAIM || 'sub']);
  if (!sub) fail(400, OWUI_ERRORS.invalidCredentials);
  const email = str(claims[s.OAUTH_EMAIL_CLAIM || 'email']).toLowerCase();
  if (!email) fail(400, OWUI_ERRORS.invalidCredentials);
  if (!domainAllowed(s.OAUTH_ALLOWED_DOMAINS, email)) fail(400, OWUI_ERRORS.invalidCredentials);
  const name = str(claimAt(claims, s.OAUTH_USERNAME_CLAIM || 'name')) || email;
  const picture = s.OAUTH_PICTURE_CLAIM ? str(claims[s.OAUTH_PICTURE_CLAIM]) : '';
  // A new account gets a random password nobody knows, as Open WebUI's (the column is required;
  // a password sign-in costs the same scrypt work as for anyone). Hashed before the transaction,
  // and only when no account is linked yet: it is the slow part of a first sign-in.
  const unusablePassword = () => hashPassword(randomBytes(24).toString('base64url'));
  const unusable = (await findOAuthUser(ctx.sql, body.provider, sub)) ? undefined : await unusablePassword();

  const attempt = () =>
    ctx.sql.begin(async (tx) => {
      const t = now();
      let user = await findOAuthUser(tx, body.provider, sub);
      let created = false;
      if (!user && s.OAUTH_MERGE_ACCOUNTS_BY_EMAIL) {
        const [byEmail] = await tx<{ id: string }[]>`select id from "user" where lower(email) = ${email} for update`;
        if (byEmail) {
          await linkOAuth(tx, byEmail.id, body.provider, sub, t);
          user = (await loadUser(tx, byEmail.id))!;
        }
      }
      const count = await userCount(tx);
      if (user) {
        const role = roleFor(s, user, count, claims);
        if (role !== user.role) {
          const previous = user.role;
          await tx`update "user" set role = ${role}, updated_at = ${t} where id = ${user.id}`;
          user = { ...user, role };
          await ctx.emit(tx, 'user.role_updated', { actor: user, subject: { type: 'user', id: user.id }, source: 'oauth', data: { role, previous_role: previous } });
        }
        const updated: string[] = [];
        if (s.OAUTH_UPDATE_NAME_ON_LOGIN && name && name !== user.name) updated.push('name');
        if (s.OAUTH_UPDATE_EMAIL_ON_LOGIN && email !== user.email.toLowerCase()) updated.push('email');
        if (s.OAUTH_UPDATE_PICTURE_ON_LOGIN && picture && picture !== user.profile_image_url) updated.push('profile_image_url');
        if (updated.length) {
          const [row] = await tx<UserRow[]>`update "user" set
              name = ${updated.includes('name') ? name : user.name},
              email = ${updated.includes('email') ? email : user.email},
              profile_image_url = ${updated.includes('profile_image_url') ? picture : user.profile_image_url},
              updated_at = ${t}
            where id = ${user.id} returning id, email, name, role, profile_image_url, bio, gender, date_of_birth, info, settings, last_active_at, created_at, updated_at`;
          user = row!;
          await ctx.emit(tx, 'user.updated', { actor: user, subject: { type: 'user', id: user.id }, source: 'oauth', data: { updated_fields: updated } });
        }
      } else {
        if (!s.ENABLE_OAUTH_SIGNUP) fail(403, OWUI_ERRORS.accessProhibited);
        const [taken] = await tx`select 1 from "user" where lower(email) = ${email}`;
        // Taken by a first sign-in of this same subject that committed a moment ago: that account is ours.
        if (taken && (await findOAuthUser(tx, body.provider, sub))) throw new RaceLost();
        if (taken) fail(400, OWUI_ERRORS.emailTaken);
        const id = randomUUID();
        // The first account ever is the admin (and takes the first_user row, as sign-up does).
        const first = count === 0 && (await claimFirstUser(tx, id));
        const role = first ? 'admin' : roleFor(s, null, Math.max(count, 1), claims);
        user = await insertUser(tx, { id, name, email, passwordHash: unusable ?? (await unusablePassword()), profileImageUrl: picture || '/user.png', role }, t);
        await linkOAuth(tx, id, body.provider, sub, t);
        if (s.DEFAULT_GROUP_ID) await joinGroupIfExists(tx, s.DEFAULT_GROUP_ID, id, t);
        await ctx.emit(tx, 'user.created', { actor: user, subject: { type: 'user', id }, source: 'oauth', data: { role } });
        created = true;
      }
      if (s.ENABLE_OAUTH_GROUP_MANAGEMENT && user.role !== 'admin') await syncGroups(tx, ctx, s, user, claims, t);
      await recordSignin(tx, user.id, t);
      await ctx.emit(tx, 'auth.login', { actor: user, subject: { type: 'user', id: user.id }, source: 'oauth', data: { auth_method: 'oauth' } });
      return { user, created };
    });

  let result: { user: UserRow; created: boolean };
  try {
    result = await attempt();
  } catch (err) {
    // Two first sign-ins of the same subject at once: the keys decide; the loser finds the winner's account.
    if (!isUniqueViolation(err) && !(err instanceof RaceLost)) throw err;
    result = await attempt();
  }
  const { user } = result;
  return {
    body: { id: user.id, email: user.email, name: user.name, role: user.role, profile_image_url: profileImagePath(user.id), permissions: await permissionsFor(ctx.sql, user.id) },
    issueSession: { userId: user.id, expiresIn: s.JWT_EXPIRES_IN },
  };
}

/**
 * Open WebUI's update_user_groups: the groups claim (a list, or a comma string) names the user's
 * groups; missing ones are created when group creation is on; the user leaves the groups the claim
 * no longer names (only when it names some) and joins the named ones; blocked groups are never touched.
 */
async function syncGroups(tx: Tx, ctx: OpContext, s: ChatSettings, user: UserRow, claims: Record<string, unknown>, t: number): Promise<void> {
  const wanted = [...new Set(claimList(claimAt(claims, s.OAUTH_GROUP_CLAIM || 'groups')))];
  const blocked = new Set(blockedGroups(s.OAUTH_BLOCKED_GROUPS));
  if (s.ENABLE_OAUTH_GROUP_CREATION && wanted.length) {
    const existing = new Set((await groupsByName(tx, wanted)).map((g) => g.name));
    const creator = (await primaryAdminId(tx)) ?? user.id;
    for (const name of wanted) {
      if (existing.has(name) || blocked.has(name)) continue;
      const id = randomUUID();
      await insertGroup(
        tx,
        { id, userId: creator, name, description: `Group '${name}' created automatically via OAuth.`, data: { config: { share: s.OAUTH_GROUP_DEFAULT_SHARE } }, permissions: null },
        t,
      );
      await ctx.emit(tx, 'group.created', { actor: user, subject: { type: 'group', id }, source: 'oauth', data: { name } });
    }
  }
  const current = await oauthGroupsOf(tx, user.id);
  if (wanted.length) {
    for (const g of current) {
      if (wanted.includes(g.name) || blocked.has(g.name)) continue;
      await removeMembers(tx, g.id, [user.id]);
      await ctx.emit(tx, 'group.member_removed', { actor: user, subject: { type: 'group', id: g.id }, source: 'oauth', data: { user_ids: [user.id] } });
    }
  }
  const mine = new Set(current.map((g) => g.name));
  for (const g of await groupsByName(tx, wanted)) {
    if (mine.has(g.name) || blocked.has(g.name)) continue;
    await addMembers(tx, g.id, [user.id], t);
    await ctx.emit(tx, 'group.member_added', { actor: user, subject: { type: 'group', id: g.id }, source: 'oauth', data: { user_ids: [user.id] } });
  }
}

/**
 * Open WebUI's token exchange: the edge read the provider's userinfo with the caller's access token
 * and sends those claims. Only an existing account (by provider link, or by email when merging is
 * on) gets a session; nothing is created. Messages are Open WebUI's.
 */
async function tokenExchange(req: OpRequest<'oauth.tokenExchange'>, ctx: OpContext): Promise<OpReply<'oauth.tokenExchange'>> {
  const body = req.body;
  const s = await configuredProvider({ ...req, params: { provider: body.provider } }, ctx);
  if (!s.ENABLE_OAUTH_TOKEN_EXCHANGE) fail(403, 'Token exchange is disabled');
  const sub = str(body.claims[s.OAUTH_SUB_CLAIM || 'sub']);
  if (!sub) fail(400, "Token missing required 'sub' claim");
  const email = str(body.claims[s.OAUTH_EMAIL_CLAIM || 'email']).toLowerCase();
  if (!email) fail(400, 'Token missing required email claim');
  if (!domainAllowed(s.OAUTH_ALLOWED_DOMAINS, email)) fail(403, OWUI_ERRORS.accessProhibited);
  const user = await ctx.sql.begin(async (tx) => {
    let u = await findOAuthUser(tx, body.provider, sub);
    if (!u && s.OAUTH_MERGE_ACCOUNTS_BY_EMAIL) {
      const [byEmail] = await tx<{ id: string }[]>`select id from "user" where lower(email) = ${email} for update`;
      if (byEmail) {
        await linkOAuth(tx, byEmail.id, body.provider, sub, now());
        u = await loadUser(tx, byEmail.id);
      }
    }
    if (!u) fail(403, 'User not found. Please sign in via the web interface first.');
    await recordSignin(tx, u.id, now());
    await ctx.emit(tx, 'auth.login', { actor: u, subject: { type: 'user', id: u.id }, source: 'oauth', data: { auth_method: 'oauth' } });
    return u;
  });
  return {
    body: { id: user.id, email: user.email, name: user.name, role: user.role, profile_image_url: profileImagePath(user.id), permissions: await permissionsFor(ctx.sql, user.id) },
    issueSession: { userId: user.id, expiresIn: s.JWT_EXPIRES_IN },
  };
}

/** A back-channel logout the edge verified: whose account it is (the edge revokes the sessions). */
async function backchannelLogout(req: OpRequest<'oauth.backchannelLogout'>, ctx: OpContext): Promise<OpReply<'oauth.backchannelLogout'>> {
  const body = req.body;
  const user = body.sub ? await findOAuthUser(ctx.sql, body.provider, body.sub) : undefined;
  if (user) {
    await ctx.sql.begin((tx) => ctx.emit(tx, 'auth.logout', { actor: user, subject: { type: 'user', id: user.id }, source: 'oauth_backchannel', data: {} }));
  }
  return ok({ user_id: user?.id ?? null });
}

export const authOAuthOps = opTable({
  'auths.oauthConfig.get': configGet,
  'auths.oauthConfig.set': configSet,
  'oauth.login': login,
  'oauth.callback': callback,
  'oauth.tokenExchange': tokenExchange,
  'oauth.backchannelLogout': backchannelLogout,
});
