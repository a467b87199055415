import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge, type Proc } from '../support/local-stack.ts';
import { chatClient, chatDb, eventsNamed, NOT_FOUND, PROHIBITED, type Account, type Res } from './chat-fixture.ts';
import { Receiver } from './webhook-receiver.ts';

/**
 * Chat sharing, cloning, export and import on the chat face (Open WebUI 0.10.2 /api/v1/chats) over
 * real HTTP: who reads a share (owner, admin, a granted user, a granted group's member; anyone else
 * Open WebUI's 401), sharing again refreshes the snapshot under the same id, unsharing, clones of
 * one's own chat and of a share, the NDJSON export imported back with its history, the admin
 * routes and their environment switches, and the four events in the outbox and at a webhook.
 */
const stack = new Stack();
let edge: Edge;
let worker: Proc;
const db = chatDb(stack);
const receiver = new Receiver();
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const BASE = '/api/v1/chats';
const EVENTS = ['chat.shared', 'chat.unshared', 'chat.cloned', 'chat.imported'];

let admin: Account, owner: Account, granted: Account, member: Account, stranger: Account, importer: Account;
let groupId: string;

const ok200 = (r: Res) => {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
const unauthorized = (detail: string) => ({ status: 401, body: { detail } });

/** A two-turn conversation in Open WebUI's history shape. */
function conversation(title: string) {
  const [u1, a1, u2, a2] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  const t = Math.floor(Date.now() / 1000) - 100;
  const messages = {
    [u1]: { id: u1, parentId: null, childrenIds: [a1], role: 'user', content: 'Hello', timestamp: t },
    [a1]: { id: a1, parentId: u1, childrenIds: [u2], role: 'assistant', content: 'Hi!', model: 'fake-echo', done: true, timestamp: t + 1 },
    [u2]: { id: u2, parentId: a1, childrenIds: [a2], role: 'user', content: 'And then?', timestamp: t + 2 },
    [a2]: { id: a2, parentId: u2, childrenIds: [], role: 'assistant', content: 'The end.', model: 'fake-echo', done: true, timestamp: t + 3 },
  };
  return { title, models: ['fake-echo'], history: { messages, currentId: a2 } };
}
const newChat = async (who: Account, chat: Record<string, unknown>) => ok200(await call(`${BASE}/new`, who, 'POST', { chat }));
const messageRows = async (chatId: string) => (await db<{ id: string }[]>`select id from chat_message where chat_id = ${chatId}`).map((r) => r.id).sort();

beforeAll(async () => {
  await receiver.start();
  worker = await stack.startChatWorker({ ENABLE_LOCAL_WEB_FETCH: 'true' }, { ingest: false });
  await stack.startWebhookDispatcher({ ENABLE_LOCAL_WEB_FETCH: 'true', WEBHOOK_POLL_MS: '200' });
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup('Admin');
  [owner, granted, member, stranger, importer] = (await Promise.all(['Owner', 'Granted', 'Member', 'Stranger', 'Importer'].map((n) => addUser(admin, n)))) as [Account, Account, Account, Account, Account];
  groupId = ok200(await call('/api/v1/groups/create', admin, 'POST', { name: 'Readers', description: '' })).id;
  ok200(await call(`/api/v1/groups/id/${groupId}/users/add`, admin, 'POST', { user_ids: [member.id] }));
  ok200(await call('/api/events/webhooks', admin, 'POST', { url: receiver.url, events: EVENTS }));
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
  await receiver.stop();
});

describe('sharing a chat', () => {
  let chatId: string;
  let shareId: string;
  const doc = conversation('Trip plans');

  beforeAll(async () => {
    chatId = (await newChat(owner, doc)).id;
  });

  it('makes a snapshot under a new share id, kept on the chat', async () => {
    const shared = ok200(await call(`${BASE}/${chatId}/share`, owner, 'POST'));
    shareId = shared.share_id;
    expect(shareId).toMatch(/^[0-9a-f-]{36}$/);
    expect(shared).toMatchObject({ id: chatId, user_id: owner.id, title: 'Trip plans', share_id: shareId });
    expect(ok200(await call(`${BASE}/${chatId}`, owner)).share_id).toBe(shareId);
    const snap = ok200(await call(`${BASE}/share/${shareId}`, owner));
    expect(snap).toMatchObject({ id: shareId, share_id: shareId, user_id: owner.id, title: 'Trip plans', archived: false, pinned: false, meta: {}, folder_id: null });
    expect(snap.chat).toEqual(doc);
    const events = (await eventsNamed(db, 'chat.shared')).filter((e) => e.subject.id === chatId);
    expect(events.map((e) => e.data)).toEqual([{ share_id: shareId }]);
    expect(events[0].actor.id).toBe(owner.id);
  });

  it('is read by its owner and an admin; a stranger, and an unknown share id, get 401', async () => {
    expect((await call(`${BASE}/share/${shareId}`, admin)).status).toBe(200);
    expect(await call(`${BASE}/share/${shareId}`, stranger)).toEqual(unauthorized(PROHIBITED));
    expect(await call(`${BASE}/share/${shareId}`, granted)).toEqual(unauthorized(PROHIBITED));
    expect(await call(`${BASE}/share/${randomUUID()}`, owner)).toEqual(unauthorized(NOT_FOUND));
    // The share id is not the chat id: a non-admin cannot open the chat's own id as a share.
    expect(await call(`${BASE}/share/${chatId}`, stranger)).toEqual(unauthorized(NOT_FOUND));
    // Without a token at all: Open WebUI's 401 before anything is looked up.
    expect((await call(`${BASE}/share/${shareId}`, null)).status).toBe(401);
  });

  it('is read by a granted user and a granted group member once the owner grants them', async () => {
    const grants = [
      { principal_type: 'user', principal_id: granted.id, permission: 'read' },
      { principal_type: 'group', principal_id: groupId, permission: 'read' },
    ];
    const updated = ok200(await call(`${BASE}/shared/${chatId}/access/update`, owner, 'POST', { access_grants: grants }));
    expect(updated).toMatchObject({ id: chatId, share_id: shareId, user_id: owner.id });
    const listed = ok200(await call(`${BASE}/shared/${chatId}/access`, owner));
    expect(listed.map(({ id, ...g }: any) => (expect(id).toEqual(expect.any(String)), g))).toEqual(expect.arrayContaining(grants));
    expect(listed).toHaveLength(2);
    expect(ok200(await call(`${BASE}/share/${shareId}`, granted)).chat).toEqual(doc);
    expect(ok200(await call(`${BASE}/share/${shareId}`, member)).chat).toEqual(doc);
    expect(await call(`${BASE}/share/${shareId}`, stranger)).toEqual(unauthorized(PROHIBITED));
    // The grants are the owner's (or an admin's) to see and change; others do not learn the chat exists.
    expect(await call(`${BASE}/shared/${chatId}/access`, stranger)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    expect(await call(`${BASE}/shared/${chatId}/access/update`, granted, 'POST', { access_grants: [] })).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    expect(ok200(await call(`${BASE}/shared/${chatId}/access`, admin))).toHaveLength(2);
  });

  it('a grant to everyone needs sharing.public_chats: dropped for a user, kept for an admin', async () => {
    const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
    ok200(await call(`${BASE}/shared/${chatId}/access/update`, owner, 'POST', { access_grants: everyone }));
    expect(ok200(await call(`${BASE}/shared/${chatId}/access`, owner))).toEqual([]);
    expect(await call(`${BASE}/share/${shareId}`, stranger)).toEqual(unauthorized(PROHIBITED));
    ok200(await call(`${BASE}/shared/${chatId}/access/update`, admin, 'POST', { access_grants: everyone }));
    expect(ok200(await call(`${BASE}/shared/${chatId}/access`, owner))).toMatchObject([{ principal_type: 'user', principal_id: '*', permission: 'read' }]);
    expect(ok200(await call(`${BASE}/share/${shareId}`, stranger)).id).toBe(shareId);
    // Bad grants: the form's 422, an unknown principal a 400.
    expect((await call(`${BASE}/shared/${chatId}/access/update`, owner, 'POST', { access_grants: [{ principal_type: 'robot', principal_id: 'x', permission: 'read' }] })).status).toBe(422);
    expect(await call(`${BASE}/shared/${chatId}/access/update`, owner, 'POST', { access_grants: [{ principal_type: 'user', principal_id: 'nobody', permission: 'read' }] })).toEqual({
      status: 400,
      body: { detail: 'Unknown user in access_grants: nobody' },
    });
    // Back to the user and the group only.
    ok200(
      await call(`${BASE}/shared/${chatId}/access/update`, owner, 'POST', {
        access_grants: [
          { principal_type: 'user', principal_id: granted.id, permission: 'read' },
          { principal_type: 'group', principal_id: groupId, permission: 'read' },
        ],
      }),
    );
    expect(await call(`${BASE}/share/${shareId}`, stranger)).toEqual(unauthorized(PROHIBITED));
  });

  it('sharing again refreshes the snapshot under the same share id', async () => {
    const changed = { ...doc, title: 'Trip plans, revised' };
    ok200(await call(`${BASE}/${chatId}`, owner, 'POST', { chat: changed }));
    // The link still shows what was shared until the owner shares again.
    expect(ok200(await call(`${BASE}/share/${shareId}`, granted)).title).toBe('Trip plans');
    const again = ok200(await call(`${BASE}/${chatId}/share`, owner, 'POST'));
    expect(again.share_id).toBe(shareId);
    const snap = ok200(await call(`${BASE}/share/${shareId}`, granted));
    expect(snap.title).toBe('Trip plans, revised');
    expect(snap.chat).toEqual(changed);
    expect(snap.updated_at).toBeGreaterThanOrEqual(snap.created_at);
    const events = (await eventsNamed(db, 'chat.shared')).filter((e) => e.subject.id === chatId);
    expect(events.map((e) => e.data)).toEqual([{ share_id: shareId }, { share_id: shareId, updated: true }]);
  });

  it('lists the caller’s shares', async () => {
    const list = ok200(await call(`${BASE}/shared`, owner));
    expect(list).toEqual([expect.objectContaining({ id: chatId, chat_id: chatId, title: 'Trip plans, revised', share_id: shareId })]);
    expect(ok200(await call(`${BASE}/shared`, stranger))).toEqual([]);
    expect(ok200(await call(`${BASE}/shared?query=nothing-like-it`, owner))).toEqual([]);
    expect((await call(`${BASE}/shared?order_by=chat&direction=asc`, owner)).status).toBe(400);
  });

  it('a share of someone else’s chat is refused like a missing chat', async () => {
    expect(await call(`${BASE}/${chatId}/share`, stranger, 'POST')).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    expect(await call(`${BASE}/${chatId}/share`, stranger, 'DELETE')).toEqual({ status: 404, body: { detail: NOT_FOUND } });
  });

  it('a granted user clones the share; a stranger cannot', async () => {
    const clone = ok200(await call(`${BASE}/${shareId}/clone/shared`, granted, 'POST'));
    expect(clone.id).not.toBe(chatId);
    expect(clone).toMatchObject({ user_id: granted.id, title: 'Clone of Trip plans, revised', share_id: null, pinned: false, folder_id: null });
    expect(clone.chat).toEqual({ ...doc, title: 'Clone of Trip plans, revised', originalChatId: shareId, branchPointMessageId: doc.history.currentId });
    // The clone is the grantee's own chat, history and rows included.
    expect(ok200(await call(`${BASE}/${clone.id}`, granted)).readonly).toBe(false);
    expect(await messageRows(clone.id)).toEqual(Object.keys(doc.history.messages).sort());
    expect(await call(`${BASE}/${shareId}/clone/shared`, stranger, 'POST')).toEqual(unauthorized(PROHIBITED));
    const cloned = (await eventsNamed(db, 'chat.cloned')).filter((e) => e.subject.id === clone.id);
    expect(cloned.map((e) => e.data)).toEqual([{ original_chat_id: shareId }]);
  });

  it('unsharing removes the link, its snapshot and its grants', async () => {
    expect(ok200(await call(`${BASE}/${chatId}/share`, owner, 'DELETE'))).toBe(true);
    expect(ok200(await call(`${BASE}/${chatId}`, owner)).share_id).toBeNull();
    expect(await call(`${BASE}/share/${shareId}`, owner)).toEqual(unauthorized(NOT_FOUND));
    expect(await call(`${BASE}/share/${shareId}`, granted)).toEqual(unauthorized(NOT_FOUND));
    expect(ok200(await call(`${BASE}/shared/${chatId}/access`, owner))).toEqual([]);
    expect(ok200(await call(`${BASE}/shared`, owner))).toEqual([]);
    const events = (await eventsNamed(db, 'chat.unshared')).filter((e) => e.subject.id === chatId);
    expect(events.map((e) => e.data)).toEqual([{ share_id: shareId }]);
    // Shared again: a new link, not the old one.
    const next = ok200(await call(`${BASE}/${chatId}/share`, owner, 'POST')).share_id;
    expect(next).not.toBe(shareId);
    expect(await call(`${BASE}/share/${next}`, granted)).toEqual(unauthorized(PROHIBITED));
  });

  it('a deleted chat takes its share and grants with it; unshare-all clears the caller’s links', async () => {
    const other = (await newChat(owner, conversation('Short-lived'))).id;
    const sid = ok200(await call(`${BASE}/${other}/share`, owner, 'POST')).share_id;
    ok200(await call(`${BASE}/shared/${other}/access/update`, owner, 'POST', { access_grants: [{ principal_type: 'user', principal_id: granted.id, permission: 'read' }] }));
    ok200(await call(`${BASE}/${other}`, owner, 'DELETE'));
    expect(await call(`${BASE}/share/${sid}`, owner)).toEqual(unauthorized(NOT_FOUND));
    expect((await db`select 1 from access_grant where resource_type = 'shared_chat' and resource_id = ${other}`).length).toBe(0);

    const before = ok200(await call(`${BASE}/shared`, owner));
    expect(before).toHaveLength(1);
    expect(ok200(await call(`${BASE}/share/all`, owner, 'DELETE'))).toBe(true);
    expect(ok200(await call(`${BASE}/shared`, owner))).toEqual([]);
    expect(ok200(await call(`${BASE}/${chatId}`, owner)).share_id).toBeNull();
    const all = (await eventsNamed(db, 'chat.unshared')).filter((e) => e.subject.type === 'user');
    expect(all.map((e) => e.data)).toEqual([{ count: 1, chat_ids: [chatId] }]);
  });
});

describe('cloning one’s own chat', () => {
  it('copies the document with originalChatId and branchPointMessageId, "Clone of …" or the given title', async () => {
    const doc = conversation('Recipes');
    const source = await newChat(owner, doc);
    ok200(await call(`${BASE}/${source.id}/tags`, owner, 'POST', { name: 'Food' }));
    ok200(await call(`${BASE}/${source.id}/pin`, owner, 'POST'));
    const clone = ok200(await call(`${BASE}/${source.id}/clone`, owner, 'POST', {}));
    expect(clone).toMatchObject({ user_id: owner.id, title: 'Clone of Recipes', pinned: true, meta: { tags: ['food'] }, share_id: null });
    expect(clone.chat).toEqual({ ...doc, title: 'Clone of Recipes', originalChatId: source.id, branchPointMessageId: doc.history.currentId });
    expect(await messageRows(clone.id)).toEqual(Object.keys(doc.history.messages).sort());
    const named = ok200(await call(`${BASE}/${source.id}/clone`, owner, 'POST', { title: 'My copy' }));
    expect(named.title).toBe('My copy');
    expect(named.chat.title).toBe('My copy');
    expect(await call(`${BASE}/${source.id}/clone`, stranger, 'POST', {})).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    expect((await call(`${BASE}/${source.id}/clone`, owner, 'POST', { title: 5 })).status).toBe(422);
    const cloned = (await eventsNamed(db, 'chat.cloned')).filter((e) => e.data.original_chat_id === source.id);
    expect(cloned.map((e) => e.subject.id).sort()).toEqual([clone.id, named.id].sort());
  });
});

describe('export and import', () => {
  it('GET /all streams the caller’s chats as NDJSON; importing them restores the chats with their history', async () => {
    const docs = [conversation('Export one'), conversation('Export two')];
    for (const d of docs) await newChat(importer, d);
    const archived = await newChat(importer, conversation('Export archived'));
    ok200(await call(`${BASE}/${archived.id}/archive`, importer, 'POST'));

    const r = await fetch(`${edge.chatUrl}${BASE}/all`, { headers: { authorization: `Bearer ${importer.token}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const text = await r.text();
    expect(text.endsWith('\n')).toBe(true);
    const exported = text.trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(exported.map((c) => c.title).sort()).toEqual(['Export archived', 'Export one', 'Export two']);
    expect(exported.every((c) => c.user_id === importer.id)).toBe(true);
    expect(exported.find((c) => c.title === 'Export archived').archived).toBe(true);

    // Start over: the account's chats gone, then the export brought back.
    ok200(await call(`${BASE}/`, importer, 'DELETE'));
    expect(ok200(await call(`${BASE}/?include_folders=true&include_pinned=true`, importer))).toEqual([]);
    const imported = ok200(await call(`${BASE}/import`, importer, 'POST', { chats: exported }));
    expect(imported).toHaveLength(3);
    for (const [i, c] of imported.entries()) {
      const src = exported[i];
      expect(c.id).not.toBe(src.id);
      expect(c).toMatchObject({ user_id: importer.id, title: src.title, archived: src.archived, created_at: src.created_at, updated_at: src.updated_at });
      expect(c.chat).toEqual(src.chat);
      expect(await messageRows(c.id)).toEqual(Object.keys(src.chat.history.messages).sort());
    }
    const got = ok200(await call(`${BASE}/${imported[0].id}`, importer));
    expect(got.chat.history).toEqual(exported[0].chat.history);
    expect(ok200(await call(`${BASE}/all/archived`, importer)).map((c: any) => c.title)).toEqual(['Export archived']);

    const events = (await eventsNamed(db, 'chat.imported')).filter((e) => e.actor.id === importer.id);
    expect(events).toHaveLength(1);
    expect(events[0].subject).toEqual({ type: 'chat.import', id: null });
    expect(events[0].data).toEqual({ count: 3, chat_ids: imported.map((c: any) => c.id) });
  });

  it('POST /import is its own route (not the chat update), with its form’s 422', async () => {
    expect(await call(`${BASE}/import`, importer, 'POST', { chats: [] })).toEqual({ status: 200, body: [] });
    const bad = await call(`${BASE}/import`, importer, 'POST', { chat: {} });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'chats'] });
    expect((await call(`${BASE}/import`, importer, 'POST', { chats: [{ chat: { title: 7 } }] })).status).toBe(400);
    // A folder the importer cannot write to is dropped, not stored.
    const folder = ok200(await call('/api/v1/folders/', owner, 'POST', { name: `Private ${randomUUID().slice(0, 6)}` }));
    const [c] = ok200(await call(`${BASE}/import`, importer, 'POST', { chats: [{ chat: { title: 'Foldered' }, folder_id: folder.id }] }));
    expect(c.folder_id).toBeNull();
  });
});

describe('admin routes', () => {
  it('GET /all/db and /list/user/{id} answer an admin, and refuse a user', async () => {
    const all = ok200(await call(`${BASE}/all/db`, admin));
    const counted = (await db<{ n: number }[]>`select count(*)::int as n from chat`)[0]!.n;
    expect(all).toHaveLength(counted);
    expect(all.some((c: any) => c.user_id === owner.id)).toBe(true);
    const list = ok200(await call(`${BASE}/list/user/${importer.id}`, admin));
    expect(list.map((c: any) => c.title).sort()).toEqual(['Export archived', 'Export one', 'Export two', 'Foldered'].sort());
    expect(ok200(await call(`${BASE}/list/user/${importer.id}?query=archived`, admin)).map((c: any) => c.title)).toEqual(['Export archived']);
    expect(await call(`${BASE}/all/db`, owner)).toEqual(unauthorized(PROHIBITED));
    expect(await call(`${BASE}/list/user/${importer.id}`, owner)).toEqual(unauthorized(PROHIBITED));
  });

  it('with ENABLE_ADMIN_EXPORT and ENABLE_ADMIN_CHAT_ACCESS false, an admin gets 401 and reads no share without a grant', async () => {
    const chat = await newChat(owner, conversation('Private share'));
    const sid = ok200(await call(`${BASE}/${chat.id}/share`, owner, 'POST')).share_id;
    expect((await call(`${BASE}/share/${sid}`, admin)).status).toBe(200);
    // An admin may open any chat by its own id in place of a share id.
    expect(ok200(await call(`${BASE}/share/${chat.id}`, admin)).id).toBe(chat.id);

    await worker.stop();
    worker = await stack.startChatWorker({ ENABLE_LOCAL_WEB_FETCH: 'true', ENABLE_ADMIN_EXPORT: 'false', ENABLE_ADMIN_CHAT_ACCESS: 'false' }, { ingest: false });
    expect(await call(`${BASE}/all/db`, admin)).toEqual(unauthorized(PROHIBITED));
    expect(await call(`${BASE}/list/user/${importer.id}`, admin)).toEqual(unauthorized(PROHIBITED));
    expect(await call(`${BASE}/share/${sid}`, admin)).toEqual(unauthorized(PROHIBITED));
    expect(await call(`${BASE}/share/${chat.id}`, admin)).toEqual(unauthorized(NOT_FOUND));
    expect(await call(`${BASE}/shared/${chat.id}/access`, admin)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    // The owner still reads their own share.
    expect((await call(`${BASE}/share/${sid}`, owner)).status).toBe(200);
  });
});

describe('events at a webhook', () => {
  it('chat.shared, chat.unshared, chat.cloned and chat.imported reach a webhook subscribed to them', async () => {
    await receiver.until(() => EVENTS.every((name) => receiver.events(name).length > 0), 'the four chat events');
    const shared = receiver.events('chat.shared')[0];
    expect(shared).toMatchObject({ resource: 'chat', operation: 'shared', subject: { type: 'chat' }, data: { share_id: expect.any(String) }, actor: { type: 'user' } });
    expect(receiver.events('chat.imported')[0]).toMatchObject({ subject: { type: 'chat.import', id: null }, data: { count: 3 } });
    expect(receiver.events('chat.cloned')[0].data.original_chat_id).toEqual(expect.any(String));
    expect(receiver.events('chat.unshared').map((e) => e.data)).toContainEqual(expect.objectContaining({ share_id: expect.any(String) }));
    // Only the subscribed events were delivered.
    expect(receiver.events().every((e) => EVENTS.includes(e.event))).toBe(true);
  });
});
