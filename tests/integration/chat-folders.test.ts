import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, eventsNamed, NOT_FOUND, PROHIBITED, type Account } from './chat-fixture.ts';

/**
 * Folders and folder sharing on the chat face (Open WebUI 0.10.2 /api/v1/folders and the chat
 * routes folders need) over real HTTP, with the people sharing involves: the owner, a read
 * grantee, a write grantee, a member of a group granted read, everyone (`user:*`), a stranger
 * and the admin. Grants are inherited down the tree; read-only chats come with `readonly` and
 * never a 401; nobody without a grant learns that anything exists.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const EXISTS = '[ERROR: Folder already exists]';

let admin: Account, owner: Account, reader: Account, writer: Account, member: Account, stranger: Account;
let group: { id: string };

const nf = { status: 404, body: { detail: NOT_FOUND } };
const mkdir = async (who: Account, name: string, parent_id?: string | null, extra: Record<string, unknown> = {}) => {
  const r = await call('/api/v1/folders/', who, 'POST', { name, ...(parent_id === undefined ? {} : { parent_id }), ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
const newChat = async (who: Account, title: string, folder_id?: string) => {
  const r = await call('/api/v1/chats/new', who, 'POST', { chat: { title, messages: [{ role: 'user', content: `about ${title}` }] }, ...(folder_id ? { folder_id } : {}) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
const share = (who: Account, folderId: string, access_grants: unknown[]) => call(`/api/v1/folders/${folderId}/access/update`, who, 'POST', { access_grants });
const folderRow = async (id: string) => (await db<{ id: string; name: string; user_id: string; parent_id: string | null }[]>`select id, name, user_id, parent_id from folder where id = ${id}`)[0];

const FOLDER_KEYS = ['created_at', 'data', 'id', 'is_expanded', 'items', 'meta', 'name', 'parent_id', 'updated_at', 'user_id'];
const CHAT_KEYS = ['archived', 'chat', 'created_at', 'folder_id', 'id', 'meta', 'pinned', 'share_id', 'title', 'updated_at', 'user_id'];

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  owner = await addUser(admin, 'Owner');
  reader = await addUser(admin, 'Reader');
  writer = await addUser(admin, 'Writer');
  member = await addUser(admin, 'Member');
  stranger = await addUser(admin, 'Stranger');
  group = (await call('/api/v1/groups/create', admin, 'POST', { name: 'Readers', description: '' })).body;
  expect((await call(`/api/v1/groups/id/${group.id}/users/add`, admin, 'POST', { user_ids: [member.id] })).body.member_count).toBe(1);
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

describe('own folders', () => {
  it('creates folders (FolderModel) and lists them as FolderNameIdResponse', async () => {
    const f = await mkdir(owner, 'Projects', null, { meta: { icon: '📁', color: 'blue' }, data: { system_prompt: 'be brief' } });
    expect(Object.keys(f).sort()).toEqual(FOLDER_KEYS);
    expect(f).toMatchObject({ name: 'Projects', user_id: owner.id, parent_id: null, items: null, is_expanded: false, meta: { icon: '📁', color: 'blue' }, data: { system_prompt: 'be brief' } });
    expect(f.created_at).toBeGreaterThan(1_700_000_000);
    expect(f.created_at).toBeLessThan(10_000_000_000);
    const child = await mkdir(owner, 'Alpha', f.id);
    expect(child).toMatchObject({ parent_id: f.id, user_id: owner.id, meta: null, data: null });

    const list = await call('/api/v1/folders/', owner);
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(2);
    const p = list.body.find((x: any) => x.id === f.id);
    expect(Object.keys(p).sort()).toEqual(['created_at', 'id', 'is_expanded', 'meta', 'name', 'parent_id', 'updated_at']);
    // FolderMetadataResponse keeps only the icon.
    expect(p.meta).toEqual({ icon: '📁' });
    expect(list.body.find((x: any) => x.id === child.id).meta).toBeNull();
    // The path answers without its trailing slash too, and nobody else sees these.
    expect((await call('/api/v1/folders', owner)).body).toHaveLength(2);
    expect((await call('/api/v1/folders/', stranger)).body).toEqual([]);
  });

  it('refuses a second folder of the same name (any case) under the same parent only', async () => {
    const [projects] = (await call('/api/v1/folders/', owner)).body.filter((x: any) => x.name === 'Projects');
    expect(await call('/api/v1/folders/', owner, 'POST', { name: 'projects' })).toEqual({ status: 400, body: { detail: EXISTS } });
    expect(await call('/api/v1/folders/', owner, 'POST', { name: 'ALPHA', parent_id: projects.id })).toEqual({ status: 400, body: { detail: EXISTS } });
    // Another parent, or another user, is fine.
    await mkdir(owner, 'Alpha');
    await mkdir(stranger, 'Projects');
    expect((await call('/api/v1/folders/', owner)).body).toHaveLength(3);
  });

  it('refuses bad input with 422 and unknown parents with 404, creating nothing', async () => {
    const before = (await call('/api/v1/folders/', owner)).body.length;
    const missing = await call('/api/v1/folders/', owner, 'POST', { parent_id: null });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'name'] });
    // FolderForm forbids extra fields.
    expect((await call('/api/v1/folders/', owner, 'POST', { name: 'x', colour: 'red' })).status).toBe(422);
    expect((await call('/api/v1/folders/', owner, 'POST', { name: 42 })).status).toBe(422);
    expect((await call('/api/v1/folders/', owner, 'POST', { name: 'x', meta: 'not an object' })).status).toBe(422);
    expect((await call('/api/v1/folders/', owner, 'POST', '{"name": ')).status).toBeGreaterThanOrEqual(400);
    expect(await call('/api/v1/folders/', owner, 'POST', { name: 'x', parent_id: 'no-such-folder' })).toEqual(nf);
    // Someone else's private folder is as unknown as a missing one.
    const theirs = (await call('/api/v1/folders/', stranger)).body[0];
    expect(await call('/api/v1/folders/', owner, 'POST', { name: 'x', parent_id: theirs.id })).toEqual(nf);
    expect((await call('/api/v1/folders/', owner)).body).toHaveLength(before);
    expect((await call('/api/v1/folders/', undefined)).status).toBe(401);
  });

  it('renames, merges data and meta, and toggles is_expanded for the owner', async () => {
    const f = await mkdir(owner, 'Scratch', null, { meta: { icon: 'a' }, data: { system_prompt: 'x', files: [] } });
    const r = await call(`/api/v1/folders/${f.id}/update`, owner, 'POST', { name: 'Notes', meta: { color: 'red' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: f.id, name: 'Notes', meta: { icon: 'a', color: 'red' }, data: { system_prompt: 'x', files: [] } });
    expect(await call(`/api/v1/folders/${f.id}/update`, owner, 'POST', { name: 'projects' })).toEqual({ status: 400, body: { detail: EXISTS } });
    // Renaming to its own name in another case is not a clash with itself.
    expect((await call(`/api/v1/folders/${f.id}/update`, owner, 'POST', { name: 'NOTES' })).body.name).toBe('NOTES');
    expect((await call(`/api/v1/folders/${f.id}/update`, owner, 'POST', { nope: 1 })).status).toBe(422);

    const e = await call(`/api/v1/folders/${f.id}/update/expanded`, owner, 'POST', { is_expanded: true });
    expect(e.status).toBe(200);
    expect(e.body.is_expanded).toBe(true);
    expect((await call(`/api/v1/folders/${f.id}/update/expanded`, owner, 'POST', { is_expanded: 'yes' })).status).toBe(422);
    expect((await call(`/api/v1/folders/${f.id}/update/expanded`, owner, 'POST', {})).status).toBe(422);

    const ev = await eventsNamed(db, 'folder.updated');
    expect(ev.map((x) => x.data)).toEqual([{ name: 'Notes' }, { name: 'NOTES' }]);
    expect(ev[0]).toMatchObject({ actor: { id: owner.id }, subject: { type: 'folder', id: f.id } });
  });
});

describe('sharing', () => {
  let projects: any, alpha: any, deep: any, alphaChat: any, deepChat: any, loose: any;

  it('before any grant, nobody else sees the folders or their chats', async () => {
    const list = (await call('/api/v1/folders/', owner)).body;
    projects = list.find((x: any) => x.name === 'Projects');
    alpha = list.find((x: any) => x.name === 'Alpha' && x.parent_id === projects.id);
    deep = await mkdir(owner, 'Deep', alpha.id);
    alphaChat = await newChat(owner, 'Plan', alpha.id);
    deepChat = await newChat(owner, 'Deep dive', deep.id);
    loose = await newChat(owner, 'Loose');
    expect(Object.keys(alphaChat).sort()).toEqual(CHAT_KEYS);
    expect(alphaChat).toMatchObject({ user_id: owner.id, title: 'Plan', folder_id: alpha.id, archived: false, pinned: false, share_id: null, meta: {} });
    expect(alphaChat.chat.messages[0].content).toBe('about Plan');

    for (const who of [reader, writer, member, stranger]) {
      expect((await call('/api/v1/folders/shared', who)).body).toEqual([]);
      expect(await call(`/api/v1/folders/${projects.id}`, who)).toEqual(nf);
      expect(await call(`/api/v1/folders/${deep.id}`, who)).toEqual(nf);
      expect(await call(`/api/v1/folders/${alpha.id}/shared/chats`, who)).toEqual(nf);
      expect(await call(`/api/v1/chats/${alphaChat.id}`, who)).toEqual(nf);
      expect(await call(`/api/v1/chats/${loose.id}`, who)).toEqual(nf);
    }
  });

  it('the owner grants read, write and a group; the answer is the folder with its grants', async () => {
    const r = await share(owner, projects.id, [
      { principal_type: 'user', principal_id: reader.id, permission: 'read' },
      { principal_type: 'user', principal_id: writer.id, permission: 'read' },
      { principal_type: 'user', principal_id: writer.id, permission: 'write' },
      { principal_type: 'group', principal_id: group.id, permission: 'read' },
      { principal_type: 'group', principal_id: group.id, permission: 'read' },
    ]);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: projects.id, name: 'Projects', user_id: owner.id });
    expect(r.body.access_grants).toHaveLength(4);
    expect(Object.keys(r.body.access_grants[0]).sort()).toEqual(['created_at', 'id', 'permission', 'principal_id', 'principal_type', 'resource_id', 'resource_type']);
    expect(r.body.access_grants.every((g: any) => g.resource_type === 'folder' && g.resource_id === projects.id)).toBe(true);
    const ev = await eventsNamed(db, 'folder.access_updated');
    expect(ev.at(-1)).toMatchObject({ subject: { type: 'folder', id: projects.id }, data: { grant_count: 4 }, actor: { id: owner.id } });
  });

  it('grants reach the whole tree below, with the best permission each person has', async () => {
    for (const [who, perm] of [[reader, 'read'], [writer, 'write'], [member, 'read']] as const) {
      const shared = await call('/api/v1/folders/shared', who);
      expect(shared.status).toBe(200);
      expect(shared.body.map((f: any) => f.id).sort()).toEqual([projects.id, alpha.id, deep.id].sort());
      for (const f of shared.body) expect(f).toMatchObject({ owner_name: 'Owner', permission: perm, user_id: owner.id });
      const got = await call(`/api/v1/folders/${deep.id}`, who);
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({ id: deep.id, name: 'Deep', access_grants: [] });
      expect((await call(`/api/v1/folders/${projects.id}`, who)).body.access_grants).toHaveLength(4);
      // Shared folders are not the grantee's own.
      expect((await call('/api/v1/folders/', who)).body).toEqual([]);
    }
    expect(await call(`/api/v1/folders/${alpha.id}`, stranger)).toEqual(nf);
    expect((await call('/api/v1/folders/shared', stranger)).body).toEqual([]);
    expect((await call('/api/v1/folders/shared', owner)).body).toEqual([]);
    // The admin reads any folder.
    expect((await call(`/api/v1/folders/${deep.id}`, admin)).status).toBe(200);
  });

  it('read grantees open chats read-only, never with a 401', async () => {
    for (const who of [reader, member, writer, admin]) {
      const r = await call(`/api/v1/chats/${deepChat.id}`, who);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ id: deepChat.id, user_id: owner.id, title: 'Deep dive', folder_id: deep.id, readonly: true });
      expect(r.body.chat.messages[0].content).toBe('about Deep dive');
    }
    expect((await call(`/api/v1/chats/${deepChat.id}`, owner)).body).toMatchObject({ id: deepChat.id, readonly: false });
    // A chat outside the shared tree stays private.
    expect(await call(`/api/v1/chats/${loose.id}`, reader)).toEqual(nf);
    expect(await call(`/api/v1/chats/${deepChat.id}`, stranger)).toEqual(nf);

    const list = await call(`/api/v1/folders/${alpha.id}/shared/chats`, reader);
    expect(list.status).toBe(200);
    expect(list.body.folder_permission).toBe('read');
    expect(list.body.chats).toEqual([
      { id: alphaChat.id, title: 'Plan', user_id: owner.id, updated_at: alphaChat.updated_at, created_at: alphaChat.created_at, owner_name: 'Owner', readonly: true },
    ]);
    expect((await call(`/api/v1/folders/${alpha.id}/shared/chats`, writer)).body.folder_permission).toBe('write');
    expect((await call(`/api/v1/folders/${alpha.id}/shared/chats`, owner)).body).toMatchObject({ folder_permission: 'write', chats: [{ readonly: false }] });
    const paged = await call(`/api/v1/folders/${alpha.id}/shared/chats?page=1`, reader);
    expect(paged.body).toMatchObject({ total: 1, has_more: false });
    expect((await call(`/api/v1/folders/${alpha.id}/shared/chats?page=0`, reader)).status).toBe(422);
  });

  it('a read grantee cannot change anything, and nothing changes', async () => {
    const before = await folderRow(alpha.id);
    expect(await call(`/api/v1/folders/${alpha.id}/update`, reader, 'POST', { name: 'Mine now' })).toEqual(nf);
    expect(await call('/api/v1/folders/', reader, 'POST', { name: 'Inside', parent_id: alpha.id })).toEqual({ status: 403, body: { detail: PROHIBITED } });
    expect(await call('/api/v1/chats/new', reader, 'POST', { chat: { title: 'sneaky' }, folder_id: alpha.id })).toEqual(nf);
    expect(await share(reader, alpha.id, [{ principal_type: 'user', principal_id: reader.id, permission: 'write' }])).toEqual({ status: 403, body: { detail: PROHIBITED } });
    expect(await call(`/api/v1/folders/${deep.id}`, reader, 'DELETE')).toEqual({ status: 403, body: { detail: PROHIBITED } });
    expect(await call(`/api/v1/folders/${alpha.id}/update/parent`, reader, 'POST', { parent_id: null })).toEqual(nf);
    // Expanding is the owner's view state: a grantee gets the folder back unchanged.
    const exp = await call(`/api/v1/folders/${alpha.id}/update/expanded`, reader, 'POST', { is_expanded: true });
    expect(exp.status).toBe(200);
    expect(exp.body.is_expanded).toBe(false);

    expect(await folderRow(alpha.id)).toEqual(before);
    expect(await folderRow(deep.id)).toBeDefined();
    const [n] = await db<{ n: number }[]>`select count(*)::int as n from folder where name = 'Inside'`;
    expect(n!.n).toBe(0);
    const [c] = await db<{ n: number }[]>`select count(*)::int as n from chat where title = 'sneaky'`;
    expect(c!.n).toBe(0);
    expect((await call(`/api/v1/folders/${alpha.id}`, owner)).body.access_grants).toEqual([]);
  });

  it('a write grantee adds and edits: sub-folders belong to the owner, chats to their author', async () => {
    const sub = await call('/api/v1/folders/', writer, 'POST', { name: 'From writer', parent_id: alpha.id });
    expect(sub.status).toBe(200);
    expect(sub.body).toMatchObject({ user_id: owner.id, parent_id: alpha.id });
    expect((await call('/api/v1/folders/', owner)).body.map((f: any) => f.id)).toContain(sub.body.id);
    expect((await call('/api/v1/folders/', writer)).body).toEqual([]);
    expect(await call('/api/v1/folders/', writer, 'POST', { name: 'from WRITER', parent_id: alpha.id })).toEqual({ status: 400, body: { detail: EXISTS } });
    const created = await eventsNamed(db, 'folder.created');
    expect(created.at(-1)).toMatchObject({ actor: { id: writer.id }, data: { name: 'From writer', parent_id: alpha.id, owner_id: owner.id } });

    const upd = await call(`/api/v1/folders/${alpha.id}/update`, writer, 'POST', { meta: { icon: '✍️' } });
    expect(upd.status).toBe(200);
    expect(upd.body.meta).toEqual({ icon: '✍️' });

    const chat = await newChat(writer, 'Writer notes', alpha.id);
    expect(chat).toMatchObject({ user_id: writer.id, folder_id: alpha.id });
    // The folder's owner reads it, read-only: it is the writer's chat.
    expect((await call(`/api/v1/chats/${chat.id}`, owner)).body).toMatchObject({ id: chat.id, readonly: true });
    expect((await call(`/api/v1/chats/${chat.id}`, writer)).body.readonly).toBe(false);
    const listed = (await call(`/api/v1/folders/${alpha.id}/shared/chats`, owner)).body.chats;
    expect(listed.find((c: any) => c.id === chat.id)).toMatchObject({ owner_name: 'Writer', readonly: true, user_id: writer.id });
    expect(listed.find((c: any) => c.id === alphaChat.id)).toMatchObject({ owner_name: 'Owner', readonly: false });

    // Moving stays the owner's; deleting a shared sub-folder is allowed, the shared root is not.
    expect(await call(`/api/v1/folders/${alpha.id}/update/parent`, writer, 'POST', { parent_id: null })).toEqual(nf);
    expect(await call(`/api/v1/folders/${sub.body.id}`, writer, 'DELETE')).toEqual({ status: 200, body: true });
    expect(await call(`/api/v1/folders/${sub.body.id}`, owner)).toEqual(nf);
    expect(await call(`/api/v1/folders/${projects.id}`, writer, 'DELETE')).toEqual({ status: 403, body: { detail: PROHIBITED } });
    expect(await folderRow(projects.id)).toBeDefined();
  });

  it('a write grantee may re-share; the owner can take grants back', async () => {
    const r = await share(writer, alpha.id, [{ principal_type: 'user', principal_id: stranger.id, permission: 'read' }]);
    expect(r.status).toBe(200);
    expect((await call(`/api/v1/folders/${deep.id}`, stranger)).status).toBe(200);
    expect((await call(`/api/v1/folders/${projects.id}`, stranger)).status).toBe(404);
    expect((await share(owner, alpha.id, [])).body.access_grants).toEqual([]);
    expect(await call(`/api/v1/folders/${deep.id}`, stranger)).toEqual(nf);
  });

  it('membership is checked live: leaving the group loses the folders', async () => {
    expect((await call(`/api/v1/folders/${alpha.id}`, member)).status).toBe(200);
    await call(`/api/v1/groups/id/${group.id}/users/remove`, admin, 'POST', { user_ids: [member.id] });
    expect(await call(`/api/v1/folders/${alpha.id}`, member)).toEqual(nf);
    expect(await call(`/api/v1/chats/${alphaChat.id}`, member)).toEqual(nf);
    expect((await call('/api/v1/folders/shared', member)).body).toEqual([]);
  });

  it('user:* shares with every signed-in user', async () => {
    const pub = await mkdir(owner, 'Public');
    const chat = await newChat(owner, 'Announcement', pub.id);
    expect((await share(owner, pub.id, [{ principal_type: 'user', principal_id: '*', permission: 'read' }])).status).toBe(200);
    for (const who of [stranger, member, reader]) {
      expect((await call('/api/v1/folders/shared', who)).body.find((f: any) => f.id === pub.id)).toMatchObject({ permission: 'read', owner_name: 'Owner' });
      expect((await call(`/api/v1/chats/${chat.id}`, who)).body).toMatchObject({ id: chat.id, readonly: true });
    }
    expect((await call(`/api/v1/chats/${chat.id}`, undefined)).status).toBe(401);
    await share(owner, pub.id, []);
    expect(await call(`/api/v1/folders/${pub.id}`, stranger)).toEqual(nf);
  });

  it('validates grants: unknown users or groups are 400, malformed ones 422, and the old grants stay', async () => {
    const before = (await call(`/api/v1/folders/${projects.id}`, owner)).body.access_grants;
    const bad1 = await share(owner, projects.id, [{ principal_type: 'user', principal_id: 'no-such-user', permission: 'read' }]);
    expect(bad1.status).toBe(400);
    expect(bad1.body.detail).toMatch(/no-such-user/);
    const bad2 = await share(owner, projects.id, [{ principal_type: 'group', principal_id: 'no-such-group', permission: 'read' }]);
    expect(bad2.status).toBe(400);
    expect(bad2.body.detail).toMatch(/no-such-group/);
    expect((await share(owner, projects.id, [{ principal_type: 'group', principal_id: '*', permission: 'read' }])).status).toBe(400);
    expect((await share(owner, projects.id, [{ principal_type: 'user', principal_id: reader.id, permission: 'admin' }])).status).toBe(422);
    expect((await share(owner, projects.id, [{ principal_type: 'role', principal_id: reader.id, permission: 'read' }])).status).toBe(422);
    expect((await call(`/api/v1/folders/${projects.id}/access/update`, owner, 'POST', {})).status).toBe(422);
    expect(await share(stranger, projects.id, [])).toEqual(nf);
    expect((await call(`/api/v1/folders/${projects.id}`, owner)).body.access_grants).toEqual(before);
  });
});

describe('moving folders', () => {
  it('refuses cycles, clashes and foreign parents; a moved folder leaves its old grants behind', async () => {
    const list = (await call('/api/v1/folders/', owner)).body;
    const projects = list.find((x: any) => x.name === 'Projects');
    const alpha = list.find((x: any) => x.name === 'Alpha' && x.parent_id === projects.id);
    const deep = list.find((x: any) => x.name === 'Deep');
    const cycle = await call(`/api/v1/folders/${projects.id}/update/parent`, owner, 'POST', { parent_id: deep.id });
    expect(cycle.status).toBe(400);
    expect(cycle.body.detail).toMatch(/into itself or one of its sub-folders/);
    expect((await call(`/api/v1/folders/${projects.id}/update/parent`, owner, 'POST', { parent_id: projects.id })).status).toBe(400);
    expect((await folderRow(projects.id))!.parent_id).toBeNull();
    // A root folder named Alpha already exists.
    expect(await call(`/api/v1/folders/${alpha.id}/update/parent`, owner, 'POST', { parent_id: null })).toEqual({ status: 400, body: { detail: EXISTS } });
    expect(await call(`/api/v1/folders/${deep.id}/update/parent`, owner, 'POST', { parent_id: 'nowhere' })).toEqual(nf);
    const theirs = (await call('/api/v1/folders/', stranger)).body[0];
    expect(await call(`/api/v1/folders/${deep.id}/update/parent`, owner, 'POST', { parent_id: theirs.id })).toEqual(nf);
    expect((await call(`/api/v1/folders/${deep.id}/update/parent`, owner, 'POST', { parent_id: 5 })).status).toBe(422);

    expect((await call(`/api/v1/folders/${deep.id}`, reader)).status).toBe(200);
    const moved = await call(`/api/v1/folders/${deep.id}/update/parent`, owner, 'POST', { parent_id: null });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ id: deep.id, parent_id: null });
    expect(await call(`/api/v1/folders/${deep.id}`, reader)).toEqual(nf);
    const back = await call(`/api/v1/folders/${deep.id}/update/parent`, owner, 'POST', { parent_id: alpha.id });
    expect(back.body.parent_id).toBe(alpha.id);
    expect((await call(`/api/v1/folders/${deep.id}`, reader)).status).toBe(200);
    expect((await eventsNamed(db, 'folder.parent_updated')).map((e) => e.data.parent_id)).toEqual([null, alpha.id]);
  });
});

describe('deleting folders', () => {
  it('deletes the folder, its sub-folders, their chats and grants (delete_contents defaults to true)', async () => {
    const top = await mkdir(owner, 'Trash');
    const sub = await mkdir(owner, 'Sub', top.id);
    const c1 = await newChat(owner, 'one', top.id);
    const c2 = await newChat(owner, 'two', sub.id);
    expect(await call('/api/v1/chats/new', writer, 'POST', { chat: { title: 'not yet' }, folder_id: sub.id })).toEqual(nf);
    await share(owner, sub.id, [{ principal_type: 'user', principal_id: writer.id, permission: 'write' }]);
    const w = await newChat(writer, 'writer keeps this', sub.id);

    expect(await call(`/api/v1/folders/${top.id}?delete_contents=perhaps`, owner, 'DELETE')).toMatchObject({ status: 422 });
    expect(await call(`/api/v1/folders/${top.id}`, stranger, 'DELETE')).toEqual(nf);
    expect(await call(`/api/v1/folders/${top.id}`, owner, 'DELETE')).toEqual({ status: 200, body: true });
    expect(await call(`/api/v1/folders/${top.id}`, owner)).toEqual(nf);
    expect(await call(`/api/v1/folders/${sub.id}`, owner)).toEqual(nf);
    expect(await call(`/api/v1/chats/${c1.id}`, owner)).toEqual(nf);
    expect(await call(`/api/v1/chats/${c2.id}`, owner)).toEqual(nf);
    // Another user's chat in the shared sub-folder is theirs: it falls back to their root.
    expect((await call(`/api/v1/chats/${w.id}`, writer)).body).toMatchObject({ id: w.id, folder_id: null, readonly: false });
    const [g] = await db<{ n: number }[]>`select count(*)::int as n from access_grant where resource_id in (${top.id}, ${sub.id})`;
    expect(g!.n).toBe(0);
    const ev = (await eventsNamed(db, 'folder.deleted')).find((e) => e.subject.id === top.id);
    expect(ev.data.delete_contents).toBe(true);
    expect(ev.data.folder_ids.sort()).toEqual([top.id, sub.id].sort());
  });

  it('with delete_contents=false the chats move to the root', async () => {
    const top = await mkdir(owner, 'Keep chats');
    const sub = await mkdir(owner, 'Inner', top.id);
    const c = await newChat(owner, 'kept', sub.id);
    expect(await call(`/api/v1/folders/${top.id}?delete_contents=false`, owner, 'DELETE')).toEqual({ status: 200, body: true });
    expect((await call(`/api/v1/chats/${c.id}`, owner)).body).toMatchObject({ id: c.id, title: 'kept', folder_id: null });
    expect(await call(`/api/v1/folders/${sub.id}`, owner)).toEqual(nf);
  });

  it('the admin may delete anyone\'s folder', async () => {
    const f = await mkdir(stranger, 'Doomed');
    expect(await call(`/api/v1/folders/${f.id}`, admin, 'DELETE')).toEqual({ status: 200, body: true });
    expect(await call(`/api/v1/folders/${f.id}`, stranger)).toEqual(nf);
  });
});

describe('chats', () => {
  it('creates chats with Open WebUI defaults and refuses bad input', async () => {
    const r = await call('/api/v1/chats/new', reader, 'POST', { chat: { models: ['m'] } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ title: 'New Chat', folder_id: null, user_id: reader.id, chat: { models: ['m'] } });
    const got = await call(`/api/v1/chats/${r.body.id}`, reader);
    expect(got.body).toEqual({ ...r.body, readonly: false });
    expect((await call('/api/v1/chats/new', reader, 'POST', {})).status).toBe(422);
    expect((await call('/api/v1/chats/new', reader, 'POST', { chat: 'text' })).status).toBe(422);
    expect((await call('/api/v1/chats/new', reader, 'POST', { chat: { title: 7 } })).status).toBe(422);
    expect(await call('/api/v1/chats/new', reader, 'POST', { chat: {}, folder_id: 'no-such-folder' })).toEqual(nf);
    // NUL characters are dropped (Postgres cannot store them), not a 500.
    const nul = await call('/api/v1/chats/new', reader, 'POST', { chat: { title: 'a\u0000b', x: 'c\u0000' } });
    expect(nul.body).toMatchObject({ title: 'ab', chat: { x: 'c' } });
    expect(await call('/api/v1/chats/no-such-chat', reader)).toEqual(nf);
    const ev = (await eventsNamed(db, 'chat.created')).find((e) => e.subject.id === r.body.id);
    expect(ev).toMatchObject({ actor: { id: reader.id }, data: { title: 'New Chat', folder_id: null } });
  });
});

describe('events', () => {
  it('every change is in the outbox, in Open WebUI\'s envelope, without secrets', async () => {
    const rows = await db<{ subject: string; event: any }[]>`select subject, event from outbox order by seq`;
    const names = new Set(rows.map((r) => r.event.event));
    for (const n of ['folder.created', 'folder.updated', 'folder.parent_updated', 'folder.access_updated', 'folder.deleted', 'chat.created']) {
      expect(names, n).toContain(n);
    }
    for (const r of rows.filter((x) => x.event.resource === 'folder' || x.event.resource === 'chat')) {
      expect(r.subject).toBe(`events.${r.event.event}`);
      expect(r.event).toMatchObject({ schema: '0.10.2', source: 'api', actor: { type: 'user' } });
    }
    expect(JSON.stringify(rows)).not.toMatch(/password|"token"/);
  });

});

describe('settings', () => {
  it('with folders switched off (admin setting) every folder route is 403, as check_folders_permission', async () => {
    const off = await call('/api/v1/auths/admin/config', admin, 'POST', { ENABLE_FOLDERS: false });
    expect(off.status).toBe(200);
    expect(await call('/api/v1/folders/', owner)).toEqual({ status: 403, body: { detail: PROHIBITED } });
    expect(await call('/api/v1/folders/shared', reader)).toEqual({ status: 403, body: { detail: PROHIBITED } });
    expect((await call('/api/v1/auths/admin/config', admin, 'POST', { ENABLE_FOLDERS: true })).status).toBe(200);
    expect((await call('/api/v1/folders/', owner)).status).toBe(200);
  });
});

describe('NUL characters (Postgres refuses them in text)', () => {
  it('treats an id holding one as an id that does not exist, on every kind of resource', async () => {
    expect(await call('/api/v1/folders/a%00b', owner)).toEqual(nf);
    expect(await call('/api/v1/chats/a%00b', owner)).toEqual(nf);
    expect((await call('/api/v1/users/a%00b', admin)).status).toBe(400);
    expect(await call('/api/v1/memories/a%00b/update', owner, 'POST', { content: 'x' })).toEqual(nf);
    expect((await call('/api/v1/groups/id/a%00b', admin)).status).toBe(404);
    expect((await call('/api/v1/chats/search?text=a%00b', owner)).status).toBe(200);
  });

  it('never answers 5xx for a body string holding one: it is dropped, or the answer is a 400', async () => {
    const probes: [string, string, unknown][] = [
      ['/api/v1/folders/', 'POST', { name: 'bad\u0000name' }],
      ['/api/v1/chats/new', 'POST', { chat: { title: 't\u0000', messages: [{ role: 'user', content: 'a\u0000b' }] } }],
      ['/api/v1/memories/add', 'POST', { content: 'likes \u0000 tea' }],
    ];
    const statuses = [];
    for (const [path, method, body] of probes) {
      const r = await call(path, owner, method, body);
      statuses.push(r.status);
      if (r.status === 400) expect(r.body).toEqual({ detail: 'Text may not contain NUL (\\u0000) characters.' });
      else expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
    }
    // Folder names and chat JSON drop it; a memory's content reaches Postgres, which refuses it:
    // the client's 400 (it was a 500).
    expect(statuses).toEqual([200, 200, 400]);
  });
});
