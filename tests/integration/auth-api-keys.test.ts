import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream } from '../../scripts/src/fake-upstreams/common.ts';
import { chatClient, chatDb, eventsAbout, type Account } from './chat-fixture.ts';

/**
 * Per-user API keys (Open WebUI 0.10.2 `/api/v1/auths/api_key`) and the trusted-header sign-in.
 * Two edges share one stack, so "refused at once on every edge" is checked where it matters: an
 * edge that has the key cached must drop it when the worker says so, before the next request.
 */
const stack = new Stack();
const db = chatDb(stack);
let a: Edge;
let b: Edge;
let trusting: Edge;
let untrusting: Edge;
let oa: FakeUpstream;
let admin: Account;
let alice: Account;

const openaiKey = randomBytes(12).toString('hex');
const onA = chatClient(() => a.chatUrl, { json: false });
const onB = chatClient(() => b.chatUrl, { json: false });
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

const NOT_ALLOWED = 'Use of API key is not enabled in the environment.';
const CREATION_NOT_ALLOWED = 'API key creation is not allowed in the environment.';
const ENDPOINT_NOT_ALLOWED = 'API key not allowed to access this endpoint.';
const INVALID_TOKEN = 'Your session has expired or the token is invalid. Please sign in again.';
const INVALID_TRUSTED = 'Your provider has not provided a trusted header. Please contact your administrator for assistance.';

const setConfig = async (values: Record<string, unknown>) => {
  const r = await onA.call('/api/v1/auths/admin/config', admin, 'POST', values);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
/** Settings reach the other edges through the config bucket's watch: bounded wait for it. */
const eventually = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: 5000, interval: 50 });

beforeAll(async () => {
  oa = await startFakeOpenAI({ apiKey: openaiKey });
  await stack.startProxyWorker({ OPENAI_API_BASE_URLS: oa.url, OPENAI_API_KEYS: openaiKey });
  await stack.startChatWorker();
  const trusted = { WEBUI_AUTH_TRUSTED_EMAIL_HEADER: 'X-Forwarded-Email', WEBUI_AUTH_TRUSTED_NAME_HEADER: 'X-Forwarded-User', WEBUI_AUTH_TRUSTED_GROUPS_HEADER: 'X-Forwarded-Groups' };
  // One after the other: four edges starting at once on a small machine can miss the health deadline.
  a = await stack.startEdge({ EDGE_FACES: 'chat' });
  b = await stack.startEdge({ EDGE_FACES: 'chat' });
  trusting = await stack.startEdge({ EDGE_FACES: 'chat', EDGE_TRUST_PROXY: '127.0.0.1', ...trusted });
  untrusting = await stack.startEdge({ EDGE_FACES: 'chat', ...trusted });
  admin = await onA.signup('Admin');
  alice = await onA.addUser(admin, 'Alice');
});

afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
  await oa?.close();
});

describe('creating, showing and deleting a key', () => {
  it('is refused while ENABLE_API_KEYS is off (the default), and /api/config says so', async () => {
    expect(await onA.call('/api/v1/auths/api_key', admin, 'POST')).toEqual({ status: 403, body: { detail: CREATION_NOT_ALLOWED } });
    expect((await onA.call('/api/config')).body.features.enable_api_keys).toBe(false);
    expect((await onA.call('/api/v1/auths/admin/config', admin)).body).toMatchObject({ ENABLE_API_KEYS: false, ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: false, API_KEYS_ALLOWED_ENDPOINTS: '' });
  });

  it('shows the key once, stores only its SHA-256, and GET names it masked', async () => {
    await setConfig({ ENABLE_API_KEYS: true });
    expect((await onA.call('/api/config')).body.features.enable_api_keys).toBe(true);
    expect(await onA.call('/api/v1/auths/api_key', admin)).toEqual({
      status: 404,
      body: { detail: "Oops! It looks like there's a hiccup. The API key is missing. Please make sure to provide a valid API key to access this feature." },
    });
    const r = await onA.call('/api/v1/auths/api_key', admin, 'POST');
    expect(r.status).toBe(200);
    const key: string = r.body.api_key;
    expect(key).toMatch(/^sk-[0-9a-f]{32}$/);
    expect(await onA.call('/api/v1/auths/api_key', admin)).toEqual({ status: 200, body: { api_key: `sk-…${key.slice(-4)}` } });
    const rows = await db<{ user_id: string; key_hash: string; hint: string }[]>`select user_id, key_hash, hint from api_key`;
    expect(rows).toEqual([{ user_id: admin.id, key_hash: sha256(key), hint: key.slice(-4) }]);
    // Nowhere in the schema in clear: not in the table, not in the events.
    const [row] = await db<{ hits: number }[]>`select (select count(*) from api_key where row_to_json(api_key)::text like ${'%' + key.slice(3) + '%'})::int
      + (select count(*) from outbox where event::text like ${'%' + key.slice(3) + '%'})::int as hits`;
    expect(row?.hits).toBe(0);
    expect((await eventsAbout(db, admin.id)).map((e) => e.event)).toContain('auth.api_key.created');
    await onA.call('/api/v1/auths/api_key', admin, 'DELETE');
  });

  it('is refused to a user without the api_keys permission, allowed once a group grants it', async () => {
    expect(await onA.call('/api/v1/auths/api_key', alice, 'POST')).toEqual({ status: 403, body: { detail: CREATION_NOT_ALLOWED } });
    const g = await onA.call('/api/v1/groups/create', admin, 'POST', { name: `keys-${randomBytes(3).toString('hex')}`, description: '', permissions: { features: { api_keys: true } } });
    expect(g.status).toBe(200);
    expect((await onA.call(`/api/v1/groups/id/${g.body.id}/users/add`, admin, 'POST', { user_ids: [alice.id] })).status).toBe(200);
    const r = await onA.call('/api/v1/auths/api_key', alice, 'POST');
    expect(r.status).toBe(200);
    expect((await onB.call('/api/v1/auths/', r.body.api_key)).body).toMatchObject({ id: alice.id, email: alice.email });
    await onA.call('/api/v1/auths/api_key', alice, 'DELETE');
  });
});

describe('using a key', () => {
  let key: string;
  beforeAll(async () => {
    await setConfig({ ENABLE_API_KEYS: true, ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: false });
    key = (await onA.call('/api/v1/auths/api_key', admin, 'POST')).body.api_key;
  });

  it('is accepted wherever a session token is: Bearer, x-api-key, on either edge', async () => {
    for (const edge of [onA, onB]) {
      const me = await edge.call('/api/v1/auths/', key);
      expect(me.status).toBe(200);
      expect(me.body).toMatchObject({ id: admin.id, role: 'admin', token: key });
      expect((await edge.call('/api/models', key)).status).toBe(200);
      expect((await edge.call('/api/v1/users/', null, 'GET', undefined, { headers: { 'x-api-key': key } })).status).toBe(200);
    }
    // Not a session: no cookie is set from a key.
    expect((await onA.call('/api/v1/auths/', key)).headers.get('set-cookie')).toBeNull();
  });

  it('works for completions (streamed and not) and the live event stream', async () => {
    const mark = `key-${randomBytes(4).toString('hex')}`;
    const post = (stream: boolean) =>
      fetch(`${a.chatUrl}/api/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'echo', stream, messages: [{ role: 'user', content: mark }] }),
      });
    const plain = await post(false);
    expect(plain.status).toBe(200);
    expect((await plain.json()).choices[0].message.content).toContain(mark);
    const streamed = await post(true);
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const content = (await streamed.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)).choices[0]?.delta?.content ?? '')
      .join('');
    expect(content).toBe(`echo: ${mark}`);

    const abort = new AbortController();
    const live = await fetch(`${b.chatUrl}/api/v1/events/stream`, { headers: { authorization: `Bearer ${key}` }, signal: abort.signal });
    expect(live.status).toBe(200);
    expect(live.headers.get('content-type')).toMatch(/^text\/event-stream/);
    abort.abort();
    // A wrong key is the session error, on the stream too.
    const wrong = await fetch(`${b.chatUrl}/api/v1/events/stream`, { headers: { authorization: `Bearer sk-${'0'.repeat(32)}` } });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ detail: INVALID_TOKEN });
  });

  it('endpoint restrictions: only the listed paths and what lies below them', async () => {
    await setConfig({ ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: true, API_KEYS_ALLOWED_ENDPOINTS: '/api/models, /api/v1/chats, /api/v1/auth' });
    for (const edge of [onA, onB]) {
      await eventually(async () => (await edge.call('/api/v1/auths/', key)).body).toEqual({ detail: ENDPOINT_NOT_ALLOWED });
      expect((await edge.call('/api/v1/auths/', key)).status).toBe(403);
      expect((await edge.call('/api/models', key)).status).toBe(200);
      expect((await edge.call('/api/v1/chats/list', key)).status).toBe(200);
      // An entry covers whole path segments: /api/v1/auth does not open /api/v1/auths/.
      expect((await edge.call('/api/v1/folders/', key)).status).toBe(403);
      // A session token is not restricted.
      expect((await edge.call('/api/v1/auths/', admin)).status).toBe(200);
    }
    await setConfig({ ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: false, API_KEYS_ALLOWED_ENDPOINTS: '' });
    await eventually(async () => (await onB.call('/api/v1/auths/', key)).status).toBe(200);
  });

  it('is refused on every edge while keys are switched off, and works again when on', async () => {
    await setConfig({ ENABLE_API_KEYS: false });
    for (const edge of [onA, onB]) await eventually(async () => (await edge.call('/api/models', key)).body).toEqual({ detail: NOT_ALLOWED });
    expect((await onA.call('/api/models', key)).status).toBe(403);
    await setConfig({ ENABLE_API_KEYS: true });
    for (const edge of [onA, onB]) await eventually(async () => (await edge.call('/api/models', key)).status).toBe(200);
  });

  it('a deleted key is refused at once on every edge, even where it was cached', async () => {
    for (const edge of [onA, onB]) expect((await edge.call('/api/models', key)).status).toBe(200);
    expect(await onA.call('/api/v1/auths/api_key', admin, 'DELETE')).toEqual({ status: 200, body: true });
    for (const edge of [onB, onA]) expect(await edge.call('/api/models', key)).toEqual({ status: 401, body: { detail: INVALID_TOKEN } });
    expect((await eventsAbout(db, admin.id)).map((e) => e.event)).toContain('auth.api_key.deleted');
    expect(await db`select 1 from api_key where user_id = ${admin.id}`).toHaveLength(0);
  });

  it('a new key replaces the old one at once', async () => {
    const first = (await onA.call('/api/v1/auths/api_key', admin, 'POST')).body.api_key;
    expect((await onB.call('/api/models', first)).status).toBe(200);
    const second = (await onA.call('/api/v1/auths/api_key', admin, 'POST')).body.api_key;
    expect(second).not.toBe(first);
    expect((await onB.call('/api/models', first)).status).toBe(401);
    expect((await onB.call('/api/models', second)).status).toBe(200);
  });

  it('a demoted user loses key use, a deleted user loses the key', async () => {
    const bob = await onA.addUser(admin, 'Bob', 'admin');
    const bobKey = (await onA.call('/api/v1/auths/api_key', bob, 'POST')).body.api_key;
    expect((await onB.call('/api/models', bobKey)).status).toBe(200);
    const form = { role: 'user', name: bob.name, email: bob.email, profile_image_url: '/user.png' };
    expect((await onA.call(`/api/v1/users/${bob.id}/update`, admin, 'POST', form)).status).toBe(200);
    await eventually(async () => (await onB.call('/api/models', bobKey)).body).toEqual({ detail: NOT_ALLOWED });
    expect((await onA.call(`/api/v1/users/${bob.id}`, admin, 'DELETE')).status).toBe(200);
    expect(await onB.call('/api/models', bobKey)).toEqual({ status: 401, body: { detail: INVALID_TOKEN } });
  });
});

describe('OIDC discovery check (admin page)', () => {
  it('reports what the provider publishes, and why it cannot be read', async () => {
    const { createServer } = await import('node:http');
    const srv = createServer((req, res) => {
      const base = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
      if (req.url === '/realm/.well-known/openid-configuration') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ issuer: `${base}/realm`, authorization_endpoint: `${base}/auth`, token_endpoint: `${base}/token`, code_challenge_methods_supported: ['S256'] }));
      } else res.writeHead(404).end('no');
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
    try {
      const good = await onA.call('/api/v1/auths/admin/config/oauth/discover', admin, 'POST', { url: `${base}/realm` });
      expect(good.status).toBe(200);
      expect(good.body).toMatchObject({ ok: true, url: `${base}/realm/.well-known/openid-configuration`, status: 200, issuer: `${base}/realm`, token_endpoint: `${base}/token`, userinfo_endpoint: null, code_challenge_methods_supported: ['S256'] });
      expect((await onA.call('/api/v1/auths/admin/config/oauth/discover', admin, 'POST', { url: `${base}/other` })).body).toMatchObject({ ok: false, status: 404, message: 'The provider answered HTTP 404.' });
      expect((await onA.call('/api/v1/auths/admin/config/oauth/discover', admin, 'POST', { url: 'ftp://x' })).body.ok).toBe(false);
      expect((await onA.call('/api/v1/auths/admin/config/oauth/discover', alice, 'POST', { url: base })).status).toBe(401);
    } finally {
      srv.close();
    }
    const down = await onA.call('/api/v1/auths/admin/config/oauth/discover', admin, 'POST', { url: base });
    expect(down.body).toMatchObject({ ok: false, status: null });
    expect(down.body.message).toMatch(/^Cannot reach the provider/);
  });
});

describe('trusted header sign-in', () => {
  const headers = (email: string, extra: Record<string, string> = {}) => ({ 'x-forwarded-email': email, ...extra });
  const signin = (edge: Edge, h: Record<string, string>) =>
    chatClient(() => edge.chatUrl).call('/api/v1/auths/signin', null, 'POST', { email: '', password: '' }, { headers: h });

  it('from a trusted proxy: creates the account on first sight, signs the same one in after, syncs groups', async () => {
    const who = `proxied-${randomBytes(3).toString('hex')}@example.com`;
    const group = `eng-${randomBytes(3).toString('hex')}`;
    const g = await onA.call('/api/v1/groups/create', admin, 'POST', { name: group, description: '' });
    const first = await signin(trusting, headers(who.toUpperCase(), { 'x-forwarded-user': 'Pro%C3%A7y', 'x-forwarded-groups': `${group}, unknown-group` }));
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ email: who, name: 'Proçy', role: 'pending', token_type: 'Bearer' });
    expect(first.headers.get('set-cookie')).toMatch(/^token=/);
    const again = await signin(trusting, headers(who));
    expect(again.body.id).toBe(first.body.id);
    const members = await db<{ user_id: string }[]>`select user_id from group_member where group_id = ${g.body.id}`;
    expect(members.map((m) => m.user_id)).toEqual([first.body.id]);
    // The token works like any session token.
    expect((await onB.call('/api/v1/auths/', again.body.token)).body.email).toBe(who);
    expect((await chatClient(() => trusting.chatUrl).call('/api/config')).body.features.auth_trusted_header).toBe(true);
    expect((await chatClient(() => trusting.chatUrl).call('/api/v1/auths/admin/config', admin)).body).toMatchObject({
      WEBUI_AUTH_TRUSTED_EMAIL_HEADER: 'X-Forwarded-Email',
      WEBUI_AUTH_TRUSTED_NAME_HEADER: 'X-Forwarded-User',
      WEBUI_AUTH_TRUSTED_GROUPS_HEADER: 'X-Forwarded-Groups',
    });
  });

  it('is refused without the header, and from a peer EDGE_TRUST_PROXY does not name', async () => {
    expect(await signin(trusting, {})).toEqual({ status: 400, body: { detail: INVALID_TRUSTED } });
    expect(await signin(untrusting, headers(admin.email))).toEqual({ status: 400, body: { detail: INVALID_TRUSTED } });
    // Password sign-in is what the trusted-header mode replaces: the admin's password does not sign in there.
    const pwd = await chatClient(() => untrusting.chatUrl).call('/api/v1/auths/signin', null, 'POST', { email: admin.email, password: admin.password });
    expect(pwd.status).toBe(400);
    expect((await onA.call('/api/config')).body.features.auth_trusted_header).toBe(false);
  });
});
