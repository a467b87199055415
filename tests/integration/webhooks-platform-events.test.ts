import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, type Account } from './chat-fixture.ts';
import { Receiver } from './webhook-receiver.ts';

/**
 * Events of the other faces on the same stream, delivered to a webhook that subscribes to them:
 * a gate flipped with scripts/gate (`gate.enforced` / `gate.opened`, with face, revision and who)
 * and a vector collection created and deleted through the Qdrant face.
 */
const stack = new Stack();
let edge: Edge;
const { call, signup } = chatClient(() => edge.chatUrl);
const receiver = new Receiver();
let admin: Account;

beforeAll(async () => {
  await receiver.start();
  await stack.startChatWorker({ ENABLE_LOCAL_WEB_FETCH: 'true' }, { ingest: false });
  await stack.startVectorWorker();
  await stack.startWebhookDispatcher({ ENABLE_LOCAL_WEB_FETCH: 'true', WEBHOOK_POLL_MS: '200' });
  edge = await stack.startEdge({ EDGE_FACES: 'chat,vector' });
  admin = await signup();
  const w = await call('/api/events/webhooks', admin, 'POST', { url: receiver.url, events: ['gate.*', 'collection.*'] });
  expect(w.status, JSON.stringify(w.body)).toBe(200);
});
afterAll(async () => {
  await stack.close();
  await receiver.stop();
});

describe('platform events on the EVENTS stream', () => {
  it('a vector collection created and deleted', async () => {
    const put = await fetch(`${edge.vectorUrl}/collections/webhooked`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ vectors: { size: 4, distance: 'Cosine' } }) });
    expect(put.status).toBe(200);
    const del = await fetch(`${edge.vectorUrl}/collections/webhooked`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    await receiver.until(() => receiver.events('collection.deleted').length === 1, 'collection events');
    expect(receiver.events().map((e) => e.event)).toEqual(['collection.created', 'collection.deleted']);
    expect(receiver.events('collection.created')[0]).toMatchObject({ resource: 'collection', operation: 'created', subject: { type: 'collection', id: 'webhooked' }, data: { collection: 'webhooked', face: 'vector', dimension: 4 }, actor: null });
    expect(receiver.got[0]!.headers['webhook-signature']).toMatch(/^v1,/);
  });

  it('a gate enforced and opened with scripts/gate: face, revision and who', async () => {
    const enforce = await stack.gateCli(['enforce', 'vector', '--generate', '--force'], edge);
    expect(enforce.code, enforce.stderr).toBe(0);
    const open = await stack.gateCli(['open', 'vector'], edge);
    expect(open.code, open.stderr).toBe(0);
    await receiver.until(() => receiver.events('gate.opened').length === 1, 'gate events');
    const [enforced] = receiver.events('gate.enforced');
    const [opened] = receiver.events('gate.opened');
    expect(enforced).toMatchObject({ subject: { type: 'gate', id: 'vector' }, data: { face: 'vector', who: expect.any(String) }, source: 'gate-cli' });
    expect(opened.data.revision).toBeGreaterThan(enforced.data.revision);
    // The key is never in the event.
    expect(JSON.stringify(enforced)).not.toContain(enforce.stdout.trim());
  });
});
