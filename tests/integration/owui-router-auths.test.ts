import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, eventsAbout, pw, type Account, type Caller } from './chat-fixture.ts';

/**
 * Open WebUI's own router test for /api/v1/auths (backend/open_webui/test/apps/webui/routers/
 * test_auths.py), ported step for step to HTTP against the real stack. Upstream runs each test
 * against a fresh database with a mocked caller that passes every role check and inserts accounts
 * straight into its tables; here the first sign-up is the admin, the others are added by the admin
 * through the API, and each assertion is the HTTP-visible one (a database read upstream becomes a
 * read through the API). Where an upstream assertion no longer holds for Open WebUI 0.10.2 itself,
 * the comment says so and the test asserts what 0.10.2 answers.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call } = chatClient(() => edge.chatUrl);
const post = (path: string, body: unknown, who?: Caller) => call(path, who, 'POST', body);
const url = (p: string) => `/api/v1/auths${p}`;
const imageRoute = (id: string) => `/api/v1/users/${id}/profile/image`;

let admin: Account;

/** insert_new_auth upstream: an account the admin adds, signed in for its own token. */
async function insertAuth(name: string, userEmail: string, role: 'user' | 'admin' = 'user', password = pw()): Promise<Account> {
  const r = await post(url('/add'), { name, email: userEmail, password, role }, admin);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { id: r.body.id, token: r.body.token, name, email: userEmail, password };
}

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat', SIGNIN_RATE_LIMIT_PER_ACCOUNT: '1000', SIGNIN_RATE_LIMIT_PER_ADDRESS: '1000' });
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

describe('test_auths.py', () => {
  it('test_signup', async () => {
    const password = pw();
    const r = await post(url('/signup'), { name: 'John Doe', email: 'john.doe@openwebui.com', password });
    expect(r.status).toBe(200);
    expect(typeof r.body.id).toBe('string');
    expect(r.body.id.length).toBeGreaterThan(0);
    expect(r.body.name).toBe('John Doe');
    expect(r.body.email).toBe('john.doe@openwebui.com');
    expect(['admin', 'user', 'pending']).toContain(r.body.role);
    // Upstream expects "/user.png": stale against 0.10.2, whose sign-up answers the user's profile image route.
    expect(r.body.profile_image_url).toBe(imageRoute(r.body.id));
    expect(r.body.token.length).toBeGreaterThan(0);
    expect(r.body.token_type).toBe('Bearer');
    // The first sign-up is the admin; the rest of this file runs as them where upstream's mock did.
    expect(r.body.role).toBe('admin');
    admin = { id: r.body.id, token: r.body.token, name: 'John Doe', email: 'john.doe@openwebui.com', password };
  });

  it('test_get_session_user', async () => {
    const r = await call(url('/'), admin);
    expect(r.status).toBe(200);
    // Upstream compares the whole body with these five fields: stale against 0.10.2, whose session
    // answer also carries the token, its expiry, the permissions and the profile fields. The
    // picture is the stored one, "/user.png" for an account that never set one, as upstream says.
    expect(r.body).toMatchObject({ id: admin.id, name: 'John Doe', email: 'john.doe@openwebui.com', role: 'admin', profile_image_url: '/user.png' });
  });

  it('test_update_profile', async () => {
    const user = await insertAuth('John Doe', 'john.doe.profile@openwebui.com');
    const r = await post(url('/update/profile'), { name: 'John Doe 2', profile_image_url: '/user2.png' }, user);
    expect(r.status).toBe(200);
    // Upstream reads the row; the admin's view of the user says the same.
    const stored = await call(`/api/v1/users/${user.id}`, admin);
    expect(stored.status).toBe(200);
    expect(stored.body.name).toBe('John Doe 2');
    expect(stored.body.profile_image_url).toBe('/user2.png');
    const evs = (await eventsAbout(db, user.id)).filter((e) => e.event === 'user.profile_updated');
    expect(evs).toHaveLength(1);
    expect(evs[0].data.updated_fields).toEqual(expect.arrayContaining(['name', 'profile_image_url']));
  });

  it('test_update_password', async () => {
    const oldPassword = pw();
    const newPassword = pw();
    const user = await insertAuth('John Doe', 'john.doe.password@openwebui.com', 'user', oldPassword);
    const r = await post(url('/update/password'), { password: oldPassword, new_password: newPassword }, user);
    expect(r.status).toBe(200);
    expect(r.body).toBe(true);
    // authenticate_user upstream: the old password no longer signs in, the new one does.
    const old = await post(url('/signin'), { email: user.email, password: oldPassword });
    expect(old.status).toBe(400);
    const fresh = await post(url('/signin'), { email: user.email, password: newPassword });
    expect(fresh.status).toBe(200);
    expect(fresh.body.id).toBe(user.id);
    expect((await eventsAbout(db, user.id)).filter((e) => e.event === 'auth.password_changed')).toHaveLength(1);
    // A wrong current password changes nothing.
    const wrong = await post(url('/update/password'), { password: oldPassword, new_password: pw() }, user);
    expect(wrong).toMatchObject({ status: 400, body: { detail: 'The password provided is incorrect. Please check for typos and try again.' } });
  });

  it('test_signin', async () => {
    const password = pw();
    const user = await insertAuth('John Doe', 'john.doe.signin@openwebui.com', 'user', password);
    const r = await post(url('/signin'), { email: 'john.doe.signin@openwebui.com', password });
    expect(r.status).toBe(200);
    expect(r.body.id).toBe(user.id);
    expect(r.body.name).toBe('John Doe');
    expect(r.body.email).toBe('john.doe.signin@openwebui.com');
    expect(r.body.role).toBe('user');
    // Upstream expects "/user.png": stale against 0.10.2 (the profile image route).
    expect(r.body.profile_image_url).toBe(imageRoute(user.id));
    expect(r.body.token.length).toBeGreaterThan(0);
    expect(r.body.token_type).toBe('Bearer');
  });

  it('test_add_user', async () => {
    const r = await post(url('/add'), { name: 'John Doe 2', email: 'john.doe2@openwebui.com', password: pw(), role: 'admin' }, admin);
    expect(r.status).toBe(200);
    expect(r.body.id.length).toBeGreaterThan(0);
    expect(r.body.name).toBe('John Doe 2');
    expect(r.body.email).toBe('john.doe2@openwebui.com');
    expect(r.body.role).toBe('admin');
    // Upstream expects "/user.png": stale against 0.10.2 (the profile image route).
    expect(r.body.profile_image_url).toBe(imageRoute(r.body.id));
    expect(r.body.token.length).toBeGreaterThan(0);
    expect(r.body.token_type).toBe('Bearer');
  });

  it('test_get_admin_details', async () => {
    const r = await call(url('/admin/details'), admin);
    expect(r.status).toBe(200);
    // The primary admin (the first sign-up), as upstream's only admin.
    expect(r.body).toEqual({ name: 'John Doe', email: 'john.doe@openwebui.com' });
  });

  describe('API keys', () => {
    let key = '';
    beforeAll(async () => {
      // 0.10.2 refuses key creation while ENABLE_API_KEYS is off (its default); upstream's test predates the switch.
      const r = await post(url('/admin/config'), { ENABLE_API_KEYS: true }, admin);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    });

    it('test_create_api_key_', async () => {
      const r = await call(url('/api_key'), admin, 'POST');
      expect(r.status).toBe(200);
      expect(typeof r.body.api_key).toBe('string');
      expect(r.body.api_key.length).toBeGreaterThan(0);
      expect(r.body.api_key).toMatch(/^sk-[0-9a-f]{32}$/);
      key = r.body.api_key;
    });

    it('test_get_api_key', async () => {
      const r = await call(url('/api_key'), admin);
      expect(r.status).toBe(200);
      // Upstream answers the key itself ({"api_key": "abc"}). Here keys are stored as SHA-256
      // digests, so the key is shown once, when created, and this answers which key it is.
      expect(r.body).toEqual({ api_key: `sk-…${key.slice(-4)}` });
      expect(JSON.stringify(r.body)).not.toContain(key.slice(3));
    });

    it('test_delete_api_key', async () => {
      const r = await call(url('/api_key'), admin, 'DELETE');
      expect(r.status).toBe(200);
      expect(r.body).toBe(true);
      // Upstream reads api_key None from the row: the key is gone for GET too.
      const gone = await call(url('/api_key'), admin);
      expect(gone.status).toBe(404);
    });
  });
});
