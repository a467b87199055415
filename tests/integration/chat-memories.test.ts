import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embedLexical } from '@gatehouse/common';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, type Account } from './chat-fixture.ts';

/**
 * Memories (Open WebUI 0.10's /api/v1/memories) over real HTTP through the chat face, as an Open
 * WebUI client calls them: Bearer tokens from sign-up / admin-added users, JSON bodies. Each user
 * sees only their own memories; the database and the outbox are read directly to check what the
 * API cannot show (embeddings, events, that nothing was written).
 */
const stack = new Stack();
let edge: Edge;
const sql = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);

let admin: Account;
let alice: Account;
let bob: Account;

interface Memory {
  id: string;
  user_id: string;
  type: string;
  path: string | null;
  content: string;
  meta: Record<string, unknown> | null;
  updated_at: number;
  created_at: number;
}

const add = async (who: Account, body: Record<string, unknown>): Promise<Memory> => {
  const r = await call('/api/v1/memories/add', who, 'POST', body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as Memory;
};
const list = async (who: Account): Promise<Memory[]> => {
  const r = await call('/api/v1/memories/', who);
  expect(r.status).toBe(200);
  return r.body as Memory[];
};
const wipe = async (who: Account) => expect((await call('/api/v1/memories/delete/user', who, 'DELETE')).body).toBe(true);

interface OutboxEvent {
  event: string;
  actor: { id: string } | null;
  subject: { type: string; id: string | null } | null;
  data: Record<string, unknown>;
}
async function events(since: number): Promise<OutboxEvent[]> {
  const rows = await sql<{ event: OutboxEvent }[]>`select event from outbox where seq > ${since} and event->>'resource' = 'memory' order by seq`;
  return rows.map((r) => r.event);
}
const outboxSeq = async (): Promise<number> => Number((await sql<{ s: string }[]>`select coalesce(max(seq), 0) as s from outbox`)[0]!.s);

const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  alice = await addUser(admin, 'Alice');
  bob = await addUser(admin, 'Bob');
});
afterAll(async () => {
  await sql.end({ timeout: 5 });
  await stack.close();
});

describe('add and list', () => {
  it('adds a memory with Open WebUI defaults and lists it for its owner only', async () => {
    const before = Math.floor(Date.now() / 1000);
    const m = await add(alice, { content: '  Prefers Python for backend work  ' });
    expect(Object.keys(m)).toEqual(['id', 'user_id', 'type', 'path', 'content', 'meta', 'updated_at', 'created_at']);
    expect(m).toMatchObject({ user_id: alice.id, type: 'context', path: null, content: 'Prefers Python for backend work', meta: { created_by: 'manual' } });
    expect(m.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(m.created_at).toBeGreaterThanOrEqual(before);
    expect(m.updated_at).toBe(m.created_at);

    const u = await add(alice, { content: 'Name is Alice', type: 'user', path: '/profile//basics/' });
    expect(u).toMatchObject({ type: 'user', path: 'profile/basics' });

    const mine = await list(alice);
    expect(mine.map((x) => x.id).sort()).toEqual([m.id, u.id].sort());
    expect(mine.find((x) => x.id === u.id)).toEqual(u);
    expect(await list(bob)).toEqual([]);
    await wipe(alice);
  });

  it('normalises paths as Open WebUI does and refuses invalid ones with 400', async () => {
    expect((await add(alice, { content: 'a', path: '  //work///projects//  ' })).path).toBe('work/projects');
    expect((await add(alice, { content: 'b', path: '///' })).path).toBeNull();
    expect((await add(alice, { content: 'c', path: '' })).path).toBeNull();
    for (const bad of ['work/../etc', './work', 'work/.', 'a/\u0001b', 'tab\tinside']) {
      const r = await call('/api/v1/memories/add', alice, 'POST', { content: 'x', path: bad });
      expect(r, bad).toEqual({ status: 400, body: { detail: 'Invalid memory path' } });
    }
    expect((await list(alice)).map((m) => m.content).sort()).toEqual(['a', 'b', 'c']);
    await wipe(alice);
  });

  it('refuses empty content (400) and malformed bodies (422 list), never 500', async () => {
    expect(await call('/api/v1/memories/add', alice, 'POST', { content: ' \n\t ' })).toEqual({ status: 400, body: { detail: 'Memory content cannot be empty' } });
    const missing = await call('/api/v1/memories/add', alice, 'POST', {});
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'content'], msg: 'Field required' });
    const badType = await call('/api/v1/memories/add', alice, 'POST', { content: 'x', type: 'global' });
    expect(badType.status).toBe(422);
    expect(badType.body.detail[0].loc).toEqual(['body', 'type']);
    expect((await call('/api/v1/memories/add', alice, 'POST', { content: 42 })).status).toBe(422);
    expect((await call('/api/v1/memories/add', alice, 'POST', '{not json')).status).toBeGreaterThanOrEqual(400);
    expect((await call('/api/v1/memories/add', alice, 'POST', '{not json')).status).toBeLessThan(500);
    expect(await list(alice)).toEqual([]);
  });

  it('needs a session', async () => {
    expect((await call('/api/v1/memories/', null)).status).toBe(401);
    expect((await call('/api/v1/memories/add', null, 'POST', { content: 'x' })).status).toBe(401);
  });
});

describe('query by meaning', () => {
  it('ranks the lexically closest memory first and scores like Open WebUI’s pgvector client', async () => {
    const hiking = await add(alice, { content: 'Loves hiking in the mountains on weekends' });
    const rust = await add(alice, { content: 'Favourite programming language is Rust', path: 'work/languages' });
    const peanuts = await add(alice, { content: 'Is allergic to peanuts', type: 'user' });

    const one = await call('/api/v1/memories/query', alice, 'POST', { content: 'which programming language do you like?' });
    expect(one.status).toBe(200);
    expect(Object.keys(one.body)).toEqual(['ids', 'documents', 'metadatas', 'distances']);
    expect(one.body.ids).toEqual([[rust.id]]);
    expect(one.body.documents).toEqual([['work/languages\nFavourite programming language is Rust']]);
    expect(one.body.metadatas).toEqual([[{ created_at: rust.created_at, updated_at: rust.updated_at, type: 'context', path: 'work/languages' }]]);
    // Open WebUI maps pgvector's cosine distance d to (2 − d) / 2, i.e. (1 + cos) / 2.
    const expected = (1 + cosine(embedLexical('which programming language do you like?'), embedLexical('work/languages\nFavourite programming language is Rust'))) / 2;
    // pgvector stores float4, hence 4 digits.
    expect(one.body.distances[0][0]).toBeCloseTo(expected, 4);

    const all = await call('/api/v1/memories/query', alice, 'POST', { content: 'peanut allergy', k: 10 });
    expect(all.body.ids[0]).toHaveLength(3);
    expect(all.body.ids[0][0]).toBe(peanuts.id);
    const scores: number[] = all.body.distances[0];
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    for (const s of scores) {
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s).toBeLessThanOrEqual(1);
    }
    expect(new Set(all.body.ids[0])).toEqual(new Set([hiking.id, rust.id, peanuts.id]));

    const mountains = await call('/api/v1/memories/query', alice, 'POST', { content: 'mountain hikes', k: 1 });
    expect(mountains.body.ids).toEqual([[hiking.id]]);
  });

  it('searches only the caller’s memories: 404 for a user who has none', async () => {
    expect(await call('/api/v1/memories/query', bob, 'POST', { content: 'rust', k: 5 })).toEqual({ status: 404, body: { detail: 'No memories found for user' } });
    const b = await add(bob, { content: 'Favourite programming language is Rust' });
    const r = await call('/api/v1/memories/query', bob, 'POST', { content: 'rust', k: 10 });
    expect(r.body.ids).toEqual([[b.id]]);
    await wipe(bob);
  });

  it('validates its body', async () => {
    expect((await call('/api/v1/memories/query', alice, 'POST', {})).status).toBe(422);
    expect((await call('/api/v1/memories/query', alice, 'POST', { content: 'x', k: 'three' })).status).toBe(422);
  });

  afterAll(() => wipe(alice));
});

describe('update by id', () => {
  it('changes content, type and path, re-embeds, and merges meta', async () => {
    const m = await add(alice, { content: 'Drinks coffee every morning', path: 'habits' });
    const other = await add(alice, { content: 'Plays the violin' });
    await new Promise((r) => setTimeout(r, 1100));
    const r = await call(`/api/v1/memories/${m.id}/update`, alice, 'POST', { content: 'Drinks green tea every afternoon', type: 'user' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: m.id, content: 'Drinks green tea every afternoon', type: 'user', path: 'habits', meta: { created_by: 'manual' }, created_at: m.created_at });
    expect(r.body.updated_at).toBeGreaterThan(m.updated_at);
    const q = await call('/api/v1/memories/query', alice, 'POST', { content: 'green tea', k: 1 });
    expect(q.body.ids).toEqual([[m.id]]);
    expect(q.body.documents).toEqual([['habits\nDrinks green tea every afternoon']]);

    const [row] = await sql<{ ok: boolean }[]>`select embedding = ${`[${embedLexical('habits\nDrinks green tea every afternoon').join(',')}]`}::vector as ok from memory where id = ${m.id}`;
    expect(row!.ok).toBe(true);

    // A path of "" (or "/") clears it; leaving path out keeps it.
    const cleared = await call(`/api/v1/memories/${m.id}/update`, alice, 'POST', { path: '/' });
    expect(cleared.body).toMatchObject({ path: null, content: 'Drinks green tea every afternoon', type: 'user' });
    const moved = await call(`/api/v1/memories/${m.id}/update`, alice, 'POST', { path: 'drinks//hot' });
    expect(moved.body.path).toBe('drinks/hot');
    expect((await call(`/api/v1/memories/${other.id}/update`, alice, 'POST', { type: 'user' })).body).toMatchObject({ type: 'user', path: null, content: 'Plays the violin' });
  });

  it('400 on nothing to update, empty content or a bad path; 404 on unknown and other users’ ids', async () => {
    const m = await add(alice, { content: 'Lives in Lisbon' });
    expect(await call(`/api/v1/memories/${m.id}/update`, alice, 'POST', {})).toEqual({ status: 400, body: { detail: 'No memory update provided' } });
    expect(await call(`/api/v1/memories/${m.id}/update`, alice, 'POST', { content: null, type: null, path: null })).toEqual({ status: 400, body: { detail: 'No memory update provided' } });
    expect(await call(`/api/v1/memories/${m.id}/update`, alice, 'POST', { content: '  ' })).toEqual({ status: 400, body: { detail: 'Memory content cannot be empty' } });
    expect(await call(`/api/v1/memories/${m.id}/update`, alice, 'POST', { path: 'a/../b' })).toEqual({ status: 400, body: { detail: 'Invalid memory path' } });
    expect((await call(`/api/v1/memories/${m.id}/update`, alice, 'POST', { type: 'other' })).status).toBe(422);
    expect(await call(`/api/v1/memories/${randomBytes(8).toString('hex')}/update`, alice, 'POST', { content: 'x' })).toEqual({ status: 404, body: { detail: OWUI_ERRORS.notFound } });
    expect(await call(`/api/v1/memories/${m.id}/update`, bob, 'POST', { content: 'Bob was here' })).toEqual({ status: 404, body: { detail: OWUI_ERRORS.notFound } });
    expect((await list(alice)).find((x) => x.id === m.id)).toMatchObject({ content: 'Lives in Lisbon', updated_at: m.updated_at });
  });

  afterAll(() => wipe(alice));
});

describe('batch update (POST /memories/update)', () => {
  it('applies add, replace, move and remove in order and answers one result per operation', async () => {
    const keep = await add(alice, { content: 'Works at Acme', path: 'work' });
    const move = await add(alice, { content: 'Team lead since 2021' });
    const drop = await add(alice, { content: 'Old phone number' });
    const since = await outboxSeq();
    const r = await call('/api/v1/memories/update', alice, 'POST', {
      operations: [
        { action: 'add', content: 'Speaks Portuguese', type: 'user', path: 'profile/languages/' },
        { action: 'replace', id: keep.id, content: 'Works at Globex' },
        { action: 'move', id: move.id, path: 'work/roles' },
        { action: 'remove', id: drop.id },
        { action: 'add', content: 'Works at Globex' },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const [added, replaced, moved, removed, dup] = r.body;
    expect(added).toMatchObject({ action: 'add', status: 'created', memory: { content: 'Speaks Portuguese', type: 'user', path: 'profile/languages', user_id: alice.id } });
    expect(added.memory.meta).toEqual({ created_by: 'tool', chat_id: null, message_id: null, model: null });
    // replace sets the path it is given, so leaving it out clears it (Open WebUI does the same).
    expect(replaced).toMatchObject({ action: 'replace', status: 'updated', memory: { id: keep.id, content: 'Works at Globex', type: 'context', path: null } });
    expect(replaced.memory.meta).toEqual({ created_by: 'tool', chat_id: null, message_id: null, model: null });
    expect(moved).toMatchObject({ action: 'move', status: 'updated', memory: { id: move.id, path: 'work/roles', content: 'Team lead since 2021' } });
    expect(removed).toEqual({ action: 'remove', status: 'deleted', id: drop.id });
    // Same content, type and path as a memory the batch just made: skipped, not duplicated.
    expect(dup).toMatchObject({ action: 'add', status: 'skipped', reason: 'duplicate', memory: { id: keep.id } });

    const now = await list(alice);
    expect(now.map((m) => m.id).sort()).toEqual([keep.id, move.id, added.memory.id].sort());
    const q = await call('/api/v1/memories/query', alice, 'POST', { content: 'roles at work', k: 1 });
    expect(q.body.documents[0][0]).toBe('work/roles\nTeam lead since 2021');

    const ev = await events(since);
    expect(ev.map((e) => [e.event, e.data.operation])).toEqual([
      ['memory.created', 'add'],
      ['memory.updated', 'replace'],
      ['memory.updated', 'move'],
      ['memory.deleted', 'remove'],
    ]);
    expect(ev[0]!.data).toEqual({ content_preview: 'Speaks Portuguese', type: 'user', path: 'profile/languages', operation: 'add' });
    expect(ev[3]).toMatchObject({ subject: { type: 'memory', id: drop.id }, data: { content_preview: '', type: null, path: null, operation: 'remove' } });
  });

  it('is all or nothing: an unknown or foreign id anywhere fails the whole batch with 404', async () => {
    const mine = await add(alice, { content: 'Cycles to work' });
    const theirs = await add(bob, { content: 'Bob’s secret' });
    const before = await list(alice);
    const since = await outboxSeq();
    for (const id of [randomBytes(8).toString('hex'), theirs.id]) {
      const r = await call('/api/v1/memories/update', alice, 'POST', {
        operations: [
          { action: 'add', content: 'Should not survive' },
          { action: 'replace', id: mine.id, content: 'Should not change' },
          { action: 'remove', id },
        ],
      });
      expect(r).toEqual({ status: 404, body: { detail: `Memory not found: ${id}` } });
    }
    // Removing the same memory twice: the second sees it gone, so the first is undone too.
    const twice = await call('/api/v1/memories/update', alice, 'POST', { operations: [{ action: 'remove', id: mine.id }, { action: 'move', id: mine.id, path: 'x' }] });
    expect(twice.status).toBe(404);
    expect(await list(alice)).toEqual(before);
    expect(await list(bob)).toEqual([theirs]);
    expect(await events(since)).toEqual([]);
    await wipe(bob);
  });

  it('validates operations before touching anything', async () => {
    const since = await outboxSeq();
    expect(await call('/api/v1/memories/update', alice, 'POST', { operations: [] })).toEqual({ status: 400, body: { detail: 'No memory operations provided' } });
    for (const action of ['replace', 'move', 'remove']) {
      expect(await call('/api/v1/memories/update', alice, 'POST', { operations: [{ action: 'add', content: 'x' }, { action, content: 'y' }] })).toEqual({
        status: 400,
        body: { detail: `Memory id is required for ${action}` },
      });
    }
    expect(await call('/api/v1/memories/update', alice, 'POST', { operations: [{ action: 'add', content: '' }] })).toEqual({ status: 400, body: { detail: 'Memory content cannot be empty' } });
    expect(await call('/api/v1/memories/update', alice, 'POST', { operations: [{ action: 'add', content: 'x', path: '../x' }] })).toEqual({ status: 400, body: { detail: 'Invalid memory path' } });
    expect((await call('/api/v1/memories/update', alice, 'POST', { operations: [{ action: 'rename', id: 'x' }] })).status).toBe(422);
    expect((await call('/api/v1/memories/update', alice, 'POST', {})).status).toBe(422);
    expect((await call('/api/v1/memories/update', alice, 'POST', { operations: [{ action: 'add', content: 'x' }], source: 'someone' })).status).toBe(422);
    expect(await events(since)).toEqual([]);
  });

  it('records the source in meta', async () => {
    const r = await call('/api/v1/memories/update', alice, 'POST', { operations: [{ action: 'add', content: 'Reviewed fact' }], source: 'background_review' });
    expect(r.body[0].memory.meta.created_by).toBe('background_review');
  });

  afterAll(() => wipe(alice));
});

describe('search, paths and path', () => {
  let m: Record<string, Memory>;
  beforeAll(async () => {
    // Created a second apart so "most recently updated first" has an order to show.
    m = {};
    const specs: [string, Record<string, unknown>][] = [
      ['root', { content: 'General work notes', path: 'work' }],
      ['proj', { content: 'Project Apollo uses Postgres', path: 'work/projects' }],
      ['apollo', { content: 'Apollo deadline is in March', path: 'work/projects/apollo' }],
      ['sibling', { content: 'Weekly sync on Mondays', path: 'work/meetings' }],
      ['home', { content: 'Garden needs watering', path: 'home/garden', type: 'user' }],
      ['loose', { content: 'Likes postgres more than mysql', type: 'user' }],
    ];
    for (const [k, body] of specs) {
      m[k] = await add(alice, body);
      await new Promise((r) => setTimeout(r, 1050));
    }
    await add(bob, { content: 'Bob also uses Postgres', path: 'work/projects' });
  });

  it('search: substring filter, type filter, memory_id, most recent first, capped by limit', async () => {
    const pg = await call('/api/v1/memories/search', alice, 'POST', { query: '  POSTGRES ' });
    expect(pg.status).toBe(200);
    expect(pg.body.map((x: Memory) => x.id)).toEqual([m.loose!.id, m.proj!.id]);
    expect((await call('/api/v1/memories/search', alice, 'POST', { query: 'postgres', type: 'user' })).body.map((x: Memory) => x.id)).toEqual([m.loose!.id]);
    expect((await call('/api/v1/memories/search', alice, 'POST', { memory_id: m.home!.id })).body.map((x: Memory) => x.id)).toEqual([m.home!.id]);
    expect((await call('/api/v1/memories/search', alice, 'POST', { memory_id: m.home!.id, type: 'context' })).body).toEqual([]);
    const all = (await call('/api/v1/memories/search', alice, 'POST', {})).body.map((x: Memory) => x.id);
    expect(all).toEqual(['loose', 'home', 'sibling', 'apollo', 'proj', 'root'].map((k) => m[k]!.id));
    expect((await call('/api/v1/memories/search', alice, 'POST', { limit: 2 })).body).toHaveLength(2);
    expect((await call('/api/v1/memories/search', bob, 'POST', { query: 'apollo' })).body).toEqual([]);
  });

  it('search by path ranks exact, then children, then ancestors, then siblings', async () => {
    const r = await call('/api/v1/memories/search', alice, 'POST', { path: '/work/projects/' });
    expect(r.body.map((x: Memory) => x.id)).toEqual(['proj', 'apollo', 'root', 'sibling'].map((k) => m[k]!.id));
    expect(await call('/api/v1/memories/search', alice, 'POST', { path: 'work/../x' })).toEqual({ status: 400, body: { detail: 'Invalid memory path' } });
  });

  it('paths: one group per path and type, newest first, with direct children', async () => {
    const r = await call('/api/v1/memories/paths', alice, 'POST', {});
    expect(r.status).toBe(200);
    expect(r.body.count).toBe(6);
    expect(r.body.paths.map((g: { path: string | null }) => g.path)).toEqual([null, 'home/garden', 'work/meetings', 'work/projects/apollo', 'work/projects', 'work']);
    const work = r.body.paths.find((g: { path: string | null }) => g.path === 'work');
    expect(work).toEqual({ path: 'work', type: 'context', count: 1, updated_at: m.root!.updated_at, children: ['work/projects', 'work/meetings'] });
    const filtered = await call('/api/v1/memories/paths', alice, 'POST', { query: 'apollo', type: 'context', limit: 1 });
    expect(filtered.body).toEqual({ paths: [{ path: 'work/projects/apollo', type: 'context', count: 1, updated_at: m.apollo!.updated_at, children: [] }], count: 2 });
  });

  it('path: the memories at a path with its ancestors and children', async () => {
    const r = await call('/api/v1/memories/path', alice, 'POST', { path: 'work/projects' });
    expect(r.status).toBe(200);
    expect(r.body.path).toBe('work/projects');
    expect(r.body.parents).toEqual(['work']);
    expect(r.body.children).toEqual(['work/projects/apollo']);
    expect(r.body.memories.map((x: Memory) => x.id)).toEqual(['proj', 'apollo', 'root'].map((k) => m[k]!.id));
    const flat = await call('/api/v1/memories/path', alice, 'POST', { path: 'work/projects', include_children: false });
    expect(flat.body.memories.map((x: Memory) => x.id)).toEqual([m.proj!.id, m.root!.id]);
    expect((await call('/api/v1/memories/path', bob, 'POST', { path: 'work/meetings' })).body).toEqual({ path: 'work/meetings', parents: [], children: [], memories: [] });
    expect(await call('/api/v1/memories/path', alice, 'POST', { path: '//' })).toEqual({ status: 400, body: { detail: 'Memory path is required' } });
    expect(await call('/api/v1/memories/path', alice, 'POST', { path: 'a/./b' })).toEqual({ status: 400, body: { detail: 'Invalid memory path' } });
    expect((await call('/api/v1/memories/path', alice, 'POST', {})).status).toBe(422);
  });

  afterAll(async () => {
    await wipe(alice);
    await wipe(bob);
  });
});

describe('reset and delete', () => {
  it('reset re-embeds every memory of the caller (and only the caller’s)', async () => {
    const a = await add(alice, { content: 'Owns a black cat named Pixel', path: 'pets' });
    const b = await add(alice, { content: 'Runs marathons' });
    const theirs = await add(bob, { content: 'Owns a dog' });
    // Spoil the stored vectors, as an embedding change would leave them.
    const spoiled = `[${new Array(384).fill(0).map((_, i) => (i === 0 ? 1 : 0)).join(',')}]`;
    await sql`update memory set embedding = ${spoiled}::vector`;
    const since = await outboxSeq();
    expect(await call('/api/v1/memories/reset', alice, 'POST')).toEqual({ status: 200, body: true });
    const rows = await sql<{ id: string; fresh: boolean }[]>`
      select id, embedding <> ${spoiled}::vector as fresh from memory where id in ${sql([a.id, b.id, theirs.id])}`;
    expect(Object.fromEntries(rows.map((r) => [r.id, r.fresh]))).toEqual({ [a.id]: true, [b.id]: true, [theirs.id]: false });
    expect((await call('/api/v1/memories/query', alice, 'POST', { content: 'cat', k: 1 })).body.ids).toEqual([[a.id]]);
    expect(await events(since)).toEqual([expect.objectContaining({ event: 'memory.reset', actor: expect.objectContaining({ id: alice.id }), subject: { type: 'user', id: alice.id }, data: { count: 2 } })]);
    await call('/api/v1/memories/reset', bob, 'POST');
  });

  it('delete by id: true for the owner, 404 for anyone else and for unknown ids', async () => {
    const [a] = await list(alice);
    const [theirs] = await list(bob);
    const since = await outboxSeq();
    expect(await call(`/api/v1/memories/${a!.id}`, bob, 'DELETE')).toEqual({ status: 404, body: { detail: OWUI_ERRORS.notFound } });
    expect(await call(`/api/v1/memories/${theirs!.id}`, alice, 'DELETE')).toEqual({ status: 404, body: { detail: OWUI_ERRORS.notFound } });
    expect((await list(alice)).map((m) => m.id)).toContain(a!.id);
    expect(await list(bob)).toEqual([theirs]);
    expect(await call(`/api/v1/memories/${a!.id}`, alice, 'DELETE')).toEqual({ status: 200, body: true });
    expect(await call(`/api/v1/memories/${a!.id}`, alice, 'DELETE')).toEqual({ status: 404, body: { detail: OWUI_ERRORS.notFound } });
    expect((await list(alice)).map((m) => m.id)).not.toContain(a!.id);
    expect(await events(since)).toEqual([expect.objectContaining({ event: 'memory.deleted', subject: { type: 'memory', id: a!.id } })]);
  });

  it('delete/user removes all of the caller’s memories and nobody else’s', async () => {
    expect((await list(alice)).length).toBeGreaterThan(0);
    const since = await outboxSeq();
    expect(await call('/api/v1/memories/delete/user', alice, 'DELETE')).toEqual({ status: 200, body: true });
    expect(await list(alice)).toEqual([]);
    expect(await list(bob)).toHaveLength(1);
    expect(await events(since)).toEqual([expect.objectContaining({ event: 'memory.deleted', subject: { type: 'user', id: alice.id }, data: {} })]);
    await wipe(bob);
  });
});

describe('events', () => {
  it('add and update write memory.* events in Open WebUI’s envelope to the outbox', async () => {
    const since = await outboxSeq();
    const long = `Remember: ${'x'.repeat(400)}`;
    const m = await add(alice, { content: long, type: 'user', path: 'notes' });
    await call(`/api/v1/memories/${m.id}/update`, alice, 'POST', { content: 'Short now' });
    const rows = await sql<{ subject: string; event: Record<string, any> }[]>`
      select subject, event from outbox where seq > ${since} and event->>'resource' = 'memory' order by seq`;
    expect(rows.map((r) => r.subject)).toEqual(['events.memory.created', 'events.memory.updated']);
    const [created, updated] = rows.map((r) => r.event);
    expect(created).toMatchObject({
      schema: '0.10.2',
      event: 'memory.created',
      resource: 'memory',
      operation: 'created',
      source: 'api',
      actor: { id: alice.id, type: 'user', role: 'user' },
      subject: { type: 'memory', id: m.id },
      data: { content_preview: long.slice(0, 300), type: 'user', path: 'notes' },
    });
    expect(updated!.data).toEqual({ content_preview: 'Short now', type: 'user', path: 'notes' });
    await wipe(alice);
  });
});

describe('memories switched off by the admin', () => {
  it('every memories route answers 404 with Open WebUI’s not-found detail, and works again when switched back on', async () => {
    const m = await add(alice, { content: 'Still here afterwards' });
    const set = async (on: boolean) => {
      const r = await call('/api/v1/auths/admin/config', admin, 'POST', { ENABLE_MEMORIES: on });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.ENABLE_MEMORIES).toBe(on);
    };
    await set(false);
    const routes: [string, string, unknown?][] = [
      ['GET', '/api/v1/memories/'],
      ['POST', '/api/v1/memories/add', { content: 'x' }],
      ['POST', '/api/v1/memories/update', { operations: [{ action: 'add', content: 'x' }] }],
      ['POST', '/api/v1/memories/query', { content: 'x' }],
      ['POST', '/api/v1/memories/search', {}],
      ['POST', '/api/v1/memories/paths', {}],
      ['POST', '/api/v1/memories/path', { path: 'a' }],
      ['POST', '/api/v1/memories/reset'],
      ['DELETE', '/api/v1/memories/delete/user'],
      ['POST', `/api/v1/memories/${m.id}/update`, { content: 'x' }],
      ['DELETE', `/api/v1/memories/${m.id}`],
    ];
    for (const who of [alice, admin]) {
      for (const [method, path, body] of routes) {
        expect(await call(path, who, method, body), `${method} ${path}`).toEqual({ status: 404, body: { detail: OWUI_ERRORS.notFound } });
      }
    }
    await set(true);
    expect(await list(alice)).toEqual([m]);
    await wipe(alice);
  });
});
