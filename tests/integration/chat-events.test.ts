import { randomBytes, randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { headers as natsHeaders } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatEvent, EVENTS_STREAM } from '@gatehouse/contracts';
import { Outbox } from '../../services/chat-worker/src/events/outbox.ts';
import type { UserRow } from '../../services/chat-worker/src/context.ts';
import { Stack, testDatabaseUrl, waitFor, type Proc } from '../support/local-stack.ts';

/**
 * The event outbox: an event written in a transaction reaches the JetStream stream iff the
 * transaction commits, exactly once (also across a relay that died after publishing, and with
 * two relays racing), in Open WebUI's envelope with secrets stripped.
 */
const stack = new Stack();
const schema = `chat_${stack.ns}`;
const sql = postgres(testDatabaseUrl(), { max: 4, onnotice: () => undefined, connection: { search_path: `${schema}, public` } });
const outbox = new Outbox('test-instance', `${schema}_outbox`);
let worker: Proc;
const actor: UserRow = {
  id: 'u-actor', email: 'actor@example.com', name: 'Actor', role: 'user', profile_image_url: '/user.png', bio: null, gender: null,
  date_of_birth: null, info: null, settings: null, last_active_at: 1, created_at: 1, updated_at: 2,
};

beforeAll(async () => {
  worker = await stack.startChatWorker();
});
afterAll(async () => {
  await sql.end({ timeout: 5 });
  await stack.close();
});

async function streamEvents(): Promise<{ subject: string; msgId: string | undefined; event: ChatEvent }[]> {
  const bus = await stack.busHandle();
  const jsm = await bus.nc.jetstreamManager();
  const name = bus.bucket(EVENTS_STREAM);
  const info = await jsm.streams.info(name);
  const out = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(name, { seq }).catch(() => undefined);
    if (!m) continue;
    out.push({ subject: m.subject, msgId: m.header?.get('Nats-Msg-Id'), event: ChatEvent.parse(m.json()) });
  }
  return out;
}

const pending = async () => (await sql<{ n: number }[]>`select count(*)::int as n from outbox where published_at is null`)[0]!.n;
const published = (id: string) => streamEvents().then((evs) => evs.filter((e) => e.event.id === id));

describe('chat events outbox → JetStream', () => {
  it('publishes a committed event once, on events.<resource>.<operation>, secrets stripped', async () => {
    const subjectId = randomUUID();
    await sql.begin(async (tx) => {
      await outbox.emit(tx, {
        event: 'memory.created',
        actor,
        subject: { type: 'memory', id: subjectId },
        data: { content_preview: 'x'.repeat(1500), password: 'p', nested: { api_key: 'k', refresh_token: 't', kept: 1 }, list: [{ secret: 's', ok: true }] },
      });
    });
    await waitFor(async () => (await pending()) === 0, 10_000, () => 'outbox not drained');
    const evs = (await streamEvents()).filter((e) => e.event.subject?.id === subjectId);
    expect(evs).toHaveLength(1);
    const [{ subject, msgId, event }] = evs as [(typeof evs)[0]];
    expect(subject).toBe(`${stack.ns}.events.memory.created`);
    expect(msgId).toBe(event.id);
    expect(event).toMatchObject({
      schema: '0.10.2', event: 'memory.created', resource: 'memory', operation: 'created', source: 'api',
      actor: { id: 'u-actor', email: 'actor@example.com', role: 'user', type: 'user' }, subject: { type: 'memory', id: subjectId },
    });
    expect(event.data).toEqual({ content_preview: `${'x'.repeat(1000)}…`, nested: { kept: 1 }, list: [{ ok: true }] });
    expect(JSON.stringify(event)).not.toMatch(/password|api_key|refresh_token|"secret"/);
  });

  it('publishes nothing for a transaction that rolls back', async () => {
    const subjectId = randomUUID();
    await sql
      .begin(async (tx) => {
        await outbox.emit(tx, { event: 'folder.created', actor, subject: { type: 'folder', id: subjectId }, data: {} });
        throw new Error('the change failed');
      })
      .catch(() => undefined);
    // Let the relay run a pass (poll interval) and check the stream.
    await new Promise((r) => setTimeout(r, 2500));
    expect((await streamEvents()).filter((e) => e.event.subject?.id === subjectId)).toHaveLength(0);
  });

  it('a relay that died after publishing does not publish the event twice', async () => {
    await worker.stop();
    const bus = await stack.busHandle();
    let eventId = '';
    await sql.begin(async (tx) => {
      await outbox.emit(tx, { event: 'auth.login', actor, subject: { type: 'user', id: actor.id }, data: {}, source: 'password' });
    });
    const [row] = await sql<{ event_id: string; subject: string; event: unknown }[]>`select event_id, subject, event from outbox where published_at is null`;
    eventId = row!.event_id;
    // What the dead relay got out before it could stamp the row.
    const h = natsHeaders();
    await bus.js.publish(bus.subject(row!.subject), JSON.stringify(row!.event), { msgID: eventId, headers: h });
    worker = await stack.startChatWorker();
    await waitFor(async () => (await pending()) === 0, 10_000, () => 'outbox not drained after restart');
    expect(await published(eventId)).toHaveLength(1);
  });

  it('two relays racing over 300 events publish each exactly once', async () => {
    await stack.startChatWorker();
    const ids: string[] = [];
    const tag = randomBytes(4).toString('hex');
    await Promise.all(
      Array.from({ length: 30 }, (_, batch) =>
        sql.begin(async (tx) => {
          for (let i = 0; i < 10; i++) {
            const id = `${tag}-${batch}-${i}`;
            ids.push(id);
            await outbox.emit(tx, { event: 'group.member_added', actor, subject: { type: 'group', id }, data: { i } });
          }
        }),
      ),
    );
    await waitFor(async () => (await pending()) === 0, 20_000, () => 'outbox not drained');
    const mine = (await streamEvents()).filter((e) => e.event.subject?.id?.startsWith(tag));
    expect(mine).toHaveLength(300);
    expect(new Set(mine.map((e) => e.event.subject!.id)).size).toBe(300);
    expect(new Set(mine.map((e) => e.event.id)).size).toBe(300);
  });
});
