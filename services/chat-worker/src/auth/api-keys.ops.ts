import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import {
  API_KEY_ERRORS,
  API_KEYS_INVALIDATE_SUBJECT,
  ApiKeyResolveRequest,
  TrustedSigninRequest,
  type ApiKeysInvalidate,
  type ChatOpReply,
} from '@gatehouse/contracts';
import type { Bus } from '@gatehouse/common';
import { fail, me, now, ok, opTable, type OpContext, type Tx, type UserRow } from '../context.ts';
import { claimFirstUser, insertUser, loadUser } from '../users/users.store.ts';
import { loadSettings, saveSettings } from '../config/settings.ts';
import { hashPassword } from './passwords.ts';
import { asSql, permissionsFor, profileImagePath, isUniqueViolation } from './accounts.ops.ts';

/**
 * Per-user API keys (Open WebUI 0.10.2 `/api/v1/auths/api_key`) and the trusted-header sign-in.
 * A key is `sk-` + 32 hex digits (uuid4, as Open WebUI makes them); only its SHA-256 digest is
 * stored (migration 0014 says why that hash suffices). Whether a key may be *used* is decided at
 * the edge (services/edge/src/faces/chat/api-keys.ts) from a cache it fills with `resolve` below;
 * every change that could make a cached answer wrong publishes `chat.apikeys.invalidate` after
 * its commit and before the worker answers, so every edge forgets it at once.
 */

export const keyDigest = (key: string) => createHash('sha256').update(key).digest('hex');
const newKey = () => `sk-${randomUUID().replace(/-/g, '')}`;

/** Tell every edge to drop cached keys; flushed, so edges have it before the caller hears back. */
export async function invalidateKeys(bus: Bus, what: ApiKeysInvalidate): Promise<void> {
  bus.nc.publish(bus.subject(API_KEYS_INVALIDATE_SUBJECT), JSON.stringify(what));
  await bus.nc.flush();
}

/** Open WebUI's gate for creating and using keys: ENABLE_API_KEYS, then admin or `features.api_keys`. */
async function mayUseKeys(db: Sql, u: Pick<UserRow, 'id' | 'role'>): Promise<boolean> {
  if (u.role === 'admin') return true;
  const perms = (await permissionsFor(db, u.id)) as { features?: { api_keys?: unknown } };
  return perms.features?.api_keys === true;
}

const userSubject = (u: { id: string }) => ({ type: 'user', id: u.id });

export const authKeysOps = opTable({
  'auths.apiKey.create': async (_req, ctx) => {
    const user = me(ctx);
    if (!(await ctx.settings()).ENABLE_API_KEYS || !(await mayUseKeys(ctx.sql, user))) fail(403, API_KEY_ERRORS.creationNotAllowed);
    const key = newKey();
    const t = now();
    await ctx.sql.begin(async (tx) => {
      // One key per user: a new one replaces the old, which stops working with this commit.
      await tx`insert into api_key (user_id, key_hash, hint, created_at) values (${user.id}, ${keyDigest(key)}, ${key.slice(-4)}, ${t})
        on conflict (user_id) do update set key_hash = excluded.key_hash, hint = excluded.hint, created_at = excluded.created_at`;
      await ctx.emit(tx, 'auth.api_key.created', { actor: user, subject: userSubject(user), data: {} });
    });
    await invalidateKeys(ctx.blobs.bus, { user_id: user.id });
    // The only time the key itself is ever sent.
    return ok({ api_key: key });
  },

  'auths.apiKey.get': async (_req, ctx) => {
    const user = me(ctx);
    const [row] = await ctx.sql<{ hint: string }[]>`select hint from api_key where user_id = ${user.id}`;
    if (!row) fail(404, API_KEY_ERRORS.notFound);
    // Stored hashed, so it cannot be shown again: which key it is, not the key.
    return ok({ api_key: `sk-…${row.hint}` });
  },

  'auths.apiKey.delete': async (_req, ctx) => {
    const user = me(ctx);
    await ctx.sql.begin(async (tx) => {
      const gone = await tx`delete from api_key where user_id = ${user.id} returning user_id`;
      if (gone.length) await ctx.emit(tx, 'auth.api_key.deleted', { actor: user, subject: userSubject(user), data: {} });
    });
    await invalidateKeys(ctx.blobs.bus, { user_id: user.id });
    return ok(true);
  },

  'auths.oidcDiscovery.check': async (req, ctx) => ok(await checkDiscovery(req.body.url, ctx.log)),
});

const WELL_KNOWN = '/.well-known/openid-configuration';

/** Fetch a provider's discovery document and say what it holds; 5 s at most, errors reported. */
async function checkDiscovery(input: string, log: OpContext['log']) {
  const started = performance.now();
  const trimmed = input.trim();
  const url = trimmed.includes('/.well-known/') ? trimmed : `${trimmed.replace(/\/+$/, '')}${WELL_KNOWN}`;
  const none = null as string | null;
  const base = { url, status: null as number | null, issuer: none, authorization_endpoint: none, token_endpoint: none, userinfo_endpoint: none, end_session_endpoint: none, code_challenge_methods_supported: null as string[] | null };
  const done = (ok: boolean, message: string, extra: Partial<typeof base> = {}) => ({ ...base, ...extra, ok, message, elapsed_ms: Math.round(performance.now() - started) });
  let parsed: URL;
  try {
    parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    return done(false, 'Not an http(s) URL: enter the provider\'s discovery URL (…/.well-known/openid-configuration) or its issuer.');
  }
  try {
    const r = await fetch(parsed, { signal: AbortSignal.timeout(5000), redirect: 'follow', headers: { accept: 'application/json' } });
    const text = await r.text();
    if (!r.ok) return done(false, `The provider answered HTTP ${r.status}.`, { status: r.status });
    let doc: Record<string, unknown>;
    try {
      doc = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return done(false, 'The answer is not JSON: is this the discovery URL?', { status: r.status });
    }
    const str = (k: string) => (typeof doc[k] === 'string' ? (doc[k] as string) : null);
    const methods = Array.isArray(doc.code_challenge_methods_supported) ? doc.code_challenge_methods_supported.filter((m): m is string => typeof m === 'string') : null;
    const found = { status: r.status, issuer: str('issuer'), authorization_endpoint: str('authorization_endpoint'), token_endpoint: str('token_endpoint'), userinfo_endpoint: str('userinfo_endpoint'), end_session_endpoint: str('end_session_endpoint'), code_challenge_methods_supported: methods };
    const missing = (['issuer', 'authorization_endpoint', 'token_endpoint'] as const).filter((k) => !found[k]);
    if (missing.length) return done(false, `The document lacks ${missing.join(', ')}.`, found);
    return done(true, `Discovered ${found.issuer}.`, found);
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    log.info({ url, err: e.message }, 'OIDC discovery check failed');
    const why = e.name === 'TimeoutError' ? 'no answer within 5 s' : (e.cause?.code ?? e.message);
    return done(false, `Cannot reach the provider (${why}).`);
  }
}

/** `chat.apikeys.resolve`: the edge's cache miss. One indexed lookup, plus group permissions for non-admins. */
export async function resolveKey(sql: Sql, body: unknown): Promise<{ user_id: string | null; allowed: boolean }> {
  const { hash } = ApiKeyResolveRequest.parse(body);
  const [row] = await sql<{ id: string; role: UserRow['role'] }[]>`
    select u.id, u.role from api_key k join "user" u on u.id = k.user_id where k.key_hash = ${hash}`;
  if (!row) return { user_id: null, allowed: false };
  return { user_id: row.id, allowed: await mayUseKeys(sql, row) };
}

/**
 * `chat.auths.trusted`: Open WebUI's sign-in in trusted-header mode. The edge has checked that the
 * request came through a trusted proxy and read the headers; the email names the account, created
 * on first sight with a random password nobody knows (role: admin for the very first account,
 * else DEFAULT_USER_ROLE). With a groups header, a non-admin's membership becomes exactly the
 * existing groups of those names (Open WebUI's sync_groups_by_group_names).
 */
export async function trustedSignin(raw: unknown, ctx: OpContext): Promise<ChatOpReply> {
  const req = TrustedSigninRequest.parse(raw);
  const email = req.body.email.trim().toLowerCase();
  if (!email) fail(400, API_KEY_ERRORS.invalidTrustedHeader);
  const settings = await ctx.settings();
  const t = now();
  const existing = await ctx.sql<{ id: string }[]>`select id from "user" where email = ${email}`;
  let userId = existing[0]?.id;
  if (!userId) {
    const passwordHash = await hashPassword(randomBytes(24).toString('base64url'));
    try {
      userId = await ctx.sql.begin(async (tx) => {
        const id = randomUUID();
        const first = await claimFirstUser(tx, id);
        const u = await insertUser(
          tx,
          { id, name: req.body.name || email, email, passwordHash, profileImageUrl: '/user.png', role: first ? 'admin' : settings.DEFAULT_USER_ROLE },
          t,
        );
        if (first) await saveSettings(asSql(tx), { ENABLE_SIGNUP: false }, t, ctx.saved);
        else if (settings.DEFAULT_GROUP_ID) await tx`insert into group_member (group_id, user_id, created_at) select id, ${u.id}, ${t} from "group" where id = ${settings.DEFAULT_GROUP_ID} on conflict do nothing`;
        await ctx.emit(tx, 'user.created', { actor: u, subject: userSubject(u), source: 'trusted_header', data: { role: u.role } });
        await ctx.emit(tx, 'auth.signup', { actor: u, subject: userSubject(u), source: 'trusted_header', data: { email: u.email } });
        return u.id;
      });
    } catch (err) {
      // Two first requests for one new address at once: the other created it; sign that one in.
      if (!isUniqueViolation(err, 'user_email_key')) throw err;
      userId = (await ctx.sql<{ id: string }[]>`select id from "user" where email = ${email}`)[0]!.id;
    }
  }
  const user = await ctx.sql.begin(async (tx) => {
    const u = (await loadUser(asSql(tx), userId))!;
    if (req.body.groups && u.role !== 'admin') await syncGroups(tx, u.id, req.body.groups, t);
    await tx`update "user" set last_active_at = ${t} where id = ${u.id}`;
    await ctx.emit(tx, 'auth.login', { actor: u, subject: userSubject(u), source: 'trusted_header', data: { auth_method: 'api' } });
    return u;
  });
  return {
    body: { id: user.id, email: user.email, name: user.name, role: user.role, profile_image_url: profileImagePath(user.id), permissions: await permissionsFor(ctx.sql, user.id) },
    issueSession: { userId: user.id, expiresIn: (await loadSettings(ctx.sql)).JWT_EXPIRES_IN },
  };
}

async function syncGroups(tx: Tx, userId: string, names: string[], t: number): Promise<void> {
  const wanted = [...new Set(names.map((n) => n.trim()).filter(Boolean))];
  await tx`delete from group_member where user_id = ${userId} and group_id not in (select id from "group" where name = any(${wanted}))`;
  await tx`insert into group_member (group_id, user_id, created_at) select id, ${userId}, ${t} from "group" where name = any(${wanted}) on conflict do nothing`;
}

/**
 * A user's row changed or went (role, deletion: migration 0004's trigger notifies `channel` at
 * commit): tell the edges, so a demoted user's key is asked about again and a deleted user's is
 * dropped. Every replica hears the notification and publishes; edges drop the same entry twice.
 */
export async function invalidateOnUserChange(sql: Sql, channel: string, bus: Bus): Promise<void> {
  await sql.listen(
    channel,
    (id) => void invalidateKeys(bus, { user_id: id }).catch(() => undefined),
    // (Re)connected listener: a change may have been missed meanwhile.
    () => void invalidateKeys(bus, { all: true }).catch(() => undefined),
  );
}
