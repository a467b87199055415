import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oidcClient from 'openid-client';
import { Stack, type Edge } from '../support/local-stack.ts';
import { CookieJar, passProviderPages, startOidcProvider, type OidcAccountClaims, type OidcTestProvider } from '../support/oidc-provider.ts';
import { chatClient, chatDb, email, eventsNamed, PROHIBITED, type Account } from './chat-fixture.ts';

/**
 * OAuth / OIDC sign-in (Open WebUI 0.10.2's `/oauth/oidc/login` → `/oauth/oidc/login/callback`,
 * `/api/v1/auths/admin/config/oauth`, sign-out through the provider, back-channel logout) over plain
 * HTTP against a real OpenID provider running in this process (tests/support/oidc-provider.ts):
 * fetch with manual redirects and a cookie jar per browser, the provider's own login and consent
 * pages, every answer read as a browser would.
 */
const stack = new Stack();
let edge: Edge;
let idp: OidcTestProvider;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
let admin: Account;

const INVALID_CRED = 'The email or password provided is incorrect. Please check for typos and try logging in again.';
const EMAIL_TAKEN = 'Uh-oh! This email is already registered. Sign in with your existing account or choose another email to start anew.';
const callbackUrl = () => `${edge.chatUrl}/oauth/oidc/login/callback`;
/** WEBUI_AUTH_SIGNOUT_REDIRECT_URL: where the provider sends the browser after its sign-out. */
const SIGNED_OUT = 'http://127.0.0.1:9/signed-out';

/** Open WebUI's error redirect: `/auth?error=` + quote_plus(message). */
const errorOf = (location: string | null) => {
  expect(location, 'a redirect').toBeTruthy();
  const url = new URL(location!);
  expect(url.pathname).toBe('/auth');
  return url.searchParams.get('error');
};

const setOAuth = (body: Record<string, unknown>) => call('/api/v1/auths/admin/config/oauth', admin, 'POST', body);

/** Start a sign-in in `jar` and walk the provider's pages as `login`: the callback URL the provider sent back. */
async function authorize(jar: CookieJar, login: string): Promise<string> {
  const start = await jar.fetch(`${edge.chatUrl}/oauth/oidc/login`);
  expect(start.status, await start.clone().text()).toBe(302);
  const to = start.headers.get('location')!;
  expect(to.startsWith(idp.issuer)).toBe(true);
  return passProviderPages(jar, to, login, callbackUrl());
}

/** The whole browser flow; answers the callback's response and, when it succeeded, the session token. */
async function oidcSignin(login: string, claims?: OidcAccountClaims, jar = new CookieJar()) {
  if (claims) idp.setAccount(login, claims);
  const back = await authorize(jar, login);
  const res = await jar.fetch(back);
  return { res, location: res.headers.get('location'), token: jar.get(edge.chatUrl, 'token'), jar, back };
}

beforeAll(async () => {
  // Open WebUI's variables seed the settings (an admin's later change wins).
  await stack.startChatWorker(
    { OAUTH_PROVIDER_NAME: 'Test IdP', OAUTH_SCOPES: 'openid email profile roles groups', ENABLE_OAUTH_SIGNUP: 'true', ENABLE_OAUTH_TOKEN_EXCHANGE: 'true' },
    { ingest: false },
  );
  edge = await stack.startEdge({ EDGE_FACES: 'chat', WEBUI_AUTH_SIGNOUT_REDIRECT_URL: SIGNED_OUT });
  admin = await signup();
  idp = await startOidcProvider({ redirectUris: [callbackUrl()], backchannelLogoutUri: `${edge.chatUrl}/oauth/backchannel-logout`, postLogoutRedirectUris: [SIGNED_OUT] });
});
afterAll(async () => {
  await idp?.close();
  await db.end({ timeout: 5 });
  await stack.close();
});

describe('admin config (/api/v1/auths/admin/config/oauth)', () => {
  it('answers every OAuthConfigForm field: Open WebUI defaults, environment seeds; admins only', async () => {
    const r = await call('/api/v1/auths/admin/config/oauth', admin);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      ENABLE_OAUTH_SIGNUP: true,
      OAUTH_MERGE_ACCOUNTS_BY_EMAIL: false,
      OAUTH_AUTO_REDIRECT: false,
      OAUTH_ALLOWED_DOMAINS: '*',
      OAUTH_BLOCKED_GROUPS: '[]',
      ENABLE_OAUTH_ROLE_MANAGEMENT: false,
      OAUTH_ROLES_CLAIM: 'roles',
      OAUTH_ADMIN_ROLES: 'admin',
      OAUTH_ALLOWED_ROLES: 'user,admin',
      ENABLE_OAUTH_GROUP_MANAGEMENT: false,
      ENABLE_OAUTH_GROUP_CREATION: false,
      OAUTH_GROUP_CLAIM: 'groups',
      OAUTH_GROUP_DEFAULT_SHARE: true,
      OAUTH_PROVIDER_NAME: 'Test IdP',
      OPENID_PROVIDER_URL: '',
      OAUTH_CLIENT_ID: '',
      OAUTH_CLIENT_SECRET: '',
      OPENID_REDIRECT_URI: '',
      OAUTH_SCOPES: 'openid email profile roles groups',
      OAUTH_CODE_CHALLENGE_METHOD: null,
      OAUTH_TOKEN_ENDPOINT_AUTH_METHOD: null,
      OPENID_END_SESSION_ENDPOINT: '',
      OAUTH_TIMEOUT: '',
      OAUTH_CLIENT_TIMEOUT: '',
      OAUTH_EMAIL_CLAIM: 'email',
      OAUTH_USERNAME_CLAIM: 'name',
      OAUTH_PICTURE_CLAIM: 'picture',
      OAUTH_SUB_CLAIM: null,
      OAUTH_AUDIENCE: '',
      OAUTH_UPDATE_EMAIL_ON_LOGIN: false,
      OAUTH_UPDATE_NAME_ON_LOGIN: false,
      OAUTH_UPDATE_PICTURE_ON_LOGIN: false,
      OAUTH_REFRESH_TOKEN_INCLUDE_SCOPE: false,
    });
    const user = await addUser(admin, 'Plain');
    expect(await call('/api/v1/auths/admin/config/oauth', user)).toEqual({ status: 401, body: { detail: PROHIBITED } });
    expect((await call('/api/v1/auths/admin/config/oauth', null)).status).toBe(401);
    // Not configured: no provider offered, and its login route is Open WebUI's bare 404.
    expect((await call('/api/config', null)).body.oauth).toEqual({ providers: {} });
    expect(await call('/oauth/oidc/login', null)).toEqual({ status: 404, body: { detail: 'Not Found' } });
  });

  it('refuses values that would break sign-in with a clear 400, and wrong types with FastAPI’s 422', async () => {
    expect(await setOAuth({ OAUTH_CODE_CHALLENGE_METHOD: 'S512' })).toEqual({ status: 400, body: { detail: 'OAUTH_CODE_CHALLENGE_METHOD must be S256, plain or empty, not "S512".' } });
    expect((await setOAuth({ OPENID_PROVIDER_URL: 'ftp://idp.example' })).status).toBe(400);
    expect((await setOAuth({ OAUTH_BLOCKED_GROUPS: 'contractors' })).body.detail).toMatch(/JSON list/);
    const wrong = await setOAuth({ ENABLE_OAUTH_SIGNUP: 'maybe' });
    expect(wrong.status).toBe(422);
    expect(wrong.body.detail[0].loc).toEqual(['body', 'ENABLE_OAUTH_SIGNUP']);
    // Nothing was stored by the refused posts.
    expect((await call('/api/v1/auths/admin/config/oauth', admin)).body.OAUTH_CODE_CHALLENGE_METHOD).toBeNull();
  });

  it('stores a partial update (null leaves a field alone), applies it at once, and lists the provider in /api/config', async () => {
    const r = await setOAuth({
      OPENID_PROVIDER_URL: idp.discoveryUrl,
      OAUTH_CLIENT_ID: idp.clientId,
      OAUTH_CLIENT_SECRET: idp.clientSecret,
      OAUTH_PROVIDER_NAME: null,
      ENABLE_OAUTH_ROLE_MANAGEMENT: true,
      ENABLE_OAUTH_GROUP_MANAGEMENT: true,
      ENABLE_OAUTH_GROUP_CREATION: true,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ OPENID_PROVIDER_URL: idp.discoveryUrl, OAUTH_CLIENT_ID: idp.clientId, OAUTH_PROVIDER_NAME: 'Test IdP', ENABLE_OAUTH_ROLE_MANAGEMENT: true });
    // The secret is kept, never answered; posting back the form as read ("" secret) keeps it.
    expect(r.body.OAUTH_CLIENT_SECRET).toBe('');
    expect((await call('/api/v1/auths/admin/config/oauth', admin)).body.OAUTH_CLIENT_SECRET).toBe('');
    expect((await setOAuth({ ...r.body, OAUTH_CLIENT_SECRET: '' })).status).toBe(200);
    const [stored] = await db<{ value: unknown }[]>`select value from config where key = 'OAUTH_CLIENT_SECRET'`;
    expect(stored!.value).toBe(idp.clientSecret);
    expect((await call('/api/config', null)).body.oauth).toEqual({ providers: { oidc: 'Test IdP' } });
    const [ev] = (await eventsNamed(db, 'config.updated')).filter((e) => e.subject.id === 'oauth');
    expect(ev.data.keys.sort()).toEqual(['ENABLE_OAUTH_GROUP_CREATION', 'ENABLE_OAUTH_GROUP_MANAGEMENT', 'ENABLE_OAUTH_ROLE_MANAGEMENT', 'OAUTH_CLIENT_ID', 'OAUTH_CLIENT_SECRET', 'OPENID_PROVIDER_URL']);
  });
});

describe('the browser flow', () => {
  it('creates a new user with the role from the roles claim and ends as Open WebUI: token cookie, redirect to /auth', async () => {
    const mail = email('Alice');
    const { res, location, token, jar } = await oidcSignin('alice', { email: mail.toUpperCase(), name: 'Alice OIDC', roles: ['admin'] });
    expect(res.status).toBe(307);
    expect(location).toBe(`${edge.chatUrl}/auth`);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('token='))!;
    // The page reads it (httponly=False), as Open WebUI's callback sets it.
    expect(cookie).not.toMatch(/HttpOnly/i);
    expect(jar.get(edge.chatUrl, 'oauth_session_id')).toBeTruthy();
    const me = await call('/api/v1/auths/', token);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: mail, name: 'Alice OIDC', role: 'admin' });
    const [row] = await db<{ oauth: unknown }[]>`select oauth from "user" where id = ${me.body.id}`;
    expect(row!.oauth).toEqual({ oidc: { sub: 'alice' } });
    const logins = (await eventsNamed(db, 'auth.login')).filter((e) => e.subject.id === me.body.id);
    expect(logins.map((e) => e.data)).toEqual([{ auth_method: 'oauth' }]);

    const bob = await oidcSignin('bob', { email: email('Bob'), name: 'Bob', roles: ['user'] });
    expect((await call('/api/v1/auths/', bob.token)).body.role).toBe('user');
    // Neither an admin nor an allowed role: the default role (pending).
    const carol = await oidcSignin('carol', { email: email('Carol'), name: 'Carol', roles: 'visitor' });
    expect((await call('/api/v1/auths/', carol.token)).body.role).toBe('pending');
  });

  it('signs the same subject in to the same account again, the role following the claim', async () => {
    const first = await oidcSignin('dora', { email: email('Dora'), name: 'Dora', roles: ['user'] });
    const id = (await call('/api/v1/auths/', first.token)).body.id;
    const again = await oidcSignin('dora', { email: email('Dora'), name: 'Dora', roles: ['admin'] });
    const me = (await call('/api/v1/auths/', again.token)).body;
    expect(me).toMatchObject({ id, role: 'admin' });
    expect((await eventsNamed(db, 'user.role_updated')).filter((e) => e.subject.id === id).map((e) => e.data)).toEqual([{ role: 'admin', previous_role: 'user' }]);
  });

  it('makes one account of two first sign-ins of the same subject at once', async () => {
    const mail = email('Twin');
    idp.setAccount('twin', { email: mail, name: 'Twin', roles: ['user'], groups: ['twins'] });
    const jars = [new CookieJar(), new CookieJar()];
    const backs = await Promise.all(jars.map((j) => authorize(j, 'twin')));
    const answers = await Promise.all(backs.map((b, i) => jars[i]!.fetch(b)));
    for (const a of answers) expect(a.headers.get('location')).toBe(`${edge.chatUrl}/auth`);
    const ids = await Promise.all(jars.map(async (j) => (await call('/api/v1/auths/', j.get(edge.chatUrl, 'token'))).body.id));
    expect(ids[0]).toBe(ids[1]);
    expect(await db`select id from "user" where email = ${mail}`).toHaveLength(1);
    expect(await db`select 1 from user_oauth where provider = 'oidc' and sub = 'twin'`).toHaveLength(1);
  });

  it('syncs groups from the groups claim: creates missing ones, joins, leaves the ones no longer named', async () => {
    const g = await oidcSignin('erin', { email: email('Erin'), name: 'Erin', roles: ['user'], groups: ['eng', 'ops'] });
    const id = (await call('/api/v1/auths/', g.token)).body.id;
    const groupsOf = async () => (await db<{ name: string }[]>`select g.name from "group" g join group_member m on m.group_id = g.id where m.user_id = ${id} order by g.name`).map((r) => r.name);
    expect(await groupsOf()).toEqual(['eng', 'ops']);
    const [eng] = await db<{ description: string; user_id: string }[]>`select description, user_id from "group" where name = 'eng'`;
    expect(eng).toEqual({ description: "Group 'eng' created automatically via OAuth.", user_id: admin.id });
    await oidcSignin('erin', { email: email('Erin'), name: 'Erin', roles: ['user'], groups: 'eng' });
    expect(await groupsOf()).toEqual(['eng']);
    // Without group management the claim changes nothing.
    await setOAuth({ ENABLE_OAUTH_GROUP_MANAGEMENT: false });
    await oidcSignin('erin', { email: email('Erin'), name: 'Erin', roles: ['user'], groups: ['ops'] });
    expect(await groupsOf()).toEqual(['eng']);
    await setOAuth({ ENABLE_OAUTH_GROUP_MANAGEMENT: true });
  });

  it('merges with an existing account by email only when OAUTH_MERGE_ACCOUNTS_BY_EMAIL is on', async () => {
    const local = await addUser(admin, 'Frank');
    const refused = await oidcSignin('frank', { email: local.email, name: 'Frank', roles: ['user'] });
    expect(errorOf(refused.location)).toBe(EMAIL_TAKEN);
    expect(refused.token).toBeUndefined();
    await setOAuth({ OAUTH_MERGE_ACCOUNTS_BY_EMAIL: true });
    const merged = await oidcSignin('frank', { email: local.email, name: 'Frank', roles: ['user'] });
    expect((await call('/api/v1/auths/', merged.token)).body.id).toBe(local.id);
    // Linked: the password still works, and the subject finds the account even with merging off.
    await setOAuth({ OAUTH_MERGE_ACCOUNTS_BY_EMAIL: false });
    const linked = await oidcSignin('frank', { email: local.email, name: 'Frank', roles: ['user'] });
    expect((await call('/api/v1/auths/', linked.token)).body.id).toBe(local.id);
    expect((await call('/api/v1/auths/signin', null, 'POST', { email: local.email, password: local.password })).status).toBe(200);
  });

  it('refuses an address outside OAUTH_ALLOWED_DOMAINS, and creates nobody', async () => {
    await setOAuth({ OAUTH_ALLOWED_DOMAINS: 'example.com, example.org' });
    const out = await oidcSignin('grace', { email: 'grace@elsewhere.test', name: 'Grace', roles: ['user'] });
    expect(errorOf(out.location)).toBe(INVALID_CRED);
    expect(out.token).toBeUndefined();
    expect(await db`select 1 from "user" where email = 'grace@elsewhere.test'`).toHaveLength(0);
    const ok = await oidcSignin('heidi', { email: `heidi-${Date.now()}@example.org`, name: 'Heidi', roles: ['user'] });
    expect(ok.token).toBeTruthy();
    await setOAuth({ OAUTH_ALLOWED_DOMAINS: '*' });
  });

  it('refuses a new account when OAuth sign-up is off (applied live), existing ones still sign in', async () => {
    await setOAuth({ ENABLE_OAUTH_SIGNUP: false });
    const out = await oidcSignin('ivan', { email: email('Ivan'), name: 'Ivan', roles: ['user'] });
    expect(errorOf(out.location)).toBe(PROHIBITED);
    expect(out.token).toBeUndefined();
    const known = await oidcSignin('bob');
    expect((await call('/api/v1/auths/', known.token)).status).toBe(200);
    await setOAuth({ ENABLE_OAUTH_SIGNUP: true });
  });
});

describe('state, nonce and PKCE', () => {
  it('refuses a replayed callback (state used once) and a code from another sign-in', async () => {
    idp.setAccount('judy', { email: email('Judy'), name: 'Judy', roles: ['user'] });
    const jar = new CookieJar();
    const back = await authorize(jar, 'judy');
    const first = await jar.fetch(back);
    expect(first.headers.get('location')).toBe(`${edge.chatUrl}/auth`);
    const replay = await jar.fetch(back);
    expect(errorOf(replay.headers.get('location'))).toBe(INVALID_CRED);
    expect(replay.headers.getSetCookie().some((c) => c.startsWith('token='))).toBe(false);

    // A code issued to sign-in A presented with the state of sign-in B (same browser): B's PKCE
    // verifier does not match A's challenge, so the provider refuses the exchange.
    const a = await authorize(jar, 'judy');
    const b = await authorize(jar, 'judy');
    const mixed = new URL(a);
    mixed.searchParams.set('state', new URL(b).searchParams.get('state')!);
    const out = await jar.fetch(mixed.toString());
    expect(errorOf(out.headers.get('location'))).toBe(INVALID_CRED);
  });

  it('refuses a callback whose state was started in another browser, and a made-up state', async () => {
    idp.setAccount('ken', { email: email('Ken'), name: 'Ken', roles: ['user'] });
    const victim = new CookieJar();
    const back = await authorize(new CookieJar(), 'ken');
    const forced = await victim.fetch(back);
    expect(errorOf(forced.headers.get('location'))).toBe(INVALID_CRED);
    const made = new URL(back);
    made.searchParams.set('state', 'made-up');
    expect(errorOf((await victim.fetch(made.toString())).headers.get('location'))).toBe(INVALID_CRED);
    // A provider's refusal comes back in its own words.
    const denied = await victim.fetch(`${callbackUrl()}?error=access_denied&error_description=${encodeURIComponent('User cancelled')}`);
    expect(errorOf(denied.headers.get('location'))).toBe('User cancelled');
  });
});

describe('clock skew', () => {
  /** A sign-in while this process's clock (the provider's) runs `seconds` behind the edge's. */
  async function withProviderBehind(seconds: number, login: string) {
    const realNow = Date.now;
    Date.now = () => realNow() - seconds * 1000;
    try {
      return await oidcSignin(login);
    } finally {
      Date.now = realNow;
    }
  }

  it('accepts an ID token that expired up to 60 s ago by the edge’s clock, refuses one further off', async () => {
    idp.setAccount('pia', { email: email('Pia'), name: 'Pia', roles: ['user'] });
    // The harness's ID tokens live 600 s: 630 s behind, the token expired 30 s ago here.
    const tolerated = await withProviderBehind(630, 'pia');
    expect(tolerated.location).toBe(`${edge.chatUrl}/auth`);
    expect((await call('/api/v1/auths/', tolerated.token)).status).toBe(200);
    const tooFar = await withProviderBehind(720, 'pia');
    expect(errorOf(tooFar.location)).toBe(INVALID_CRED);
    expect(tooFar.token).toBeUndefined();
  });
});

describe('sign-out and back-channel logout', () => {
  it('answers the provider’s end-session URL on sign-out, as Open WebUI', async () => {
    const s = await oidcSignin('liam', { email: email('Liam'), name: 'Liam', roles: ['user'] });
    const out = await s.jar.fetch(`${edge.chatUrl}/api/v1/auths/signout`, { headers: { authorization: `Bearer ${s.token}` } });
    const body = await out.json();
    expect(out.status).toBe(200);
    expect(body.status).toBe(true);
    const url = new URL(body.redirect_url);
    expect(`${url.origin}${url.pathname}`).toBe(`${idp.issuer}/session/end`);
    expect(url.searchParams.get('id_token_hint')!.split('.')).toHaveLength(3);
    expect(url.searchParams.get('post_logout_redirect_uri')).toBe(SIGNED_OUT);
    expect((await call('/api/v1/auths/', s.token)).status).toBe(401);
    // A password session signs out without one.
    const plain = await call('/api/v1/auths/signout', admin.token);
    expect(plain.body).toEqual({ status: true });
    admin = { ...admin, token: (await call('/api/v1/auths/signin', null, 'POST', { email: admin.email, password: admin.password })).body.token };
  });

  it('ends the sessions a verified logout token names; refuses forged, foreign and replayed tokens', async () => {
    const one = await oidcSignin('mia', { email: email('Mia'), name: 'Mia', roles: ['user'] });
    const two = await oidcSignin('mia');
    const other = await oidcSignin('bob');
    for (const t of [one.token, two.token, other.token]) expect((await call('/api/v1/auths/', t)).status).toBe(200);

    const post = (logout_token: string) =>
      fetch(`${edge.chatUrl}/oauth/backchannel-logout`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ logout_token }) });
    const foreign = await post(await idp.logoutToken({ sub: 'mia', aud: 'someone-else' }));
    expect(foreign.status).toBe(400);
    expect((await foreign.json()).error).toBe('invalid_request');
    const noEvent = await post(await idp.logoutToken({ sub: 'mia', events: { other: {} } }));
    expect(noEvent.status).toBe(400);
    const [h, p] = (await idp.logoutToken({ sub: 'mia' })).split('.');
    expect((await post(`${h}.${p}.${Buffer.from('forged').toString('base64url')}`)).status).toBe(400);
    expect((await call('/api/v1/auths/', one.token)).status).toBe(200);

    const token = await idp.logoutToken({ sub: 'mia' });
    const res = await post(token);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect((await call('/api/v1/auths/', one.token)).status).toBe(401);
    expect((await call('/api/v1/auths/', two.token)).status).toBe(401);
    expect((await call('/api/v1/auths/', other.token)).status).toBe(200);
    expect((await post(token)).status).toBe(400);
    const ev = (await eventsNamed(db, 'auth.logout')).filter((e) => e.source === 'oauth_backchannel');
    expect(ev.length).toBeGreaterThanOrEqual(1);
  });

  it('revokes the sessions of a provider session the provider itself ends (its back-channel call)', async () => {
    const s = await oidcSignin('noah', { email: email('Noah'), name: 'Noah', roles: ['user'] });
    const firstSession = s.jar.get(edge.chatUrl, 'oauth_session_id')!;
    // A second session from the same browser: the provider's session (its sid) is the same.
    const again = await oidcSignin('noah', undefined, s.jar);
    expect((await call('/api/v1/auths/', again.token)).status).toBe(200);
    // The first one signs out (its own cookies): it learns where to end the provider's session.
    const out = await (await fetch(`${edge.chatUrl}/api/v1/auths/signout`, { headers: { authorization: `Bearer ${s.token}`, cookie: `oauth_session_id=${firstSession}` } })).json();
    expect(out.redirect_url).toMatch(/\/session\/end\?id_token_hint=/);
    // Follow redirect_url at the provider and confirm: it posts the logout token to our endpoint.
    const page = await s.jar.fetch(out.redirect_url);
    const html = await page.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)![1]!;
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1];
    const done = await s.jar.fetch(new URL(action, idp.issuer).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...(xsrf ? { xsrf } : {}), logout: 'yes' }),
    });
    expect(done.status).toBeLessThan(400);
    expect(idp.backchannel.at(-1)?.ok).toBe(true);
    expect((await call('/api/v1/auths/', again.token)).status).toBe(401);
  });
});

describe('token exchange (/api/v1/auths/oauth/oidc/token/exchange)', () => {
  /** An access token for `login` from the provider, as another client of it would hold one. */
  async function accessTokenFor(login: string): Promise<string> {
    const config = await oidcClient.discovery(new URL(idp.issuer), idp.clientId, idp.clientSecret, undefined, { execute: [oidcClient.allowInsecureRequests] });
    const verifier = oidcClient.randomPKCECodeVerifier();
    const state = oidcClient.randomState();
    const url = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: callbackUrl(),
      scope: 'openid email profile',
      state,
      code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const back = await passProviderPages(new CookieJar(), url.href, login, callbackUrl());
    return (await oidcClient.authorizationCodeGrant(config, new URL(back), { pkceCodeVerifier: verifier, expectedState: state })).access_token;
  }
  const exchange = (body: unknown, provider = 'oidc') => call(`/api/v1/auths/oauth/${provider}/token/exchange`, null, 'POST', body);

  it('answers a session for the account the token’s userinfo names, ignoring anything else in the body', async () => {
    const bob = (await oidcSignin('bob')).token;
    const bobId = (await call('/api/v1/auths/', bob)).body.id;
    const token = await accessTokenFor('bob');
    const r = await exchange({ token, provider: 'oidc', claims: { sub: 'alice', email: 'someone@example.com' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ id: bobId, token_type: 'Bearer', role: 'user' });
    expect((await call('/api/v1/auths/', r.body.token)).body.id).toBe(bobId);
  });

  it('refuses a token the provider does not accept, an account never signed in, an unknown provider, a missing token', async () => {
    expect(await exchange({ token: 'not-a-token' })).toEqual({ status: 400, body: { detail: 'Invalid token or unable to validate with provider' } });
    idp.setAccount('zed', { email: email('Zed'), name: 'Zed', roles: ['user'] });
    expect(await exchange({ token: await accessTokenFor('zed') })).toEqual({ status: 403, body: { detail: 'User not found. Please sign in via the web interface first.' } });
    expect(await exchange({ token: 'x' }, 'google')).toEqual({ status: 404, body: { detail: 'Not Found' } });
    const missing = await exchange({});
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0].loc).toEqual(['body', 'token']);
  });
});

describe('provider down', () => {
  it('sends the browser back to the sign-in page with a clear reason, never a 500', async () => {
    idp.setAccount('olga', { email: email('Olga'), name: 'Olga', roles: ['user'] });
    // Down between the login and the callback: the code exchange cannot reach it.
    const jar = new CookieJar();
    const back = await authorize(jar, 'olga');
    await idp.stop();
    try {
      const out = await jar.fetch(back);
      expect(errorOf(out.headers.get('location'))).toBe('Could not reach the sign-in provider (Test IdP); try again shortly.');
      // A configuration pointing somewhere that does not answer (applied live): the login itself says so.
      await setOAuth({ OPENID_PROVIDER_URL: `${idp.issuer}/elsewhere/.well-known/openid-configuration` });
      const start = await new CookieJar().fetch(`${edge.chatUrl}/oauth/oidc/login`);
      expect(start.status).toBe(307);
      expect(errorOf(start.headers.get('location'))).toBe('Could not reach the sign-in provider (Test IdP); try again shortly.');
    } finally {
      await idp.start();
      await setOAuth({ OPENID_PROVIDER_URL: idp.discoveryUrl });
    }
    const ok = await oidcSignin('olga');
    expect((await call('/api/v1/auths/', ok.token)).status).toBe(200);
  });
});
