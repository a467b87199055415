import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, email, eventsAbout, pw, type Account, type Caller } from './chat-fixture.ts';

/**
 * Accounts, sessions and admin user management on the chat face, over HTTP as Open WebUI clients
 * use it: the first sign-up (raced) becomes the only admin and closes sign-up, sign-in and the
 * session user, sign-out, admin add/list/get/update/delete, roles (pending, user, admin), the
 * primary admin's protections, bad input, the admin config, and the events each change writes.
 * The sign-in rate limit has its own file (chat-sessions); limits here are set out of the way.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);

const { call, addUser: add } = chatClient(() => edge.chatUrl, {
  // No answer ever carries a password hash, whatever the route.
  eachAnswer: (text) => expect(text).not.toMatch(/scrypt\$|password_hash/),
});
const post = (path: string, body: unknown, who?: Caller) => call(path, who, 'POST', body);
const signin = (e: string, password: string) => post('/api/v1/auths/signin', { email: e, password });

const MSG = {
  invalidCredentials: 'The email or password provided is incorrect. Please check for typos and try logging in again.',
  accessProhibited: 'You do not have permission to access this resource. Please contact your administrator for assistance.',
  actionProhibited: 'The requested action has been restricted as a security measure.',
  emailTaken: 'Uh-oh! This email is already registered. Sign in with your existing account or choose another email to start anew.',
  invalidEmail: "The email format you entered is invalid. Please double-check and make sure you're using a valid email address (e.g., yourname@example.com).",
  invalidToken: 'Your session has expired or the token is invalid. Please sign in again.',
  incorrectPassword: 'The password provided is incorrect. Please check for typos and try again.',
  userNotFound: "We could not find what you're looking for :/",
};
const SESSION_KEYS = ['email', 'expires_at', 'id', 'name', 'permissions', 'profile_image_url', 'role', 'token', 'token_type'];
const PERMISSION_SECTIONS = ['access_grants', 'chat', 'features', 'settings', 'sharing', 'workspace'];

let admin: Account;

/** An account added by the admin, with its token from the add answer. */
const addUser = (role: 'user' | 'pending' | 'admin', name = `${role} user`) => add(admin, name, role);

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat', SIGNIN_RATE_LIMIT_PER_ACCOUNT: '1000', SIGNIN_RATE_LIMIT_PER_ADDRESS: '1000' });
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

describe('first sign-up', () => {
  it('of several racing sign-ups exactly one succeeds, as admin, and sign-up closes', async () => {
    const forms = Array.from({ length: 5 }, (_, i) => ({ name: `First ${i}`, email: email(`first${i}`), password: pw() }));
    const answers = await Promise.all(forms.map((f) => post('/api/v1/auths/signup', f)));
    const won = answers.filter((a) => a.status === 200);
    expect(won).toHaveLength(1);
    for (const lost of answers.filter((a) => a.status !== 200)) expect(lost).toMatchObject({ status: 403, body: { detail: MSG.accessProhibited } });

    const r = won[0]!;
    const form = forms[answers.indexOf(r)]!;
    expect(Object.keys(r.body).sort()).toEqual(SESSION_KEYS);
    expect(r.body).toMatchObject({ token_type: 'Bearer', email: form.email, name: form.name, role: 'admin', profile_image_url: `/api/v1/users/${r.body.id}/profile/image` });
    expect(Object.keys(r.body.permissions).sort()).toEqual(PERMISSION_SECTIONS);
    expect(r.body.permissions.features).toMatchObject({ memories: true, folders: true, api_keys: false });
    expect(r.headers.get('set-cookie')).toMatch(/^token=/);
    admin = { id: r.body.id, name: form.name, email: form.email, password: form.password, token: r.body.token };

    // Only the winner exists; the admin config says sign-up is off.
    const list = await call('/api/v1/users/', admin);
    expect(list.body.total).toBe(1);
    expect((await call('/api/v1/auths/admin/config', admin)).body.ENABLE_SIGNUP).toBe(false);
  });

  it('a later sign-up is refused with 403', async () => {
    const r = await post('/api/v1/auths/signup', { name: 'Late', email: email('late'), password: pw() });
    expect(r).toMatchObject({ status: 403, body: { detail: MSG.accessProhibited } });
  });

  it('wrote user.created, auth.signup and auth.login for the admin, without secrets', async () => {
    const evs = await eventsAbout(db, admin.id);
    expect(evs.map((e) => e.event)).toEqual(['user.created', 'auth.signup', 'auth.login']);
    expect(evs[0]!.data).toEqual({ role: 'admin' });
    expect(evs[1]!.data).toEqual({ email: admin.email });
    expect(evs.every((e) => e.actor?.id === admin.id)).toBe(true);
    expect(JSON.stringify(evs)).not.toMatch(/scrypt\$|password/);
  });
});

describe('sign-in and the session user', () => {
  it('signs in (email case-insensitively) with an Open WebUI session answer and records auth.login', async () => {
    const r = await signin(admin.email.toUpperCase(), admin.password);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(SESSION_KEYS);
    expect(r.body).toMatchObject({ id: admin.id, email: admin.email, role: 'admin' });
    const last = (await eventsAbout(db, admin.id)).at(-1)!;
    expect(last).toMatchObject({ event: 'auth.login', source: 'password', data: { auth_method: 'password' } });
  });

  it('answers a wrong password and an unknown email with the same 400', async () => {
    const wrong = await signin(admin.email, `${admin.password}x`);
    const unknown = await signin(email('nobody'), admin.password);
    expect(wrong).toMatchObject({ status: 400, body: { detail: MSG.invalidCredentials } });
    expect(unknown).toMatchObject({ status: 400, body: { detail: MSG.invalidCredentials } });
  });

  it('GET /api/v1/auths/ answers the session user with Bearer and with the token cookie', async () => {
    const expected = {
      token: admin.token,
      token_type: 'Bearer',
      id: admin.id,
      email: admin.email,
      name: admin.name,
      role: 'admin',
      profile_image_url: '/user.png',
      bio: null,
      gender: null,
      date_of_birth: null,
      status_emoji: null,
      status_message: null,
      status_expires_at: null,
    };
    const bearer = await call('/api/v1/auths/', admin);
    expect(bearer.status).toBe(200);
    expect(bearer.body).toMatchObject(expected);
    expect(bearer.body.expires_at).toBeGreaterThan(Date.now() / 1000);
    expect(Object.keys(bearer.body.permissions).sort()).toEqual(PERMISSION_SECTIONS);
    const cookie = await call('/api/v1/auths/', null, 'GET', undefined, { headers: { cookie: `token=${admin.token}` } });
    expect(cookie.status).toBe(200);
    expect(cookie.body).toMatchObject(expected);
  });

  it('sign-out answers {status: true}, the old token is then refused, a new sign-in works', async () => {
    const session = (await signin(admin.email, admin.password)).body.token as string;
    const out = await post('/api/v1/auths/signout', undefined, session);
    expect(out).toMatchObject({ status: 200, body: { status: true } });
    expect(await call('/api/v1/auths/', session)).toMatchObject({ status: 401, body: { detail: MSG.invalidToken } });
    expect((await call('/api/v1/auths/', admin)).status).toBe(200);
    expect((await eventsAbout(db, admin.id)).at(-1)!.event).toBe('auth.logout');
  });
});

describe('admin adds users', () => {
  it('returns the new user with a working token (SigninResponse) and records user.created by the admin', async () => {
    const a = { name: 'Added', email: email('added'), password: pw(), role: 'user' };
    const r = await post('/api/v1/auths/add', a, admin);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ token_type: 'Bearer', email: a.email, name: 'Added', role: 'user', profile_image_url: `/api/v1/users/${r.body.id}/profile/image` });
    // The admin's own cookie is not replaced by the new user's.
    expect(r.headers.get('set-cookie')).toBeNull();
    const me = await call('/api/v1/auths/', r.body.token);
    expect(me.body).toMatchObject({ id: r.body.id, role: 'user' });
    expect((await signin(a.email, a.password)).status).toBe(200);
    const [created] = await eventsAbout(db, r.body.id);
    expect(created).toMatchObject({ event: 'user.created', source: 'admin', data: { role: 'user' }, actor: { id: admin.id } });
  });

  it('defaults the role to pending and refuses a taken email (any case), a bad email and an unknown role', async () => {
    const a = { name: 'Default role', email: email('default'), password: pw() };
    const r = await post('/api/v1/auths/add', a, admin);
    expect(r.body.role).toBe('pending');
    expect(await post('/api/v1/auths/add', { ...a, email: a.email.toUpperCase() }, admin)).toMatchObject({ status: 400, body: { detail: MSG.emailTaken } });
    expect(await post('/api/v1/auths/add', { ...a, email: 'not-an-email' }, admin)).toMatchObject({ status: 400, body: { detail: MSG.invalidEmail } });
    const bad = await post('/api/v1/auths/add', { ...a, email: email('role'), role: 'root' }, admin);
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/role/);
  });
});

describe('roles', () => {
  it('a non-admin gets 401 on every admin route', async () => {
    const u = await addUser('user');
    const body = { name: 'x', email: email('x'), password: pw(), role: 'user', profile_image_url: '/user.png' };
    for (const [method, path, b] of [
      ['GET', '/api/v1/users/', undefined],
      ['GET', '/api/v1/users/all', undefined],
      ['POST', `/api/v1/users/${admin.id}/update`, body],
      ['DELETE', `/api/v1/users/${admin.id}`, undefined],
      ['POST', '/api/v1/auths/add', body],
      ['GET', '/api/v1/auths/admin/config', undefined],
      ['POST', '/api/v1/auths/admin/config', { ENABLE_SIGNUP: true }],
    ] as const) {
      const r = await call(path, u, method, b);
      expect(r, `${method} ${path}`).toMatchObject({ status: 401, body: { detail: MSG.accessProhibited } });
    }
    expect((await call('/api/v1/auths/admin/config', admin)).body.ENABLE_SIGNUP).toBe(false);
  });

  it('a pending user can sign in and read the session, but gets 401 on verified routes', async () => {
    const p = await addUser('pending');
    const s = await signin(p.email, p.password);
    expect(s.status).toBe(200);
    expect(s.body.role).toBe('pending');
    expect((await call('/api/v1/auths/', s.body.token)).body).toMatchObject({ id: p.id, role: 'pending' });
    expect(await call(`/api/v1/users/${admin.id}`, p)).toMatchObject({ status: 401, body: { detail: MSG.accessProhibited } });
    expect(await post('/api/v1/auths/update/profile', { name: 'P' }, p)).toMatchObject({ status: 401, body: { detail: MSG.accessProhibited } });
    // Promoted, the same token works.
    await post(`/api/v1/users/${p.id}/update`, { role: 'user', name: p.name, email: p.email, profile_image_url: '/user.png' }, admin);
    expect((await call(`/api/v1/users/${admin.id}`, p)).status).toBe(200);
  });
});

describe('admin user management', () => {
  it('lists users paged as {users, total} with group_ids, filtered by query and ordered', async () => {
    const named = await Promise.all(['Zed Query', 'Amy Query'].map((n) => addUser('user', n)));
    const all = await call('/api/v1/users/', admin);
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(all.body.users.length);
    const row = all.body.users.find((u: { id: string }) => u.id === admin.id);
    expect(row).toMatchObject({ id: admin.id, email: admin.email, role: 'admin', group_ids: [], info: null, settings: null, oauth: null });
    expect(Object.keys(row)).toEqual(
      expect.arrayContaining(['id', 'email', 'username', 'role', 'name', 'profile_image_url', 'bio', 'gender', 'date_of_birth', 'last_active_at', 'updated_at', 'created_at', 'group_ids']),
    );
    const q = await call('/api/v1/users/?query=query&order_by=name&direction=asc', admin);
    expect(q.body.total).toBe(2);
    expect(q.body.users.map((u: { id: string }) => u.id)).toEqual([named[1]!.id, named[0]!.id]);
    const desc = await call('/api/v1/users?query=QUERY&order_by=name&direction=desc', admin);
    expect(desc.body.users.map((u: { id: string }) => u.id)).toEqual([named[0]!.id, named[1]!.id]);
    // A literal % matches only itself.
    expect((await call('/api/v1/users/?query=%25', admin)).body).toEqual({ users: [], total: 0 });
    expect((await call('/api/v1/users/?page=2', admin)).body).toEqual({ users: [], total: all.body.total });
    const bad = await call('/api/v1/users/?page=two', admin);
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'int_parsing', loc: ['query', 'page'], input: 'two' });
  });

  it('GET /users/all lists everyone as UserInfoResponse', async () => {
    const r = await call('/api/v1/users/all', admin);
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(r.body.users.length);
    const me = r.body.users.find((u: { id: string }) => u.id === admin.id);
    expect(me).toEqual({ id: admin.id, name: admin.name, email: admin.email, role: 'admin', status_emoji: null, status_message: null, status_expires_at: null });
  });

  it('GET /users/{id}: the full user for admins, name and picture for others, 400 for unknown ids', async () => {
    const u = await addUser('user');
    const full = await call(`/api/v1/users/${u.id}`, admin);
    expect(full.body).toMatchObject({ id: u.id, email: u.email, role: 'user', name: u.name, groups: [], is_active: true });
    const limited = await call(`/api/v1/users/${admin.id}`, u);
    expect(limited.status).toBe(200);
    expect(limited.body).toMatchObject({ id: admin.id, name: admin.name, profile_image_url: '/user.png' });
    expect(limited.body).not.toHaveProperty('email');
    expect(limited.body).not.toHaveProperty('role');
    expect(await call('/api/v1/users/no-such-user', admin)).toMatchObject({ status: 400, body: { detail: MSG.userNotFound } });
  });

  it('updates a user (role, name, email, password) and records user.updated and user.role_updated', async () => {
    const u = await addUser('user');
    const newEmail = email('renamed');
    const newPassword = pw();
    const r = await post(`/api/v1/users/${u.id}/update`, { role: 'admin', name: 'Renamed', email: newEmail.toUpperCase(), profile_image_url: '/img.png', password: newPassword }, admin);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: u.id, role: 'admin', name: 'Renamed', email: newEmail, profile_image_url: '/img.png' });
    const evs = (await eventsAbout(db, u.id)).slice(-2);
    expect(evs.map((e) => e.event)).toEqual(['user.updated', 'user.role_updated']);
    expect(evs[0]!.data.updated_fields).toEqual(['role', 'name', 'email', 'profile_image_url', 'password']);
    expect(evs[1]!.data).toEqual({ role: 'admin', previous_role: 'user' });
    expect((await signin(newEmail, newPassword)).status).toBe(200);
    expect((await signin(newEmail, u.password)).status).toBe(400);
    expect((await signin(u.email, u.password)).status).toBe(400);
    // The role applies to the next request of the same token.
    expect((await call('/api/v1/users/all', u)).status).toBe(200);
  });

  it('refuses a taken email, unknown ids and missing or mistyped fields', async () => {
    const u = await addUser('user');
    const base = { role: 'user', name: u.name, email: u.email, profile_image_url: '/user.png' };
    expect(await post(`/api/v1/users/${u.id}/update`, { ...base, email: admin.email.toUpperCase() }, admin)).toMatchObject({ status: 400, body: { detail: MSG.emailTaken } });
    expect(await post('/api/v1/users/no-such-user/update', base, admin)).toMatchObject({ status: 400, body: { detail: MSG.userNotFound } });
    const missing = await post(`/api/v1/users/${u.id}/update`, { name: 'only a name' }, admin);
    expect(missing.status).toBe(422);
    expect(missing.body.detail.map((d: { loc: string[] }) => d.loc.join('.'))).toEqual(expect.arrayContaining(['body.role', 'body.email', 'body.profile_image_url']));
    const wrongRole = await post(`/api/v1/users/${u.id}/update`, { ...base, role: 'root' }, admin);
    expect(wrongRole.status).toBe(422);
  });

  it('protects the primary admin: not demoted, not edited by another admin, not deleted', async () => {
    const other = await addUser('admin');
    const form = { role: 'user', name: admin.name, email: admin.email, profile_image_url: '/user.png' };
    expect(await post(`/api/v1/users/${admin.id}/update`, form, admin)).toMatchObject({ status: 403, body: { detail: MSG.actionProhibited } });
    expect(await post(`/api/v1/users/${admin.id}/update`, { ...form, role: 'admin' }, other)).toMatchObject({ status: 403, body: { detail: MSG.actionProhibited } });
    expect(await call(`/api/v1/users/${admin.id}`, other, 'DELETE')).toMatchObject({ status: 403, body: { detail: MSG.actionProhibited } });
    // The primary admin may still edit themselves, keeping the role.
    const self = await post(`/api/v1/users/${admin.id}/update`, { ...form, role: 'admin' }, admin);
    expect(self).toMatchObject({ status: 200, body: { id: admin.id, role: 'admin' } });
    // Another admin can be demoted by the primary one.
    expect((await post(`/api/v1/users/${other.id}/update`, { role: 'user', name: other.name, email: other.email, profile_image_url: '/user.png' }, admin)).body.role).toBe('user');
  });

  it('deletes a user (not oneself, not unknown ids); the deleted user\'s token stops working', async () => {
    const other = await addUser('admin');
    expect(await call(`/api/v1/users/${other.id}`, other, 'DELETE')).toMatchObject({ status: 403, body: { detail: MSG.actionProhibited } });
    expect(await call('/api/v1/users/no-such-user', admin, 'DELETE')).toMatchObject({ status: 400, body: { detail: MSG.userNotFound } });

    const u = await addUser('user');
    expect(await call(`/api/v1/users/${u.id}`, admin, 'DELETE')).toMatchObject({ status: 200, body: true });
    expect(await call('/api/v1/auths/', u)).toMatchObject({ status: 401, body: { detail: MSG.invalidToken } });
    expect(await signin(u.email, u.password)).toMatchObject({ status: 400, body: { detail: MSG.invalidCredentials } });
    expect(await call(`/api/v1/users/${u.id}`, admin)).toMatchObject({ status: 400 });
    expect((await eventsAbout(db, u.id)).at(-1)).toMatchObject({ event: 'user.deleted', actor: { id: admin.id } });
    // The address is free again.
    const again = await post('/api/v1/auths/add', { name: 'Again', email: u.email, password: pw(), role: 'user' }, admin);
    expect(again.status).toBe(200);
  });
});

describe('own profile and password', () => {
  it('updates the profile (fields left out become null) and shows it in the session', async () => {
    const u = await addUser('user');
    const r = await post('/api/v1/auths/update/profile', { name: 'New Name', profile_image_url: '/me.png', bio: 'hello', date_of_birth: '1990-02-03' }, u);
    expect(r).toMatchObject({ status: 200, body: { id: u.id, name: 'New Name', role: 'user', email: u.email, profile_image_url: '/me.png' } });
    expect((await call('/api/v1/auths/', u)).body).toMatchObject({ name: 'New Name', bio: 'hello', gender: null, date_of_birth: '1990-02-03' });
    await post('/api/v1/auths/update/profile', { name: 'New Name' }, u);
    expect((await call('/api/v1/auths/', u)).body).toMatchObject({ bio: null, date_of_birth: null, profile_image_url: '/me.png' });
    const bad = await post('/api/v1/auths/update/profile', { name: 'x', date_of_birth: '1990-13-45' }, u);
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'date_of_birth']);
    expect((await eventsAbout(db, u.id)).at(-1)!.event).toBe('user.profile_updated');
  });

  it('changes the password only with the current one', async () => {
    const u = await addUser('user');
    const next = pw();
    expect(await post('/api/v1/auths/update/password', { password: `${u.password}x`, new_password: next }, u)).toMatchObject({ status: 400, body: { detail: MSG.incorrectPassword } });
    expect(await post('/api/v1/auths/update/password', { password: u.password, new_password: next }, u)).toMatchObject({ status: 200, body: true });
    expect((await eventsAbout(db, u.id)).at(-1)!.event).toBe('auth.password_changed');
    expect((await signin(u.email, next)).status).toBe(200);
    expect((await signin(u.email, u.password)).status).toBe(400);
  });
});

describe('bad input', () => {
  it('missing fields, wrong types and broken JSON are FastAPI 422 lists', async () => {
    const noPassword = await post('/api/v1/auths/signin', { email: admin.email });
    expect(noPassword.status).toBe(422);
    expect(noPassword.body.detail).toEqual([expect.objectContaining({ type: 'missing', loc: ['body', 'password'], msg: 'Field required' })]);
    const wrongType = await post('/api/v1/auths/signin', { email: 5, password: admin.password });
    expect(wrongType.status).toBe(422);
    expect(wrongType.body.detail[0].loc).toEqual(['body', 'email']);
    expect((await call('/api/v1/auths/signup', null, 'POST')).status).toBe(422);
    expect((await call('/api/v1/auths/signin', null, 'POST', '{"email":')).status).toBe(422);
    expect((await post('/api/v1/auths/add', { name: 'n', email: email('n') }, admin)).status).toBe(422);
    const cfg = await post('/api/v1/auths/admin/config', { ENABLE_SIGNUP: 'yes' }, admin);
    expect(cfg.status).toBe(422);
    expect(cfg.body.detail[0].loc).toEqual(['body', 'ENABLE_SIGNUP']);
  });
});

describe('admin config and details', () => {
  it('round-trips the AdminConfig, and its settings take effect', async () => {
    const before = await call('/api/v1/auths/admin/config', admin);
    expect(Object.keys(before.body).sort()).toEqual(
      [
        'SHOW_ADMIN_DETAILS', 'ADMIN_EMAIL', 'WEBUI_URL', 'ENABLE_SIGNUP', 'ENABLE_API_KEYS', 'ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS',
        'API_KEYS_ALLOWED_ENDPOINTS', 'DEFAULT_USER_ROLE', 'DEFAULT_GROUP_ID', 'JWT_EXPIRES_IN', 'ENABLE_COMMUNITY_SHARING',
        'ENABLE_MESSAGE_RATING', 'ENABLE_FOLDERS', 'FOLDER_MAX_FILE_COUNT', 'AUTOMATION_MAX_COUNT', 'AUTOMATION_MIN_INTERVAL',
        'ENABLE_AUTOMATIONS', 'ENABLE_CHANNELS', 'ENABLE_CALENDAR', 'ENABLE_MEMORIES', 'ENABLE_MEMORY_SYSTEM_CONTEXT', 'ENABLE_NOTES',
        'ENABLE_USER_WEBHOOKS', 'ENABLE_USER_STATUS', 'PENDING_USER_OVERLAY_TITLE', 'PENDING_USER_OVERLAY_CONTENT', 'RESPONSE_WATERMARK',
      ].sort(),
    );
    expect(before.body).toMatchObject({ ENABLE_SIGNUP: false, DEFAULT_USER_ROLE: 'pending', JWT_EXPIRES_IN: '4w', ENABLE_MEMORIES: true, FOLDER_MAX_FILE_COUNT: null });

    // Open WebUI's admin page posts the whole object back; unknown keys are ignored.
    const sent = { ...before.body, ENABLE_SIGNUP: true, DEFAULT_USER_ROLE: 'user', JWT_EXPIRES_IN: '2h', FOLDER_MAX_FILE_COUNT: '5', ENABLE_MEMORY_SYSTEM_CONTEXT: false, NOT_A_SETTING: 1 };
    const set = await post('/api/v1/auths/admin/config', sent, admin);
    expect(set.status).toBe(200);
    const expected = { ...before.body, ENABLE_SIGNUP: true, DEFAULT_USER_ROLE: 'user', JWT_EXPIRES_IN: '2h', FOLDER_MAX_FILE_COUNT: 5, ENABLE_MEMORY_SYSTEM_CONTEXT: false };
    expect(set.body).toEqual(expected);
    expect((await call('/api/v1/auths/admin/config', admin)).body).toEqual(expected);
    const [ev] = await db<{ event: any }[]>`select event from outbox where event->>'event' = 'config.updated' order by seq desc limit 1`;
    expect(ev!.event.data.keys).toEqual(expect.arrayContaining(['ENABLE_SIGNUP', 'JWT_EXPIRES_IN']));

    // Sign-up is open again, new accounts get the default role, sessions last two hours.
    const form = { name: 'Open Signup', email: email('open'), password: pw() };
    const up = await post('/api/v1/auths/signup', form);
    expect(up.status).toBe(200);
    expect(up.body.role).toBe('user');
    expect(Math.abs(up.body.expires_at - (Date.now() / 1000 + 7200))).toBeLessThan(60);

    // A partial update changes only what it names.
    const partial = await post('/api/v1/auths/admin/config', { ENABLE_SIGNUP: false }, admin);
    expect(partial.body).toEqual({ ...expected, ENABLE_SIGNUP: false });
    expect((await post('/api/v1/auths/signup', { ...form, email: email('closed') })).status).toBe(403);
  });

  it('admin details name the primary admin, unless SHOW_ADMIN_DETAILS is off (400)', async () => {
    const u = await addUser('pending');
    expect(await call('/api/v1/auths/admin/details', u)).toMatchObject({ status: 200, body: { name: admin.name, email: admin.email } });
    await post('/api/v1/auths/admin/config', { SHOW_ADMIN_DETAILS: false }, admin);
    expect(await call('/api/v1/auths/admin/details', u)).toMatchObject({ status: 400, body: { detail: MSG.actionProhibited } });
    await post('/api/v1/auths/admin/config', { SHOW_ADMIN_DETAILS: true }, admin);
  });
});
