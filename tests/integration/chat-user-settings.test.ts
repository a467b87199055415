import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, eventsAbout, PROHIBITED, type Account, type Caller } from './chat-fixture.ts';

/**
 * A user's own settings and info (/api/v1/users/user/settings, /user/info), their permissions,
 * and avatars (/api/v1/users/{id}/profile/image) on the chat face: what is saved is read back,
 * an update replaces the top-level keys it sends and keeps the others, nobody reads another's,
 * bad bodies are FastAPI's 422, and each change writes its event.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const post = (path: string, body: unknown, who?: Caller) => call(path, who, 'POST', body);

let admin: Account;
let ada: Account;
let bob: Account;

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup('Admin');
  ada = await addUser(admin, 'Ada');
  bob = await addUser(admin, 'Bob');
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

/** An avatar as the browser fetches it: bytes and their type. */
async function avatar(id: string, who: Account) {
  const r = await fetch(`${edge.chatUrl}/api/v1/users/${id}/profile/image`, { headers: { authorization: `Bearer ${who.token}` } });
  return { status: r.status, type: r.headers.get('content-type'), disposition: r.headers.get('content-disposition'), bytes: Buffer.from(await r.arrayBuffer()) };
}

describe('settings', () => {
  it('are null until saved, then read back as saved', async () => {
    expect(await call('/api/v1/users/user/settings', ada)).toEqual({ status: 200, body: null });
    const ui = { theme: 'dark', language: 'fr-FR', chatDirection: 'auto', models: ['qwen3:8b'], params: { temperature: 0.3 } };
    const saved = await post('/api/v1/users/user/settings/update', { ui }, ada);
    expect(saved).toEqual({ status: 200, body: { ui } });
    expect(await call('/api/v1/users/user/settings', ada)).toEqual({ status: 200, body: { ui } });
    // The session user and the admin's view carry them too.
    expect((await call(`/api/v1/users/${ada.id}`, admin)).body.settings).toEqual({ ui });
  });

  it('an update replaces each top-level key it sends and keeps the others', async () => {
    await post('/api/v1/users/user/settings/update', { ui: { theme: 'light' }, model_config: { a: 1 } }, bob);
    const r = await post('/api/v1/users/user/settings/update', { ui: { theme: 'oled-dark', notificationSound: false } }, bob);
    // ui is replaced whole (not merged key by key), model_config kept.
    expect(r.body).toEqual({ ui: { theme: 'oled-dark', notificationSound: false }, model_config: { a: 1 } });
    // A body without ui saves ui as {} (Open WebUI's default for the field).
    expect((await post('/api/v1/users/user/settings/update', { other: true }, bob)).body).toEqual({ ui: {}, model_config: { a: 1 }, other: true });
  });

  it('are each user’s own', async () => {
    expect((await call('/api/v1/users/user/settings', ada)).body.ui.theme).toBe('dark');
    expect((await call('/api/v1/users/user/settings', bob)).body.ui).toEqual({});
    expect((await call('/api/v1/users/user/settings', admin)).body).toBeNull();
  });

  it('refuse a body that is not the form, with FastAPI’s 422', async () => {
    const notObject = await post('/api/v1/users/user/settings/update', [1, 2], ada);
    expect(notObject.status).toBe(422);
    expect(Array.isArray(notObject.body.detail)).toBe(true);
    const badUi = await post('/api/v1/users/user/settings/update', { ui: 'dark' }, ada);
    expect(badUi.status).toBe(422);
    expect(badUi.body.detail[0].loc).toEqual(['body', 'ui']);
    // Nothing changed.
    expect((await call('/api/v1/users/user/settings', ada)).body.ui.theme).toBe('dark');
  });

  it('tool servers in the settings need features.direct_tool_servers: without it they are left out, the rest saved', async () => {
    const tools = { ui: { theme: 'dark', toolServers: [{ url: 'http://tools.example', auth_type: 'none' }] } };
    expect(await post('/api/v1/users/user/settings/update', tools, ada)).toEqual({ status: 200, body: { ui: { theme: 'dark' } } });
    expect((await call('/api/v1/users/user/settings', ada)).body).toEqual({ ui: { theme: 'dark' } });
    // Admins have every permission.
    expect(await post('/api/v1/users/user/settings/update', tools, admin)).toEqual({ status: 200, body: tools });
  });

  it('need a signed-in, verified user', async () => {
    expect((await call('/api/v1/users/user/settings', null)).status).toBe(401);
    expect((await post('/api/v1/users/user/settings/update', { ui: {} }, null)).status).toBe(401);
    const pending = await addUser(admin, 'Pending', 'pending');
    expect(await call('/api/v1/users/user/settings', pending)).toEqual({ status: 401, body: { detail: PROHIBITED } });
  });

  it('wrote user.settings_updated with the keys sent, about the user, by the user', async () => {
    const evs = (await eventsAbout(db, bob.id)).filter((e) => e.event === 'user.settings_updated');
    expect(evs.map((e) => e.data.updated_fields)).toEqual([['ui', 'model_config'], ['ui'], ['ui', 'other']]);
    expect(evs[0]).toMatchObject({ actor: { id: bob.id }, subject: { type: 'user', id: bob.id } });
    // The refused updates (422) wrote nothing.
    expect((await eventsAbout(db, ada.id)).filter((e) => e.event === 'user.settings_updated')).toHaveLength(2);
  });
});

describe('info', () => {
  it('is null until saved, then merged key by key and read back', async () => {
    expect(await call('/api/v1/users/user/info', ada)).toEqual({ status: 200, body: null });
    expect(await post('/api/v1/users/user/info/update', { location: 'Paris', team: 'core' }, ada)).toEqual({ status: 200, body: { location: 'Paris', team: 'core' } });
    expect(await post('/api/v1/users/user/info/update', { team: 'web' }, ada)).toEqual({ status: 200, body: { location: 'Paris', team: 'web' } });
    expect(await call('/api/v1/users/user/info', ada)).toEqual({ status: 200, body: { location: 'Paris', team: 'web' } });
    expect((await call('/api/v1/users/user/info', bob)).body).toBeNull();
  });

  it('must be a JSON object', async () => {
    expect((await post('/api/v1/users/user/info/update', ['Paris'], ada)).status).toBe(422);
    expect((await post('/api/v1/users/user/info/update', '"Paris"', ada)).status).toBe(422);
  });

  it('wrote user.profile_updated naming info', async () => {
    const evs = (await eventsAbout(db, ada.id)).filter((e) => e.event === 'user.profile_updated');
    expect(evs.map((e) => e.data)).toEqual([{ updated_fields: ['info'] }, { updated_fields: ['info'] }]);
  });
});

describe('permissions', () => {
  it('are the session’s, widened by the user’s groups', async () => {
    const before = await call('/api/v1/users/permissions', ada);
    expect(before.status).toBe(200);
    expect(before.body).toEqual((await call('/api/v1/auths/', ada)).body.permissions);
    expect(before.body.features.direct_tool_servers).toBe(false);
    const g = await post('/api/v1/groups/create', { name: 'Tool users', description: '', permissions: { features: { direct_tool_servers: true } } }, admin);
    expect(g.status, JSON.stringify(g.body)).toBe(200);
    expect((await post(`/api/v1/groups/id/${g.body.id}/users/add`, { user_ids: [ada.id] }, admin)).status).toBe(200);
    expect((await call('/api/v1/users/permissions', ada)).body.features.direct_tool_servers).toBe(true);
    // …and then tool servers are saved.
    const tools = { ui: { theme: 'dark', toolServers: [{ url: 'http://tools.example' }] } };
    expect(await post('/api/v1/users/user/settings/update', tools, ada)).toEqual({ status: 200, body: tools });
    expect((await call('/api/v1/users/permissions', null)).status).toBe(401);
  });
});

describe('profile image', () => {
  it('is the uploaded picture’s bytes, with its type', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    const r = await post('/api/v1/auths/update/profile', { name: 'Ada', profile_image_url: `data:image/png;base64,${png.toString('base64')}` }, ada);
    expect(r.status).toBe(200);
    const img = await avatar(ada.id, bob);
    expect(img.status).toBe(200);
    expect(img.type).toBe('image/png');
    expect(img.disposition).toBe("inline; filename*=UTF-8''image.png");
    expect(img.bytes.equals(png)).toBe(true);
  });

  it('is the default avatar otherwise (no picture, an outside URL, or an image type that could carry script)', async () => {
    const plain = await avatar(bob.id, ada);
    expect(plain.status).toBe(200);
    expect(plain.type).toMatch(/^image\/svg\+xml/);
    expect(plain.bytes.toString()).toMatch(/^<svg /);
    await post('/api/v1/auths/update/profile', { name: 'Bob', profile_image_url: `data:image/svg+xml;base64,${Buffer.from('<svg onload="alert(1)"/>').toString('base64')}` }, bob);
    const svg = await avatar(bob.id, ada);
    expect(svg.bytes.equals(plain.bytes)).toBe(true);
  });

  it('is 400 for an unknown user and 401 without a session', async () => {
    expect(await call('/api/v1/users/nobody/profile/image', ada)).toEqual({ status: 400, body: { detail: "We could not find what you're looking for :/" } });
    expect((await fetch(`${edge.chatUrl}/api/v1/users/${ada.id}/profile/image`)).status).toBe(401);
  });
});

describe('active status', () => {
  it('says whether a user was seen in the last three minutes, to any verified user', async () => {
    // Signed up just now (adding an account sets its last activity).
    expect(await call(`/api/v1/users/${admin.id}/active`, bob)).toEqual({ status: 200, body: { active: true } });
    await db`update "user" set last_active_at = last_active_at - 181 where id = ${ada.id}`;
    expect(await call(`/api/v1/users/${ada.id}/active`, bob)).toEqual({ status: 200, body: { active: false } });
    expect(await call('/api/v1/users/nobody/active', bob)).toEqual({ status: 200, body: { active: false } });
    expect((await call(`/api/v1/users/${ada.id}/active`, null)).status).toBe(401);
  });
});

describe('time zone', () => {
  it('is stored as the front end reports it, with an event only when it changed; pending users too', async () => {
    const tz = () => db<{ timezone: string | null }[]>`select timezone from "user" where id = ${bob.id}`.then((r) => r[0]?.timezone);
    expect(await tz()).toBeNull();
    expect(await post('/api/v1/auths/update/timezone', { timezone: 'Europe/Paris' }, bob)).toEqual({ status: 200, body: { status: true } });
    expect(await tz()).toBe('Europe/Paris');
    expect(await post('/api/v1/auths/update/timezone', { timezone: 'Europe/Paris' }, bob)).toEqual({ status: 200, body: { status: true } });
    expect(await post('/api/v1/auths/update/timezone', { timezone: 'America/Lima' }, bob)).toEqual({ status: 200, body: { status: true } });
    expect(await tz()).toBe('America/Lima');
    const evs = (await eventsAbout(db, bob.id)).filter((e) => e.event === 'user.profile_updated' && e.data.updated_fields.includes('timezone'));
    expect(evs).toHaveLength(2);
    const pending = await addUser(admin, 'Pending TZ', 'pending');
    expect((await post('/api/v1/auths/update/timezone', { timezone: 'Asia/Tokyo' }, pending)).status).toBe(200);
    const missing = await post('/api/v1/auths/update/timezone', {}, bob);
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'timezone'] });
    expect((await post('/api/v1/auths/update/timezone', { timezone: 'UTC' }, null)).status).toBe(401);
  });
});

describe('hostile input', () => {
  it('never answers a 5xx on the settings, info and time zone routes', async () => {
    const bodies: unknown[] = [
      null, [], 'x', 12, {}, { ui: null }, { ui: [] }, { ui: { '\u0000': 1 } }, { ui: { theme: '\u0000' } }, { '\u0000': true },
      { timezone: 12 }, { timezone: '\u0000' }, { timezone: 'x'.repeat(100_000) }, JSON.parse(`${'{"a":'.repeat(500)}1${'}'.repeat(500)}`),
    ];
    for (const path of ['/api/v1/users/user/settings/update', '/api/v1/users/user/info/update', '/api/v1/auths/update/timezone']) {
      for (const body of bodies) {
        const r = await post(path, body, bob);
        expect(r.status, `${path} ${JSON.stringify(body).slice(0, 80)} → ${JSON.stringify(r.body).slice(0, 200)}`).toBeLessThan(500);
        if (r.status >= 400) expect(r.body).toHaveProperty('detail');
      }
    }
    // No such user (400); `..` folds the path into another route, which does not exist (404).
    for (const id of ['%00', '..', 'x'.repeat(2000)]) expect([400, 404]).toContain((await call(`/api/v1/users/${id}/profile/image`, bob)).status);
  });
});
