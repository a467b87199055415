import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, waitFor, type Edge } from '../support/local-stack.ts';
import { chatClient, type Account } from './chat-fixture.ts';

/**
 * Admin settings and the caller rows requests are authorised with are cached by each chat worker
 * replica and dropped when any replica changes them: a change made through one replica governs
 * the next requests on all of them, no restart.
 */
const stack = new Stack();
let edge: Edge;
let admin: Account;
let user: Account;
// This file checks statuses and details only, never content types.
const { call, signup, addUser } = chatClient(() => edge.chatUrl, { json: false });

beforeAll(async () => {
  await stack.startChatWorker();
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  user = await addUser(admin, 'U');
});
afterAll(() => stack.close());

const statuses = async (n: number) => Promise.all(Array.from({ length: n }, () => call('/api/v1/memories/', user).then((r) => r.status)));

describe('settings across replicas', () => {
  it('switching memories off and on applies to every replica without a restart', async () => {
    expect(new Set(await statuses(20))).toEqual(new Set([200]));
    expect((await call('/api/v1/auths/admin/config', admin, 'POST', { ENABLE_MEMORIES: false })).body.ENABLE_MEMORIES).toBe(false);
    // Delivery of the change to the other replica is a NOTIFY away: allow it a moment, bounded.
    await waitFor(async () => (await statuses(10)).every((s) => s === 404), 2000, () => 'memories still on somewhere');
    expect(new Set(await statuses(30))).toEqual(new Set([404]));
    await call('/api/v1/auths/admin/config', admin, 'POST', { ENABLE_MEMORIES: true });
    await waitFor(async () => (await statuses(10)).every((s) => s === 200), 2000, () => 'memories still off somewhere');
    expect(new Set(await statuses(30))).toEqual(new Set([200]));
  });
});

describe('callers across replicas', () => {
  it('a demoted, then deleted user loses access on every replica', async () => {
    const victim = await addUser(admin, 'Victim');
    const mine = async (n: number) => Promise.all(Array.from({ length: n }, () => call('/api/v1/memories/', victim).then((r) => r.status)));
    // Both replicas have served (and cached) this caller.
    expect(new Set(await mine(20))).toEqual(new Set([200]));
    const demoted = await call(`/api/v1/users/${victim.id}/update`, admin, 'POST', { role: 'pending', name: 'Victim', email: victim.email, profile_image_url: '/user.png' });
    expect(demoted.status).toBe(200);
    await waitFor(async () => (await mine(10)).every((s) => s === 401), 2000, () => 'the demoted user still passes somewhere');
    expect(new Set(await mine(30))).toEqual(new Set([401]));
    // Pending users may still read their session; once deleted, not even that.
    expect((await call('/api/v1/auths/', victim)).status).toBe(200);
    expect((await call(`/api/v1/users/${victim.id}`, admin, 'DELETE')).status).toBe(200);
    await waitFor(async () => (await call('/api/v1/auths/', victim)).status === 401, 2000, () => 'the deleted user still passes somewhere');
    const after = await Promise.all(Array.from({ length: 20 }, () => call('/api/v1/auths/', victim).then((r) => r.status)));
    expect(new Set(after)).toEqual(new Set([401]));
  });
});

describe('workers away', () => {
  it('with no chat worker serving, requests get a 503 JSON detail (completions too)', async () => {
    await Promise.all(stack.workers.map((w) => w.stop()));
    for (const [path, body] of [['/api/v1/memories/', undefined], ['/api/chat/completions', { model: 'x', messages: [] }]] as const) {
      // No responders is a 503 at once; a worker that took the request and died would be a 504 later.
      const r = await call(path, user, body === undefined ? 'GET' : 'POST', body);
      expect(r.status).toBe(503);
      expect(r.body.detail).toMatch(/no worker is serving chat\.[a-z.]+; the service is unavailable/);
    }
  });
});
