import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConfigStore } from '@gatehouse/common';
import { enforcedState, flipGate, openState } from '../../scripts/src/gate-ops.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';

/**
 * The LLM proxy's routing table through the real stack (edge + proxy worker processes, a fake
 * OpenAI-compatible upstream): Claude model names routed by situation and by id, a fallback past
 * an unreachable provider, the routed aliases in /v1/models, the gate on routed ids, and a new
 * table stored in the config bucket applied without a restart.
 */
const stack = new Stack();
let edge: Edge;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
const proxyKey = newKey();

beforeAll(async () => {
  fake = await startFakeOpenAI();
  const dir = mkdtempSync(join(tmpdir(), 'llm-routing-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      providers: {
        fake: { type: 'openai', baseUrl: fake.url, models: ['echo'] },
        dead: { type: 'openai', baseUrl: 'http://127.0.0.1:9/v1' },
      },
      timeoutMs: 5000,
      retries: { max: 0 },
      routing: {
        default: 'fake/echo',
        background: { to: 'dead/echo', fallbacks: ['fake/reasoning'], maxTokens: 100 },
        models: { 'claude-fake-tools': 'fake/tools' },
      },
    }),
  );
  await stack.startProxyWorker({ LLMPROXY_CONFIG: config });
  edge = await stack.startEdge({ LLMPROXY_CONFIG: config });
});
afterAll(async () => {
  await stack.close();
  await fake?.close();
});

const body = (model: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model, max_tokens: 1000, messages: [{ role: 'user', content: 'hello there' }], ...extra });

const send = (path: string, payload?: string, headers: Record<string, string> = {}, method = payload === undefined ? 'GET' : 'POST') =>
  new Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
    const u = new URL(edge.proxyUrl);
    const req = request({ host: u.hostname, port: u.port, path, method, headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers } }, (res) => {
      let data = '';
      res.on('data', (d) => (data += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data, headers: res.headers }));
    });
    req.setTimeout(15_000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });

const lastUpstream = () => fake.requests.at(-1)!.json as Record<string, unknown>;

describe('routing by situation and by id', () => {
  it('Claude Code\'s main model goes to the default route; the answer names the model asked for', async () => {
    const r = await send('/v1/messages', body('claude-sonnet-4-5'));
    expect(r.status, r.body).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'echo: hello there' }] });
    expect(lastUpstream().model).toBe('echo');
  });

  it('the small/fast model (background) falls back past an unreachable provider, max_tokens capped', async () => {
    const before = fake.requests.length;
    const r = await send('/v1/messages', body('claude-haiku-4-5-20251001'));
    expect(r.status, r.body).toBe(200);
    expect(JSON.parse(r.body).content[0]).toMatchObject({ type: 'thinking' });
    expect(fake.requests.length).toBe(before + 1);
    expect(lastUpstream()).toMatchObject({ model: 'reasoning', max_tokens: 100 });
  });

  it('/v1/models lists the routed alias first, in Anthropic\'s shape; the alias routes', async () => {
    const r = await send('/v1/models');
    expect(r.status).toBe(200);
    const list = JSON.parse(r.body) as { data: { id: string; type: string; display_name: string }[] };
    expect(list.data.map((m) => m.id)).toEqual(['claude-fake-tools', 'fake/echo']);
    expect(list.data[0]).toMatchObject({ type: 'model', display_name: 'tools (fake)' });
    const t = await send('/v1/messages', body('claude-fake-tools', { tools: [{ name: 'get_weather', input_schema: { type: 'object' } }] }));
    expect(JSON.parse(t.body)).toMatchObject({ model: 'claude-fake-tools', stop_reason: 'tool_use' });
  });

  it('a mid-conversation system message reaches the provider in place; count_tokens takes it too', async () => {
    const messages = [
      { role: 'user', content: 'hello there' },
      { role: 'system', content: 'Available agent types: none' },
    ];
    const r = await send('/v1/messages?beta=true', body('claude-opus-4-8', { messages, thinking: { type: 'adaptive' }, output_config: { effort: 'high' }, metadata: { user_id: '{"device_id":"d"}' } }), {
      'anthropic-beta': 'mid-conversation-system-2026-04-07',
    });
    expect(r.status, r.body).toBe(200);
    const up = lastUpstream();
    expect(up.messages).toEqual([
      { role: 'user', content: 'hello there' },
      { role: 'system', content: 'Available agent types: none' },
    ]);
    expect(up.reasoning_effort).toBe('high');
    expect(up).not.toHaveProperty('user');
    const c = await send('/v1/messages/count_tokens?beta=true', JSON.stringify({ model: 'claude-opus-4-8', messages }));
    expect(c.status, c.body).toBe(200);
    expect(JSON.parse(c.body).input_tokens).toBeGreaterThan(0);
  });

  it('HEAD / answers a reachability probe with 200', async () => {
    const r = await send('/', undefined, {}, 'HEAD');
    expect(r.status).toBe(200);
    expect(r.headers['request-id']).toMatch(/^req_/);
  });
});

describe('the gate on routed ids', () => {
  beforeAll(async () => {
    await flipGate(await stack.store(), 'llm', enforcedState([proxyKey], 'test'));
  });
  afterAll(async () => {
    await flipGate(await stack.store(), 'llm', openState('test'));
  });

  it('a routed claude id spends the server\'s provider: refused without the key (not retryable), served with it', async () => {
    let r = await send('/v1/messages', body('claude-sonnet-4-5'));
    for (let i = 0; i < 50 && r.status === 200; i++) {
      await new Promise((res) => setTimeout(res, 100)); // until the edge applied the flip
      r = await send('/v1/messages', body('claude-sonnet-4-5'));
    }
    expect(r.status, r.body).toBe(401);
    expect(JSON.parse(r.body)).toMatchObject({ type: 'error', error: { type: 'authentication_error' }, request_id: r.headers['request-id'] });
    expect(r.headers['x-should-retry']).toBe('false');
    const wrong = await send('/v1/messages', body('claude-sonnet-4-5'), { 'x-api-key': newKey() });
    expect([wrong.status, wrong.headers['x-should-retry']]).toEqual([401, 'false']);
    const ok = await send('/v1/messages', body('claude-sonnet-4-5'), { 'x-api-key': proxyKey });
    expect(ok.status, ok.body).toBe(200);
    const bearer = await send('/v1/messages', body('claude-sonnet-4-5'), { authorization: `Bearer ${proxyKey}` });
    expect(bearer.status, bearer.body).toBe(200);
  });
});

describe('a routing table stored in the config bucket', () => {
  it('applies without a restart; a table naming an unknown provider is rejected and the running one stays', async () => {
    const store = await openConfigStore(await stack.busHandle());
    await store.put('llm.routing', { default: 'fake/tools', models: { 'claude-live-alias': 'fake/echo' } }, 'test');
    let ids: string[] = [];
    for (let i = 0; i < 100 && !ids.includes('claude-live-alias'); i++) {
      await new Promise((res) => setTimeout(res, 50));
      ids = (JSON.parse((await send('/v1/models')).body) as { data: { id: string }[] }).data.map((m) => m.id);
    }
    expect(ids).toEqual(['claude-live-alias', 'fake/echo']);
    const r = await send('/v1/messages', body('claude-sonnet-4-5', { tools: [{ name: 'get_weather', input_schema: { type: 'object' } }] }));
    expect(JSON.parse(r.body)).toMatchObject({ stop_reason: 'tool_use' });
    expect(lastUpstream().model).toBe('tools');

    await store.put('llm.routing', { default: 'nowhere/x' }, 'test');
    await new Promise((res) => setTimeout(res, 500));
    const still = await send('/v1/messages', body('claude-sonnet-4-5'));
    expect(still.status, still.body).toBe(200);
    expect(lastUpstream().model).toBe('tools');
  });
});
