import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, eventsAbout, NOT_FOUND, type Account, type Res } from './chat-fixture.ts';

/**
 * Chat search and chat tags on the chat face (Open WebUI 0.10.2 /api/v1/chats/search, /all/tags,
 * /tags, /{id}/tags) over real HTTP: matching titles and message content case-insensitively, the
 * caller's chats only, archived ones left out, 60 a page, the search filters; tags added, listed,
 * normalised and removed, tag rows following the chats that use them (removal, chat delete,
 * archive), owner only, events in the outbox, bad input.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const nf = { status: 404, body: { detail: NOT_FOUND } };
const ITEM_KEYS = ['created_at', 'id', 'title', 'updated_at'];

let admin: Account, alice: Account, bob: Account;

const ok200 = (r: Res) => {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
const mark = () => randomUUID().slice(0, 8);
const newChat = async (who: Account, chat: Record<string, unknown>) => ok200(await call('/api/v1/chats/new', who, 'POST', { chat }));
const search = async (who: Account, text: string, page?: number) =>
  ok200(await call(`/api/v1/chats/search?${new URLSearchParams({ text, ...(page ? { page: String(page) } : {}) })}`, who));
const ids = (list: { id: string }[]) => list.map((c) => c.id);
const addTag = async (who: Account, chatId: string, name: string) => ok200(await call(`/api/v1/chats/${chatId}/tags`, who, 'POST', { name }));
const tagNames = async (who: Account) => (ok200(await call('/api/v1/chats/all/tags', who)) as { name: string }[]).map((t) => t.name);
const tagEvents = async (chatId: string) =>
  (await eventsAbout(db, chatId)).filter((e) => e.event.startsWith('chat.tag_')).map((e) => [e.event, e.data.tag, e.actor.id, e.subject]);
/** Newest first, ties by id: the order every chat list answers in. */
const newestFirst = <T extends { id: string; updated_at: number }>(list: T[]) =>
  [...list].sort((a, b) => b.updated_at - a.updated_at || (a.id < b.id ? -1 : 1));

/** A chat whose one exchange carries `text` in its messages (history shape, as Open WebUI saves it). */
function talk(title: string, userText: unknown, reply: string) {
  const [u, a] = [randomUUID(), randomUUID()];
  return {
    title,
    history: {
      currentId: a,
      messages: {
        [u]: { id: u, parentId: null, childrenIds: [a], role: 'user', content: userText },
        [a]: { id: a, parentId: u, childrenIds: [], role: 'assistant', content: reply, done: true },
      },
    },
  };
}

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  alice = await addUser(admin, 'Alice');
  bob = await addUser(admin, 'Bob');
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

describe('chat search', () => {
  it('finds my chats by title or message content, any case, newest first, in folders and pinned too', async () => {
    const m = mark();
    const byTitle = await newChat(alice, { title: `Quarterly ZETA-${m} report` });
    const byReply = await newChat(alice, talk('Numbers', 'how are we doing?', `The zeta-${m} figures look fine.`));
    const byBlocks = await newChat(alice, talk('Picture', [{ type: 'text', text: `see Zeta-${m} here` }, { type: 'image_url', image_url: { url: 'data:,' } }], 'ok'));
    const other = await newChat(alice, talk('Unrelated', 'nothing', 'nothing'));
    const bobs = await newChat(bob, { title: `zeta-${m} (Bob's)` });
    // In a folder and pinned: still found (a client looking a chat up by title relies on it).
    const folder = ok200(await call('/api/v1/folders/', alice, 'POST', { name: `F ${m}` }));
    ok200(await call(`/api/v1/chats/${byReply.id}/folder`, alice, 'POST', { folder_id: folder.id }));
    await new Promise((r) => setTimeout(r, 1100));
    const pinned = ok200(await call(`/api/v1/chats/${byTitle.id}/pin`, alice, 'POST'));

    const found = await search(alice, `zeta-${m}`);
    expect(found.every((c: any) => Object.keys(c).sort().join() === ITEM_KEYS.join())).toBe(true);
    expect(found[0]).toEqual({ id: byTitle.id, title: byTitle.title, updated_at: pinned.updated_at, created_at: byTitle.created_at });
    expect(ids(found).sort()).toEqual([byTitle.id, byReply.id, byBlocks.id].sort());
    expect(found).toEqual(newestFirst(found));
    expect(found.some((c: any) => c.id === other.id || c.id === bobs.id)).toBe(false);
    // Case and surrounding spaces do not matter; other users never see my chats, nor I theirs.
    expect(await search(alice, `  ZETA-${m.toUpperCase()} `)).toEqual(found);
    expect(ids(await search(bob, `zeta-${m}`))).toEqual([bobs.id]);
    expect(await search(admin, `zeta-${m}`)).toEqual([]);
    // Words are matched as one phrase; % and _ are literal characters, not wildcards.
    expect(ids(await search(alice, `quarterly zeta-${m}`))).toEqual([byTitle.id]);
    expect(await search(alice, `zeta-${m} quarterly`)).toEqual([]);
    const percent = await newChat(alice, { title: `100% ${m}` });
    expect(ids(await search(alice, '100%'))).toEqual([percent.id]);
    expect(ids(await search(alice, `zeta_${m}`))).toEqual([]);
  });

  it('leaves archived chats out unless asked (archived:true), and filters pinned:, folder:, shared:', async () => {
    const m = mark();
    const kept = await newChat(alice, { title: `keep ${m}` });
    const gone = await newChat(alice, { title: `gone ${m}` });
    ok200(await call(`/api/v1/chats/${gone.id}/archive`, alice, 'POST'));
    expect(ids(await search(alice, m))).toEqual([kept.id]);
    expect(ids(await search(alice, `${m} archived:true`))).toEqual([gone.id]);
    expect(ids(await search(alice, `archived:false ${m}`))).toEqual([kept.id]);
    const pin = await newChat(alice, { title: `pin ${m}` });
    ok200(await call(`/api/v1/chats/${pin.id}/pin`, alice, 'POST'));
    expect(ids(await search(alice, `pinned:true ${m}`))).toEqual([pin.id]);
    expect(ids(await search(alice, `pinned:false ${m}`))).toEqual([kept.id]);
    // folder:<name> takes sub-folders along; names compare with spaces as underscores, any case.
    const top = ok200(await call('/api/v1/folders/', alice, 'POST', { name: `Work Box ${m}` }));
    const sub = ok200(await call('/api/v1/folders/', alice, 'POST', { name: 'Inner', parent_id: top.id }));
    const inSub = await newChat(alice, { title: `deep ${m}` });
    ok200(await call(`/api/v1/chats/${inSub.id}/folder`, alice, 'POST', { folder_id: sub.id }));
    expect(ids(await search(alice, `folder:work_box_${m.toUpperCase()} ${m}`))).toEqual([inSub.id]);
    expect(await search(alice, `folder:no-such-folder ${m}`)).toEqual([]);
    // Bob's folder of the same name is not a filter for Alice.
    ok200(await call('/api/v1/folders/', bob, 'POST', { name: `Bobs ${m}` }));
    expect(await search(alice, `folder:bobs_${m}`)).toEqual([]);
    expect(await search(alice, `shared:true ${m}`)).toEqual([]);
    expect(ids(await search(alice, `shared:false ${m}`)).sort()).toEqual([kept.id, pin.id, inSub.id].sort());
  });

  it('pages 60 at a time; an empty text is the plain list of unarchived chats', async () => {
    const pager = await addUser(admin, 'Pager');
    const made: any[] = [];
    for (let i = 0; i < 65; i++) made.push(await newChat(pager, { title: `page ${String(i).padStart(2, '0')}` }));
    const extra = await newChat(pager, { title: 'not a match' });
    const archived = await newChat(pager, { title: 'page archived' });
    ok200(await call(`/api/v1/chats/${archived.id}/archive`, pager, 'POST'));
    const expected = newestFirst(made).map((c) => ({ id: c.id, title: c.title, updated_at: c.updated_at, created_at: c.created_at }));
    expect(await search(pager, 'PAGE')).toEqual(expected.slice(0, 60));
    expect(await search(pager, 'page', 1)).toEqual(expected.slice(0, 60));
    expect(await search(pager, 'page', 2)).toEqual(expected.slice(60));
    expect(await search(pager, 'page', 3)).toEqual([]);
    const all = newestFirst([...made, extra]).map((c) => c.id);
    expect(ids(await search(pager, ''))).toEqual(all.slice(0, 60));
    expect(ids(await search(pager, '   ', 2))).toEqual(all.slice(60));
  });

  it('answers FastAPI 422s for a missing text or a bad page, and is not taken for a chat id', async () => {
    const r = await call('/api/v1/chats/search', alice);
    expect(r).toEqual({ status: 422, body: { detail: [{ type: 'missing', loc: ['query', 'text'], msg: 'Field required', input: null }] } });
    for (const q of ['text=a&page=0', 'text=a&page=x']) {
      const bad = await call(`/api/v1/chats/search?${q}`, alice);
      expect(bad.status, q).toBe(422);
      expect(bad.body.detail[0].loc).toEqual(['query', 'page']);
    }
    expect((await call('/api/v1/chats/search?text=a')).status).toBe(401);
    // A NUL in the text is dropped (Postgres refuses it), not a 500.
    expect((await call('/api/v1/chats/search?text=a%00b', alice)).status).toBe(200);
  });
});

describe('chat tags', () => {
  it('adds tags (id = name lower-cased, spaces as _), lists them as TagModel, leaves updated_at alone, one event per new tag', async () => {
    const chat = await newChat(alice, { title: 'tagged' });
    expect(await call(`/api/v1/chats/${chat.id}/tags`, alice)).toEqual({ status: 200, body: [] });
    expect(await addTag(alice, chat.id, 'Work Stuff')).toEqual([{ id: 'work_stuff', name: 'Work Stuff', user_id: alice.id, meta: null }]);
    const both = [
      { id: 'work_stuff', name: 'Work Stuff', user_id: alice.id, meta: null },
      { id: 'urgent', name: 'urgent', user_id: alice.id, meta: null },
    ];
    expect(await addTag(alice, chat.id, 'urgent')).toEqual(both);
    // The same id again changes nothing (and the first spelling stays the name).
    expect(await addTag(alice, chat.id, 'WORK STUFF')).toEqual(both);
    expect(await call(`/api/v1/chats/${chat.id}/tags`, alice)).toEqual({ status: 200, body: both });
    const stored = ok200(await call(`/api/v1/chats/${chat.id}`, alice));
    expect(stored.meta).toEqual({ tags: ['work_stuff', 'urgent'] });
    expect(stored.updated_at).toBe(chat.updated_at);
    const other = await newChat(alice, { title: 'also tagged' });
    expect(await addTag(alice, other.id, 'work stuff')).toEqual([both[0]]);
    expect(ok200(await call('/api/v1/chats/all/tags', alice))).toEqual([both[1], both[0]]);
    expect(await tagEvents(chat.id)).toEqual([
      ['chat.tag_added', 'Work Stuff', alice.id, { type: 'chat', id: chat.id }],
      ['chat.tag_added', 'urgent', alice.id, { type: 'chat', id: chat.id }],
    ]);
    // Tags are per user: Bob's "Urgent" is his own row.
    const bobs = await newChat(bob, { title: 'bob' });
    expect(await addTag(bob, bobs.id, 'Urgent')).toEqual([{ id: 'urgent', name: 'Urgent', user_id: bob.id, meta: null }]);
    expect(await tagNames(bob)).toEqual(['Urgent']);
    expect(await tagNames(alice)).toEqual(['urgent', 'Work Stuff']);
    // Cleanup for the next tests: Alice's chats go, and their tags with them.
    for (const c of [chat, other]) ok200(await call(`/api/v1/chats/${c.id}`, alice, 'DELETE'));
    expect(await tagNames(alice)).toEqual([]);
    expect(await tagNames(bob)).toEqual(['Urgent']);
  });

  it('removes a tag; the tag row goes once no unarchived chat of mine lists it; /tags/all clears a chat', async () => {
    const a = await newChat(alice, { title: 'a' });
    const b = await newChat(alice, { title: 'b' });
    await addTag(alice, a.id, 'shared tag');
    await addTag(alice, a.id, 'only-a');
    await addTag(alice, b.id, 'Shared Tag');
    expect(await call(`/api/v1/chats/${a.id}/tags`, alice, 'DELETE', { name: 'ONLY-A' })).toEqual({
      status: 200,
      body: [{ id: 'shared_tag', name: 'shared tag', user_id: alice.id, meta: null }],
    });
    expect(await tagNames(alice)).toEqual(['shared tag']);
    expect(await call(`/api/v1/chats/${a.id}/tags`, alice, 'DELETE', { name: 'shared tag' })).toEqual({ status: 200, body: [] });
    // b still lists it.
    expect(await tagNames(alice)).toEqual(['shared tag']);
    // Removing a tag the chat does not have changes nothing and sends no event.
    expect(await call(`/api/v1/chats/${a.id}/tags`, alice, 'DELETE', { name: 'never' })).toEqual({ status: 200, body: [] });
    expect(await tagEvents(a.id)).toEqual([
      ['chat.tag_added', 'shared tag', alice.id, { type: 'chat', id: a.id }],
      ['chat.tag_added', 'only-a', alice.id, { type: 'chat', id: a.id }],
      ['chat.tag_removed', 'ONLY-A', alice.id, { type: 'chat', id: a.id }],
      ['chat.tag_removed', 'shared tag', alice.id, { type: 'chat', id: a.id }],
    ]);
    await addTag(alice, b.id, 'second');
    expect(await call(`/api/v1/chats/${b.id}/tags/all`, alice, 'DELETE')).toEqual({ status: 200, body: true });
    expect(await call(`/api/v1/chats/${b.id}/tags`, alice)).toEqual({ status: 200, body: [] });
    expect(await tagNames(alice)).toEqual([]);
    expect((await tagEvents(b.id)).filter(([e]) => e === 'chat.tag_removed').map(([, tag]) => tag)).toEqual(['shared tag', 'second']);
    for (const c of [a, b]) ok200(await call(`/api/v1/chats/${c.id}`, alice, 'DELETE'));
  });

  it('keeps tag rows in step with archiving and deleting chats, and finds chats by tag', async () => {
    const m = mark();
    const one = await newChat(alice, { title: `one ${m}` });
    const two = await newChat(alice, { title: `two ${m}` });
    await addTag(alice, one.id, 'Project X');
    await addTag(alice, two.id, 'Project X');
    await addTag(alice, two.id, 'solo');
    // POST /tags: my chats carrying the tag, newest first; skip and limit as Open WebUI.
    const tagged = ok200(await call('/api/v1/chats/tags', alice, 'POST', { name: 'project x' }));
    expect(tagged).toEqual(newestFirst([one, two]).map((c) => ({ id: c.id, title: c.title, updated_at: c.updated_at, created_at: c.created_at })));
    expect(ok200(await call('/api/v1/chats/tags', alice, 'POST', { name: 'Project X', skip: 1, limit: 1 }))).toEqual([tagged[1]]);
    expect(ok200(await call('/api/v1/chats/tags', bob, 'POST', { name: 'Project X' }))).toEqual([]);
    // Search filters: every tag: must match; tag:none is the untagged ones.
    const plain = await newChat(alice, { title: `plain ${m}` });
    expect(ids(await search(alice, `tag:project_x ${m}`)).sort()).toEqual([one.id, two.id].sort());
    expect(ids(await search(alice, `tag:project_x tag:SOLO`))).toEqual([two.id]);
    expect(ids(await search(alice, `tag:none ${m}`))).toEqual([plain.id]);
    // Archiving the only chat with "solo" drops its row; unarchiving brings a row back (named
    // after the id, as Open WebUI's ensure_tags_exist does).
    ok200(await call(`/api/v1/chats/${two.id}/archive`, alice, 'POST'));
    expect(await tagNames(alice)).toEqual(['Project X']);
    expect(ids(await search(alice, `tag:solo`))).toEqual([]);
    expect(ids(await search(alice, `archived:true tag:solo`))).toEqual([two.id]);
    ok200(await call(`/api/v1/chats/${two.id}/archive`, alice, 'POST'));
    expect(ok200(await call('/api/v1/chats/all/tags', alice))).toEqual([
      { id: 'project_x', name: 'Project X', user_id: alice.id, meta: null },
      { id: 'solo', name: 'solo', user_id: alice.id, meta: null },
    ]);
    // Deleting chats drops the rows nothing else lists; archive/all drops them all.
    ok200(await call(`/api/v1/chats/${two.id}`, alice, 'DELETE'));
    expect(await tagNames(alice)).toEqual(['Project X']);
    ok200(await call('/api/v1/chats/archive/all', alice, 'POST'));
    expect(await tagNames(alice)).toEqual([]);
    ok200(await call('/api/v1/chats/unarchive/all', alice, 'POST'));
    expect(ids(ok200(await call('/api/v1/chats/all/tags', alice)))).toEqual(['project_x']);
    // A tag added to an archived chat gets its row (as in Open WebUI) and POST /tags lists archived
    // chats; a lone tag: search that finds nothing unarchived drops the row (Open WebUI's clean-up).
    const old = await newChat(alice, { title: 'old' });
    ok200(await call(`/api/v1/chats/${old.id}/archive`, alice, 'POST'));
    expect(await addTag(alice, old.id, 'Ghost')).toEqual([{ id: 'ghost', name: 'Ghost', user_id: alice.id, meta: null }]);
    expect(ids(ok200(await call('/api/v1/chats/tags', alice, 'POST', { name: 'ghost' })))).toEqual([old.id]);
    expect(await tagNames(alice)).toContain('Ghost');
    expect(await search(alice, 'tag:ghost')).toEqual([]);
    expect(await tagNames(alice)).not.toContain('Ghost');
    ok200(await call('/api/v1/chats/', alice, 'DELETE'));
    expect(await tagNames(alice)).toEqual([]);
  });

  it('is the owner\'s alone: anyone else (admins too) gets 404 and changes nothing', async () => {
    const chat = await newChat(alice, { title: 'private' });
    await addTag(alice, chat.id, 'mine');
    for (const who of [bob, admin]) {
      expect(await call(`/api/v1/chats/${chat.id}/tags`, who)).toEqual(nf);
      expect(await call(`/api/v1/chats/${chat.id}/tags`, who, 'POST', { name: 'theirs' })).toEqual(nf);
      expect(await call(`/api/v1/chats/${chat.id}/tags`, who, 'DELETE', { name: 'mine' })).toEqual(nf);
      expect(await call(`/api/v1/chats/${chat.id}/tags/all`, who, 'DELETE')).toEqual(nf);
      expect(ids(await search(who, 'private'))).not.toContain(chat.id);
      expect(ok200(await call('/api/v1/chats/tags', who, 'POST', { name: 'mine' }))).toEqual([]);
    }
    expect(await call(`/api/v1/chats/${randomUUID()}/tags`, alice, 'POST', { name: 'x' })).toEqual(nf);
    expect(await call(`/api/v1/chats/${chat.id}/tags`, alice)).toEqual({ status: 200, body: [{ id: 'mine', name: 'mine', user_id: alice.id, meta: null }] });
    expect(await tagNames(bob)).not.toContain('theirs');
    expect(await tagNames(admin)).toEqual([]);
    expect((await tagEvents(chat.id)).map(([e, tag]) => [e, tag])).toEqual([['chat.tag_added', 'mine']]);
    ok200(await call(`/api/v1/chats/${chat.id}`, alice, 'DELETE'));
  });

  it('refuses bad input: FastAPI 422s for the forms, 400 for the names Open WebUI refuses', async () => {
    const chat = await newChat(alice, { title: 'input' });
    const path = `/api/v1/chats/${chat.id}/tags`;
    expect(await call(path, alice, 'POST', {})).toEqual({ status: 422, body: { detail: [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: {} }] } });
    expect((await call(path, alice, 'POST', { name: 5 })).body.detail[0]).toMatchObject({ type: 'string_type', loc: ['body', 'name'] });
    expect((await call(path, alice, 'POST')).status).toBe(422);
    expect((await call(path, alice, 'POST', '{"name":')).status).toBe(422);
    expect((await call(path, alice, 'DELETE')).status).toBe(422);
    expect((await call(path, alice, 'DELETE', { name: null })).status).toBe(422);
    expect((await call('/api/v1/chats/tags', alice, 'POST', { name: 'x', skip: 'one' })).body.detail[0]).toMatchObject({ loc: ['body', 'skip'] });
    expect((await call('/api/v1/chats/tags', alice, 'POST', { skip: 1 })).status).toBe(422);
    expect(await call(path, alice, 'POST', { name: 'None' })).toEqual({ status: 400, body: { detail: "[ERROR: Tag name cannot be 'None']" } });
    expect(await call(path, alice, 'POST', { name: '' })).toEqual({ status: 400, body: { detail: '[ERROR: Tag name cannot be empty]' } });
    // A NUL in a name is dropped, as Open WebUI sanitises what it stores.
    expect(await addTag(alice, chat.id, 'a\u0000b')).toEqual([{ id: 'ab', name: 'ab', user_id: alice.id, meta: null }]);
    expect(await tagEvents(chat.id)).toEqual([['chat.tag_added', 'ab', alice.id, { type: 'chat', id: chat.id }]]);
    ok200(await call(`/api/v1/chats/${chat.id}`, alice, 'DELETE'));
  });
});
