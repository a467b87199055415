import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatEvent, EVENTS_STREAM } from '@gatehouse/contracts';
import { newKey, Stack, waitFor, type Edge } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream, Recorded } from '../../scripts/src/fake-upstreams/common.ts';
import { chatClient, chatDb, NOT_FOUND, PROHIBITED, type Account, type Caller } from './chat-fixture.ts';

/**
 * Workspace models on the chat face (/api/v1/models, Open WebUI 0.10.2's routers/models.py): a
 * custom model is a preset over a base model. CRUD with the id in the body or the query, the
 * duplicate id, grants (private, group, everyone) and who may do what (owner, admin, group member,
 * everyone, stranger, a user without `workspace.models`), toggling, export and import; the presets
 * in `GET /api/models` and in completions (the fake upstream is asked with the base model's id,
 * the preset's system prompt first and its params under the request's own, its knowledge
 * retrieved as context); the events on the bus; hostile input answered 4xx.
 *
 * Ported from Open WebUI's test_models.py (HTTP-visible steps): create, list, get by `?id=`,
 * delete. Stale there for 0.10.2: it lists with `GET /api/v1/models/` (here that path is the
 * alias of /api/models; the workspace's list is `/list`), updates with `?id=` and deletes with
 * `DELETE …?id=` (0.10's client sends the id in the body, POST), and sends `access_control` (now
 * `access_grants`).
 */
const stack = new Stack();
let edge: Edge;
let oa: FakeUpstream;
const db = chatDb(stack);
const openaiKey = newKey();
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const post = (path: string, body: unknown, who?: Caller) => call(path, who, 'POST', body);
const M = '/api/v1/models';
const UNAUTHORIZED = '401 Unauthorized';
const TAKEN = 'Uh-oh! This model id is already registered. Please choose another model id string.';

let admin: Account;
let ada: Account; // in the makers group: may create models
let bob: Account; // in the makers group too
let cy: Account; // in no group: no workspace.models
let groupId: string;
let kb: string;
const ORBIT = 'The Zephyr probe orbits the moon Titan every sixteen days, measuring methane rain.';

async function uploadInto(owner: Account, knowledgeId: string, filename: string, text: string): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/plain' }), filename);
  form.append('metadata', JSON.stringify({ knowledge_id: knowledgeId }));
  const r = await fetch(`${edge.chatUrl}/api/v1/files/`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` }, body: form });
  const body = await r.json();
  expect(r.status, JSON.stringify(body)).toBe(200);
  await waitFor(
    async () => {
      const status = (await call(`/api/v1/files/${body.id}/process/status`, owner)).body?.status;
      if (status === 'failed') throw new Error(`${filename} failed to process`);
      return status === 'completed' && (await db`select 1 from knowledge_file where knowledge_id = ${knowledgeId} and file_id = ${body.id}`).length === 1;
    },
    60_000,
    () => `${filename} was not processed in time`,
  );
}

beforeAll(async () => {
  oa = await startFakeOpenAI({ apiKey: openaiKey });
  await stack.startProxyWorker({ OPENAI_API_BASE_URLS: oa.url, OPENAI_API_KEYS: openaiKey });
  await stack.startChatWorker({ CHUNK_SIZE: '100', CHUNK_OVERLAP: '0' });
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup('Admin');
  ada = await addUser(admin, 'Ada');
  bob = await addUser(admin, 'Bob');
  cy = await addUser(admin, 'Cy');
  const g = await post('/api/v1/groups/create', { name: 'Makers', description: 'may make models', permissions: { workspace: { models: true } } }, admin);
  expect(g.status, JSON.stringify(g.body)).toBe(200);
  groupId = g.body.id;
  const add = await post(`/api/v1/groups/id/${groupId}/users/add`, { user_ids: [ada.id, bob.id] }, admin);
  expect(add.status, JSON.stringify(add.body)).toBe(200);
  const made = await post('/api/v1/knowledge/create', { name: 'Ada notes', description: 'Space' }, admin);
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  kb = made.body.id;
  // Everyone may read the base, so the preset's retrieval reaches it for any caller.
  const shared = await post(`/api/v1/knowledge/${kb}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: '*', permission: 'read' }] }, admin);
  expect(shared.status, JSON.stringify(shared.body)).toBe(200);
  await uploadInto(admin, kb, 'space.txt', ORBIT);
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
  await oa?.close();
});

const form = (id: string, o: Record<string, unknown> = {}) => ({
  id,
  base_model_id: 'echo',
  name: `Model ${id}`,
  meta: { profile_image_url: '/static/favicon.png', description: `About ${id}`, capabilities: { vision: false } },
  params: { system: `You are the helper called ${id}.`, temperature: 0.25 },
  ...o,
});

const listed = async (who: Caller) => ((await call('/api/models', who)).body.data as any[]).map((m) => m.id);

/** The request the fake upstream got that carries `mark`. */
function sentTo(mark: string): Recorded {
  const rec = [...oa.requests].reverse().find((r) => r.method === 'POST' && r.raw.toString('utf8').includes(mark));
  expect(rec, `the upstream got a request with ${mark}`).toBeDefined();
  return rec!;
}

async function complete(who: Account, body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const r = await fetch(`${edge.chatUrl}/api/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${who.token}` },
    body: JSON.stringify({ stream: false, ...body }),
  });
  return { status: r.status, body: await r.json() };
}

/** The events of the stream about models, as published. */
async function modelEvents(): Promise<{ subject: string; event: ChatEvent }[]> {
  const bus = await stack.busHandle();
  const jsm = await bus.nc.jetstreamManager();
  const name = bus.bucket(EVENTS_STREAM);
  const info = await jsm.streams.info(name);
  const out = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(name, { seq }).catch(() => undefined);
    if (m?.subject.includes('.events.model.')) out.push({ subject: m.subject, event: ChatEvent.parse(m.json()) });
  }
  return out;
}

describe('create, read, update, delete (the steps of Open WebUI’s test_models.py)', () => {
  it('lists nothing at first', async () => {
    expect(await call(`${M}/list`, ada)).toMatchObject({ status: 200, body: { items: [], total: 0 } });
  });

  it('create answers the ModelModel', async () => {
    const r = await post(`${M}/create`, form('ada-helper'), ada);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['access_grants', 'base_model_id', 'created_at', 'id', 'is_active', 'meta', 'name', 'params', 'updated_at', 'user_id'].sort());
    expect(r.body).toMatchObject({ id: 'ada-helper', user_id: ada.id, base_model_id: 'echo', name: 'Model ada-helper', is_active: true, access_grants: [] });
    expect(r.body.params).toEqual({ system: 'You are the helper called ada-helper.', temperature: 0.25 });
    expect(r.body.meta.description).toBe('About ada-helper');
  });

  it('a taken id is refused with Open WebUI’s message, and nothing changes', async () => {
    const r = await post(`${M}/create`, form('ada-helper', { name: 'Other' }), bob);
    expect(r).toMatchObject({ status: 401, body: { detail: TAKEN } });
    expect((await call(`${M}/model?id=ada-helper`, ada)).body.name).toBe('Model ada-helper');
  });

  it('reads by ?id=, in the list and the page, with its owner and write access', async () => {
    const one = await call(`${M}/model?id=ada-helper`, ada);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: 'ada-helper', write_access: true, user: { id: ada.id, name: 'Ada' } });
    const page = await call(`${M}/list?query=HELPER`, ada);
    expect(page.body.total).toBe(1);
    expect(page.body.items[0].id).toBe('ada-helper');
    expect((await call(`${M}/list?query=nothing-like-it`, ada)).body).toEqual({ items: [], total: 0 });
  });

  it('update changes name, params and meta; the id in the body', async () => {
    const r = await post(`${M}/model/update`, form('ada-helper', { name: 'Ada Helper', params: { system: 'You are Ada’s helper.', temperature: 0.25, top_p: 0.5 } }), ada);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ name: 'Ada Helper', params: { system: 'You are Ada’s helper.', top_p: 0.5 } });
    expect(r.body.updated_at).toBeGreaterThanOrEqual(r.body.created_at);
  });

  it('an unknown id is Open WebUI’s 401 not found', async () => {
    expect(await call(`${M}/model?id=no-such-model`, ada)).toMatchObject({ status: 401, body: { detail: NOT_FOUND } });
    expect(await post(`${M}/model/update`, form('no-such-model'), ada)).toMatchObject({ status: 401, body: { detail: NOT_FOUND } });
    expect(await post(`${M}/model/delete`, { id: 'no-such-model' }, ada)).toMatchObject({ status: 401, body: { detail: NOT_FOUND } });
  });

  it('delete removes it (POST with the id in the body, and DELETE)', async () => {
    expect((await post(`${M}/create`, form('short-lived'), ada)).status).toBe(200);
    expect(await post(`${M}/model/delete`, { id: 'short-lived' }, ada)).toMatchObject({ status: 200, body: true });
    expect((await call(`${M}/model?id=short-lived`, ada)).status).toBe(401);
    expect((await post(`${M}/create`, form('short-lived'), ada)).status).toBe(200);
    expect(await call(`${M}/model/delete`, ada, 'DELETE', { id: 'short-lived' })).toMatchObject({ status: 200, body: true });
    expect((await call(`${M}/list`, ada)).body.items.map((m: any) => m.id)).toEqual(['ada-helper']);
  });
});

describe('who may do what', () => {
  it('without workspace.models a user may not create; an admin may', async () => {
    expect(await post(`${M}/create`, form('cy-model'), cy)).toMatchObject({ status: 401, body: { detail: UNAUTHORIZED } });
    expect((await post(`${M}/create`, form('admin-model'), admin)).status).toBe(200);
  });

  it('private: only the owner and admins see it; others get not found', async () => {
    expect(await call(`${M}/model?id=ada-helper`, bob)).toMatchObject({ status: 401, body: { detail: NOT_FOUND } });
    expect((await call(`${M}/list`, bob)).body).toEqual({ items: [], total: 0 });
    expect(await listed(bob)).not.toContain('ada-helper');
    expect(await listed(ada)).toContain('ada-helper');
    expect((await call(`${M}/model?id=ada-helper`, admin)).body.write_access).toBe(true);
    expect(await listed(admin)).toEqual(expect.arrayContaining(['ada-helper', 'admin-model']));
  });

  it('a stranger may not change, toggle or delete it', async () => {
    expect(await post(`${M}/model/update`, form('ada-helper', { name: 'Bob was here' }), bob)).toMatchObject({ status: 400, body: { detail: PROHIBITED } });
    expect(await post(`${M}/model/toggle?id=ada-helper`, {}, bob)).toMatchObject({ status: 401, body: { detail: UNAUTHORIZED } });
    expect(await post(`${M}/model/delete`, { id: 'ada-helper' }, bob)).toMatchObject({ status: 401, body: { detail: UNAUTHORIZED } });
    expect((await call(`${M}/model?id=ada-helper`, ada)).body.name).toBe('Ada Helper');
  });

  it('a group read grant lets members read and use it, not change it', async () => {
    const r = await post(`${M}/model/access/update`, { id: 'ada-helper', access_grants: [{ principal_type: 'group', principal_id: groupId, permission: 'read' }] }, ada);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.access_grants).toMatchObject([{ principal_type: 'group', principal_id: groupId, permission: 'read' }]);
    expect(await call(`${M}/model?id=ada-helper`, bob)).toMatchObject({ status: 200, body: { write_access: false } });
    expect(await listed(bob)).toContain('ada-helper');
    expect(await listed(cy)).not.toContain('ada-helper');
    expect((await post(`${M}/model/update`, form('ada-helper', { name: 'Bob was here' }), bob)).status).toBe(400);
  });

  it('a group write grant lets members change it', async () => {
    const grants = [
      { principal_type: 'group', principal_id: groupId, permission: 'read' },
      { principal_type: 'group', principal_id: groupId, permission: 'write' },
    ];
    expect((await post(`${M}/model/access/update`, { id: 'ada-helper', access_grants: grants }, ada)).status).toBe(200);
    expect((await call(`${M}/model?id=ada-helper`, bob)).body.write_access).toBe(true);
    const current = (await call(`${M}/model?id=ada-helper`, ada)).body;
    const r = await post(`${M}/model/update`, { ...form('ada-helper'), name: 'Ada Helper', params: current.params, meta: current.meta, access_grants: grants }, bob);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  });

  it('public (user:*): everyone reads it', async () => {
    const r = await post(`${M}/model/access/update`, { id: 'ada-helper', access_grants: [{ principal_type: 'user', principal_id: '*', permission: 'read' }] }, ada);
    expect(r.status).toBe(200);
    expect((await call(`${M}/model?id=ada-helper`, cy)).status).toBe(200);
    expect(await listed(cy)).toContain('ada-helper');
    expect((await call(`${M}/model?id=ada-helper`, bob)).body.write_access).toBe(false);
  });

  it('an unknown group or user in the grants is a 400', async () => {
    const r = await post(`${M}/model/access/update`, { id: 'ada-helper', access_grants: [{ principal_type: 'group', principal_id: 'no-such-group', permission: 'read' }] }, ada);
    expect(r).toMatchObject({ status: 400, body: { detail: 'Unknown group in access_grants: no-such-group' } });
  });

  it('/base is the admin’s', async () => {
    expect((await call(`${M}/base`, ada)).status).toBe(401);
    expect(await call(`${M}/base`, admin)).toMatchObject({ status: 200, body: [] });
  });
});

describe('in /api/models and completions', () => {
  it('listed after its base model with the preset as info and the base’s owner', async () => {
    const models = (await call('/api/models', cy)).body.data as any[];
    const ids = models.map((m) => m.id);
    expect(ids.indexOf('ada-helper')).toBeGreaterThan(ids.indexOf('echo'));
    const m = models.find((x) => x.id === 'ada-helper');
    expect(m).toMatchObject({ id: 'ada-helper', name: 'Ada Helper', object: 'model', owned_by: 'openai', preset: true, info: { id: 'ada-helper', base_model_id: 'echo', user_id: ada.id } });
    expect(m.info.params.system).toBe('You are Ada’s helper.');
    // Open WebUI leaves profile images out of the list.
    expect(m.info.meta).not.toHaveProperty('profile_image_url');
  });

  it('a completion goes upstream as the base model, the preset’s system prompt first and its params under the request’s', async () => {
    const mark = `hello-${Date.now()}`;
    const r = await complete(cy, { model: 'ada-helper', messages: [{ role: 'user', content: mark }], params: { top_p: 0.9 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.choices[0].message.content).toBe(`echo: ${mark}`);
    const sent = sentTo(mark).json as any;
    expect(sent.model).toBe('echo');
    expect(sent.messages[0]).toEqual({ role: 'system', content: 'You are Ada’s helper.' });
    expect(sent.messages.at(-1)).toEqual({ role: 'user', content: mark });
    expect(sent.temperature).toBe(0.25);
    expect(sent.top_p).toBe(0.9);
  });

  it('the request’s own system message comes after the preset’s prompt', async () => {
    const mark = `sys-${Date.now()}`;
    const r = await complete(cy, { model: 'ada-helper', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: mark }] });
    expect(r.status).toBe(200);
    const sent = sentTo(mark).json as any;
    expect(sent.messages[0].role).toBe('system');
    expect(sent.messages[0].content).toMatch(/^You are Ada’s helper\.\n?[\s\S]*Be brief\.$/);
  });

  it('attached knowledge is retrieved as context', async () => {
    const meta = { ...(await call(`${M}/model?id=ada-helper`, ada)).body.meta, knowledge: [{ type: 'collection', id: kb, name: 'Ada notes' }] };
    const current = (await call(`${M}/model?id=ada-helper`, ada)).body;
    const up = await post(`${M}/model/update`, { ...form('ada-helper'), name: current.name, params: current.params, meta }, ada);
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    const mark = `How often does the Zephyr probe orbit Titan? ${Date.now()}`;
    const r = await complete(cy, { model: 'ada-helper', messages: [{ role: 'user', content: mark }] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.sources?.[0]?.source).toMatchObject({ type: 'collection', id: kb });
    const sent = JSON.stringify((sentTo(mark).json as any).messages);
    expect(sent).toContain('sixteen days');
  });

  it('a private preset is not usable by those who may not read it', async () => {
    expect((await post(`${M}/create`, form('bob-secret'), bob)).status).toBe(200);
    const r = await complete(cy, { model: 'bob-secret', messages: [{ role: 'user', content: 'hi' }] });
    expect(r).toMatchObject({ status: 400, body: { detail: 'Model not found' } });
  });

  it('toggled off it leaves /api/models and completions; on again it is back', async () => {
    const off = await post(`${M}/model/toggle?id=ada-helper`, {}, ada);
    expect(off).toMatchObject({ status: 200, body: { is_active: false } });
    expect(await listed(ada)).not.toContain('ada-helper');
    expect(await listed(admin)).not.toContain('ada-helper');
    expect((await complete(ada, { model: 'ada-helper', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(400);
    // Still in the workspace, marked inactive.
    expect((await call(`${M}/model?id=ada-helper`, ada)).body.is_active).toBe(false);
    expect((await post(`${M}/model/toggle?id=ada-helper`, {}, ada)).body.is_active).toBe(true);
    expect(await listed(ada)).toContain('ada-helper');
  });

  it('a preset over a base model no connection lists is left out', async () => {
    expect((await post(`${M}/create`, form('orphan', { base_model_id: 'no-such-base' }), ada)).status).toBe(200);
    expect(await listed(ada)).not.toContain('orphan');
    expect((await complete(ada, { model: 'orphan', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(400);
  });
});

describe('export and import', () => {
  it('export needs models_export (admins have it); import creates and updates', async () => {
    expect((await call(`${M}/export`, ada)).status).toBe(401);
    const ex = await call(`${M}/export`, admin);
    expect(ex.status).toBe(200);
    expect(ex.body.map((m: any) => m.id)).toEqual(expect.arrayContaining(['ada-helper', 'admin-model']));
    const imported = [
      { ...form('imported-one'), user_id: 'ignored', created_at: 1 },
      { ...form('admin-model'), name: 'Admin model, imported' },
    ];
    expect(await post(`${M}/import`, { models: imported }, admin)).toMatchObject({ status: 200, body: true });
    expect((await call(`${M}/model?id=imported-one`, admin)).body).toMatchObject({ user_id: admin.id, name: 'Model imported-one' });
    expect((await call(`${M}/model?id=admin-model`, admin)).body.name).toBe('Admin model, imported');
    expect((await post(`${M}/import`, { models: imported }, ada)).status).toBe(401);
  });
});

describe('events on the bus', () => {
  it('model.created, model.updated and model.deleted with the model as subject, never its prompt', async () => {
    await waitFor(async () => (await modelEvents()).some((e) => e.event.event === 'model.deleted'), 20_000, () => 'no model.deleted event');
    const events = await modelEvents();
    const names = new Set(events.map((e) => e.event.event));
    expect([...names].sort()).toEqual(['model.created', 'model.deleted', 'model.updated']);
    const created = events.find((e) => e.event.event === 'model.created' && e.event.subject?.id === 'ada-helper');
    expect(created?.event.data).toEqual({ name: 'Model ada-helper', base_model_id: 'echo' });
    expect(created?.event.actor?.id).toBe(ada.id);
    const toggled = events.find((e) => e.event.event === 'model.updated' && (e.event.data as any).updated_fields?.join() === 'is_active');
    expect(toggled?.event.data).toMatchObject({ is_active: false });
    expect(JSON.stringify(events)).not.toContain('helper called');
  });
});

describe('hostile input is a 4xx, never a 500', () => {
  it('malformed forms are FastAPI’s 422', async () => {
    for (const body of [{}, { id: 'x' }, { id: 'x', name: 'x', meta: 'nope', params: {} }, { id: 5, name: 'x', meta: {}, params: {} }, []]) {
      const r = await post(`${M}/create`, body, ada);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(Array.isArray(r.body.detail)).toBe(true);
    }
    expect((await call(`${M}/model`, ada)).status).toBe(422);
    expect((await post(`${M}/model/toggle`, {}, ada)).status).toBe(422);
    expect((await post(`${M}/model/delete`, {}, ada)).status).toBe(422);
  });

  it('odd ids and values are stored or refused cleanly', async () => {
    expect(await post(`${M}/create`, form('x'.repeat(300)), ada)).toMatchObject({ status: 400, body: { detail: 'The model id is too long. Please make sure your model id is less than 256 characters long.' } });
    expect((await post(`${M}/create`, form('   '), ada)).status).toBe(400);
    expect((await post(`${M}/create`, form('k', { meta: { knowledge: [5, null] } }), ada)).status).toBe(422);
    const odd = await post(`${M}/create`, form("a/b'; drop table model;--\u0000", { name: 'Odd \u0000 name', meta: { knowledge: [{ id: 7 }, { type: 'web', id: 'x' }, { type: 'collection' }] }, params: { system: 42 } }), ada);
    expect(odd.status, JSON.stringify(odd.body)).toBe(200);
    expect(odd.body.id).toBe("a/b'; drop table model;--");
    expect(odd.body.name).toBe('Odd  name');
    const got = await call(`${M}/model?id=${encodeURIComponent("a/b'; drop table model;--")}`, ada);
    expect(got.status).toBe(200);
    const r = await complete(ada, { model: "a/b'; drop table model;--", messages: [{ role: 'user', content: 'still fine' }] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await post(`${M}/import`, { models: [{ id: 'bad' }] }, admin)).toMatchObject({ status: 400 });
    expect((await post(`${M}/import`, { models: 'nope' }, admin)).status).toBe(422);
    expect((await call(`${M}/list?page=abc`, ada)).status).toBe(422);
    expect((await call(`${M}/list?query=%25_%5C&order_by=name&direction=asc`, ada)).status).toBe(200);
  });
});
