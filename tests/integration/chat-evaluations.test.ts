import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatEvent, computeLeaderboard, EVENTS_STREAM, feedbackTags } from '@gatehouse/contracts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';
import { MODELS as OPENAI_MODELS, startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream } from '../../scripts/src/fake-upstreams/common.ts';
import { chatClient, chatDb, NOT_FOUND, PROHIBITED, type Account, type Caller } from './chat-fixture.ts';

/**
 * Ratings on the chat face (/api/v1/evaluations, Open WebUI 0.10.2's routers/evaluations.py):
 * a user's thumbs up or down on an answer as the front end sends it, read back, changed and
 * deleted by its owner only; an admin's view of everyone's (list, page, export, delete all), the
 * Elo leaderboard computed from them, the arena settings, and the events each change publishes
 * on the bus.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const post = (path: string, body: unknown, who?: Caller) => call(path, who, 'POST', body);
const del = (path: string, who?: Caller) => call(path, who, 'DELETE');
const E = '/api/v1/evaluations';

let admin: Account;
let ada: Account;
let bob: Account;
// A model connection, so /api/models lists the arena (an arena of no models is not listed).
let upstream: FakeUpstream;
const upstreamKey = newKey();

beforeAll(async () => {
  upstream = await startFakeOpenAI({ apiKey: upstreamKey });
  await stack.startProxyWorker({ OPENAI_API_BASE_URLS: upstream.url, OPENAI_API_KEYS: upstreamKey });
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup('Admin');
  ada = await addUser(admin, 'Ada');
  bob = await addUser(admin, 'Bob');
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
  await upstream?.close();
});

/** A rating as Open WebUI's front end sends it (Message → RateComment). */
const rating = (o: { rating?: number; model?: string; siblings?: string[] | null; tags?: string[]; chat?: string; message?: string } = {}) => ({
  type: 'rating',
  data: { rating: o.rating ?? 1, model_id: o.model ?? 'qwen3:8b', sibling_model_ids: o.siblings ?? null, reason: 'Accurate information', comment: 'Spot on.', tags: o.tags ?? ['code'], details: { rating: 8 } },
  meta: { arena: !!o.siblings, chat_id: o.chat ?? 'chat-1', message_id: o.message ?? 'msg-1', message_index: 2, tags: o.tags ?? ['code'] },
  snapshot: { chat: { id: o.chat ?? 'chat-1', title: 'A chat', chat: { messages: [{ role: 'user', content: 'Hi' }] } } },
});

/** The events of the stream about feedback, as published (subject, envelope). */
async function feedbackEvents(): Promise<{ subject: string; event: ChatEvent }[]> {
  const bus = await stack.busHandle();
  const jsm = await bus.nc.jetstreamManager();
  const name = bus.bucket(EVENTS_STREAM);
  const info = await jsm.streams.info(name);
  const out = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(name, { seq }).catch(() => undefined);
    if (m?.subject.includes('.events.feedback.')) out.push({ subject: m.subject, event: ChatEvent.parse(m.json()) });
  }
  return out;
}

describe('a user’s ratings', () => {
  let mine: any;

  it('create answers the stored rating: every RatingData field, the rest kept, meta and snapshot as sent', async () => {
    const r = await post(`${E}/feedback`, rating(), ada);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    mine = r.body;
    expect(Object.keys(r.body).sort()).toEqual(['created_at', 'data', 'id', 'meta', 'snapshot', 'type', 'updated_at', 'user_id', 'version']);
    expect(r.body).toMatchObject({ user_id: ada.id, version: 0, type: 'rating' });
    expect(r.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.body.data).toEqual({ rating: 1, model_id: 'qwen3:8b', sibling_model_ids: null, reason: 'Accurate information', comment: 'Spot on.', tags: ['code'], details: { rating: 8 } });
    expect(r.body.meta).toEqual(rating().meta);
    expect(r.body.snapshot).toEqual(rating().snapshot);
    expect(r.body.updated_at).toBe(r.body.created_at);
    // Fields left out are null, as Pydantic dumps them.
    const bare = await post(`${E}/feedback`, { type: 'rating', data: { rating: -1 } }, bob);
    expect(bare.body).toMatchObject({ data: { rating: -1, model_id: null, sibling_model_ids: null, reason: null, comment: null }, meta: null, snapshot: null });
  });

  it('refuses a malformed form with FastAPI’s 422', async () => {
    const noType = await post(`${E}/feedback`, { data: { rating: 1 } }, ada);
    expect(noType.status).toBe(422);
    expect(noType.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'type'] });
    expect((await post(`${E}/feedback`, { type: 'rating', data: { rating: { up: true } } }, ada)).status).toBe(422);
    expect((await post(`${E}/feedback`, { type: 'rating', data: { sibling_model_ids: 'gpt-4o' } }, ada)).status).toBe(422);
    expect((await post(`${E}/feedback`, { type: 'rating', meta: [] }, ada)).status).toBe(422);
    expect((await post(`${E}/feedback`, rating(), null)).status).toBe(401);
  });

  it('reads back to its owner and an admin only; another user is told it does not exist', async () => {
    expect(await call(`${E}/feedback/${mine.id}`, ada)).toEqual({ status: 200, body: mine });
    expect(await call(`${E}/feedback/${mine.id}`, admin)).toEqual({ status: 200, body: mine });
    expect(await call(`${E}/feedback/${mine.id}`, bob)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    expect(await call(`${E}/feedback/no-such-id`, ada)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
  });

  it('update replaces data and snapshot when sent, meta when sent non-empty, and keeps the type', async () => {
    const r = await post(`${E}/feedback/${mine.id}`, { type: 'other', data: { rating: -1, model_id: 'qwen3:8b', reason: 'Inaccurate' }, meta: {} }, ada);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ id: mine.id, type: 'rating', version: 0, meta: mine.meta, snapshot: mine.snapshot, created_at: mine.created_at });
    expect(r.body.data).toEqual({ rating: -1, model_id: 'qwen3:8b', sibling_model_ids: null, reason: 'Inaccurate', comment: null });
    expect(r.body.updated_at).toBeGreaterThanOrEqual(mine.created_at);
    const withMeta = await post(`${E}/feedback/${mine.id}`, { type: 'rating', meta: { chat_id: 'chat-9' } }, ada);
    expect(withMeta.body.meta).toEqual({ chat_id: 'chat-9' });
    expect(withMeta.body.data.reason).toBe('Inaccurate');
    mine = withMeta.body;
  });

  it('another user cannot update or delete it (404), an admin can update it', async () => {
    expect(await post(`${E}/feedback/${mine.id}`, { type: 'rating', data: { rating: 1 } }, bob)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    expect(await del(`${E}/feedback/${mine.id}`, bob)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    expect((await call(`${E}/feedback/${mine.id}`, ada)).body).toEqual(mine);
    const byAdmin = await post(`${E}/feedback/${mine.id}`, { type: 'rating', data: { rating: 1, model_id: 'qwen3:8b', comment: 'fixed by admin' } }, admin);
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toMatchObject({ user_id: ada.id, data: { rating: 1, comment: 'fixed by admin' } });
    mine = byAdmin.body;
  });

  it('GET /feedbacks/user lists the caller’s own, without snapshots', async () => {
    await post(`${E}/feedback`, rating({ message: 'msg-2', rating: -1 }), ada);
    const r = await call(`${E}/feedbacks/user`, ada);
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(2);
    for (const f of r.body) {
      expect(f.user_id).toBe(ada.id);
      expect(f).not.toHaveProperty('snapshot');
      expect(f.user).toBeNull();
    }
    expect(r.body.map((f: any) => f.id)).toContain(mine.id);
    expect((await call(`${E}/feedbacks/user`, bob)).body.map((f: any) => f.user_id)).toEqual([bob.id]);
  });

  it('delete by its owner answers true, then it is gone', async () => {
    const f = await post(`${E}/feedback`, rating({ message: 'msg-3' }), ada);
    expect(await del(`${E}/feedback/${f.body.id}`, ada)).toEqual({ status: 200, body: true });
    expect((await call(`${E}/feedback/${f.body.id}`, ada)).status).toBe(404);
    expect(await del(`${E}/feedback/${f.body.id}`, ada)).toEqual({ status: 404, body: { detail: NOT_FOUND } });
  });
});

describe('the admin’s views', () => {
  it('GET /feedbacks/all lists everyone’s, newest change first, with who gave each and no snapshot', async () => {
    const r = await call(`${E}/feedbacks/all`, admin);
    expect(r.status).toBe(200);
    expect(new Set(r.body.map((f: any) => f.user_id))).toEqual(new Set([ada.id, bob.id]));
    const updated = r.body.map((f: any) => f.updated_at);
    expect(updated).toEqual([...updated].sort((a: number, b: number) => b - a));
    const adas = r.body.find((f: any) => f.user_id === ada.id);
    expect(Object.keys(adas.user).sort()).toEqual(['created_at', 'email', 'id', 'last_active_at', 'name', 'role', 'updated_at']);
    expect(adas.user).toMatchObject({ id: ada.id, name: 'Ada', email: ada.email, role: 'user' });
    for (const f of r.body) expect(f).not.toHaveProperty('snapshot');
    expect(await call(`${E}/feedbacks/all`, ada)).toEqual({ status: 401, body: { detail: PROHIBITED } });
  });

  it('GET /feedbacks/all/export answers the stored ratings whole, snapshots included', async () => {
    const r = await call(`${E}/feedbacks/all/export`, admin);
    expect(r.status).toBe(200);
    const all = (await call(`${E}/feedbacks/all`, admin)).body;
    expect(r.body.map((f: any) => f.id)).toEqual(all.map((f: any) => f.id));
    expect(r.body.find((f: any) => f.meta?.message_id === 'msg-2').snapshot).toEqual(rating({ message: 'msg-2' }).snapshot);
    expect((await call(`${E}/feedbacks/all/export`, bob)).status).toBe(401);
  });

  it('GET /feedbacks/list pages them (30 a page) with the total', async () => {
    const all = (await call(`${E}/feedbacks/all`, admin)).body;
    const first = await call(`${E}/feedbacks/list?order_by=created_at&direction=asc`, admin);
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(all.length);
    expect(first.body.items.map((f: any) => f.created_at)).toEqual([...all.map((f: any) => f.created_at)].sort((a, b) => a - b));
    expect(first.body.items[0].user).toMatchObject({ id: expect.any(String), name: expect.any(String) });
    expect((await call(`${E}/feedbacks/list?page=2`, admin)).body).toEqual({ items: [], total: all.length });
    expect((await call(`${E}/feedbacks/list?page=two`, admin)).status).toBe(422);
    expect(await call(`${E}/feedbacks/list?page=99999999999999999999999`, admin)).toEqual({ status: 200, body: { items: [], total: all.length } });
  });

  it('GET /leaderboard ranks models by Elo from the arena ratings (tags filter with ?query=)', async () => {
    await post(`${E}/feedback`, rating({ model: 'model-a', siblings: ['model-b'], tags: ['code'], message: 'arena-1' }), ada);
    await post(`${E}/feedback`, rating({ model: 'model-a', siblings: ['model-c'], tags: ['poetry'], message: 'arena-2' }), bob);
    await post(`${E}/feedback`, rating({ model: 'model-b', rating: -1, siblings: ['model-c'], tags: ['code'], message: 'arena-3' }), ada);
    const r = await call(`${E}/leaderboard`, admin);
    expect(r.status).toBe(200);
    const expected = computeLeaderboard((await call(`${E}/feedbacks/all/export`, admin)).body);
    expect(r.body).toEqual({ entries: expected });
    expect(r.body.entries.map((e: any) => e.model_id)).toEqual(['model-a', 'model-c', 'model-b']);
    expect(r.body.entries[0]).toMatchObject({ model_id: 'model-a', won: 2, lost: 0, count: 2 });
    // The single-model thumbs (no siblings) play no games.
    expect(r.body.entries.find((e: any) => e.model_id === 'qwen3:8b')).toBeUndefined();
    // Only the ratings with a tag containing the query (any case) move ratings; every game still
    // counts a win or a loss. Ratings given within one second play in id order, so compare with
    // the shared computation over the same list rather than with fixed numbers.
    const code = await call(`${E}/leaderboard?query=COD`, admin);
    const onlyCode = (f: any) => (feedbackTags(f).some((t) => t.toLowerCase().includes('cod')) ? 1 : 0);
    expect(code.body).toEqual({ entries: computeLeaderboard((await call(`${E}/feedbacks/all/export`, admin)).body, onlyCode) });
    expect(code.body).not.toEqual(r.body);
    expect(code.body.entries.find((e: any) => e.model_id === 'model-a')).toMatchObject({ won: 2, lost: 0 });
    expect(await call(`${E}/leaderboard`, ada)).toEqual({ status: 401, body: { detail: PROHIBITED } });
  });

  it('an admin deletes anyone’s rating', async () => {
    const f = await post(`${E}/feedback`, rating({ message: 'msg-admin-del' }), bob);
    expect(await del(`${E}/feedback/${f.body.id}`, admin)).toEqual({ status: 200, body: true });
    expect((await call(`${E}/feedback/${f.body.id}`, bob)).status).toBe(404);
  });
});

describe('deleting many', () => {
  it('DELETE /feedbacks deletes the caller’s own (true), then answers false', async () => {
    const others = (await call(`${E}/feedbacks/user`, ada)).body.length;
    expect(others).toBeGreaterThan(0);
    expect(await del(`${E}/feedbacks`, bob)).toEqual({ status: 200, body: true });
    expect((await call(`${E}/feedbacks/user`, bob)).body).toEqual([]);
    expect((await call(`${E}/feedbacks/user`, ada)).body).toHaveLength(others);
    expect(await del(`${E}/feedbacks`, bob)).toEqual({ status: 200, body: false });
  });

  it('DELETE /feedbacks/all is the admin’s: everyone’s go (true), then false', async () => {
    expect((await del(`${E}/feedbacks/all`, ada)).status).toBe(401);
    expect(await del(`${E}/feedbacks/all`, admin)).toEqual({ status: 200, body: true });
    expect((await call(`${E}/feedbacks/all`, admin)).body).toEqual([]);
    expect(await del(`${E}/feedbacks/all`, admin)).toEqual({ status: 200, body: false });
  });

  it('a deleted user’s ratings go with them', async () => {
    const carl = await addUser(admin, 'Carl');
    await post(`${E}/feedback`, rating(), carl);
    expect((await call(`${E}/feedbacks/all`, admin)).body).toHaveLength(1);
    expect((await del(`/api/v1/users/${carl.id}`, admin)).status).toBe(200);
    expect((await call(`${E}/feedbacks/all`, admin)).body).toEqual([]);
  });
});

describe('arena settings', () => {
  it('read as the environment says until an admin sets them, then as set, and the model list follows', async () => {
    expect(await call(`${E}/config`, admin)).toEqual({ status: 200, body: { ENABLE_EVALUATION_ARENA_MODELS: true, EVALUATION_ARENA_MODELS: [] } });
    const arenaIds = async () => ((await call('/api/models', bob)).body.data as any[]).filter((m) => m.owned_by === 'arena').map((m) => [m.id, m.name]);
    expect(await arenaIds()).toEqual([['arena-model', 'Arena Model']]);
    expect((await call(`${E}/config`, ada)).status).toBe(401);
    const off = await post(`${E}/config`, { ENABLE_EVALUATION_ARENA_MODELS: false }, admin);
    expect(off).toEqual({ status: 200, body: { ENABLE_EVALUATION_ARENA_MODELS: false, EVALUATION_ARENA_MODELS: [] } });
    const models = [{ id: 'duel', name: 'Duel', meta: { model_ids: ['model-a', 'model-b'] } }];
    expect((await post(`${E}/config`, { EVALUATION_ARENA_MODELS: models }, admin)).body).toEqual({ ENABLE_EVALUATION_ARENA_MODELS: false, EVALUATION_ARENA_MODELS: models });
    expect((await call(`${E}/config`, admin)).body).toEqual({ ENABLE_EVALUATION_ARENA_MODELS: false, EVALUATION_ARENA_MODELS: models });
    expect((await post(`${E}/config`, { ENABLE_EVALUATION_ARENA_MODELS: 'maybe' }, admin)).status).toBe(422);
    expect((await post(`${E}/config`, { ENABLE_EVALUATION_ARENA_MODELS: true }, bob)).status).toBe(401);
    // The model list follows: no arena while it is off, the admin's arena models once on.
    expect(((await call('/api/models', bob)).body.data as any[]).map((m) => m.id)).toEqual(OPENAI_MODELS);
    expect(await arenaIds()).toEqual([]);
    expect((await post(`${E}/config`, { ENABLE_EVALUATION_ARENA_MODELS: true }, admin)).status).toBe(200);
    expect(await arenaIds()).toEqual([['duel', 'Duel']]);
    const evs = await db<{ event: any }[]>`select event from outbox where event ->> 'event' = 'config.updated' and event -> 'subject' ->> 'id' = 'evaluations' order by seq`;
    expect(evs.map((e) => e.event.data.keys)).toEqual([['ENABLE_EVALUATION_ARENA_MODELS'], ['EVALUATION_ARENA_MODELS'], ['ENABLE_EVALUATION_ARENA_MODELS']]);
  });
});

describe('events', () => {
  it('feedback.created, .updated and .deleted reach the bus: what was rated, never the comment', async () => {
    const f = await post(`${E}/feedback`, rating({ model: 'model-z', chat: 'chat-ev', message: 'msg-ev' }), ada);
    await post(`${E}/feedback/${f.body.id}`, { type: 'rating', data: { rating: -1, model_id: 'model-z' } }, ada);
    await del(`${E}/feedback/${f.body.id}`, ada);
    await expect.poll(async () => (await feedbackEvents()).filter((e) => e.event.subject?.id === f.body.id).length, { timeout: 10_000 }).toBe(3);
    const evs = (await feedbackEvents()).filter((e) => e.event.subject?.id === f.body.id);
    expect(evs.map((e) => e.subject)).toEqual(['created', 'updated', 'deleted'].map((op) => `${stack.ns}.events.feedback.${op}`));
    expect(evs[0]!.event).toMatchObject({
      event: 'feedback.created',
      actor: { id: ada.id, type: 'user' },
      subject: { type: 'feedback', id: f.body.id },
      data: { type: 'rating', model_id: 'model-z', rating: 1, chat_id: 'chat-ev', message_id: 'msg-ev' },
    });
    expect(evs[1]!.event.data).toMatchObject({ rating: -1 });
    expect(evs[2]!.event.data).toMatchObject({ model_id: 'model-z', rating: -1 });
    expect(JSON.stringify(evs)).not.toMatch(/Spot on|Accurate information|snapshot/);
    // The bulk deletes published their counts.
    const bulk = (await feedbackEvents()).filter((e) => e.event.event === 'feedback.deleted' && e.event.data.count !== undefined);
    expect(bulk.map((e) => e.event.data.count)).toEqual(expect.arrayContaining([expect.any(Number)]));
    expect(bulk.length).toBeGreaterThanOrEqual(2);
  });
});

describe('hostile input', () => {
  /** Bodies no form should take, or that stress what it stores: never a 5xx, always Open WebUI's error shape. */
  const BODIES: unknown[] = [
    null, [], 'rating', 12, true, {}, { type: null }, { type: 'rating', data: [] }, { type: 'rating', data: { rating: 1e308 } },
    { type: 'rating', data: { rating: '\u0000' } }, { type: 'rating\u0000' }, { type: 'rating', meta: { '\u0000': 1 } },
    { type: 'rating', snapshot: { chat: 'x' } }, { type: 'rating', data: { model_id: 'm', sibling_model_ids: [null] } },
    { type: 'x'.repeat(100_000) }, { ENABLE_EVALUATION_ARENA_MODELS: null, EVALUATION_ARENA_MODELS: [1, 2] },
    JSON.parse(`${'{"a":'.repeat(500)}1${'}'.repeat(500)}`),
  ];
  it('on every ratings route that takes a body', async () => {
    const f = await post(`${E}/feedback`, rating({ message: 'hostile' }), ada);
    for (const path of [`${E}/feedback`, `${E}/feedback/${f.body.id}`, `${E}/config`]) {
      for (const body of BODIES) {
        const r = await post(path, body, admin);
        expect(r.status, `${path} ${JSON.stringify(body).slice(0, 80)} → ${JSON.stringify(r.body).slice(0, 200)}`).toBeLessThan(500);
        if (r.status >= 400) expect(r.body).toHaveProperty('detail');
      }
    }
    // The stored rating is still readable and the leaderboard still computes.
    expect((await call(`${E}/feedback/${f.body.id}`, ada)).status).toBe(200);
    expect((await call(`${E}/leaderboard`, admin)).status).toBe(200);
    for (const id of ['%00', '..', 'x'.repeat(2000), '%F0%9F%92%A9']) {
      for (const method of ['GET', 'DELETE'] as const) expect((await call(`${E}/feedback/${id}`, admin, method)).status).toBeLessThan(500);
    }
  });
});
