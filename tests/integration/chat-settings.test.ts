import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, waitFor, type Edge } from '../../scripts/src/local-stack.ts';
import { chatClient, type Account } from './chat-fixture.ts';

/**
 * Admin settings are cached by each chat worker replica and dropped when any replica saves:
 * a change made through one replica governs the next requests on all of them, no restart.
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
