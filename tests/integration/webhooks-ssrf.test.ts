import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, waitFor, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, type Account } from './chat-fixture.ts';
import { Receiver } from './webhook-receiver.ts';

/**
 * The webhook SSRF guard with local fetches off (the default): the registry refuses private,
 * loopback, link-local and metadata targets (also by name, after resolving it), and the dispatcher
 * refuses them again when it connects — here a webhook whose stored URL points at loopback (as
 * if its name had started resolving there after it was saved) is dead-lettered untouched.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup } = chatClient(() => edge.chatUrl);
const receiver = new Receiver();
let admin: Account;

beforeAll(async () => {
  await receiver.start();
  await stack.startChatWorker({}, { ingest: false });
  await stack.startWebhookDispatcher({ WEBHOOK_RETRY_SCHEDULE: '50ms', WEBHOOK_POLL_MS: '200' });
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
  await receiver.stop();
});

describe('webhook SSRF guard', () => {
  it('refuses private, loopback, link-local and metadata URLs, by address or by a name resolving to one', async () => {
    for (const url of [
      receiver.url,
      `http://localhost:${receiver.port}/hook`,
      'http://10.0.0.5/hook',
      'http://192.168.1.10/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::1]:8080/hook',
      'http://[fd00:ec2::254]/',
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://0.0.0.0:8080/',
    ]) {
      const r = await call('/api/events/webhooks', admin, 'POST', { url });
      expect(r.status, url).toBe(400);
      expect(r.body.detail, url).toMatch(/private or local|Cannot resolve/);
    }
    expect((await call('/api/events/webhooks', admin)).body).toEqual([]);
  });

  it('refuses again at delivery: a stored loopback URL is dead-lettered and never reached', async () => {
    const id = randomUUID();
    const t = Math.floor(Date.now() / 1000);
    await db`insert into webhook (id, name, url, enabled, events, targets, secrets, created_at, updated_at)
      values (${id}, 'Sneaky', ${receiver.url}, true, ${db.json(['*'])}, null, ${db.json([{ secret: 'whsec_' + Buffer.from('k'.repeat(24)).toString('base64'), expires_at: null }])}, ${t}, ${t})`;
    const test = await call(`/api/events/webhooks/${id}/test`, admin, 'POST');
    expect(test.status).toBe(200);
    await waitFor(async () => (await call(`/api/events/webhooks/${id}/deliveries`, admin)).body[0]?.status === 'dead', 10_000, () => 'not dead-lettered');
    const [d] = (await call(`/api/events/webhooks/${id}/deliveries`, admin)).body;
    expect(d).toMatchObject({ id: test.body.delivery_id, status: 'dead', attempts: 1, last_status: null });
    expect(d.last_error).toMatch(/private or local/);
    expect(receiver.got).toEqual([]);
  });
});
