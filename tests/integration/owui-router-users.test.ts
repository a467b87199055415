import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, pw, type Account, type Caller } from './chat-fixture.ts';

/**
 * Open WebUI's own router test for /api/v1/users (backend/open_webui/test/apps/webui/routers/
 * test_users.py), ported step for step to HTTP against the real stack. Upstream inserts users 1
 * and 2 into its tables and calls as a mocked user "3" that passes every role check; here the
 * first sign-up is that admin, users 1 and 2 are added by it with the same names, addresses and
 * pictures, and each call goes with the token of the user upstream mocks. Where an upstream
 * assertion no longer holds for Open WebUI 0.10.2 itself, the comment says so and the test
 * asserts what 0.10.2 answers.
 */
const stack = new Stack();
let edge: Edge;
const { call } = chatClient(() => edge.chatUrl);
const post = (path: string, body: unknown, who?: Caller) => call(path, who, 'POST', body);
const url = (p: string) => `/api/v1/users${p}`;

let admin: Account;
const users: Record<'1' | '2', Account> = {} as never;

/** _assert_user upstream: the listed user `id` has these fields (defaults: user N, userN@openwebui.com, /userN.png, role user). */
function assertUser(list: any[], id: '1' | '2', fields: Record<string, unknown> = {}) {
  const user = list.find((u) => u.id === users[id].id);
  expect(user, `user ${id} listed`).toBeDefined();
  expect(user).toMatchObject({ name: `user ${id}`, email: `user${id}@openwebui.com`, profile_image_url: `/user${id}.png`, role: 'user', ...fields });
}

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  const form = { name: 'user 3', email: 'user3@openwebui.com', password: pw() };
  const r = await post('/api/v1/auths/signup', form);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  admin = { id: r.body.id, token: r.body.token, ...form };
  // setup_method upstream: users 1 and 2, role user, each with their own picture.
  for (const id of ['1', '2'] as const) {
    const add = { name: `user ${id}`, email: `user${id}@openwebui.com`, password: pw(), role: 'user' };
    const a = await post('/api/v1/auths/add', add, admin);
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    users[id] = { id: a.body.id, token: a.body.token, name: add.name, email: add.email, password: add.password };
    const pic = await post(url(`/${a.body.id}/update`), { name: add.name, email: add.email, role: 'user', profile_image_url: `/user${id}.png` }, admin);
    expect(pic.status, JSON.stringify(pic.body)).toBe(200);
  }
});
afterAll(async () => {
  await stack.close();
});

describe('test_users.py', () => {
  it('test_users', async () => {
    // Get all users. Upstream expects a list of the two: stale against 0.10.2, which answers a
    // page ({users, total}) and lists the admin calling it too.
    let r = await call(url('/'), admin);
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(3);
    assertUser(r.body.users, '1');
    assertUser(r.body.users, '2');

    // update role. Upstream posts {id, role} to /update/role, a route 0.10.2 no longer has: the
    // role is a field of /{id}/update, which takes the whole form.
    r = await post(url(`/${users['2'].id}/update`), { name: 'user 2', email: 'user2@openwebui.com', profile_image_url: '/user2.png', role: 'admin' }, admin);
    expect(r.status).toBe(200);
    assertUser([r.body], '2', { role: 'admin' });

    // Get all users
    r = await call(url('/'), admin);
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(3);
    assertUser(r.body.users, '1');
    assertUser(r.body.users, '2', { role: 'admin' });

    // Get (empty) user settings
    r = await call(url('/user/settings'), users['2']);
    expect(r.status).toBe(200);
    expect(r.body).toBeNull();

    // Update user settings
    r = await post(url('/user/settings/update'), { ui: { attr1: 'value1', attr2: 'value2' }, model_config: { attr3: 'value3', attr4: 'value4' } }, users['2']);
    expect(r.status).toBe(200);

    // Get user settings
    r = await call(url('/user/settings'), users['2']);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ui: { attr1: 'value1', attr2: 'value2' }, model_config: { attr3: 'value3', attr4: 'value4' } });

    // Get (empty) user info
    r = await call(url('/user/info'), users['1']);
    expect(r.status).toBe(200);
    expect(r.body).toBeNull();

    // Update user info
    r = await post(url('/user/info/update'), { attr1: 'value1', attr2: 'value2' }, users['1']);
    expect(r.status).toBe(200);

    // Get user info
    r = await call(url('/user/info'), users['1']);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ attr1: 'value1', attr2: 'value2' });

    // Get user by id. Upstream expects exactly {name, profile_image_url}: stale against 0.10.2,
    // which answers another user's public fields (id, status, is_active) — still no email or role.
    r = await call(url(`/${users['2'].id}`), users['1']);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ name: 'user 2', profile_image_url: '/user2.png' });
    expect(r.body).not.toHaveProperty('email');
    expect(r.body).not.toHaveProperty('role');

    // Update user by id. Upstream's mocked user 1 passes the admin check; in 0.10.2 updating
    // another user is the admin's, so user 1 is refused and the admin sends it — with the role,
    // which 0.10.2's form requires (upstream's body predates it).
    const updated = { name: 'user 2 updated', email: 'user2-updated@openwebui.com', profile_image_url: '/user2-updated.png' };
    r = await post(url(`/${users['2'].id}/update`), { ...updated, role: 'admin' }, users['1']);
    expect(r.status).toBe(401);
    r = await post(url(`/${users['2'].id}/update`), { ...updated, role: 'admin' }, admin);
    expect(r.status).toBe(200);

    // Get all users
    r = await call(url('/'), admin);
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(3);
    assertUser(r.body.users, '1');
    assertUser(r.body.users, '2', { role: 'admin', ...updated });

    // Delete user by id (the admin's, as the update above)
    r = await call(url(`/${users['2'].id}`), users['1'], 'DELETE');
    expect(r.status).toBe(401);
    r = await call(url(`/${users['2'].id}`), admin, 'DELETE');
    expect(r.status).toBe(200);
    expect(r.body).toBe(true);

    // Get all users
    r = await call(url('/'), admin);
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(2);
    expect(r.body.users.find((u: { id: string }) => u.id === users['2'].id)).toBeUndefined();
    assertUser(r.body.users, '1');
  });
});
