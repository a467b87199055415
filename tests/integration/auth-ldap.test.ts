import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LDAP_ERRORS, OWUI_ERRORS } from '@gatehouse/contracts';
import { Stack, type Edge, type Proc } from '../support/local-stack.ts';
import { startSlapd, type Slapd } from '../support/slapd.ts';
import { chatClient, chatDb, eventsNamed, pw, type Account } from './chat-fixture.ts';

/**
 * LDAP sign-in (Open WebUI 0.10.2's POST /api/v1/auths/ldap) and its admin settings against a real
 * OpenLDAP slapd started for this file (tests/support/slapd.ts, with LDAPS and StartTLS on a
 * self-signed certificate). Two chat workers, so "applies live" means on every replica: each
 * check after a settings change is repeated more times than there are workers.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup } = chatClient(() => edge.chatUrl);
let ldap: Slapd;
let admin: Account;
let workers: Proc[];

const BAD = { status: 400, body: { detail: OWUI_ERRORS.invalidCredentials } };
const pass = (uid: string) => ldap.users.find((u) => u.uid === uid)!.password;
const signin = (user: string, password: string) => call('/api/v1/auths/ldap', null, 'POST', { user, password });
/** The server form for this file's directory: plain LDAP unless told otherwise. */
const serverForm = (extra: Record<string, unknown> = {}) => ({
  label: 'Test directory',
  host: '127.0.0.1',
  port: ldap.port,
  attribute_for_mail: 'mail',
  attribute_for_username: 'uid',
  app_dn: ldap.appDn,
  app_dn_password: ldap.appPassword,
  search_base: ldap.peopleBase,
  search_filters: '(objectClass=inetOrgPerson)',
  use_tls: false,
  certificate_path: null,
  validate_cert: true,
  ciphers: 'ALL',
  use_starttls: false,
  ...extra,
});
const setServer = async (extra: Record<string, unknown> = {}) => {
  const r = await call('/api/v1/auths/admin/config/ldap/server', admin, 'POST', serverForm(extra));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
const setConfig = async (form: Record<string, unknown>) => {
  const r = await call('/api/v1/auths/admin/config/ldap', admin, 'POST', form);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
const groupsOf = async (userId: string) =>
  (await db<{ name: string }[]>`select g.name from "group" g join group_member m on m.group_id = g.id where m.user_id = ${userId} order by g.name`).map((r) => r.name);

beforeAll(async () => {
  ldap = await startSlapd({
    tls: true,
    users: [
      { uid: 'alice', cn: 'Alice Liddell' },
      { uid: 'bob', cn: 'Bob Builder' },
      { uid: 'carol' },
      { uid: 'dave' },
      { uid: 'erin' },
      { uid: 'frank' },
      { uid: 'o(brien)*', cn: 'Pat O Brien', mail: 'obrien@ldap.gatehouse.test' },
      { uid: 'nomail', mail: '' },
    ],
    groups: [
      { cn: 'eng', members: ['alice', 'bob'] },
      { cn: 'ops', members: ['alice'] },
      { cn: 'design', members: ['bob'] },
    ],
  });
  workers = await Promise.all([stack.startChatWorker({}, { ingest: false }), stack.startChatWorker({}, { ingest: false })]);
  // Low per-account limit so the rate-limit case is short; the address limit out of the way.
  edge = await stack.startEdge({ EDGE_FACES: 'chat', SIGNIN_RATE_LIMIT_PER_ACCOUNT: '20', SIGNIN_RATE_LIMIT_PER_ADDRESS: '1000' });
  admin = await signup();
}, 90_000);
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
  await ldap?.stop();
});

describe('settings', () => {
  it('LDAP is off until enabled: the sign-in says so', async () => {
    expect(await call('/api/v1/auths/admin/config/ldap', admin)).toEqual({
      status: 200,
      body: { ENABLE_LDAP: false, ENABLE_LDAP_GROUP_MANAGEMENT: false, ENABLE_LDAP_GROUP_CREATION: false, LDAP_ATTRIBUTE_FOR_GROUPS: 'memberOf' },
    });
    expect(await signin('alice', pass('alice'))).toEqual({ status: 400, body: { detail: LDAP_ERRORS.notEnabled } });
  });

  it('the server config has Open WebUI’s defaults, round-trips, and never returns the bind password', async () => {
    const before = await call('/api/v1/auths/admin/config/ldap/server', admin);
    expect(before.body).toEqual({
      label: 'LDAP Server', host: 'localhost', port: 389, attribute_for_mail: 'mail', attribute_for_username: 'uid', app_dn: '',
      app_dn_password: '', search_base: '', search_filters: '', use_tls: true, certificate_path: '', validate_cert: true, ciphers: 'ALL', use_starttls: false,
    });
    const saved = await setServer();
    const expected = { ...serverForm(), app_dn_password: '' };
    expect(saved).toEqual(expected);
    expect((await call('/api/v1/auths/admin/config/ldap/server', admin)).body).toEqual(expected);
    // Stored, and nowhere in the events.
    const [row] = await db<{ value: unknown }[]>`select value from config where key = 'LDAP_APP_PASSWORD'`;
    expect(row!.value).toBe(ldap.appPassword);
    const events = await eventsNamed(db, 'config.updated');
    expect(JSON.stringify(events)).not.toContain(ldap.appPassword);
    expect(events.at(-1)).toMatchObject({ subject: { type: 'config', id: 'ldap.server' }, data: { keys: expect.arrayContaining(['LDAP_APP_PASSWORD', 'LDAP_SERVER_HOST']) } });
    // An empty password in the form keeps the stored one (the GET gave the page "").
    expect(await setServer({ app_dn_password: '', label: 'Directory' })).toMatchObject({ label: 'Directory', app_dn_password: '' });
    const [again] = await db<{ value: unknown }[]>`select value from config where key = 'LDAP_APP_PASSWORD'`;
    expect(again!.value).toBe(ldap.appPassword);
  });

  it('refuses forms that cannot work, in the face’s own errors', async () => {
    const post = (form: unknown) => call('/api/v1/auths/admin/config/ldap/server', admin, 'POST', form);
    expect(await post(serverForm({ label: '' }))).toEqual({ status: 400, body: { detail: 'Required field label is empty' } });
    expect(await post(serverForm({ search_base: '' }))).toEqual({ status: 400, body: { detail: 'Required field search_base is empty' } });
    for (const search_filters of ['(objectClass=person', '(objectClass=person))(|(uid=*)', 'objectClass=person)', '(uid=*)(']) {
      expect(await post(serverForm({ search_filters })), search_filters).toEqual({ status: 400, body: { detail: `Invalid search_filters "${search_filters}": not an LDAP filter (RFC 4515)` } });
    }
    expect((await post(serverForm({ attribute_for_username: 'uid)(cn=*' }))).body.detail).toMatch(/attribute_for_username/);
    const missing = await post({ label: 'x' });
    expect(missing.status).toBe(422);
    expect(missing.body.detail.map((d: any) => d.loc.at(-1)).sort()).toEqual(['app_dn', 'app_dn_password', 'host', 'search_base']);
    expect((await post(serverForm({ port: 'not a port' }))).status).toBe(422);
    // Nothing of the refused forms was stored.
    expect((await call('/api/v1/auths/admin/config/ldap/server', admin)).body).toMatchObject({ label: 'Directory', search_base: ldap.peopleBase });
  });

  it('is admin-only', async () => {
    const user = (await call('/api/v1/auths/add', admin, 'POST', { name: 'U', email: `u-${Date.now()}@example.com`, password: pw(), role: 'user' })).body;
    for (const [method, path] of [
      ['GET', '/api/v1/auths/admin/config/ldap'],
      ['POST', '/api/v1/auths/admin/config/ldap'],
      ['GET', '/api/v1/auths/admin/config/ldap/server'],
      ['POST', '/api/v1/auths/admin/config/ldap/server'],
      ['POST', '/api/v1/auths/admin/config/ldap/test'],
    ] as const) {
      const r = await call(path, user.token, method, method === 'POST' ? serverForm() : undefined);
      expect(r.status, `${method} ${path}`).toBe(401);
    }
  });

  it('the connection test binds with the application DN and reports', async () => {
    const good = await call('/api/v1/auths/admin/config/ldap/test', admin, 'POST');
    expect(good.status).toBe(200);
    expect(good.body).toMatchObject({ ok: true, stage: 'done', url: `ldap://127.0.0.1:${ldap.port}`, entries: ldap.users.length });
    const badPassword = await call('/api/v1/auths/admin/config/ldap/test', admin, 'POST', { app_dn_password: 'wrong-' + pw() });
    expect(badPassword.body).toMatchObject({ ok: false, stage: 'bind' });
    const badBase = await call('/api/v1/auths/admin/config/ldap/test', admin, 'POST', { search_base: `ou=nobody,${ldap.suffix}` });
    expect(badBase.body).toMatchObject({ ok: false, stage: 'search' });
    // Testing does not save.
    expect((await call('/api/v1/auths/admin/config/ldap/server', admin)).body.search_base).toBe(ldap.peopleBase);
  });
});

describe('sign-in', () => {
  beforeAll(async () => {
    expect(await setConfig({ enable_ldap: true })).toMatchObject({ ENABLE_LDAP: true });
  });

  it('a good bind answers the sign-in answer, creates the account once, and the token works', async () => {
    const local = await call('/api/v1/auths/signin', null, 'POST', { email: admin.email, password: admin.password });
    const r = await signin('alice', pass('alice'));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(Object.keys(local.body).sort());
    expect(r.body).toMatchObject({ token_type: 'Bearer', email: 'alice@ldap.gatehouse.test', name: 'Alice Liddell', role: 'pending', profile_image_url: `/api/v1/users/${r.body.id}/profile/image` });
    expect(r.headers.get('set-cookie')).toMatch(/^token=/);
    const me = await call('/api/v1/auths/', r.body.token);
    expect(me.body).toMatchObject({ id: r.body.id, email: 'alice@ldap.gatehouse.test' });

    // Again, with the user name in capitals (Open WebUI lower-cases it): the same account.
    const again = await signin('ALICE', pass('alice'));
    expect(again.body.id).toBe(r.body.id);
    expect(await db`select id from "user" where email = 'alice@ldap.gatehouse.test'`).toHaveLength(1);
    const created = (await eventsNamed(db, 'user.created')).filter((e) => e.subject.id === r.body.id);
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ source: 'ldap', data: { role: 'pending' } });
    const logins = (await eventsNamed(db, 'auth.login')).filter((e) => e.subject.id === r.body.id);
    expect(logins.map((e) => e.data)).toEqual([{ auth_method: 'ldap' }, { auth_method: 'ldap' }]);
    // The account's local password is one nobody knows.
    expect((await call('/api/v1/auths/signin', null, 'POST', { email: 'alice@ldap.gatehouse.test', password: pass('alice') })).status).toBe(400);
  });

  it('first sign-ins of the same new user at the same moment make one account', async () => {
    const answers = await Promise.all([1, 2, 3].map(() => signin('frank', pass('frank'))));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(await db`select id from "user" where email = 'frank@ldap.gatehouse.test'`).toHaveLength(1);
    expect((await eventsNamed(db, 'user.created')).filter((e) => e.subject.id === answers[0]!.body.id)).toHaveLength(1);
  });

  it('a wrong password, an unknown user and an empty password get the local account’s 400', async () => {
    const local = await call('/api/v1/auths/signin', null, 'POST', { email: admin.email, password: 'wrong' });
    expect(local).toEqual(BAD);
    expect(await signin('bob', 'wrong-' + pw())).toEqual(BAD);
    expect(await signin('nobody-here', pass('bob'))).toEqual(BAD);
    // An LDAP simple bind with no password is anonymous and would succeed: refused before the server.
    expect(await signin('bob', '')).toEqual(BAD);
    expect(await db`select id from "user" where email like '%@ldap.gatehouse.test' and name = 'Bob Builder'`).toHaveLength(0);
  });

  it('filter syntax in the user name is escaped: it matches nobody, or exactly the user with that name', async () => {
    for (const attempt of ['*', 'ali*', '*)(uid=*', 'alice)(uid=*', 'alice)(|(uid=*)', '*)(|(objectClass=*', 'alice\\2a', 'alice\u0000', '(uid=alice)']) {
      expect(await signin(attempt, pass('alice')), JSON.stringify(attempt)).toEqual(BAD);
    }
    // A real user whose name has filter characters signs in (escaped, not refused).
    const r = await signin('o(brien)*', pass('o(brien)*'));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ email: 'obrien@ldap.gatehouse.test', name: 'Pat O Brien' });
    expect(await signin('o(brien)', pass('o(brien)*'))).toEqual(BAD);
  });

  it('an entry without a mail attribute is refused with Open WebUI’s message', async () => {
    expect(await signin('nomail', pass('nomail'))).toEqual({ status: 400, body: { detail: LDAP_ERRORS.noEmail } });
  });

  it('is rate limited like a password sign-in (per account, 429 with Retry-After)', async () => {
    for (let i = 0; i < 20; i++) expect(await signin('carol', 'wrong-' + i)).toEqual(BAD);
    const limited = await signin('carol', pass('carol'));
    expect(limited).toEqual({ status: 429, body: { detail: OWUI_ERRORS.rateLimited } });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('a malformed form is FastAPI’s 422', async () => {
    const r = await call('/api/v1/auths/ldap', null, 'POST', { user: 'alice' });
    expect(r.status).toBe(422);
    expect(r.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'password'] });
  });
});

describe('groups from the directory', () => {
  it('off by default: no groups are touched', async () => {
    const r = await signin('bob', pass('bob'));
    expect(r.status).toBe(200);
    expect(await groupsOf(r.body.id)).toEqual([]);
  });

  it('with management and creation on, the user’s groups are created and joined, and follow the directory', async () => {
    await setConfig({ enable_ldap_group_management: true, enable_ldap_group_creation: true });
    const r = await signin('alice', pass('alice'));
    expect(r.status).toBe(200);
    expect(await groupsOf(r.body.id)).toEqual(['eng', 'ops']);
    expect(await db`select id from "group" where name in ('eng', 'ops')`).toHaveLength(2);
    // Removed from ops in the directory: removed here at the next sign-in.
    await ldap.modify(`dn: ${ldap.groupDn('ops')}\nchangetype: modify\nadd: member\nmember: ${ldap.userDn('dave')}\n`);
    await ldap.modify(`dn: ${ldap.groupDn('ops')}\nchangetype: modify\ndelete: member\nmember: ${ldap.userDn('alice')}\n`);
    await signin('alice', pass('alice'));
    expect(await groupsOf(r.body.id)).toEqual(['eng']);
    const removed = (await eventsNamed(db, 'group.member_removed')).filter((e) => e.data.user_ids.includes(r.body.id));
    expect(removed).toHaveLength(1);
    // Signing in again changes nothing and creates nothing twice.
    await signin('alice', pass('alice'));
    expect(await db`select id from "group" where name = 'eng'`).toHaveLength(1);
  });

  it('with creation off, only existing groups are joined', async () => {
    await setConfig({ enable_ldap_group_creation: false });
    const r = await signin('bob', pass('bob'));
    expect(await groupsOf(r.body.id)).toEqual(['eng']);
    expect(await db`select id from "group" where name = 'design'`).toHaveLength(0);
  });
});

describe('live configuration and outages', () => {
  it('a settings change applies to the next sign-in on every worker, without a restart', async () => {
    await setServer({ port: ldap.tlsPort, use_tls: false, app_dn_password: '' });
    // The LDAPS port does not speak plain LDAP: every worker now fails to talk to it.
    for (let i = 0; i < 4; i++) expect((await signin('dave', pass('dave'))).status).toBe(503);
    await setServer({ app_dn_password: '' });
    for (let i = 0; i < 4; i++) expect((await signin('dave', pass('dave'))).status).toBe(200);
    await setConfig({ enable_ldap: false });
    for (let i = 0; i < 4; i++) expect(await signin('dave', pass('dave'))).toEqual({ status: 400, body: { detail: LDAP_ERRORS.notEnabled } });
    await setConfig({ enable_ldap: true });
  });

  it('LDAPS and StartTLS, with the certificate checked against the configured CA', async () => {
    await setServer({ port: ldap.tlsPort, use_tls: true, certificate_path: ldap.caFile, app_dn_password: '' });
    expect((await signin('erin', pass('erin'))).status).toBe(200);
    // Without the CA the self-signed certificate is refused (validate_cert on)…
    await setServer({ port: ldap.tlsPort, use_tls: true, certificate_path: '', app_dn_password: '' });
    expect(await signin('erin', pass('erin'))).toEqual({ status: 503, body: { detail: LDAP_ERRORS.unavailable } });
    // …and accepted when validation is off.
    await setServer({ port: ldap.tlsPort, use_tls: true, certificate_path: '', validate_cert: false, app_dn_password: '' });
    expect((await signin('erin', pass('erin'))).status).toBe(200);
    await setServer({ port: ldap.port, use_tls: false, use_starttls: true, certificate_path: ldap.caFile, app_dn_password: '' });
    expect((await signin('erin', pass('erin'))).status).toBe(200);
    const test = await call('/api/v1/auths/admin/config/ldap/test', admin, 'POST');
    expect(test.body).toMatchObject({ ok: true, stage: 'done' });
    await setServer({ app_dn_password: '' });
  });

  it('a refused application DN is a 503 that says so', async () => {
    await setServer({ app_dn_password: 'wrong-' + pw() });
    expect(await signin('dave', pass('dave'))).toEqual({ status: 503, body: { detail: LDAP_ERRORS.appBindFailed } });
    await setServer();
  });

  it('server down: LDAP sign-in is a clear 503, local accounts still sign in; back up, it works again', async () => {
    await ldap.down();
    try {
      expect(await signin('dave', pass('dave'))).toEqual({ status: 503, body: { detail: LDAP_ERRORS.unavailable } });
      const local = await call('/api/v1/auths/signin', null, 'POST', { email: admin.email, password: admin.password });
      expect(local.status).toBe(200);
      expect((await call('/api/v1/auths/admin/config/ldap/test', admin, 'POST')).body).toMatchObject({ ok: false, stage: 'connect' });
    } finally {
      await ldap.up();
    }
    expect((await signin('dave', pass('dave'))).status).toBe(200);
  });

  it('a server that accepts connections and never answers: 503 once the operation timeout passes, not a hung request', async () => {
    const sockets: Socket[] = [];
    const silent: Server = createServer((c) => sockets.push(c));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    try {
      await setServer({ port, app_dn_password: '' });
      expect(await signin('dave', pass('dave'))).toEqual({ status: 503, body: { detail: LDAP_ERRORS.unavailable } });
    } finally {
      for (const c of sockets) c.destroy();
      silent.close();
      await setServer();
    }
  }, 40_000);
});

describe('secrets', () => {
  it('no password (bind DN, users) reaches a log line', () => {
    const logs = [edge.proc.log(), ...workers.map((w) => w.log())].join('\n');
    expect(logs).toContain('ldap sign-in refused');
    for (const secret of [ldap.appPassword, ...ldap.users.map((u) => u.password)]) expect(logs).not.toContain(secret);
  });
});

describe('configured from the environment on a fresh platform', () => {
  const fresh = new Stack();
  afterAll(() => fresh.close());

  it('Open WebUI’s LDAP_* variables seed the settings; the first LDAP user becomes admin and sign-up turns off', async () => {
    await fresh.startChatWorker(
      {
        ENABLE_LDAP: 'true',
        LDAP_SERVER_HOST: '127.0.0.1',
        LDAP_SERVER_PORT: String(ldap.tlsPort),
        LDAP_USE_TLS: 'true',
        LDAP_CA_CERT_FILE: ldap.caFile,
        LDAP_APP_DN: ldap.appDn,
        LDAP_APP_PASSWORD: ldap.appPassword,
        LDAP_SEARCH_BASE: ldap.peopleBase,
        LDAP_SEARCH_FILTERS: '(objectClass=inetOrgPerson)',
      },
      { ingest: false },
    );
    const freshEdge = await fresh.startEdge({ EDGE_FACES: 'chat' });
    const post = async (path: string, body: unknown, token?: string) => {
      const r = await fetch(freshEdge.chatUrl + path, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const first = await post('/api/v1/auths/ldap', { user: 'erin', password: pass('erin') });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ email: 'erin@ldap.gatehouse.test', role: 'admin' });
    const second = await post('/api/v1/auths/ldap', { user: 'dave', password: pass('dave') });
    expect(second.body).toMatchObject({ role: 'pending' });
    expect((await post('/api/v1/auths/admin/config', undefined, first.body.token)).body).toMatchObject({ ENABLE_SIGNUP: false });
    expect((await post('/api/v1/auths/admin/config/ldap/server', undefined, first.body.token)).body).toMatchObject({
      host: '127.0.0.1', port: ldap.tlsPort, use_tls: true, certificate_path: ldap.caFile, app_dn: ldap.appDn, app_dn_password: '',
    });
  }, 60_000);
});
