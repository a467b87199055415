import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatEvent, EVENTS_STREAM } from '@gatehouse/contracts';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, NOT_FOUND, PROHIBITED, type Account, type Caller } from './chat-fixture.ts';

/**
 * Workspace prompts on the chat face (/api/v1/prompts, Open WebUI 0.10.2's routers/prompts.py):
 * create with a command (stored without the `/`), read by id and by command, the editor's page,
 * update (each change a new active version), grants (private, group, everyone), delete; who may
 * do what (owner, admin, group member, everyone, stranger, a user without `workspace.prompts`);
 * the events each change publishes on the bus; hostile input answered 4xx.
 *
 * Ported from Open WebUI's test_prompts.py (HTTP-visible steps). Stale there for 0.10.2: it sends
 * `title` (now `name`), a command with its `/`, and updates/deletes by `/command/{c}/…` (now
 * `/id/{id}/…`); it expects user 2 to list user 3's prompt (0.10.2 lists only readable ones).
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const post = (path: string, body: unknown, who?: Caller) => call(path, who, 'POST', body);
const del = (path: string, who?: Caller) => call(path, who, 'DELETE');
const P = '/api/v1/prompts';
const UNAUTHORIZED = '401 Unauthorized';
const TAKEN = 'Uh-oh! This command is already registered. Please choose another command string.';

let admin: Account;
let ada: Account; // in the writers group: may create prompts
let bob: Account; // in the writers group too
let cy: Account; // in no group: no workspace.prompts
let groupId: string;

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup('Admin');
  ada = await addUser(admin, 'Ada');
  bob = await addUser(admin, 'Bob');
  cy = await addUser(admin, 'Cy');
  const g = await post('/api/v1/groups/create', { name: 'Writers', description: 'may write prompts', permissions: { workspace: { prompts: true } } }, admin);
  expect(g.status, JSON.stringify(g.body)).toBe(200);
  groupId = g.body.id;
  const add = await post(`/api/v1/groups/id/${groupId}/users/add`, { user_ids: [ada.id, bob.id] }, admin);
  expect(add.status, JSON.stringify(add.body)).toBe(200);
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

const form = (command: string, o: Record<string, unknown> = {}) => ({ command, name: `Prompt ${command}`, content: `Say {{name}} for ${command}`, ...o });

/** The events of the stream about prompts, as published. */
async function promptEvents(): Promise<{ subject: string; event: ChatEvent }[]> {
  const bus = await stack.busHandle();
  const jsm = await bus.nc.jetstreamManager();
  const name = bus.bucket(EVENTS_STREAM);
  const info = await jsm.streams.info(name);
  const out = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(name, { seq }).catch(() => undefined);
    if (m?.subject.includes('.events.prompt.')) out.push({ subject: m.subject, event: ChatEvent.parse(m.json()) });
  }
  return out;
}

describe('create, read, update, delete (the steps of Open WebUI’s test_prompts.py)', () => {
  let mine: any;

  it('lists nothing at first', async () => {
    expect(await call(`${P}/`, ada)).toEqual({ status: 200, body: [] });
  });

  it('create answers the PromptModel with an active first version', async () => {
    const r = await post(`${P}/create`, form('my-command', { tags: ['greet'] }), ada);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    mine = r.body;
    expect(Object.keys(r.body).sort()).toEqual(
      ['access_grants', 'command', 'content', 'created_at', 'data', 'id', 'is_active', 'meta', 'name', 'tags', 'updated_at', 'user_id', 'version_id'].sort(),
    );
    expect(r.body).toMatchObject({ command: 'my-command', name: 'Prompt my-command', user_id: ada.id, data: {}, meta: {}, tags: ['greet'], is_active: true, access_grants: [] });
    expect(r.body.version_id).toMatch(/^[0-9a-f-]{36}$/);
    const other = await post(`${P}/create`, form('my-command2'), bob);
    expect(other.status).toBe(200);
  });

  it('a repeated command is Open WebUI’s 400, for anyone', async () => {
    expect(await post(`${P}/create`, form('my-command'), bob)).toEqual({ status: 400, body: { detail: TAKEN } });
    expect(await post(`${P}/create`, form('my-command'), admin)).toEqual({ status: 400, body: { detail: TAKEN } });
  });

  it('reads by command and by id, with the owner and write_access', async () => {
    const byCmd = await call(`${P}/command/my-command`, ada);
    expect(byCmd.status).toBe(200);
    expect(byCmd.body).toMatchObject({ id: mine.id, content: 'Say {{name}} for my-command', write_access: true });
    expect(byCmd.body.user).toMatchObject({ id: ada.id, name: 'Ada', email: ada.email, role: 'user' });
    const byId = await call(`${P}/id/${mine.id}`, ada);
    expect(byId.body).toEqual(byCmd.body);
  });

  it('each user lists their own; an admin lists everyone’s', async () => {
    expect((await call(`${P}/`, ada)).body.map((p: any) => p.command)).toEqual(['my-command']);
    expect((await call(`${P}/`, bob)).body.map((p: any) => p.command)).toEqual(['my-command2']);
    expect((await call(`${P}/`, admin)).body.map((p: any) => p.command).sort()).toEqual(['my-command', 'my-command2']);
    expect((await call(`${P}/tags`, ada)).body).toEqual(['greet']);
  });

  it('update writes a new active version; is_production false keeps the old one active', async () => {
    const r = await post(`${P}/id/${mine.id}/update`, form('my-command', { name: 'Renamed', content: 'New {{text}}' }), ada);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ name: 'Renamed', content: 'New {{text}}', tags: ['greet'] });
    expect(r.body.version_id).not.toBe(mine.version_id);
    const draft = await post(`${P}/id/${mine.id}/update`, form('my-command', { name: 'Draft', content: 'Draft', is_production: false }), ada);
    expect(draft.body.version_id).toBe(r.body.version_id);
    const history = await call(`${P}/id/${mine.id}/history`, ada);
    expect(history.status).toBe(200);
    expect(history.body.map((h: any) => h.snapshot.name)).toEqual(['Draft', 'Renamed', 'Prompt my-command']);
    expect(history.body[0].parent_id).toBe(history.body[1].id);
    expect(history.body[2]).toMatchObject({ parent_id: null, commit_message: 'Initial version' });
    mine = draft.body;
  });

  it('renaming the command to another prompt’s is a 400; to a free one works', async () => {
    expect(await post(`${P}/id/${mine.id}/update`, form('my-command2'), ada)).toEqual({ status: 400, body: { detail: "Command '/my-command2' is already in use by another prompt" } });
    const r = await post(`${P}/id/${mine.id}/update`, form('renamed-cmd'), ada);
    expect(r.body.command).toBe('renamed-cmd');
    expect((await call(`${P}/command/my-command`, ada)).status).toBe(404);
    expect((await call(`${P}/command/renamed-cmd`, ada)).body.id).toBe(mine.id);
  });

  it('delete answers true; the prompt is gone for everyone', async () => {
    expect(await del(`${P}/id/${mine.id}/delete`, ada)).toEqual({ status: 200, body: true });
    expect(await call(`${P}/id/${mine.id}`, ada)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    expect((await call(`${P}/`, admin)).body.map((p: any) => p.command)).toEqual(['my-command2']);
    expect(await del(`${P}/id/${mine.id}/delete`, ada)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
  });
});

describe('who may do what', () => {
  let p: any;
  beforeAll(async () => {
    p = (await post(`${P}/create`, form('access-test'), ada)).body;
  });

  it('without workspace.prompts a user may not create (Open WebUI’s 401); an admin always may', async () => {
    expect(await post(`${P}/create`, form('cy-cmd'), cy)).toEqual({ status: 401, body: { detail: UNAUTHORIZED } });
    const a = await post(`${P}/create`, form('admin-cmd'), admin);
    expect(a.status).toBe(200);
    expect(a.body.user_id).toBe(admin.id);
  });

  it('private: a stranger gets the 404 of a prompt that does not exist, and 401 on changes', async () => {
    expect(await call(`${P}/id/${p.id}`, cy)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    expect(await call(`${P}/command/access-test`, cy)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    expect(await post(`${P}/id/${p.id}/update`, form('access-test', { content: 'hacked' }), cy)).toEqual({ status: 401, body: { detail: PROHIBITED } });
    expect(await del(`${P}/id/${p.id}/delete`, cy)).toEqual({ status: 401, body: { detail: PROHIBITED } });
    expect(await post(`${P}/id/${p.id}/access/update`, { access_grants: [] }, bob)).toEqual({ status: 401, body: { detail: PROHIBITED } });
    expect((await call(`${P}/list`, cy)).body).toEqual({ items: [], total: 0 });
  });

  it('an admin reads and changes anyone’s', async () => {
    const r = await call(`${P}/id/${p.id}`, admin);
    expect(r.body).toMatchObject({ id: p.id, write_access: true });
    expect((await post(`${P}/id/${p.id}/update`, form('access-test', { content: 'by admin' }), admin)).body.content).toBe('by admin');
  });

  it('a group read grant: members read it, may not change it; others still do not see it', async () => {
    const g = await post(`${P}/id/${p.id}/access/update`, { access_grants: [{ principal_type: 'group', principal_id: groupId, permission: 'read' }] }, ada);
    expect(g.status, JSON.stringify(g.body)).toBe(200);
    expect(g.body.access_grants).toEqual([{ id: expect.any(String), principal_type: 'group', principal_id: groupId, permission: 'read' }]);
    expect((await call(`${P}/id/${p.id}`, bob)).body).toMatchObject({ id: p.id, write_access: false });
    expect((await call(`${P}/`, bob)).body.map((x: any) => x.command)).toContain('access-test');
    const page = await call(`${P}/list?view_option=shared`, bob);
    expect(page.body.items.map((x: any) => [x.command, x.write_access])).toEqual([['access-test', false]]);
    expect(await post(`${P}/id/${p.id}/update`, form('access-test'), bob)).toEqual({ status: 401, body: { detail: PROHIBITED } });
    expect((await call(`${P}/id/${p.id}`, cy)).status).toBe(404);
  });

  it('a group write grant lets a member change it', async () => {
    await post(`${P}/id/${p.id}/access/update`, { access_grants: [{ principal_type: 'group', principal_id: groupId, permission: 'write' }] }, ada);
    const r = await post(`${P}/id/${p.id}/update`, form('access-test', { content: 'by bob' }), bob);
    expect(r.status).toBe(200);
    expect(r.body.content).toBe('by bob');
    expect(r.body.user_id).toBe(ada.id);
  });

  it('public (user:*): every user reads it, the stranger included; none of them may change it', async () => {
    const r = await post(`${P}/id/${p.id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: '*', permission: 'read' }] }, ada);
    expect(r.status).toBe(200);
    expect((await call(`${P}/command/access-test`, cy)).body).toMatchObject({ id: p.id, write_access: false });
    expect(await del(`${P}/id/${p.id}/delete`, cy)).toEqual({ status: 401, body: { detail: PROHIBITED } });
    expect(await post(`${P}/id/${p.id}/update`, form('access-test'), bob)).toEqual({ status: 401, body: { detail: PROHIBITED } });
  });

  it('grants naming a user or group that does not exist are a 400', async () => {
    const r = await post(`${P}/id/${p.id}/access/update`, { access_grants: [{ principal_type: 'group', principal_id: 'no-such-group', permission: 'read' }] }, ada);
    expect(r).toEqual({ status: 400, body: { detail: 'Unknown group in access_grants: no-such-group' } });
  });

  it('the editor’s page searches name, command, text and owner, by tag, with a total', async () => {
    await post(`${P}/create`, form('search-one', { name: 'Summarise', content: 'Summarise {{text}}', tags: ['Work'] }), bob);
    await post(`${P}/create`, form('search-two', { name: 'Translate', content: 'Translate {{text}}' }), bob);
    const q = await call(`${P}/list?query=summar`, bob);
    expect(q.body.items.map((x: any) => x.command)).toEqual(['search-one']);
    expect(q.body.total).toBe(1);
    expect((await call(`${P}/list?tag=work`, bob)).body.items.map((x: any) => x.command)).toEqual(['search-one']);
    const byName = await call(`${P}/list?view_option=created&order_by=name&direction=asc`, bob);
    expect(byName.body.items.map((x: any) => x.name)).toEqual(['Prompt my-command2', 'Summarise', 'Translate']);
    expect(byName.body.items[0].user).toMatchObject({ id: bob.id, name: 'Bob' });
    expect((await call(`${P}/list?query=%25`, bob)).body.total).toBe(0);
  });
});

describe('events', () => {
  it('create, update, access change and delete each publish their event on the bus, without the text', async () => {
    const c = await post(`${P}/create`, form('evented', { content: 'secret text' }), ada);
    const id = c.body.id;
    const u = await post(`${P}/id/${id}/update`, form('evented', { name: 'Evented', content: 'secret text 2' }), ada);
    await post(`${P}/id/${id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: bob.id, permission: 'read' }] }, ada);
    await del(`${P}/id/${id}/delete`, ada);
    await expect.poll(async () => (await promptEvents()).filter((e) => e.event.subject?.id === id).length, { timeout: 10_000 }).toBe(4);
    const evs = (await promptEvents()).filter((e) => e.event.subject?.id === id);
    expect(evs.map((e) => e.event.event)).toEqual(['prompt.created', 'prompt.updated', 'prompt.updated', 'prompt.deleted']);
    expect(evs[0]!.subject).toMatch(/\.events\.prompt\.created$/);
    expect(evs[0]!.event).toMatchObject({ actor: { id: ada.id }, subject: { type: 'prompt', id }, data: { command: 'evented', name: 'Prompt evented' } });
    expect(evs[1]!.event.data).toEqual({ command: 'evented', name: 'Evented', version_id: u.body.version_id, updated_fields: ['name', 'content'] });
    expect(evs[2]!.event.data).toMatchObject({ updated_fields: ['access_grants'] });
    expect(evs[3]!.event.data).toEqual({ command: 'evented', name: 'Evented' });
    expect(JSON.stringify(evs)).not.toContain('secret text');
  });
});

describe('hostile input is a 4xx, never a 5xx', () => {
  it('bad forms are 422 with FastAPI’s detail list', async () => {
    for (const body of [{}, { command: 'x' }, { command: 1, name: 'n', content: 'c' }, { ...form('x'), tags: 'nope' }, { ...form('x'), access_grants: [{ principal_type: 'robot', principal_id: 'a', permission: 'read' }] }]) {
      const r = await post(`${P}/create`, body, ada);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(Array.isArray(r.body.detail)).toBe(true);
    }
    expect((await post(`${P}/create`, '{not json', ada)).status).toBeGreaterThanOrEqual(400);
  });

  it('odd commands, ids and queries answer 4xx or 200, and NUL is stripped', async () => {
    const nul = await post(`${P}/create`, form('nul\u0000cmd', { content: 'a\u0000b' }), ada);
    expect(nul.status).toBe(200);
    expect(nul.body).toMatchObject({ command: 'nulcmd', content: 'ab' });
    const weird = ["'; drop table prompt; --", '..%2F..%2Fetc', '%00', 'ü'.repeat(500)];
    for (const w of weird) {
      expect([404]).toContain((await call(`${P}/command/${encodeURIComponent(w)}`, ada)).status);
      expect([404]).toContain((await call(`${P}/id/${encodeURIComponent(w)}`, ada)).status);
      expect((await call(`${P}/list?query=${encodeURIComponent(w)}&order_by=${encodeURIComponent(w)}&direction=${encodeURIComponent(w)}`, ada)).status).toBe(200);
    }
    expect((await call(`${P}/list?page=abc`, ada)).status).toBe(422);
    expect((await call(`${P}/list?page=-5`, ada)).status).toBe(200);
    expect((await call(`${P}/id/x/history?page=zz`, ada)).status).toBe(404);
  });

  it('without a token every route is a 401', async () => {
    for (const [m, path] of [['GET', `${P}/`], ['GET', `${P}/list`], ['POST', `${P}/create`], ['GET', `${P}/id/x`], ['DELETE', `${P}/id/x/delete`]] as const) {
      expect((await call(path, null, m, m === 'POST' ? form('anon') : undefined)).status).toBe(401);
    }
  });
});
