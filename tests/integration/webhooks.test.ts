import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Stack, waitFor, type Edge, type Proc } from '../support/local-stack.ts';
import { chatClient, chatDb, eventsNamed, NOT_FOUND, type Account } from './chat-fixture.ts';
import { Receiver } from './webhook-receiver.ts';

/**
 * Webhooks end to end: the registry on the chat face (Open WebUI 0.10.2's
 * /api/events/webhooks), the dispatcher delivering the EVENTS stream to real HTTP receivers on
 * loopback (local fetches allowed, as an operator would for an internal receiver), with a retry
 * schedule compressed to milliseconds. Signatures are checked with the `standardwebhooks` package.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const legacy = new Receiver();
const receivers: Receiver[] = [legacy];
let admin: Account, u1: Account, u2: Account;
let dispatcher: Proc;

const DISPATCHER_ENV = {
  ENABLE_LOCAL_WEB_FETCH: 'true',
  WEBHOOK_RETRY_SCHEDULE: '50ms,100ms,200ms,400ms',
  WEBHOOK_TIMEOUT_MS: '5000',
  WEBHOOK_CONCURRENCY: '2',
  WEBHOOK_BREAKER_FAILURES: '100',
  WEBHOOK_DISABLE_AFTER_MS: '3000',
  WEBHOOK_LEASE_MS: '1500',
  WEBHOOK_POLL_MS: '200',
};

const receiver = async () => {
  const r = await new Receiver().start();
  receivers.push(r);
  return r;
};
const hook = async (body: Record<string, unknown>) => {
  const r = await call('/api/events/webhooks', admin, 'POST', body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { id: string; secret: string; url: string };
};
const remove = async (id: string) => expect((await call(`/api/events/webhooks/${id}`, admin, 'DELETE')).body).toEqual({ status: true });
const group = async (name: string) => {
  const r = await call('/api/v1/groups/create', admin, 'POST', { name, description: '' });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { id: string };
};
const chat = async (who: Account, title: string) => {
  const r = await call('/api/v1/chats/new', who, 'POST', { chat: { title, messages: [] } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { id: string };
};
const deliveries = async (id: string) => (await call(`/api/events/webhooks/${id}/deliveries`, admin)).body as any[];
const eventIdOf = async (name: string, subjectId: string) => {
  await waitFor(async () => (await eventsNamed(db, name)).some((e) => e.subject?.id === subjectId), 10_000, () => `${name} for ${subjectId} not in the outbox`);
  return (await eventsNamed(db, name)).find((e) => e.subject?.id === subjectId).id as string;
};

beforeAll(async () => {
  await legacy.start();
  await stack.startChatWorker({ ENABLE_LOCAL_WEB_FETCH: 'true', WEBHOOK_URL: legacy.url }, { ingest: false });
  dispatcher = await stack.startWebhookDispatcher(DISPATCHER_ENV);
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  u1 = await addUser(admin, 'One');
  u2 = await addUser(admin, 'Two');
});
afterAll(async () => {
  if (process.env.WEBHOOK_TEST_LOGS) for (const w of stack.dispatchers) process.stderr.write(w.log());
  await db.end({ timeout: 5 });
  await stack.close();
  for (const r of receivers) await r.stop();
});

describe('registry', () => {
  it('turns WEBHOOK_URL into webhook "default" receiving every event, which delivers', async () => {
    const list = (await call('/api/events/webhooks', admin)).body;
    expect(list).toEqual([{ id: 'default', name: 'Default webhook', url: legacy.url, enabled: true, events: ['*'], targets: null, created_at: expect.any(Number), updated_at: expect.any(Number) }]);
    // The admin's sign-up (before any test ran) reached it as Open WebUI's envelope.
    await legacy.until(() => legacy.events('auth.signup').length > 0, 'auth.signup delivered');
    const ev = legacy.events('auth.signup')[0];
    expect(Object.keys(ev).sort()).toEqual(['actor', 'created_at', 'data', 'event', 'id', 'instance_id', 'message', 'operation', 'resource', 'schema', 'source', 'subject', 'version']);
    expect(ev).toMatchObject({ schema: '0.10.2', resource: 'auth', operation: 'signup', actor: { id: admin.id, type: 'user' } });
  });

  it('creates (secret once), lists, updates and deletes in the stored shape, announcing each change', async () => {
    const r = await receiver();
    const created = await hook({ name: 'Audit', url: r.url, events: ['chat.*', 'auth.login'] });
    expect(Object.keys(created).sort()).toEqual(['created_at', 'enabled', 'events', 'id', 'name', 'secret', 'targets', 'updated_at', 'url']);
    expect(created).toMatchObject({ name: 'Audit', url: r.url, enabled: true, events: ['chat.*', 'auth.login'], targets: null });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const listed = (await call('/api/events/webhooks', admin)).body.find((w: any) => w.id === created.id);
    expect(listed).not.toHaveProperty('secret');
    // Defaults: name "Webhook", events ["*"], enabled.
    const bare = await hook({ url: r.url });
    expect(bare).toMatchObject({ name: 'Webhook', events: ['*'], enabled: true, targets: null });

    const upd = await call(`/api/events/webhooks/${created.id}`, admin, 'PUT', { enabled: false, targets: [{ type: 'user', id: u1.id }] });
    expect(upd.status).toBe(200);
    expect(upd.body).toMatchObject({ id: created.id, name: 'Audit', url: r.url, enabled: false, events: ['chat.*', 'auth.login'], targets: [{ type: 'user', id: u1.id }] });
    expect(upd.body).not.toHaveProperty('secret');

    await remove(created.id);
    await remove(bare.id);
    expect((await call(`/api/events/webhooks/${created.id}`, admin, 'DELETE')).status).toBe(404);
    const announced = (await eventsNamed(db, 'config.webhook.updated')).filter((e) => e.subject.id === created.id);
    expect(announced.map((e) => e.data.action)).toEqual(['created', 'updated', 'deleted']);
    expect(JSON.stringify(announced)).not.toContain('whsec_');
  });

  it('answers 400 for a bad pattern, target or URL, 404 for an unknown id, 422 for a wrong shape, 401 for a non-admin', async () => {
    const r = await receiver();
    const bad = async (body: unknown, detail: RegExp) => {
      const res = await call('/api/events/webhooks', admin, 'POST', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.detail).toMatch(detail);
    };
    await bad({ url: r.url, events: ['chat.exploded'] }, /Unknown event: chat.exploded/);
    await bad({ url: r.url, events: ['nothing.*'] }, /Unknown event pattern/);
    await bad({ url: r.url, events: ['chat.**'] }, /Invalid event pattern/);
    await bad({ url: r.url, events: [] }, /At least one/);
    await bad({ url: r.url, targets: [{ type: 'team', id: 'x' }] }, /Invalid webhook target type/);
    await bad({ url: r.url, targets: [{ type: 'user', id: 'nobody' }] }, /Unknown webhook target user/);
    await bad({ url: 'ftp://example.com/x' }, /http or https/);
    await bad({ url: 'not a url' }, /Invalid URL/);
    expect((await call('/api/events/webhooks', admin, 'POST', { events: ['*'] })).status).toBe(422);
    expect((await call('/api/events/webhooks/nope', admin, 'PUT', { enabled: false })).body).toEqual({ detail: NOT_FOUND });
    expect((await call('/api/events/webhooks/nope/deliveries', admin)).status).toBe(404);
    expect((await call('/api/events/webhooks', u1)).status).toBe(401);
    expect((await call('/api/events/webhooks', u1, 'POST', { url: r.url })).status).toBe(401);
  });
});

describe('delivery', () => {
  it('signs per Standard Webhooks: the standardwebhooks package verifies it, with both secrets during a rotation', async () => {
    const r = await receiver();
    const w = await hook({ url: r.url, events: ['group.created'] });
    const g = await group('Signed');
    await r.until(() => r.got.length === 1, 'one delivery');
    const got = r.got[0]!;
    expect(got.body).toMatchObject({ event: 'group.created', subject: { type: 'group', id: g.id } });
    expect(got.headers['webhook-id']).toMatch(/^msg_/);
    expect(Number(got.headers['webhook-timestamp'])).toBeGreaterThan(1_700_000_000);
    expect(new StandardWebhook(w.secret).verify(got.raw, got.headers)).toEqual(got.body);
    // A wrong secret or a changed body fails verification.
    expect(() => new StandardWebhook(`whsec_${Buffer.from('x'.repeat(24)).toString('base64')}`).verify(got.raw, got.headers)).toThrow();
    expect(() => new StandardWebhook(w.secret).verify(got.raw.replace('Signed', 'Forged'), got.headers)).toThrow();

    const rot = await call(`/api/events/webhooks/${w.id}/secret/rotate`, admin, 'POST', { overlap_seconds: 3600 });
    expect(rot.status).toBe(200);
    expect(rot.body.secret).toMatch(/^whsec_/);
    expect(rot.body.secret).not.toBe(w.secret);
    await group('Rotated');
    await r.until(() => r.got.length === 2, 'second delivery');
    const second = r.got[1]!;
    expect(second.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new StandardWebhook(rot.body.secret).verify(second.raw, second.headers)).toEqual(second.body);
    expect(new StandardWebhook(w.secret).verify(second.raw, second.headers)).toEqual(second.body);
    await remove(w.id);
  });

  it('filters by pattern and by targets (users, group members)', async () => {
    const [rUser, rGroup, rAll] = [await receiver(), await receiver(), await receiver()];
    const team = await group('Team');
    expect((await call(`/api/v1/groups/id/${team.id}/users/add`, admin, 'POST', { user_ids: [u2.id] })).status).toBe(200);
    const wUser = await hook({ url: rUser.url, events: ['chat.created'], targets: [{ type: 'user', id: u1.id }] });
    const wGroup = await hook({ url: rGroup.url, events: ['chat.*'], targets: [{ type: 'group', id: team.id }] });
    const wAll = await hook({ url: rAll.url, events: ['group.*'] });
    const c1 = await chat(u1, 'by one');
    const c2 = await chat(u2, 'by two');
    const g = await group('Filtered');
    const ids = [await eventIdOf('chat.created', c1.id), await eventIdOf('chat.created', c2.id), await eventIdOf('group.created', g.id)];
    // Every event reached the legacy webhook (all events): by then each webhook's deliveries were recorded.
    await legacy.until(() => ids.every((id) => legacy.events().some((e) => e.id === id)), 'all three at the legacy webhook');
    await rUser.until(() => rUser.got.length === 1, 'u1 chat');
    await rGroup.until(() => rGroup.got.length === 1, 'u2 chat');
    await rAll.until(() => rAll.events('group.created').some((e) => e.id === ids[2]), 'group.created');
    expect((await deliveries(wUser.id)).map((d) => d.event_id)).toEqual([ids[0]]);
    expect((await deliveries(wGroup.id)).map((d) => d.event_id)).toEqual([ids[1]]);
    expect((await deliveries(wAll.id)).map((d) => d.event)).toEqual(['group.created']);
    for (const w of [wUser, wGroup, wAll]) await remove(w.id);
  });

  it('retries a 500 twice, then delivers once more with the same id; the log says so', async () => {
    const r = await receiver();
    r.behave = (n) => ({ status: n <= 2 ? 500 : 200 });
    const w = await hook({ url: r.url, events: ['group.created'] });
    await group('Flaky');
    await r.until(() => r.completed === 3, 'three attempts');
    expect(new Set(r.got.map((g) => g.headers['webhook-id'])).size).toBe(1);
    await waitFor(async () => (await deliveries(w.id))[0]?.status === 'delivered', 10_000, () => 'not delivered');
    const [d] = await deliveries(w.id);
    expect(d).toMatchObject({ id: r.got[0]!.headers['webhook-id'], status: 'delivered', attempts: 3, last_status: 200, last_error: null, event: 'group.created' });
    expect(d.latency_ms).toBeGreaterThanOrEqual(0);
    // Nothing more arrives after the success (no duplicate attempt).
    await group('After flaky');
    await r.until(() => r.got.length === 4, 'the next event');
    expect(r.got[3]!.headers['webhook-id']).not.toBe(r.got[0]!.headers['webhook-id']);
    await remove(w.id);
  });

  it('honours Retry-After on 429', async () => {
    const r = await receiver();
    r.behave = (n) => (n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 });
    const w = await hook({ url: r.url, events: ['group.created'] });
    await group('Rate limited');
    await r.until(() => r.completed === 2, 'second attempt');
    const t1 = Number(r.got[0]!.headers['webhook-timestamp']);
    const t2 = Number(r.got[1]!.headers['webhook-timestamp']);
    // Schedule says 50 ms; the receiver asked for a second.
    expect(t2 - t1).toBeGreaterThanOrEqual(1);
    await remove(w.id);
  });

  it('delivers to a receiver that was down when the event happened, once it is back', async () => {
    const r = await receiver();
    const w = await hook({ url: r.url, events: ['group.created'] });
    await r.stop();
    const g = await group('While down');
    // Its own event's delivery: an earlier test's event still on its way may reach the new webhook too.
    const id = await eventIdOf('group.created', g.id);
    const mine = async () => (await deliveries(w.id)).find((d) => d.event_id === id);
    await waitFor(async () => ((await mine())?.attempts ?? 0) >= 1, 10_000, () => 'no failed attempt recorded');
    const failed = (await mine())!;
    expect(failed.status).toBe('pending');
    expect(failed.last_error).toMatch(/ECONNREFUSED/);
    await r.start(r.port);
    await r.until(() => r.events().some((e) => e.id === id), 'delivered after the receiver came back');
    expect(r.events().find((e) => e.id === id)!.event).toBe('group.created');
    await remove(w.id);
  });

  it('a slow receiver does not hold up a fast one', async () => {
    const [slow, fast] = [await receiver(), await receiver()];
    slow.behave = () => ({ status: 200, delayMs: 1500 });
    const ws = await hook({ url: slow.url, events: ['group.created'] });
    const wf = await hook({ url: fast.url, events: ['group.created'] });
    const made: { id: string }[] = [];
    for (let i = 0; i < 6; i++) made.push(await group(`Burst ${i}`));
    // Counted by event id: an earlier test's event still on its way may reach these webhooks too.
    const ids = await Promise.all(made.map((g) => eventIdOf('group.created', g.id)));
    const has = (r: typeof fast) => ids.filter((id) => r.events().some((e) => e.id === id)).length;
    await fast.until(() => has(fast) === 6, 'all six at the fast receiver');
    // The slow one (two at a time, 1.5 s each) has not finished its six.
    expect(has(slow)).toBeLessThan(6);
    await slow.until(() => has(slow) === 6, 'all six at the slow receiver', 20_000);
    await remove(ws.id);
    await remove(wf.id);
  });

  it('dead-letters after the schedule; a dead letter is listed and re-sent with the same id', async () => {
    const r = await receiver();
    r.behave = () => ({ status: 503 });
    const w = await hook({ url: r.url, events: ['group.created'] });
    await group('Doomed');
    await waitFor(async () => (await deliveries(w.id))[0]?.status === 'dead', 15_000, () => 'not dead-lettered');
    const [d] = await deliveries(w.id);
    // One attempt plus one per step of the schedule (4).
    expect(d).toMatchObject({ status: 'dead', attempts: 5, last_status: 503, last_error: 'HTTP 503' });
    expect(r.got).toHaveLength(5);
    const dead = (await call('/api/events/webhooks/dead-letters', admin)).body;
    expect(dead.map((x: any) => x.id)).toContain(d.id);
    r.behave = () => ({ status: 200 });
    expect((await call('/api/events/webhooks/dead-letters/resend', admin, 'POST', { ids: [d.id] })).body).toEqual({ status: true, count: 1 });
    await r.until(() => r.completed === 6 && r.got[5]!.answered, 're-sent');
    expect(r.got[5]!.headers['webhook-id']).toBe(d.id);
    await waitFor(async () => (await deliveries(w.id))[0]?.status === 'delivered', 10_000, () => 'not delivered after resend');
    expect((await call('/api/events/webhooks/dead-letters', admin)).body.map((x: any) => x.id)).not.toContain(d.id);
    await remove(w.id);
  });

  it('sends a test, and replays one delivery', async () => {
    const r = await receiver();
    const w = await hook({ url: r.url, events: ['chat.deleted'] });
    const t = await call(`/api/events/webhooks/${w.id}/test`, admin, 'POST');
    expect(t.status).toBe(200);
    expect(t.body).toEqual({ status: true, delivery_id: expect.stringMatching(/^msg_/) });
    await r.until(() => r.got.length === 1, 'test delivered');
    expect(r.got[0]!.body).toMatchObject({ event: 'webhook.test', subject: { type: 'webhook', id: w.id }, actor: { id: admin.id } });
    expect(r.got[0]!.headers['webhook-id']).toBe(t.body.delivery_id);
    const again = await call(`/api/events/webhooks/${w.id}/deliveries/${t.body.delivery_id}/replay`, admin, 'POST');
    expect(again.body).toEqual({ status: true, delivery_id: t.body.delivery_id });
    await r.until(() => r.got.length === 2, 'replayed');
    expect(r.got[1]!.raw).toBe(r.got[0]!.raw);
    expect((await call(`/api/events/webhooks/${w.id}/deliveries/msg_nope/replay`, admin, 'POST')).status).toBe(404);
    await remove(w.id);
  });

  it('replays everything since a time from the stream to a webhook created afterwards', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    const groups = [await group('Old 1'), await group('Old 2'), await group('Old 3')];
    const ids = await Promise.all(groups.map((g) => eventIdOf('group.created', g.id)));
    await legacy.until(() => ids.every((id) => legacy.events().some((e) => e.id === id)), 'old events delivered to the legacy webhook');
    const r = await receiver();
    const w = await hook({ url: r.url, events: ['group.created'] });
    // None of the old events reached it before the replay (an event of a previous test still on its way might).
    const before = await deliveries(w.id);
    expect(before.filter((d) => ids.includes(d.event_id))).toEqual([]);
    const rep = await call(`/api/events/webhooks/${w.id}/replay`, admin, 'POST', { since });
    expect(rep.status).toBe(200);
    expect(rep.body.count).toBeGreaterThanOrEqual(3);
    await r.until(() => ids.every((id) => r.events().some((e) => e.id === id)), 'the three old events replayed');
    expect(r.events().every((e) => e.event === 'group.created' && e.created_at >= since)).toBe(true);
    await remove(w.id);
  });

  it('a dispatcher killed mid-delivery loses nothing: the next one delivers it, same id', async () => {
    const r = await receiver();
    r.behave = (n) => (n === 1 ? { hang: true } : { status: 200 });
    const w = await hook({ url: r.url, events: ['group.created'] });
    await group('Interrupted');
    await r.until(() => r.got.length === 1, 'first attempt in flight');
    await dispatcher.stop('SIGKILL');
    stack.workers.splice(stack.workers.indexOf(dispatcher), 1);
    dispatcher = await stack.startWebhookDispatcher(DISPATCHER_ENV);
    await r.until(() => r.completed === 1, 'delivered by the new dispatcher');
    expect(r.got.map((g) => g.headers['webhook-id'])).toEqual([r.got[0]!.headers['webhook-id'], r.got[0]!.headers['webhook-id']]);
    await waitFor(async () => (await deliveries(w.id))[0]?.status === 'delivered', 10_000, () => 'not delivered');
    await remove(w.id);
  });

  it('disables an endpoint that keeps failing past the limit, and says so with webhook.disabled', async () => {
    const [bad, watcher] = [await receiver(), await receiver()];
    bad.behave = () => ({ status: 500 });
    const w = await hook({ url: bad.url, events: ['group.created'] });
    const watch = await hook({ url: watcher.url, events: ['webhook.*'] });
    for (let i = 0; i < 60; i++) {
      const listed = (await call('/api/events/webhooks', admin)).body.find((x: any) => x.id === w.id);
      if (!listed.enabled) break;
      await group(`Failing ${i}`);
      await new Promise((res) => setTimeout(res, 250));
    }
    expect((await call('/api/events/webhooks', admin)).body.find((x: any) => x.id === w.id).enabled).toBe(false);
    await watcher.until(() => watcher.events('webhook.disabled').length === 1, 'webhook.disabled delivered');
    expect(watcher.events('webhook.disabled')[0]).toMatchObject({ resource: 'webhook', operation: 'disabled', subject: { type: 'webhook', id: w.id }, data: { webhook_id: w.id, url: bad.url } });
    // Switching it back on is the admin's call.
    expect((await call(`/api/events/webhooks/${w.id}`, admin, 'PUT', { enabled: true })).body.enabled).toBe(true);
    await remove(w.id);
    await remove(watch.id);
  });
});
