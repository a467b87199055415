import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, type Account, type Res } from './chat-fixture.ts';

/**
 * Open WebUI's own router test for chats (backend/open_webui/test/apps/webui/routers/test_chats.py),
 * ported step for step with the same values, over HTTP against the real stack. Its setup inserts one
 * chat for user "2" before every test on a fresh database: here every test starts with the chat
 * table emptied and that chat created through `POST /new` by the same user. Its mock users "3"
 * and "4" are admins (they call admin routes), "2" a plain user. Where it read the database
 * directly (`Chats.get_chats()`, `get_chat_by_id`), the port asks the API (`GET /all/db` as the
 * admin, `GET /{id}`).
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const BASE = '/api/v1/chats';

let admin: Account, user2: Account;
let chatId: string;

const CHAT1 = { name: 'chat1', description: 'chat1 description', tags: ['tag1', 'tag2'], history: { currentId: '1', messages: [] } };

const ok200 = (r: Res) => {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
/** `self.chats.get_chats()`: every chat in the database, through the admin export. */
const allChats = async () => ok200(await call(`${BASE}/all/db`, admin)) as any[];

beforeAll(async () => {
  await stack.startChatWorker({}, { ingest: false });
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup('Admin');
  user2 = await addUser(admin, 'User Two');
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

beforeEach(async () => {
  // Upstream's fixture gives every test a fresh database with one chat of user "2".
  await db`delete from chat`;
  chatId = ok200(await call(`${BASE}/new`, user2, 'POST', { chat: CHAT1 })).id;
});

describe("Open WebUI's test_chats.py", () => {
  it('test_get_session_user_chat_list', async () => {
    const r = await call(`${BASE}/`, user2);
    expect(r.status).toBe(200);
    const first = r.body[0];
    expect(first.id).not.toBeNull();
    expect(first.title).toBe('New Chat');
    expect(first.created_at).not.toBeNull();
    expect(first.updated_at).not.toBeNull();
  });

  it('test_delete_all_user_chats', async () => {
    const r = await call(`${BASE}/`, user2, 'DELETE');
    expect(r.status).toBe(200);
    expect(await allChats()).toHaveLength(0);
  });

  it('test_get_user_chat_list_by_user_id', async () => {
    const r = await call(`${BASE}/list/user/${user2.id}`, admin);
    expect(r.status).toBe(200);
    const first = r.body[0];
    expect(first.id).not.toBeNull();
    expect(first.title).toBe('New Chat');
    expect(first.created_at).not.toBeNull();
    expect(first.updated_at).not.toBeNull();
  });

  it('test_create_new_chat', async () => {
    const r = await call(`${BASE}/new`, user2, 'POST', { chat: { name: 'chat2', description: 'chat2 description', tags: ['tag1', 'tag2'] } });
    expect(r.status).toBe(200);
    const data = r.body;
    expect(data.archived).toBe(false);
    expect(data.chat).toEqual({ name: 'chat2', description: 'chat2 description', tags: ['tag1', 'tag2'] });
    expect(data.user_id).toBe(user2.id);
    expect(data.id).not.toBeNull();
    expect(data.share_id).toBeNull();
    expect(data.title).toBe('New Chat');
    expect(data.updated_at).not.toBeNull();
    expect(data.created_at).not.toBeNull();
    expect(await allChats()).toHaveLength(2);
  });

  it('test_get_user_chats', async () => {
    // Upstream calls test_get_session_user_chat_list again.
    const first = ok200(await call(`${BASE}/`, user2))[0];
    expect(first.title).toBe('New Chat');
  });

  it('test_get_user_archived_chats', async () => {
    // Upstream archives through the model (archive_all_chats_by_user_id); here through its route.
    ok200(await call(`${BASE}/archive/all`, user2, 'POST'));
    const r = await call(`${BASE}/all/archived`, user2);
    expect(r.status).toBe(200);
    const first = r.body[0];
    expect(first.id).not.toBeNull();
    expect(first.title).toBe('New Chat');
    expect(first.created_at).not.toBeNull();
    expect(first.updated_at).not.toBeNull();
  });

  it('test_get_all_user_chats_in_db', async () => {
    const r = await call(`${BASE}/all/db`, admin);
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(1);
  });

  it('test_get_archived_session_user_chat_list', async () => {
    ok200(await call(`${BASE}/archive/all`, user2, 'POST'));
    const first = ok200(await call(`${BASE}/all/archived`, user2))[0];
    expect(first.title).toBe('New Chat');
  });

  it('test_archive_all_chats', async () => {
    const r = await call(`${BASE}/archive/all`, user2, 'POST');
    expect(r.status).toBe(200);
    expect(ok200(await call(`${BASE}/all/archived`, user2))).toHaveLength(1);
  });

  it('test_get_shared_chat_by_id', async () => {
    // Stale upstream: it sets share_id = chat id in the database and reads /share/{chat id}. In
    // 0.10.2 a share is made by POST /{id}/share, which snapshots the chat under a new share id;
    // /share/{share_id} answers the snapshot with that id as both `id` and `share_id`.
    const shareId = ok200(await call(`${BASE}/${chatId}/share`, user2, 'POST')).share_id;
    const r = await call(`${BASE}/share/${shareId}`, user2);
    expect(r.status).toBe(200);
    const data = r.body;
    expect(data.id).toBe(shareId);
    expect(data.chat).toEqual(CHAT1);
    expect(data.share_id).toBe(shareId);
    expect(data.title).toBe('New Chat');
  });

  it('test_get_chat_by_id', async () => {
    const r = await call(`${BASE}/${chatId}`, user2);
    expect(r.status).toBe(200);
    const data = r.body;
    expect(data.id).toBe(chatId);
    expect(data.chat).toEqual(CHAT1);
    expect(data.share_id).toBeNull();
    expect(data.title).toBe('New Chat');
    expect(data.user_id).toBe(user2.id);
  });

  it('test_update_chat_by_id', async () => {
    const r = await call(`${BASE}/${chatId}`, user2, 'POST', {
      chat: { name: 'chat2', description: 'chat2 description', tags: ['tag2', 'tag4'], title: 'Just another title' },
    });
    expect(r.status).toBe(200);
    const data = r.body;
    expect(data.id).toBe(chatId);
    expect(data.chat).toEqual({
      name: 'chat2',
      title: 'Just another title',
      description: 'chat2 description',
      tags: ['tag2', 'tag4'],
      history: { currentId: '1', messages: [] },
    });
    expect(data.share_id).toBeNull();
    expect(data.title).toBe('Just another title');
    expect(data.user_id).toBe(user2.id);
  });

  it('test_delete_chat_by_id', async () => {
    const r = await call(`${BASE}/${chatId}`, user2, 'DELETE');
    expect(r.status).toBe(200);
    expect(r.body).toBe(true);
  });

  it('test_clone_chat_by_id', async () => {
    // Stale upstream: it calls GET /{id}/clone; 0.10.2 routes clone as POST (body optional here).
    const r = await call(`${BASE}/${chatId}/clone`, user2, 'POST');
    expect(r.status).toBe(200);
    const data = r.body;
    expect(data.id).not.toBe(chatId);
    expect(data.chat).toEqual({
      branchPointMessageId: '1',
      description: 'chat1 description',
      history: { currentId: '1', messages: [] },
      name: 'chat1',
      originalChatId: chatId,
      tags: ['tag1', 'tag2'],
      title: 'Clone of New Chat',
    });
    expect(data.share_id).toBeNull();
    expect(data.title).toBe('Clone of New Chat');
    expect(data.user_id).toBe(user2.id);
  });

  it('test_archive_chat_by_id', async () => {
    // Stale upstream: it calls GET /{id}/archive; 0.10.2 routes archive as POST.
    const r = await call(`${BASE}/${chatId}/archive`, user2, 'POST');
    expect(r.status).toBe(200);
    expect(ok200(await call(`${BASE}/${chatId}`, user2)).archived).toBe(true);
  });

  it('test_share_chat_by_id', async () => {
    const r = await call(`${BASE}/${chatId}/share`, user2, 'POST');
    expect(r.status).toBe(200);
    expect(ok200(await call(`${BASE}/${chatId}`, user2)).share_id).not.toBeNull();
  });

  it('test_delete_shared_chat_by_id', async () => {
    // Upstream sets a random share_id in the database; here the chat is shared through its route.
    ok200(await call(`${BASE}/${chatId}/share`, user2, 'POST'));
    const r = await call(`${BASE}/${chatId}/share`, user2, 'DELETE');
    expect(r.status).toBe(200);
    expect(ok200(await call(`${BASE}/${chatId}`, user2)).share_id).toBeNull();
  });
});
