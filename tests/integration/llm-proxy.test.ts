import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { rawRequest } from '../../scripts/src/probe.ts';
import { enforcedState, flipGate, openState } from '../../scripts/src/gate-ops.ts';
import { newKey, Stack, type Edge } from '../../scripts/src/local-stack.ts';
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

describe('gate: enforced (seed 000 matrix)', () => {
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
