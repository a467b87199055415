import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { natsUrl, Stack, waitFor, type Edge, type Proc } from '../support/local-stack.ts';
import { chatClient, chatDb, type Account } from './chat-fixture.ts';
import { Receiver } from './webhook-receiver.ts';

/**
 * The webhook registry travels the config bucket (docs/config.md
 * group `webhooks`): two dispatcher replicas share the events; a webhook created or disabled through
 * the API applies on both with no restart (deliveries start, then stop), and both report the group's
 * new revision in `GET /api/v1/configs/status`. A change made behind the bus's back (a row edited in
 * Postgres, as if the writer died before announcing) converges through the reconciler.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup } = chatClient(() => edge.chatUrl);
const receivers: Receiver[] = [];
let admin: Account;
const dispatchers: Proc[] = [];

const DISPATCHER_ENV = {
  ENABLE_LOCAL_WEB_FETCH: 'true',
  WEBHOOK_RETRY_SCHEDULE: '50ms,100ms',
  WEBHOOK_TIMEOUT_MS: '5000',
  WEBHOOK_POLL_MS: '200',
  // The reconciler's period: short so the behind-the-back edit converges within the test's bound.
  CONFIG_RECONCILE_MS: '500',
};

type Replica = { service: string; instance: string; pid: number; applied: Record<string, { revision: number; digest: string }>; in_step: boolean };
type Status = { groups: Record<string, { revision: number; digest: string; by: string }>; replicas: Replica[] };

async function status(): Promise<Status> {
  const r = await call('/api/v1/configs/status', admin);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as Status;
}

/** Wait (bounded) until both dispatchers report `webhooks` at the group's current revision, which must be past `after`; returns it. */
async function bothAt(after: number): Promise<Status> {
  let last: Status | undefined;
  const pids = new Set(dispatchers.map((d) => d.child.pid));
  await waitFor(
    async () => {
      last = await status();
      const g = last.groups.webhooks;
      const rs = last.replicas.filter((r) => r.service === 'webhook-dispatcher' && pids.has(r.pid));
      return !!g && g.revision > after && rs.length === 2 && rs.every((r) => r.applied.webhooks?.revision === g.revision && r.in_step);
    },
    10_000,
    () => `dispatchers did not both reach a webhooks revision after ${after}: ${JSON.stringify(last)}`,
  );
  return last!;
}

const receiver = async () => {
  const r = await new Receiver().start();
  receivers.push(r);
  return r;
};
const newChat = async (title: string) => {
  const r = await call('/api/v1/chats/new', admin, 'POST', { chat: { title, messages: [] } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body as { id: string }).id;
};
const chatIds = (r: Receiver) => new Set(r.events().filter((b) => b?.resource === 'chat').map((b) => b.subject?.id as string));

beforeAll(async () => {
  await stack.startChatWorker({ ENABLE_LOCAL_WEB_FETCH: 'true', CONFIG_RECONCILE_MS: '500' }, { ingest: false });
  dispatchers.push(await stack.startWebhookDispatcher(DISPATCHER_ENV));
  dispatchers.push(await stack.startWebhookDispatcher(DISPATCHER_ENV));
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
});
afterAll(async () => {
  if (process.env.WEBHOOK_TEST_LOGS) for (const w of stack.dispatchers) process.stderr.write(w.log());
  await db.end({ timeout: 5 });
  await stack.close();
  for (const r of receivers) await r.stop();
});

describe('webhook registry on the config bus', () => {
  it('both dispatchers run the registry revision from start and report it', async () => {
    const s = await status();
    expect(s.groups.webhooks).toMatchObject({ revision: expect.any(Number), digest: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const pids = new Set(dispatchers.map((d) => d.child.pid));
    const rs = s.replicas.filter((r) => r.service === 'webhook-dispatcher' && pids.has(r.pid));
    expect(rs).toHaveLength(2);
    for (const r of rs) expect(r.applied.webhooks).toMatchObject({ revision: s.groups.webhooks!.revision, digest: s.groups.webhooks!.digest });
  });

  it('a webhook created, then disabled, through the API applies on both replicas live: deliveries start, then stop', async () => {
    // `fence` is on throughout: once it has an event, every dispatcher has matched that event.
    const fence = await receiver();
    const r = await receiver();
    const before = (await status()).groups.webhooks?.revision ?? 0;
    const f = await call('/api/events/webhooks', admin, 'POST', { name: 'Fence', url: fence.url, events: ['chat.*'] });
    expect(f.status, JSON.stringify(f.body)).toBe(200);
    const afterFence = (await bothAt(before)).groups.webhooks!.revision;

    const created = await call('/api/events/webhooks', admin, 'POST', { name: 'Live', url: r.url, events: ['chat.*'] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = (created.body as { id: string }).id;
    const on = await bothAt(afterFence);
    // The bus carries fingerprints, never a secret.
    expect(JSON.stringify(on)).not.toContain('whsec_');

    // Several events, shared by the two replicas' pull consumer: every one reaches the new webhook.
    const first: string[] = [];
    for (let i = 0; i < 8; i++) first.push(await newChat(`on ${i}`));
    await r.until(() => first.every((c) => chatIds(r).has(c)), 'every chat created after the webhook was delivered to it');

    const off = await call(`/api/events/webhooks/${id}`, admin, 'PUT', { enabled: false });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    await bothAt(on.groups.webhooks!.revision);
    const delivered = r.got.length;
    const later: string[] = [];
    for (let i = 0; i < 8; i++) later.push(await newChat(`off ${i}`));
    await fence.until(() => later.every((c) => chatIds(fence).has(c)), 'the fence received the later chats');
    expect(later.filter((c) => chatIds(r).has(c))).toEqual([]);
    expect(r.got.length).toBe(delivered);
  });

  it('a row changed behind the bus (the writer died before announcing) converges on both replicas through the reconciler', async () => {
    const fence = await receiver();
    const r = await receiver();
    const f = await call('/api/events/webhooks', admin, 'POST', { name: 'Fence 2', url: fence.url, events: ['chat.*'] });
    expect(f.status).toBe(200);
    const created = await call('/api/events/webhooks', admin, 'POST', { name: 'Behind', url: r.url, events: ['chat.*'] });
    expect(created.status).toBe(200);
    const id = (created.body as { id: string }).id;
    const on = await bothAt(0);
    const c1 = await newChat('before the edit');
    await r.until(() => chatIds(r).has(c1), 'delivered before the edit');

    // Postgres moves, nobody announces: the reconcilers (chat worker and dispatchers) notice the
    // digest differs and announce; both dispatchers then read the rows and stop delivering.
    await db`update webhook set enabled = false where id = ${id}`;
    const moved = await bothAt(on.groups.webhooks!.revision);
    expect(moved.groups.webhooks!.digest).not.toBe(on.groups.webhooks!.digest);
    const later: string[] = [];
    for (let i = 0; i < 6; i++) later.push(await newChat(`after the edit ${i}`));
    await fence.until(() => later.every((c) => chatIds(fence).has(c)), 'the fence received the later chats');
    expect(later.filter((c) => chatIds(r).has(c))).toEqual([]);
  });

  it('scripts/config status lists both dispatchers with the webhooks revision they run, exit 0 when in step', async () => {
    const s = await bothAt(0);
    const g = s.groups.webhooks!;
    const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve) =>
      execFile(join(import.meta.dirname, '..', '..', 'scripts', 'config'), ['status'], { env: { PATH: process.env.PATH, NATS_URL: natsUrl(), GATEHOUSE_NS: stack.ns }, timeout: 30_000 }, (err, out) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout: out }),
      ),
    );
    expect(code, stdout).toBe(0);
    expect(stdout).toContain(`webhooks: revision ${g.revision}, ${g.digest.slice(0, 12)}`);
    const pids = new Set(dispatchers.map((d) => d.child.pid));
    const rs = s.replicas.filter((r) => r.service === 'webhook-dispatcher' && pids.has(r.pid));
    expect(rs).toHaveLength(2);
    for (const r of rs) expect(stdout).toMatch(new RegExp(`webhook-dispatcher ${r.instance} \\(pid ${r.pid} [^\\n]*: webhooks@${g.revision}(\\n|$)`));
  });
});
