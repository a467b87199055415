import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { Outbox } from '../../services/chat-worker/src/events/outbox.ts';
import { saveContextSummary, threadTo, upsertMessage } from '../../services/chat-worker/src/chats/chats.store.ts';
import type { UserRow } from '../../services/chat-worker/src/context.ts';
import { chatClient, chatDb, eventsAbout, NOT_FOUND, PROHIBITED, type Account, type Res } from './chat-fixture.ts';

/**
 * Chats on the chat face (Open WebUI 0.10.2 /api/v1/chats) over real HTTP: CRUD, paging, pin and
 * archive, moving into folders (own, shared for write, shared read-only → refused), chats in shared
 * folders (readers read with `readonly`, writers update, nobody else learns they exist), delete-all,
 * messages mirrored into chat_message with their parent links, the compaction config (admin) and
 * manual compaction; then the chats.store.ts functions completions use, on the worker's own schema.
 */
const stack = new Stack();
let edge: Edge;
const schema = `chat_${stack.ns}`;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const nf = { status: 404, body: { detail: NOT_FOUND } };
const CHAT_KEYS = ['archived', 'chat', 'created_at', 'folder_id', 'id', 'meta', 'pinned', 'share_id', 'title', 'updated_at', 'user_id'];

let admin: Account, owner: Account, reader: Account, writer: Account, stranger: Account;

const ok200 = (r: Res) => {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
const newChat = async (who: Account, chat: Record<string, unknown>, folder_id?: string) =>
  ok200(await call('/api/v1/chats/new', who, 'POST', { chat, ...(folder_id ? { folder_id } : {}) }));
const mkdir = async (who: Account, name: string) => ok200(await call('/api/v1/folders/', who, 'POST', { name }));
const rowsOf = async (chatId: string) =>
  db<{ id: string; user_id: string; role: string; parent_id: string | null; content: string; model_id: string | null; reasoning: string | null; usage: any; done: boolean; context_summary: string | null; created_at: number }[]>`
    select id, user_id, role, parent_id, content, model_id, reasoning, usage, done, context_summary, created_at
    from chat_message where chat_id = ${chatId} order by created_at, id`;

/** A branching conversation in Open WebUI's history shape: u1 → (a1 → u2 → a2 | a1b). */
function conversation() {
  const [u1, a1, a1b, u2, a2] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  const t = Math.floor(Date.now() / 1000) - 100;
  const messages = {
    [u1]: { id: u1, parentId: null, childrenIds: [a1, a1b], role: 'user', content: 'Hello', timestamp: t, models: ['fake-echo'] },
    [a1]: { id: a1, parentId: u1, childrenIds: [u2], role: 'assistant', content: 'Hi!', model: 'fake-echo', done: true, timestamp: t + 1 },
    [a1b]: { id: a1b, parentId: u1, childrenIds: [], role: 'assistant', content: 'Hey', model: 'other-model', done: true, timestamp: t + 2 },
    [u2]: {
      id: u2, parentId: a1, childrenIds: [a2], role: 'user', timestamp: (t + 3) * 1000,
      content: [{ type: 'text', text: 'And this picture?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }],
    },
    [a2]: {
      id: a2, parentId: u2, childrenIds: [], role: 'assistant', content: 'A cat.', model: 'fake-echo', done: true, timestamp: t + 4,
      reasoning_content: 'looks feline', usage: { prompt_tokens: 12, completion_tokens: 3 },
    },
  };
  return { ids: { u1, a1, a1b, u2, a2 }, chat: { title: 'Cats', models: ['fake-echo'], history: { messages, currentId: a2 } } };
}

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  owner = await addUser(admin, 'Owner');
  reader = await addUser(admin, 'Reader');
  writer = await addUser(admin, 'Writer');
  stranger = await addUser(admin, 'Stranger');
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

describe('chat CRUD and messages', () => {
  it('creates a chat from a history and mirrors every message into chat_message with its parent link', async () => {
    const { ids, chat } = conversation();
    const created = await newChat(owner, chat);
    expect(Object.keys(created).sort()).toEqual(CHAT_KEYS);
    expect(created).toMatchObject({ user_id: owner.id, title: 'Cats', folder_id: null, pinned: false, archived: false, share_id: null, meta: {}, chat });
    const rows = await rowsOf(created.id);
    expect(rows.map((r) => r.id).sort()).toEqual(Object.values(ids).sort());
    const by = Object.fromEntries(rows.map((r) => [r.id, r]));
    expect(by[ids.u1]).toMatchObject({ role: 'user', parent_id: null, content: 'Hello', model_id: null, user_id: owner.id, done: true });
    expect(by[ids.a1]).toMatchObject({ role: 'assistant', parent_id: ids.u1, content: 'Hi!', model_id: 'fake-echo' });
    expect(by[ids.a1b]).toMatchObject({ parent_id: ids.u1, model_id: 'other-model' });
    // Content blocks keep their text; a millisecond timestamp is stored in seconds.
    expect(by[ids.u2]).toMatchObject({ parent_id: ids.a1, content: 'And this picture?', created_at: chat.history.messages[ids.u2]!.timestamp / 1000 });
    expect(by[ids.a2]).toMatchObject({ parent_id: ids.u2, reasoning: 'looks feline', usage: { prompt_tokens: 12, completion_tokens: 3 } });
    // The JSON is returned exactly as stored, with readonly for the owner false.
    expect(await call(`/api/v1/chats/${created.id}`, owner)).toEqual({ status: 200, body: { ...created, readonly: false } });
  });

  it('updates by merging the chat JSON key by key; a new history re-syncs the rows (added and removed messages)', async () => {
    const { ids, chat } = conversation();
    const created = await newChat(owner, chat);
    await new Promise((r) => setTimeout(r, 1100));
    // Title only: the history stays, the rows are untouched.
    const renamed = ok200(await call(`/api/v1/chats/${created.id}`, owner, 'POST', { chat: { title: 'Felines', tags: ['x'] } }));
    expect(renamed).toMatchObject({ id: created.id, title: 'Felines', chat: { title: 'Felines', tags: ['x'], models: ['fake-echo'], history: chat.history } });
    expect(renamed.updated_at).toBeGreaterThan(created.updated_at);
    expect(renamed.created_at).toBe(created.created_at);
    // New history: a3 follows a2, the a1b branch is gone.
    const messages: Record<string, any> = structuredClone(chat.history.messages);
    const a3 = randomUUID();
    delete messages[ids.a1b];
    messages[ids.u1].childrenIds = [ids.a1];
    messages[ids.a2].childrenIds = [a3];
    messages[a3] = { id: a3, parentId: ids.a2, childrenIds: [], role: 'assistant', content: 'Still a cat.', model: 'fake-echo', done: false };
    const updated = ok200(await call(`/api/v1/chats/${created.id}`, owner, 'POST', { chat: { history: { messages, currentId: a3 } } }));
    expect(updated.chat).toMatchObject({ title: 'Felines', tags: ['x'], history: { currentId: a3 } });
    const rows = await rowsOf(created.id);
    expect(rows.map((r) => r.id).sort()).toEqual([ids.u1, ids.a1, ids.u2, ids.a2, a3].sort());
    expect(rows.find((r) => r.id === a3)).toMatchObject({ parent_id: ids.a2, content: 'Still a cat.', done: false });
    // Without a title in the merged JSON the chat is "New Chat", as Open WebUI.
    const untitled = await newChat(owner, { models: ['m'] });
    expect(ok200(await call(`/api/v1/chats/${untitled.id}`, owner, 'POST', { chat: { models: ['n'] } })).title).toBe('New Chat');
    const ev = (await eventsAbout(db, created.id)).map((e) => e.event);
    expect(ev).toEqual(['chat.created', 'chat.updated', 'chat.updated']);
  });

  it('deletes one chat (its messages go with it); strangers and unknown ids get 404', async () => {
    const { chat } = conversation();
    const c = await newChat(owner, chat);
    expect(await call(`/api/v1/chats/${c.id}`, stranger, 'DELETE')).toEqual(nf);
    expect(await call(`/api/v1/chats/${c.id}`, owner, 'DELETE')).toEqual({ status: 200, body: true });
    expect(await call(`/api/v1/chats/${c.id}`, owner)).toEqual(nf);
    expect(await call(`/api/v1/chats/${c.id}`, owner, 'DELETE')).toEqual(nf);
    expect(await rowsOf(c.id)).toEqual([]);
    const [deleted] = (await eventsAbout(db, c.id)).filter((e) => e.event === 'chat.deleted');
    expect(deleted).toMatchObject({ actor: { id: owner.id }, subject: { type: 'chat', id: c.id }, data: { owner_id: owner.id } });
    // Admins may delete anyone's chat (Open WebUI).
    const s = await newChat(stranger, { title: 'mine' });
    expect(await call(`/api/v1/chats/${s.id}`, admin, 'DELETE')).toEqual({ status: 200, body: true });
    expect(await call(`/api/v1/chats/${s.id}`, stranger)).toEqual(nf);
  });

  it('refuses bad input with FastAPI-shaped 422s and clear 400s, never a 500', async () => {
    const c = await newChat(owner, { title: 'input' });
    for (const body of [{}, { chat: 'text' }, { chat: { title: 7 } }, { chat: [] }]) {
      const r = await call(`/api/v1/chats/${c.id}`, owner, 'POST', body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(Array.isArray(r.body.detail)).toBe(true);
      expect(r.body.detail[0].loc[0]).toBe('body');
    }
    const badJson = await call(`/api/v1/chats/${c.id}`, owner, 'POST', '{"chat":');
    expect(badJson.status).toBe(422);
    expect((await call(`/api/v1/chats/${c.id}/folder`, owner, 'POST', { folder_id: 5 })).body.detail[0]).toMatchObject({ loc: ['body', 'folder_id'], type: 'string_type' });
    for (const q of ['page=abc', 'page=0', 'include_pinned=maybe']) {
      const r = await call(`/api/v1/chats/?${q}`, owner);
      expect(r.status, q).toBe(422);
      expect(r.body.detail[0].loc[0]).toBe('query');
    }
    expect(await call('/api/v1/chats/archived?order_by=password&direction=asc', owner)).toEqual({ status: 400, body: { detail: '[ERROR: Invalid order_by field]' } });
    expect(await call('/api/v1/chats/archived?order_by=title&direction=up', owner)).toEqual({ status: 400, body: { detail: '[ERROR: Invalid direction for ordering]' } });
    // Messages that are not messages (no role) are kept in the JSON and skipped as rows.
    const odd = await newChat(owner, { history: { messages: { x: { id: 'x', content: 'no role' }, y: 'text' }, currentId: 'x' } });
    expect(await rowsOf(odd.id)).toEqual([]);
    expect(odd.chat.history.messages.y).toBe('text');
  });
});

describe('lists and paging', () => {
  let pager: Account;
  const made: { id: string; title: string; updated_at: number; created_at: number }[] = [];

  beforeAll(async () => {
    pager = await addUser(admin, 'Pager');
    for (let i = 0; i < 65; i++) {
      const c = await newChat(pager, { title: `chat ${String(i).padStart(2, '0')}` });
      made.push({ id: c.id, title: c.title, updated_at: c.updated_at, created_at: c.created_at });
    }
  });

  it('lists ChatTitleIdResponse items, newest first, 60 per page when paged', async () => {
    const expected = [...made].sort((a, b) => b.updated_at - a.updated_at || (a.id < b.id ? -1 : 1));
    const all = ok200(await call('/api/v1/chats/', pager));
    expect(all).toEqual(expected);
    expect(ok200(await call('/api/v1/chats', pager))).toEqual(expected);
    expect(ok200(await call('/api/v1/chats/list', pager))).toEqual(expected);
    const p1 = ok200(await call('/api/v1/chats/?page=1', pager));
    const p2 = ok200(await call('/api/v1/chats/?page=2', pager));
    expect(p1).toEqual(expected.slice(0, 60));
    expect(p2).toEqual(expected.slice(60));
    expect(ok200(await call('/api/v1/chats/list?page=3', pager))).toEqual([]);
    const byTitle = ok200(await call('/api/v1/chats/?sort_by=title&sort_dir=asc', pager));
    expect(byTitle.map((c: any) => c.title)).toEqual(made.map((c) => c.title));
    // Strictly per user.
    expect(ok200(await call('/api/v1/chats/', stranger)).some((c: any) => made.some((m) => m.id === c.id))).toBe(false);
  });

  it('pins and unpins (own chats only); pinned chats leave the list unless include_pinned', async () => {
    const target = made[10]!;
    const pinned = ok200(await call(`/api/v1/chats/${target.id}/pin`, pager, 'POST'));
    expect(pinned).toMatchObject({ id: target.id, pinned: true });
    expect(Object.keys(pinned).sort()).toEqual(CHAT_KEYS);
    expect(await call(`/api/v1/chats/${target.id}/pinned`, pager)).toEqual({ status: 200, body: true });
    expect(ok200(await call('/api/v1/chats/pinned', pager))).toEqual([{ id: target.id, title: target.title, updated_at: pinned.updated_at, created_at: target.created_at }]);
    expect(ok200(await call('/api/v1/chats/', pager)).some((c: any) => c.id === target.id)).toBe(false);
    expect(ok200(await call('/api/v1/chats/?include_pinned=true', pager)).some((c: any) => c.id === target.id)).toBe(true);
    for (const path of [`/api/v1/chats/${target.id}/pin`, `/api/v1/chats/${target.id}/archive`]) expect(await call(path, stranger, 'POST')).toEqual(nf);
    expect(await call(`/api/v1/chats/${target.id}/pinned`, stranger)).toEqual(nf);
    expect(ok200(await call(`/api/v1/chats/${target.id}/pin`, pager, 'POST')).pinned).toBe(false);
    expect(ok200(await call('/api/v1/chats/pinned', pager))).toEqual([]);
    const ev = (await eventsAbout(db, target.id)).map((e) => [e.event, e.data]);
    expect(ev).toEqual([['chat.created', { title: target.title, folder_id: null }], ['chat.pinned', { pinned: true }], ['chat.unpinned', { pinned: false }]]);
  });

  it('archives and unarchives; archived chats have their own lists; archive/all and unarchive/all', async () => {
    const [a, b] = [made[20]!, made[21]!];
    ok200(await call(`/api/v1/chats/${b.id}/pin`, pager, 'POST'));
    expect(ok200(await call(`/api/v1/chats/${a.id}/archive`, pager, 'POST'))).toMatchObject({ id: a.id, archived: true });
    expect(ok200(await call(`/api/v1/chats/${b.id}/archive`, pager, 'POST'))).toMatchObject({ id: b.id, archived: true, pinned: true });
    const listed = ok200(await call('/api/v1/chats/?include_pinned=true', pager)).map((c: any) => c.id);
    expect(listed).not.toContain(a.id);
    expect(listed).not.toContain(b.id);
    expect(ok200(await call('/api/v1/chats/pinned', pager))).toEqual([]);
    const archived = ok200(await call('/api/v1/chats/archived', pager));
    expect(archived.map((c: any) => c.id).sort()).toEqual([a.id, b.id].sort());
    expect(Object.keys(archived[0]).sort()).toEqual(['created_at', 'id', 'title', 'updated_at']);
    expect(ok200(await call(`/api/v1/chats/archived?query=${encodeURIComponent('chat 21')}`, pager)).map((c: any) => c.id)).toEqual([b.id]);
    expect(ok200(await call('/api/v1/chats/archived?query=%25', pager))).toEqual([]);
    expect(ok200(await call('/api/v1/chats/archived?order_by=title&direction=desc', pager)).map((c: any) => c.title)).toEqual([b.title, a.title]);
    const full = ok200(await call('/api/v1/chats/all/archived', pager));
    expect(full.map((c: any) => Object.keys(c).sort())).toEqual([CHAT_KEYS, CHAT_KEYS]);
    expect(ok200(await call(`/api/v1/chats/${a.id}/archive`, pager, 'POST')).archived).toBe(false);
    expect(ok200(await call('/api/v1/chats/archived', pager)).map((c: any) => c.id)).toEqual([b.id]);
    expect((await eventsAbout(db, a.id)).map((e) => e.event)).toEqual(['chat.created', 'chat.archived', 'chat.unarchived']);

    expect(await call('/api/v1/chats/archive/all', pager, 'POST')).toEqual({ status: 200, body: true });
    expect(ok200(await call('/api/v1/chats/', pager))).toEqual([]);
    expect(ok200(await call('/api/v1/chats/archived?page=2', pager))).toHaveLength(5);
    expect(await call('/api/v1/chats/unarchive/all', pager, 'POST')).toEqual({ status: 200, body: true });
    expect(ok200(await call('/api/v1/chats/archived', pager))).toEqual([]);
    const batch = (await eventsAbout(db, pager.id)).filter((e) => e.resource === 'chat').map((e) => [e.event, e.data.count]);
    expect(batch).toEqual([['chat.archived', 64], ['chat.unarchived', 65]]);
  });

  it('deletes all of my chats (archived ones too) and nobody else\'s', async () => {
    const keep = await newChat(stranger, { title: 'stays' });
    ok200(await call(`/api/v1/chats/${made[0]!.id}/archive`, pager, 'POST'));
    expect(await call('/api/v1/chats/', pager, 'DELETE')).toEqual({ status: 200, body: true });
    expect(ok200(await call('/api/v1/chats/', pager))).toEqual([]);
    expect(ok200(await call('/api/v1/chats/archived', pager))).toEqual([]);
    const [n] = await db<{ n: number }[]>`select count(*)::int as n from chat where user_id = ${pager.id}`;
    expect(n!.n).toBe(0);
    expect(ok200(await call(`/api/v1/chats/${keep.id}`, stranger)).title).toBe('stays');
    const [ev] = (await eventsAbout(db, pager.id)).filter((e) => e.event === 'chat.deleted_all');
    expect(ev).toMatchObject({ actor: { id: pager.id }, subject: { type: 'user', id: pager.id }, data: { count: 65 } });
  });
});

describe('folders and sharing', () => {
  let mine: any, shared: any, sub: any, readOnly: any, strangers: any;

  beforeAll(async () => {
    mine = await mkdir(owner, `Mine ${stack.ns}`);
    shared = await mkdir(owner, `Team ${stack.ns}`);
    sub = ok200(await call('/api/v1/folders/', owner, 'POST', { name: 'Sub', parent_id: shared.id }));
    ok200(await call(`/api/v1/folders/${shared.id}/access/update`, owner, 'POST', {
      access_grants: [
        { principal_type: 'user', principal_id: reader.id, permission: 'read' },
        { principal_type: 'user', principal_id: writer.id, permission: 'read' },
        { principal_type: 'user', principal_id: writer.id, permission: 'write' },
      ],
    }));
    readOnly = await mkdir(stranger, `Look only ${stack.ns}`);
    ok200(await call(`/api/v1/folders/${readOnly.id}/access/update`, stranger, 'POST', { access_grants: [{ principal_type: 'user', principal_id: writer.id, permission: 'read' }] }));
    strangers = await mkdir(stranger, `Private ${stack.ns}`);
  });

  it('moves my chat into my folder (unpinning it), lists folder chats with sub-folders, and back out', async () => {
    const c = await newChat(owner, { title: 'to file' });
    ok200(await call(`/api/v1/chats/${c.id}/pin`, owner, 'POST'));
    const moved = ok200(await call(`/api/v1/chats/${c.id}/folder`, owner, 'POST', { folder_id: mine.id }));
    expect(moved).toMatchObject({ id: c.id, folder_id: mine.id, pinned: false });
    expect(ok200(await call('/api/v1/chats/', owner)).some((x: any) => x.id === c.id)).toBe(false);
    expect(ok200(await call('/api/v1/chats/?include_folders=true', owner)).some((x: any) => x.id === c.id)).toBe(true);
    const inFolder = ok200(await call(`/api/v1/chats/folder/${mine.id}`, owner));
    expect(inFolder).toEqual([moved]);
    const deep = await newChat(owner, { title: 'deep' }, sub.id);
    expect(ok200(await call(`/api/v1/chats/folder/${shared.id}`, owner)).map((x: any) => x.id)).toEqual([deep.id]);
    // Out again: an absent folder_id means null.
    expect(ok200(await call(`/api/v1/chats/${c.id}/folder`, owner, 'POST', {})).folder_id).toBeNull();
    expect(ok200(await call(`/api/v1/chats/folder/${mine.id}`, owner))).toEqual([]);
    expect((await eventsAbout(db, c.id)).filter((e) => e.event === 'chat.folder_updated').map((e) => e.data)).toEqual([{ folder_id: mine.id }, { folder_id: null }]);
    // Someone else's folder listing: 404 unless they can read it.
    expect(await call(`/api/v1/chats/folder/${mine.id}`, stranger)).toEqual(nf);
    expect(await call('/api/v1/chats/folder/no-such-folder', owner)).toEqual(nf);
  });

  it('moves into a folder shared for write, never into a read-only share or a stranger\'s folder', async () => {
    const c = await newChat(writer, { title: 'writer notes' });
    expect(await call(`/api/v1/chats/${c.id}/folder`, writer, 'POST', { folder_id: readOnly.id })).toEqual(nf);
    expect(await call(`/api/v1/chats/${c.id}/folder`, writer, 'POST', { folder_id: strangers.id })).toEqual(nf);
    expect(await call(`/api/v1/chats/${c.id}/folder`, writer, 'POST', { folder_id: 'no-such-folder' })).toEqual(nf);
    expect(ok200(await call(`/api/v1/chats/${c.id}`, writer)).folder_id).toBeNull();
    expect(ok200(await call(`/api/v1/chats/${c.id}/folder`, writer, 'POST', { folder_id: sub.id })).folder_id).toBe(sub.id);
    // The folder's owner sees it, read-only (it is the writer's chat).
    expect(ok200(await call(`/api/v1/chats/${c.id}`, owner))).toMatchObject({ id: c.id, readonly: true });
    // Only a chat's owner moves it.
    expect(await call(`/api/v1/chats/${c.id}/folder`, owner, 'POST', { folder_id: null })).toEqual(nf);
    const s = await newChat(stranger, { title: 'x' });
    expect(await call(`/api/v1/chats/${s.id}/folder`, writer, 'POST', { folder_id: sub.id })).toEqual(nf);
  });

  it('readers read shared chats read-only (never a 401), writers update them, nobody else sees anything', async () => {
    const { ids, chat } = conversation();
    const c = await newChat(owner, chat, shared.id);
    const asReader = await call(`/api/v1/chats/${c.id}`, reader);
    expect(asReader.status).toBe(200);
    expect(asReader.body).toEqual({ ...c, readonly: true });
    expect(ok200(await call(`/api/v1/chats/${c.id}`, writer)).readonly).toBe(true);
    // Readers cannot change it; the refusal is a 404 (not 401: that would sign them out).
    for (const [path, method, body] of [
      [`/api/v1/chats/${c.id}`, 'POST', { chat: { title: 'hijack' } }],
      [`/api/v1/chats/${c.id}`, 'DELETE', undefined],
      [`/api/v1/chats/${c.id}/pin`, 'POST', undefined],
      [`/api/v1/chats/${c.id}/archive`, 'POST', undefined],
      [`/api/v1/chats/${c.id}/compact`, 'POST', {}],
    ] as const) {
      expect(await call(path, reader, method, body), `${method} ${path}`).toEqual(nf);
    }
    // A writer adds a message: the chat JSON and the rows follow; the row is the writer's.
    const messages: Record<string, any> = structuredClone(chat.history.messages);
    const u3 = randomUUID();
    messages[ids.a2].childrenIds = [u3];
    messages[u3] = { id: u3, parentId: ids.a2, childrenIds: [], role: 'user', content: 'from the writer', timestamp: Math.floor(Date.now() / 1000) };
    const updated = ok200(await call(`/api/v1/chats/${c.id}`, writer, 'POST', { chat: { history: { messages, currentId: u3 } } }));
    expect(updated).toMatchObject({ id: c.id, user_id: owner.id, folder_id: shared.id, title: 'Cats' });
    const rows = await rowsOf(c.id);
    expect(rows.find((r) => r.id === u3)).toMatchObject({ user_id: writer.id, parent_id: ids.a2, content: 'from the writer' });
    expect(rows.find((r) => r.id === ids.u1)!.user_id).toBe(owner.id);
    expect((await eventsAbout(db, c.id)).at(-1)).toMatchObject({ event: 'chat.updated', actor: { id: writer.id } });
    // The owner's own list still has it in the folder; others' lists never show it.
    expect(ok200(await call(`/api/v1/chats/folder/${shared.id}`, owner)).map((x: any) => x.id)).toContain(c.id);
    expect(ok200(await call(`/api/v1/chats/folder/${shared.id}`, reader))).toEqual([]);
    // A stranger learns nothing, whatever they try; the same for ids that never existed.
    for (const id of [c.id, 'no-such-chat']) {
      expect(await call(`/api/v1/chats/${id}`, stranger)).toEqual(nf);
      expect(await call(`/api/v1/chats/${id}`, stranger, 'POST', { chat: { title: 'x' } })).toEqual(nf);
      expect(await call(`/api/v1/chats/${id}`, stranger, 'DELETE')).toEqual(nf);
      expect(await call(`/api/v1/chats/${id}/pinned`, stranger)).toEqual(nf);
      expect(await call(`/api/v1/chats/${id}/folder`, stranger, 'POST', { folder_id: null })).toEqual(nf);
      expect(await call(`/api/v1/chats/${id}/compact`, stranger, 'POST')).toEqual(nf);
    }
    // When the chat leaves the shared folder, the grantees lose it.
    ok200(await call(`/api/v1/chats/${c.id}/folder`, owner, 'POST', { folder_id: null }));
    expect(await call(`/api/v1/chats/${c.id}`, reader)).toEqual(nf);
    expect(await call(`/api/v1/chats/${c.id}`, writer, 'POST', { chat: { title: 'late' } })).toEqual(nf);
    // Admins read anything, read-only, and may not edit others' chats.
    expect(ok200(await call(`/api/v1/chats/${c.id}`, admin)).readonly).toBe(true);
    expect(await call(`/api/v1/chats/${c.id}`, admin, 'POST', { chat: { title: 'admin edit' } })).toEqual(nf);
    expect(await call(`/api/v1/chats/${c.id}`, undefined)).toMatchObject({ status: 401 });
  });
});

describe('compaction config and manual compaction', () => {
  it('is admin-only: GET answers the three keys, POST stores them (clamped) with a config.updated event', async () => {
    expect(await call('/api/v1/chats/config', admin)).toEqual({
      status: 200,
      body: { ENABLE_CONTEXT_COMPACTION: false, CONTEXT_COMPACTION_TOKEN_THRESHOLD: 80000, CONTEXT_COMPACTION_PROMPT_TEMPLATE: '' },
    });
    for (const [method, body] of [['GET', undefined], ['POST', { ENABLE_CONTEXT_COMPACTION: true, CONTEXT_COMPACTION_TOKEN_THRESHOLD: 5, CONTEXT_COMPACTION_PROMPT_TEMPLATE: '' }]] as const) {
      expect(await call('/api/v1/chats/config', owner, method, body)).toEqual({ status: 401, body: { detail: PROHIBITED } });
    }
    const bad = await call('/api/v1/chats/config', admin, 'POST', { ENABLE_CONTEXT_COMPACTION: 'yes', CONTEXT_COMPACTION_TOKEN_THRESHOLD: 1.5 });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: any) => d.loc.at(-1)).sort()).toEqual(['CONTEXT_COMPACTION_PROMPT_TEMPLATE', 'CONTEXT_COMPACTION_TOKEN_THRESHOLD', 'ENABLE_CONTEXT_COMPACTION']);
    const template = 'Summarise:\n{{MESSAGES}}';
    const saved = { ENABLE_CONTEXT_COMPACTION: false, CONTEXT_COMPACTION_TOKEN_THRESHOLD: 1, CONTEXT_COMPACTION_PROMPT_TEMPLATE: template };
    expect(await call('/api/v1/chats/config', admin, 'POST', { ...saved, CONTEXT_COMPACTION_TOKEN_THRESHOLD: 0 })).toEqual({ status: 200, body: saved });
    expect(await call('/api/v1/chats/config', admin)).toEqual({ status: 200, body: saved });
    const [ev] = (await eventsAbout(db, 'chat')).filter((e) => e.event === 'config.updated');
    expect(ev).toMatchObject({ actor: { id: admin.id }, subject: { type: 'config', id: 'chat' } });
    expect(ev.data.keys.sort()).toEqual(Object.keys(saved).sort());
    // The admin config route does not leak these keys (they have their own route).
    expect(ok200(await call('/api/v1/auths/admin/config', admin))).not.toHaveProperty('ENABLE_CONTEXT_COMPACTION');
  });

  it('compacts only the owner\'s chat: 404 others, 409 while a reply is generating, 400 without a model, "disabled" when off', async () => {
    const { ids, chat } = conversation();
    const c = await newChat(owner, chat);
    expect(await call(`/api/v1/chats/${c.id}/compact`, writer, 'POST')).toEqual(nf);
    // Off (the config above left it off): nothing happens, with Open WebUI's reason. Body optional.
    for (const body of [undefined, {}, { model: 'fake-echo' }]) {
      const r = ok200(await call(`/api/v1/chats/${c.id}/compact`, owner, 'POST', body));
      expect(r).toMatchObject({ ok: true, compacted: false, reason: 'disabled' });
    }
    expect((await call(`/api/v1/chats/${c.id}/compact`, owner, 'POST', { model: 3 })).status).toBe(422);
    const empty = await newChat(owner, { title: 'no model' });
    expect(await call(`/api/v1/chats/${empty.id}/compact`, owner, 'POST')).toEqual({ status: 400, body: { detail: 'No model found for context compaction.' } });
    // A reply still streaming (assistant not done): wait for it.
    const messages: Record<string, any> = structuredClone(chat.history.messages);
    messages[ids.a2].done = false;
    ok200(await call(`/api/v1/chats/${c.id}`, owner, 'POST', { chat: { history: { messages, currentId: ids.a2 } } }));
    expect(await call(`/api/v1/chats/${c.id}/compact`, owner, 'POST')).toEqual({ status: 409, body: { detail: 'Wait for the current response to finish before compacting.' } });
  });
});

describe('chats.store (what completions call)', () => {
  const outbox = new Outbox('test-instance', `${schema}_outbox`);
  const userRow = async (id: string) => (await db<UserRow[]>`select * from "user" where id = ${id}`)[0]!;

  it('threadTo walks parent links from the root to the message, on any branch', async () => {
    const { ids, chat } = conversation();
    const c = await newChat(owner, chat);
    expect((await threadTo(db, c.id, ids.a2)).map((m) => m.id)).toEqual([ids.u1, ids.a1, ids.u2, ids.a2]);
    expect((await threadTo(db, c.id, ids.a1b)).map((m) => m.id)).toEqual([ids.u1, ids.a1b]);
    const [first] = await threadTo(db, c.id, ids.u1);
    expect(first).toMatchObject({ chat_id: c.id, role: 'user', content: 'Hello', parent_id: null, context_summary: null, done: true });
    expect(await threadTo(db, c.id, 'no-such-message')).toEqual([]);
    // A corrupt loop ends the walk instead of spinning.
    await db`update chat_message set parent_id = ${ids.a2} where chat_id = ${c.id} and id = ${ids.u1}`;
    expect((await threadTo(db, c.id, ids.a2)).map((m) => m.id)).toEqual([ids.u1, ids.a1, ids.u2, ids.a2]);
  });

  it('upsertMessage writes the row and the history (parent link, currentId), with message events; saveContextSummary checkpoints', async () => {
    const { ids, chat } = conversation();
    const c = await newChat(owner, chat);
    const actor = await userRow(owner.id);
    const events = { emit: outbox.emitChecked, user: actor };
    const u3 = randomUUID();
    const a3 = randomUUID();
    const first = await db.begin((tx) => upsertMessage(tx, c.id, owner.id, { id: u3, parentId: ids.a2, role: 'user', content: 'Next?' }, events));
    expect(first.created).toBe(true);
    expect(first.message).toMatchObject({ id: u3, parentId: ids.a2, childrenIds: [], role: 'user', content: 'Next?' });
    await db.begin((tx) => upsertMessage(tx, c.id, owner.id, { id: a3, parentId: u3, role: 'assistant', content: '', model: 'fake-echo', done: false }, events));
    const done = await db.begin((tx) =>
      upsertMessage(tx, c.id, owner.id, { id: a3, content: 'Answer.', reasoning_content: 'hmm', done: true, selectedModelId: 'member-a', usage: { total_tokens: 9 } }, events),
    );
    expect(done.created).toBe(false);
    expect(done.message).toMatchObject({ id: a3, parentId: u3, role: 'assistant', model: 'fake-echo', content: 'Answer.', done: true });

    const got = ok200(await call(`/api/v1/chats/${c.id}`, owner));
    expect(got.chat.history.currentId).toBe(a3);
    expect(got.chat.history.messages[ids.a2].childrenIds).toEqual([u3]);
    expect(got.chat.history.messages[u3].childrenIds).toEqual([a3]);
    expect(got.updated_at).toBeGreaterThanOrEqual(c.updated_at);
    const thread = await threadTo(db, c.id, a3);
    expect(thread.map((m) => m.id)).toEqual([ids.u1, ids.a1, ids.u2, ids.a2, u3, a3]);
    expect(thread.at(-1)).toMatchObject({ content: 'Answer.', reasoning: 'hmm', model_id: 'fake-echo', selected_model_id: 'member-a', usage: { total_tokens: 9 }, done: true, user_id: owner.id });
    expect((await eventsAbout(db, a3)).map((e) => [e.event, e.data.chat_id, e.actor.id])).toEqual([
      ['message.created', c.id, owner.id],
      ['message.updated', c.id, owner.id],
    ]);

    await db.begin((tx) => saveContextSummary(tx, c.id, u3, 'They talked about a cat.'));
    expect((await threadTo(db, c.id, a3)).find((m) => m.id === u3)!.context_summary).toBe('They talked about a cat.');
    expect(ok200(await call(`/api/v1/chats/${c.id}`, owner)).chat.history.messages[u3].contextSummary).toBe('They talked about a cat.');
    await expect(db.begin((tx) => saveContextSummary(tx, c.id, 'no-such-message', 'x'))).rejects.toMatchObject({ status: 404 });

    // Rolled back with its transaction: no row, no history entry, no event.
    const ghost = randomUUID();
    await expect(
      db.begin(async (tx) => {
        await upsertMessage(tx, c.id, owner.id, { id: ghost, parentId: a3, role: 'user', content: 'never' }, events);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(ok200(await call(`/api/v1/chats/${c.id}`, owner)).chat.history.messages[ghost]).toBeUndefined();
    expect(await threadTo(db, c.id, ghost)).toEqual([]);
    expect(await eventsAbout(db, ghost)).toEqual([]);
    await expect(db.begin((tx) => upsertMessage(tx, 'no-such-chat', owner.id, { id: 'x', role: 'user' }, events))).rejects.toMatchObject({ status: 404 });
  });
});
