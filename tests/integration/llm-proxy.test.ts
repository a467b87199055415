import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { rawRequest } from '../../scripts/src/probe.ts';
import { enforcedState, flipGate, openState } from '../../scripts/src/gate-ops.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import { startFakeAnthropic } from '../../scripts/src/fake-upstreams/anthropic.ts';

/**
 * The LLM proxy face end to end: real edge and proxy worker processes, fake upstreams speaking
 * the real OpenAI and Anthropic wire protocols on loopback, the official Anthropic SDK as client.
 */
const stack = new Stack();
let edge: Edge;
let openai: Awaited<ReturnType<typeof startFakeOpenAI>>;
let anthropic: Awaited<ReturnType<typeof startFakeAnthropic>>;
const upstreamKey = newKey();
const serverNativeKey = newKey();
const proxyKey = newKey();

beforeAll(async () => {
  openai = await startFakeOpenAI({ apiKey: upstreamKey });
  anthropic = await startFakeAnthropic();
  const dir = mkdtempSync(join(tmpdir(), 'llm-proxy-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      providers: {
        fake: { type: 'openai', baseUrl: openai.url, apiKeyEnv: 'FAKE_OPENAI_KEY', models: ['echo', 'tools'] },
        other: { type: 'anthropic', baseUrl: anthropic.url, apiKeyEnv: 'FAKE_OPENAI_KEY' },
      },
      native: { baseUrl: anthropic.url, serverApiKeyEnv: 'SERVER_NATIVE_KEY' },
      timeoutMs: 5000,
      retries: { max: 1, baseDelayMs: 50, maxDelayMs: 200 },
    }),
  );
  const env = { LLMPROXY_CONFIG: config, FAKE_OPENAI_KEY: upstreamKey, SERVER_NATIVE_KEY: serverNativeKey };
  await stack.startProxyWorker(env);
  edge = await stack.startEdge({ LLMPROXY_CONFIG: config });
});
afterAll(async () => {
  await stack.close();
  await openai?.close();
  await anthropic?.close();
});

const body = (model: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hello there' }], ...extra });

const post = (path: string, payload: string, headers: Record<string, string> = {}, method = 'POST') =>
  new Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
    const u = new URL(edge.proxyUrl);
    import('node:http').then(({ request }) => {
      const req = request(
        { host: u.hostname, port: u.port, path, method, headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers } },
        (res) => {
          let data = '';
          res.on('data', (d) => (data += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data, headers: res.headers }));
        },
      );
      req.setTimeout(15_000, () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end(payload);
    }, reject);
  });

const sdk = (apiKey: string) => new Anthropic({ baseURL: edge.proxyUrl, apiKey, maxRetries: 0 });

describe('gate: open (default)', () => {
  it('serves a non-native model without a key', async () => {
    const r = await post('/v1/messages', body('fake/echo'));
    expect(r.status, r.body).toBe(200);
    const msg = JSON.parse(r.body);
    expect(msg.type).toBe('message');
    expect(msg.content[0]).toEqual({ type: 'text', text: 'echo: hello there' });
    expect(msg.model).toBe('fake/echo');
    expect(r.headers['request-id']).toBeTruthy();
  });
});

describe('gate: enforced (the documented matrix)', () => {
  beforeAll(async () => {
    const r = await flipGate(await stack.store(), 'llm', enforcedState([proxyKey], 'test'));
    expect(r.lagging).toEqual([]);
  });

  it('401 without a key, in Anthropic envelope', async () => {
    const r = await post('/v1/messages', body('fake/echo'));
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body)).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  });

  it('401 with a wrong key in any header', async () => {
    for (const h of <Record<string, string>[]>[{ 'x-proxy-key': newKey() }, { 'x-api-key': newKey() }, { authorization: `Bearer ${newKey()}` }]) {
      expect((await post('/v1/messages', body('fake/echo'), h)).status).toBe(401);
    }
  });

  it('200 with the key in x-proxy-key, x-api-key or Authorization: Bearer', async () => {
    for (const h of <Record<string, string>[]>[{ 'x-proxy-key': proxyKey }, { 'x-api-key': proxyKey }, { authorization: `Bearer ${proxyKey}` }]) {
      const r = await post('/v1/messages', body('fake/echo'), h);
      expect(r.status, JSON.stringify(h).slice(0, 20)).toBe(200);
    }
  });

  it('the first non-empty credential wins: a wrong x-proxy-key is not rescued by a right x-api-key', async () => {
    expect((await post('/v1/messages', body('fake/echo'), { 'x-proxy-key': newKey(), 'x-api-key': proxyKey })).status).toBe(401);
    expect((await post('/v1/messages', body('fake/echo'), { 'x-proxy-key': '', 'x-api-key': proxyKey })).status).toBe(200);
  });

  it('GET /health and GET /v1/models stay open', async () => {
    expect((await rawRequest(edge.proxyUrl, '/health')).status).toBe(200);
    const models = await rawRequest(edge.proxyUrl, '/v1/models');
    expect(models.status).toBe(200);
    expect(JSON.parse(models.body).data.map((m: { id: string }) => m.id)).toContain('fake/echo');
  });

  it('a native model stays 200 without the proxy key (passed through)', async () => {
    const r = await post('/v1/messages', body('claude-sonnet-4-5'), { 'x-api-key': 'caller-own-anthropic-key' });
    expect(r.status, r.body).toBe(200);
    expect(JSON.parse(r.body).content[0].text).toBe('echo: hello there');
  });

  it('method and path tricks do not get around the gate', async () => {
    expect((await rawRequest(edge.proxyUrl, '/v1/messages', { method: 'HEAD' })).status).toBe(401);
    expect((await rawRequest(edge.proxyUrl, '/v1/models', { method: 'HEAD' })).status).toBe(401);
    expect((await post('/v1/messages', body('fake/echo'), { 'x-http-method-override': 'GET' })).status).toBe(401);
    for (const path of ['/v1//messages', '/health/../v1/messages', '/v1/./messages', '/v1/%6dessages', '/V1/messages', '/v1/messages/']) {
      const r = await post(path, body('fake/echo'));
      expect(r.status, path).not.toBe(200);
      // /V1/… is not /v1/* (paths are case-sensitive): it reaches no handler (404), which is no way around.
      if (path.startsWith('/v1') || path.includes('..')) expect(r.status, path).toBe(401);
    }
    // A native model id does not exempt a path that only looks like /v1/messages.
    expect((await post('/v1//messages', body('claude-sonnet-4-5'))).status).toBe(401);
    const line = await new Promise<string>((resolve, reject) => {
      const s = connect(edge.proxyPort, '127.0.0.1', () =>
        s.end(`post /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body('fake/echo').length}\r\nConnection: close\r\n\r\n${body('fake/echo')}`),
      );
      let out = '';
      s.on('data', (d) => (out += d));
      s.on('end', () => resolve(out.split('\r\n')[0] ?? ''));
      s.on('error', reject);
      s.setTimeout(5000, () => s.destroy(new Error('timeout')));
    });
    expect(line).not.toMatch(/ 200 /);
  });

  it('the official Anthropic SDK works with the proxy key: plain, streamed, tool use', async () => {
    const client = sdk(proxyKey);
    const msg = await client.messages.create({ model: 'fake/echo', max_tokens: 64, messages: [{ role: 'user', content: 'hi sdk' }] });
    expect(msg.content).toEqual([{ type: 'text', text: 'echo: hi sdk' }]);
    expect(msg.usage.output_tokens).toBeGreaterThan(0);

    const stream = client.messages.stream({ model: 'fake/echo', max_tokens: 64, messages: [{ role: 'user', content: 'stream me' }] });
    const texts: string[] = [];
    stream.on('text', (t) => texts.push(t));
    const final = await stream.finalMessage();
    expect(texts.length).toBeGreaterThan(1);
    expect(texts.join('')).toBe('echo: stream me');
    expect(final.usage.input_tokens).toBeGreaterThan(0);
    expect(final.usage.output_tokens).toBeGreaterThan(0);

    const tools = [{ name: 'get_weather', description: 'weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }];
    const toolStream = client.messages.stream({ model: 'fake/tools', max_tokens: 64, tools, messages: [{ role: 'user', content: 'weather?' }] });
    const toolMsg = await toolStream.finalMessage();
    expect(toolMsg.stop_reason).toBe('tool_use');
    const use = toolMsg.content.find((b) => b.type === 'tool_use');
    expect(use).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });

    const nonStream = await client.messages.create({ model: 'fake/tools', max_tokens: 64, tools, messages: [{ role: 'user', content: 'weather?' }] });
    expect(nonStream.content.find((b) => b.type === 'tool_use')).toMatchObject({ input: { city: 'Paris' } });

    await expect(sdk(newKey()).messages.create({ model: 'fake/echo', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(
      Anthropic.AuthenticationError,
    );
  });

  afterAll(async () => {
    await flipGate(await stack.store(), 'llm', openState('test'));
  });
});

describe('native pass-through', () => {
  it('forwards body bytes, anthropic-* / user-agent / x-app headers and the caller credential as sent', async () => {
    const raw = body('claude-sonnet-4-5', { metadata: { user_id: 'u1' } }).replace('{', '{  ');
    const before = anthropic.requests.length;
    const r = await post('/v1/messages', raw, {
      'x-api-key': 'caller-own-anthropic-key',
      'anthropic-beta': 'tools-2024-04-04',
      'user-agent': 'claude-cli/9.9',
      'x-app': 'cli',
      cookie: 'secret=1',
    });
    expect(r.status).toBe(200);
    const seen = anthropic.requests[before]!;
    expect(Buffer.from(seen.body as Uint8Array).toString()).toBe(raw);
    expect(seen.headers['anthropic-beta']).toBe('tools-2024-04-04');
    expect(seen.headers['anthropic-version']).toBe('2023-06-01');
    expect(seen.headers['user-agent']).toBe('claude-cli/9.9');
    expect(seen.headers['x-app']).toBe('cli');
    expect(seen.headers['x-api-key']).toBe('caller-own-anthropic-key');
    expect(seen.headers.cookie).toBeUndefined();
  });
});

describe('native credentials and key swap', () => {
  beforeAll(async () => {
    await flipGate(await stack.store(), 'llm', enforcedState([proxyKey], 'test'));
  });
  afterAll(async () => {
    await flipGate(await stack.store(), 'llm', openState('test'));
  });

  it('a caller who presents the proxy key gets the server-side key, and the proxy key never leaves', async () => {
    const before = anthropic.requests.length;
    const r = await post('/v1/messages', body('claude-sonnet-4-5'), { 'x-api-key': proxyKey });
    expect(r.status, r.body).toBe(200);
    const seen = anthropic.requests[before]!;
    expect(seen.headers['x-api-key']).toBe(serverNativeKey);
    expect(JSON.stringify(seen.headers)).not.toContain(proxyKey);
  });

  it('an anonymous caller never gets the server-side key', async () => {
    const before = anthropic.requests.length;
    const r = await post('/v1/messages', body('claude-sonnet-4-5'), { authorization: 'Bearer caller-oauth-token' });
    expect(r.status).toBe(200);
    const seen = anthropic.requests[before]!;
    expect(seen.headers['x-api-key']).toBeUndefined();
    expect(seen.headers.authorization).toBe('Bearer caller-oauth-token');
    expect(JSON.stringify(seen.headers)).not.toContain(serverNativeKey);
  });

  it('a wrong proxy key does not unlock the server-side key either', async () => {
    const before = anthropic.requests.length;
    await post('/v1/messages', body('claude-sonnet-4-5'), { 'x-proxy-key': newKey(), 'x-api-key': 'caller-key' });
    expect(anthropic.requests[before]!.headers['x-api-key']).toBe('caller-key');
  });
});

describe('routing and errors', () => {
  it('an unknown provider or a malformed model → 400 listing what is configured', async () => {
    for (const model of ['nope/x', 'gpt-4o', 'fake/', '/echo']) {
      const r = await post('/v1/messages', body(model));
      expect(r.status, model).toBe(400);
      const e = JSON.parse(r.body);
      expect(e.type).toBe('error');
      expect(e.error.type).toBe('invalid_request_error');
      expect(e.error.message, model).toMatch(/fake, other/);
    }
  });

  it('bad bodies → 400 naming the field, never 500', async () => {
    const cases: [string, RegExp][] = [
      [JSON.stringify({ model: 'fake/echo', messages: [{ role: 'user', content: 'x' }] }), /max_tokens/],
      [JSON.stringify({ model: 'fake/echo', max_tokens: 5, messages: [{ role: 'robot', content: 'x' }] }), /messages\.0\.role/],
      [JSON.stringify({ max_tokens: 5, messages: [] }), /model/],
      ['{"model": "fake/echo",', /JSON/],
      ['[1,2]', /object/],
    ];
    for (const [payload, re] of cases) {
      const r = await post('/v1/messages', payload);
      expect(r.status, payload).toBe(400);
      expect(JSON.parse(r.body).error.message).toMatch(re);
    }
  });

  it('upstream 429 → rate_limit_error with retry-after forwarded', async () => {
    const r = await post('/v1/messages', body('fake/error-429'));
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBe('1');
    expect(JSON.parse(r.body).error.type).toBe('rate_limit_error');
    const native = await post('/v1/messages', body('claude-error-429'), { 'x-api-key': 'k' });
    expect(native.status).toBe(429);
    expect(native.headers['retry-after']).toBeTruthy();
    expect(native.headers['anthropic-ratelimit-requests-remaining']).toBe('0');
  });

  it('a flaky upstream is retried; upstream 500s map to api_error', async () => {
    const r = await post('/v1/messages', body('fake/flaky-500', { messages: [{ role: 'user', content: `flaky ${newKey()}` }] }));
    expect(r.status, r.body).toBe(200);
    const e = await post('/v1/messages', body('fake/error-500'));
    expect(e.status).toBe(500);
    expect(JSON.parse(e.body).error.type).toBe('api_error');
  });

  it('an Anthropic-type provider gets the rewritten model and its own key, not the caller credential', async () => {
    const before = anthropic.requests.length;
    const r = await post('/v1/messages', body('other/claude-echo-1'), { 'x-api-key': 'caller-key' });
    expect(r.status, r.body).toBe(200);
    const seen = anthropic.requests[before]!;
    expect((seen.json as { model: string }).model).toBe('claude-echo-1');
    expect(seen.headers['x-api-key']).toBe(upstreamKey);
  });
});

describe('streaming translation', () => {
  const sse = async (model: string, extra: Record<string, unknown> = {}) => {
    const r = await post('/v1/messages', body(model, { stream: true, ...extra }));
    const events = r.body
      .split('\n\n')
      .filter(Boolean)
      .map((block) => {
        const [ev, data] = block.split('\n');
        return { event: ev!.replace('event: ', ''), data: JSON.parse(data!.replace('data: ', '')) };
      });
    return { r, events };
  };

  it('streams the full event sequence with real usage at both ends', async () => {
    const { r, events } = await sse('fake/echo');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/text\/event-stream/);
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('message_start');
    expect(names).toContain('ping');
    expect(names.slice(-2)).toEqual(['message_delta', 'message_stop']);
    for (const e of events) expect(e.data.type).toBe(e.event);
    expect(events[0]!.data.message.usage.input_tokens).toBeGreaterThan(0);
    const delta = events.at(-2)!.data;
    const upstream = openai.requests.at(-1)!;
    expect((upstream.json as { stream_options: unknown }).stream_options).toEqual({ include_usage: true });
    expect(delta.usage.output_tokens).toBeGreaterThan(0);
    expect(delta.delta.stop_reason).toBe('end_turn');
  });

  it('reasoning becomes a thinking block before the text (reasoning_content and Ollama reasoning)', async () => {
    for (const model of ['fake/reasoning', 'fake/ollama-reasoning']) {
      const msg = await sdk('unused').messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'think' }] });
      expect(msg.content[0]!.type, model).toBe('thinking');
      expect(msg.content.some((b) => b.type === 'text')).toBe(true);
      const streamed = await sdk('unused').messages.stream({ model, max_tokens: 64, messages: [{ role: 'user', content: 'think' }] }).finalMessage();
      expect(streamed.content.map((b) => b.type)).toEqual(msg.content.map((b) => b.type));
    }
  });

  it('a dropped upstream stream ends with an SSE error event, not a hang', async () => {
    const { r, events } = await sse('fake/drop');
    expect(r.status).toBe(200);
    expect(events.at(-1)!.event).toBe('error');
    expect(events.at(-1)!.data.error.type).toMatch(/api_error|overloaded_error/);
  });

  it('a client that disconnects cancels the upstream request', async () => {
    const ac = new AbortController();
    const res = await fetch(`${edge.proxyUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: body('fake/slow', { stream: true, messages: [{ role: 'user', content: 'a long slow answer please '.repeat(20) }] }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    const upstream = openai.requests.at(-1)!;
    expect((upstream.json as { model: string }).model).toBe('slow');
    ac.abort();
    const deadline = Date.now() + 5000;
    while (!upstream.aborted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(upstream.aborted).toBe(true);
  });

  it('count_tokens estimates the input', async () => {
    const r = await post('/v1/messages/count_tokens', JSON.stringify({ model: 'fake/echo', messages: [{ role: 'user', content: 'hello '.repeat(100) }] }));
    expect(r.status).toBe(200);
    const n = JSON.parse(r.body).input_tokens;
    expect(n).toBeGreaterThan(50);
    expect(n).toBeLessThan(400);
  });
});
