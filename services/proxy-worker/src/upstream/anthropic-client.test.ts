import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeUpstream } from '../../../../scripts/src/fake-upstreams/anthropic.ts';
import { forwardMessages, nativeForwardHeaders, relayResponseHeaders, withCredential } from './anthropic-client.ts';
import type { RetryPolicy } from './config.ts';
import { UpstreamStreamError, UpstreamTimeoutError } from './errors.ts';
import { parseSSE } from './sse.ts';
import { collectAll, failure, waitUntil } from './test-helpers.ts';

let fake: FakeUpstream;
const noRetry: RetryPolicy = { max: 0, baseDelayMs: 10, maxDelayMs: 1000 };
const opts = (extra: Partial<{ retries: RetryPolicy; timeoutMs: number; signal: AbortSignal }> = {}) => ({ timeoutMs: 5000, retries: noRetry, ...extra });
const testId = () => randomBytes(8).toString('hex');
const requestsFor = (id: string) => fake.requests.filter((r) => r.headers['x-test-id'] === id);
const fakeKey = () => `test-${randomBytes(16).toString('hex')}`;

const baseHeaders = (id: string): Record<string, string> => ({
  'anthropic-version': '2023-06-01',
  'content-type': 'application/json',
  'x-test-id': id,
});
const bytes = (body: unknown) => Buffer.from(JSON.stringify(body));
const messages = (model: string, extra: Record<string, unknown> = {}) => bytes({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hello relay' }], ...extra });
const text = async (body: AsyncIterable<Uint8Array>) => Buffer.concat((await collectAll(body)).map((c) => Buffer.from(c))).toString('utf8');

beforeAll(async () => {
  fake = await startFakeAnthropic();
});
afterAll(async () => {
  await fake?.close();
});

describe('forwardMessages', () => {
  it('sends the body bytes unchanged and returns the answer', async () => {
    const id = testId();
    // Odd spacing, key order, escapes and non-ASCII: any re-serialisation would change these bytes.
    const raw = Buffer.from(`{ "max_tokens":64,  "model" : "claude-echo-1", "messages":[{"role":"user","content":"h\\u00e9llo — 😀"}], "metadata":{"user_id":"u1"}}\n`);
    const res = await forwardMessages({ baseUrl: fake.url }, raw, baseHeaders(id), opts());
    expect(res.status).toBe(200);
    const seen = requestsFor(id)[0];
    expect(seen?.raw.equals(raw)).toBe(true);
    expect(Buffer.isBuffer(seen?.body)).toBe(true);
    expect(seen?.path).toBe('/v1/messages');
    expect(seen?.headers['content-length']).toBe(String(raw.length));
    const msg = JSON.parse(await text(res.body)) as { id: string; type: string; content: { type: string; text: string }[]; stop_reason: string; usage: { input_tokens: number } };
    expect(msg.id).toMatch(/^msg_/);
    expect(msg.type).toBe('message');
    expect(msg.content).toEqual([{ type: 'text', text: 'echo: héllo — 😀' }]);
    expect(msg.stop_reason).toBe('end_turn');
    expect(res.headers['request-id']).toMatch(/^req_/);
  });

  it('uses target.path when given (Claude Code sends ?beta=true)', async () => {
    const id = testId();
    const res = await forwardMessages({ baseUrl: `${fake.url}/`, path: '/v1/messages?beta=true' }, messages('claude-echo-1'), baseHeaders(id), opts());
    await text(res.body);
    expect(requestsFor(id)[0]?.path).toBe('/v1/messages?beta=true');
  });

  it('forwards headers per the native policy: credential exactly as given, cookie / x-forwarded-for / hop-by-hop dropped', async () => {
    const id = testId();
    const clientKey = fakeKey();
    const incoming = {
      host: 'proxy.example',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': ['tools-2024-04-04', 'oauth-2025-04-20'],
      'anthropic-dangerous-direct-browser-access': 'true',
      'user-agent': 'claude-cli/2.0.0 (external, cli)',
      'x-app': 'cli',
      'content-type': 'application/json',
      accept: 'application/json',
      'x-api-key': clientKey,
      cookie: 'session=secret',
      'x-forwarded-for': '10.0.0.1',
      'x-forwarded-proto': 'https',
      connection: 'keep-alive',
      'transfer-encoding': 'chunked',
      'content-length': '999',
      'x-proxy-key': 'not-for-upstream',
      'x-stainless-os': 'Linux',
      forwarded: 'for=10.0.0.1',
      'x-test-id': id,
      'accept-encoding': 'gzip',
      empty: undefined,
    };
    const headers = withCredential({ ...nativeForwardHeaders(incoming), 'x-test-id': id }, { kind: 'client', xApiKey: clientKey });
    const res = await forwardMessages({ baseUrl: fake.url }, messages('claude-echo-1'), headers, opts());
    await text(res.body);
    expect(res.headers['x-fake-saw-auth']).toBe('x-api-key');
    const seen = requestsFor(id)[0]?.headers ?? {};
    expect(seen['x-api-key']).toBe(clientKey);
    expect(seen.authorization).toBeUndefined();
    expect(seen['anthropic-version']).toBe('2023-06-01');
    expect(seen['anthropic-beta']).toBe('tools-2024-04-04, oauth-2025-04-20');
    expect(seen['anthropic-dangerous-direct-browser-access']).toBe('true');
    expect(seen['user-agent']).toBe('claude-cli/2.0.0 (external, cli)');
    expect(seen['x-app']).toBe('cli');
    expect(seen.accept).toBe('application/json');
    for (const dropped of ['cookie', 'x-forwarded-for', 'x-forwarded-proto', 'x-proxy-key', 'x-stainless-os', 'forwarded', 'transfer-encoding']) {
      expect(seen[dropped], dropped).toBeUndefined();
    }
    expect(seen.host).toBe(`127.0.0.1:${fake.port}`);
    expect(seen['content-length']).not.toBe('999');
    expect(seen['accept-encoding']).toBe('identity');
  });

  it('an OAuth bearer from the client is forwarded as authorization, unchanged', async () => {
    const id = testId();
    const bearer = `Bearer sk-ant-oat01-${randomBytes(12).toString('hex')}`;
    const headers = withCredential(baseHeaders(id), { kind: 'client', authorization: bearer });
    const res = await forwardMessages({ baseUrl: fake.url }, messages('claude-echo-1'), headers, opts());
    await text(res.body);
    expect(res.headers['x-fake-saw-auth']).toBe('authorization');
    expect(requestsFor(id)[0]?.headers.authorization).toBe(bearer);
    expect(requestsFor(id)[0]?.headers['x-api-key']).toBeUndefined();
  });

  it('the server key replaces whatever credential was there, as x-api-key only', async () => {
    const id = testId();
    const serverKey = fakeKey();
    const headers = withCredential({ ...baseHeaders(id), Authorization: 'Bearer proxy-key', 'X-Api-Key': 'proxy-key' }, { kind: 'server', apiKey: serverKey });
    const res = await forwardMessages({ baseUrl: fake.url }, messages('claude-echo-1'), headers, opts());
    await text(res.body);
    expect(res.headers['x-fake-saw-auth']).toBe('x-api-key');
    expect(requestsFor(id)[0]?.headers['x-api-key']).toBe(serverKey);
    expect(requestsFor(id)[0]?.headers.authorization).toBeUndefined();
  });

  it('kind none sends no credential', async () => {
    const id = testId();
    const res = await forwardMessages({ baseUrl: fake.url }, messages('claude-echo-1'), withCredential({ ...baseHeaders(id), 'x-api-key': 'x' }, { kind: 'none' }), opts());
    await text(res.body);
    expect(res.headers['x-fake-saw-auth']).toBe('none');
  });

  it('relays a stream event by event as it arrives (claude-slow), in order', async () => {
    const id = testId();
    const res = await forwardMessages({ baseUrl: fake.url }, messages('claude-slow', { stream: true }), baseHeaders(id), opts());
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const parts: Buffer[] = [];
    // Whether the upstream had finished its answer when each chunk was handed over.
    const upstreamDone: boolean[] = [];
    for await (const chunk of res.body) {
      upstreamDone.push(requestsFor(id)[0]?.finished === true);
      parts.push(Buffer.from(chunk));
    }
    expect(parts.length).toBeGreaterThanOrEqual(5);
    // Relayed as it arrives: the first chunk came while the upstream was still sending.
    expect(upstreamDone[0]).toBe(false);
    async function* replay() {
      yield* parts;
    }
    const events = await collectAll(parseSSE(replay()));
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('message_start');
    expect(names[1]).toBe('ping');
    expect(names[2]).toBe('content_block_start');
    expect(names.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(names.filter((n) => n === 'content_block_delta').length).toBeGreaterThanOrEqual(2);
    for (const e of events) expect((JSON.parse(e.data) as { type: string }).type).toBe(e.event);
    const deltas = events.filter((e) => e.event === 'content_block_delta').map((e) => (JSON.parse(e.data) as { delta: { text: string } }).delta.text);
    expect(deltas.join('')).toBe('echo: hello relay');
  });

  it('429 comes back as is (retry-after beyond maxDelayMs: no wait), with retry-after, request-id and rate-limit headers', async () => {
    const id = testId();
    const waits: number[] = [];
    const res = await forwardMessages({ baseUrl: fake.url }, messages('claude-error-429'), baseHeaders(id), {
      ...opts({ retries: { max: 2, baseDelayMs: 10, maxDelayMs: 1000 } }),
      onRetry: (i) => waits.push(i.delayMs),
    });
    expect(res.status).toBe(429);
    expect(waits).toEqual([]);
    expect(requestsFor(id)).toHaveLength(1);
    const relayed = relayResponseHeaders(res.headers);
    expect(relayed['retry-after']).toBe('3');
    expect(relayed['request-id']).toMatch(/^req_/);
    expect(relayed['anthropic-ratelimit-requests-remaining']).toBe('0');
    expect(relayed['content-type']).toBe('application/json');
    expect(relayed['x-fake-saw-auth']).toBeUndefined();
    expect(JSON.parse(await text(res.body))).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect(requestsFor(id)).toHaveLength(1);
  });

  it('429 with a short retry-after is retried, then the last answer comes back as is', async () => {
    const id = testId();
    const res = await forwardMessages(
      { baseUrl: fake.url },
      messages('claude-error-429'),
      { ...baseHeaders(id), 'x-fake-retry-after': '0' },
      opts({ retries: { max: 2, baseDelayMs: 10, maxDelayMs: 1000 } }),
    );
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('0');
    await text(res.body);
    expect(requestsFor(id)).toHaveLength(3);
  });

  it('529 overloaded is retried with backoff; 400 is not', async () => {
    const a = testId();
    const r1 = await forwardMessages({ baseUrl: fake.url }, messages('claude-error-529'), baseHeaders(a), opts({ retries: { max: 1, baseDelayMs: 10, maxDelayMs: 100 } }));
    expect(r1.status).toBe(529);
    expect(JSON.parse(await text(r1.body))).toMatchObject({ error: { type: 'overloaded_error' } });
    expect(requestsFor(a)).toHaveLength(2);

    const b = testId();
    const r2 = await forwardMessages({ baseUrl: fake.url }, messages('claude-echo-1'), { 'x-test-id': b, 'content-type': 'application/json' }, opts({ retries: { max: 2, baseDelayMs: 10, maxDelayMs: 100 } }));
    expect(r2.status).toBe(400); // no anthropic-version
    expect(JSON.parse(await text(r2.body))).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringContaining('anthropic-version') } });
    expect(requestsFor(b)).toHaveLength(1);
  });

  it('hang → UpstreamTimeoutError', async () => {
    const { error } = await failure(() => forwardMessages({ baseUrl: fake.url }, messages('claude-hang'), baseHeaders(testId()), opts({ timeoutMs: 100 })));
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
  });

  it('a dropped stream → UpstreamStreamError while reading the body', async () => {
    const res = await forwardMessages({ baseUrl: fake.url }, messages('claude-drop', { stream: true }), baseHeaders(testId()), opts());
    const { error } = await failure(() => text(res.body));
    expect(error).toBeInstanceOf(UpstreamStreamError);
  });

  it('the abort signal stops a slow stream and the fake sees the disconnect', async () => {
    const id = testId();
    const ac = new AbortController();
    const res = await forwardMessages({ baseUrl: fake.url }, messages('claude-slow', { stream: true }), baseHeaders(id), opts({ signal: ac.signal }));
    const iter = res.body[Symbol.asyncIterator]();
    expect((await iter.next()).done).toBe(false);
    ac.abort();
    const { error } = await failure(async () => {
      for (let i = 0; i < 100; i++) if ((await iter.next()).done) return;
    });
    expect(error.name).toBe('AbortError');
    await waitUntil(() => requestsFor(id)[0]?.aborted === true, 2000, 'the fake to see the disconnect');
  });

  it('release() drops an unread answer', async () => {
    const id = testId();
    const res = await forwardMessages({ baseUrl: fake.url }, messages('claude-slow', { stream: true }), baseHeaders(id), opts());
    res.release();
    res.release();
    await waitUntil(() => requestsFor(id)[0]?.aborted === true, 2000, 'the fake to see the disconnect');
  });
});

describe('header policy', () => {
  it('nativeForwardHeaders keeps anthropic-*, user-agent, x-app, content-type, accept only (lower-cased)', () => {
    expect(
      nativeForwardHeaders({
        'Anthropic-Version': '2023-06-01',
        'anthropic-beta': 'a,b',
        'anthropic-foo': 'x',
        'User-Agent': 'ua',
        'X-App': 'cli',
        'Content-Type': 'application/json',
        Accept: 'text/event-stream',
        'x-api-key': 'k',
        authorization: 'Bearer k',
        cookie: 'c',
        'set-cookie': ['a', 'b'],
        'x-forwarded-for': '1.2.3.4',
        'x-real-ip': '1.2.3.4',
        connection: 'close',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        upgrade: 'h2c',
        'proxy-authorization': 'Basic x',
        'content-length': '10',
        'accept-encoding': 'gzip',
        host: 'x',
        anthropicversion: 'nope',
      }),
    ).toEqual({
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'a,b',
      'anthropic-foo': 'x',
      'user-agent': 'ua',
      'x-app': 'cli',
      'content-type': 'application/json',
      accept: 'text/event-stream',
    });
  });

  it('withCredential: client credentials exactly as sent (both when both were sent)', () => {
    expect(withCredential({ a: '1', 'X-API-KEY': 'old' }, { kind: 'client', xApiKey: 'k1', authorization: 'Bearer t1' })).toEqual({ a: '1', 'x-api-key': 'k1', authorization: 'Bearer t1' });
    expect(withCredential({ authorization: 'Bearer old' }, { kind: 'client' })).toEqual({});
    expect(withCredential({ authorization: 'Bearer old' }, { kind: 'server', apiKey: 'srv' })).toEqual({ 'x-api-key': 'srv' });
  });

  it('relayResponseHeaders keeps content-type, retry-after, request-id, anthropic-ratelimit-*, x-should-retry', () => {
    const h = new Headers({
      'content-type': 'text/event-stream',
      'retry-after': '5',
      'request-id': 'req_1',
      'anthropic-ratelimit-tokens-remaining': '10',
      'anthropic-ratelimit-unified-status': 'allowed',
      'x-should-retry': 'true',
      'set-cookie': 'a=b',
      'cf-ray': 'x',
      'content-length': '5',
      'content-encoding': 'gzip',
      connection: 'keep-alive',
      'anthropic-organization-id': 'org',
      server: 'cloudflare',
    });
    const expected = {
      'content-type': 'text/event-stream',
      'retry-after': '5',
      'request-id': 'req_1',
      'anthropic-ratelimit-tokens-remaining': '10',
      'anthropic-ratelimit-unified-status': 'allowed',
      'x-should-retry': 'true',
    };
    expect(relayResponseHeaders(h)).toEqual(expected);
    expect(relayResponseHeaders(Object.fromEntries(h.entries()))).toEqual(expected);
    expect(relayResponseHeaders({ 'Request-Id': 'r', 'retry-after': undefined })).toEqual({ 'request-id': 'r' });
  });
});
