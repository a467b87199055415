import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BusError, llmErrors, llmRequests, llmTokens, llmUpstreamAttempts, type HandlerContext } from '@gatehouse/common';
import type { LlmMessagesRequest } from '@gatehouse/contracts';
import { startFakeAnthropic } from '../../../scripts/src/fake-upstreams/anthropic.ts';
import { startFakeOpenAI, type FakeUpstream } from '../../../scripts/src/fake-upstreams/openai.ts';
import { handleMessages, listModels, type MessagesOut } from './messages.service.ts';
import { parseRouting } from './routing/config.ts';
import { parseProxyConfig, type ProxyConfig } from './upstream/config.ts';

/**
 * One request through the worker's handler against real fake upstreams (HTTP on 127.0.0.1): the
 * routing table, its fallbacks (a provider that refuses, one that times out, one that fails after
 * the first byte — no fallback then), the gate rule for routed bare ids, usage in metrics and the
 * log line.
 */
let a: FakeUpstream;
let b: FakeUpstream;
let anth: FakeUpstream;
let cfg: ProxyConfig;

beforeAll(async () => {
  [a, b, anth] = await Promise.all([startFakeOpenAI(), startFakeOpenAI(), startFakeAnthropic()]);
  cfg = parseProxyConfig(
    {
      providers: {
        a: { type: 'openai', baseUrl: a.url, timeoutMs: 300 },
        b: { type: 'openai', baseUrl: b.url },
        strict: { type: 'openai', baseUrl: b.url, midConversationSystem: false },
        anth: { type: 'anthropic', baseUrl: anth.url },
      },
      retries: { max: 0 },
      routing: {
        background: { to: 'b/echo', maxTokens: 50, reasoning: false, tools: false },
        models: {
          'claude-refuses': { to: 'a/error-503', fallbacks: ['b/echo'] },
          'claude-limited': { to: 'a/error-429', fallbacks: ['b/echo'] },
          'claude-hangs': { to: 'a/hang', fallbacks: ['b/echo'] },
          'claude-unreachable': { to: 'a/echo', fallbacks: ['b/echo'] },
          'claude-drops': { to: 'a/drop', fallbacks: ['b/echo'] },
          'claude-bad': { to: 'a/error-400', fallbacks: ['b/echo'] },
          'claude-all-fail': { to: 'a/error-503', fallbacks: ['b/error-500'] },
          'claude-anth-busy': { to: 'anth/claude-error-529', fallbacks: ['b/echo'] },
          'claude-strict': 'strict/echo',
          'claude-to-anth': 'anth/claude-echo-1',
        },
      },
    },
    {},
  );
});
afterAll(async () => {
  await Promise.all([a.close(), b.close(), anth.close()]);
});
beforeEach(() => {
  a.requests.length = 0;
  b.requests.length = 0;
  anth.requests.length = 0;
});

interface Result {
  status: number;
  headers: Record<string, string>;
  text: string;
  usage: { input_tokens: number; output_tokens: number } | null;
  logs: { level: string; obj: Record<string, unknown>; msg: string }[];
}

async function call(body: Record<string, unknown>, extra: Partial<LlmMessagesRequest> = {}, config = cfg): Promise<Result> {
  const logs: Result['logs'] = [];
  const logger = (level: string) => (obj: Record<string, unknown>, msg: string) => logs.push({ level, obj, msg });
  const ctx = { signal: new AbortController().signal, log: { info: logger('info'), warn: logger('warn'), error: logger('error') } } as unknown as HandlerContext;
  const res: Result = { status: 0, headers: {}, text: '', usage: null, logs };
  const dec = new TextDecoder();
  const out: MessagesOut = {
    meta: (m) => Object.assign(res, { status: m.status, headers: m.headers }),
    chunk: (c) => (res.text += dec.decode(c)),
    end: (e) => (res.usage = e.usage),
  };
  const req: LlmMessagesRequest = { raw: JSON.stringify(body), headers: { 'anthropic-version': '2023-06-01' }, proxyKeyVerified: false, requestId: 'req_test', ...extra };
  try {
    await handleMessages(config, req, out, ctx);
  } catch (err) {
    if (!(err instanceof BusError)) throw err;
    res.status = err.status;
    res.text = err.message;
  }
  return res;
}

const msg = (model: string, extra: Record<string, unknown> = {}) => ({ model, max_tokens: 1000, messages: [{ role: 'user', content: 'hello' }], ...extra });
const attempts = async (route: string, target: string, outcome: string) =>
  (await llmUpstreamAttempts.get()).values.find((v) => v.labels.route === route && v.labels.target === target && v.labels.outcome === outcome)?.value ?? 0;
const streamedText = (sse: string) =>
  sse
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as { delta?: { type: string; text?: string } })
    .map((e) => (e.delta?.type === 'text_delta' ? e.delta.text : ''))
    .join('');
const line = (r: Result) => r.logs.find((l) => l.msg === 'llm request')!.obj;

describe('fallbacks: the next target only for a failure before the first byte', () => {
  it.each([
    ['claude-refuses', 'a/error-503', 503],
    ['claude-limited', 'a/error-429', 429],
  ])('%s: the first target answers %s → the fallback answers', async (model, first, status) => {
    const before = await attempts(`model:${model}`, first, 'fallback');
    const r = await call(msg(model));
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toMatchObject({ model, content: [{ type: 'text', text: 'echo: hello' }] });
    expect(a.requests).toHaveLength(1);
    expect(b.requests).toHaveLength(1);
    expect(await attempts(`model:${model}`, first, 'fallback')).toBe(before + 1);
    expect(line(r)).toMatchObject({ route: `model:${model}`, status: 200, target: 'b/echo', attempts: [{ target: first, outcome: 'fallback', status }, { target: 'b/echo', outcome: 'ok', status: 200 }] });
    expect(r.logs.some((l) => l.level === 'warn' && /trying the next target/.test(l.msg))).toBe(true);
  });

  it('a provider that times out (headers never come) → the fallback, streamed', async () => {
    const started = performance.now();
    const r = await call(msg('claude-hangs', { stream: true }));
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(r.status).toBe(200);
    expect(r.text).toContain('event: message_stop');
    expect(streamedText(r.text)).toBe('echo: hello');
    expect(b.requests).toHaveLength(1);
    expect(line(r).attempts).toEqual([{ target: 'a/hang', outcome: 'fallback', status: 504, error: 'upstream sent no response within 300 ms' }, { target: 'b/echo', outcome: 'ok', status: 200 }]);
  });

  it('an unreachable provider → the fallback', async () => {
    const down = parseProxyConfig(
      { providers: { a: { type: 'openai', baseUrl: 'http://127.0.0.1:9/v1' }, b: { type: 'openai', baseUrl: b.url } }, retries: { max: 0 }, routing: { default: { to: 'a/echo', fallbacks: ['b/echo'] } } },
      {},
    );
    const r = await call(msg('claude-sonnet-4-5'), {}, down);
    expect(r.status).toBe(200);
    expect(line(r).attempts).toEqual([{ target: 'a/echo', outcome: 'fallback', status: 502, error: expect.any(String) }, { target: 'b/echo', outcome: 'ok', status: 200 }]);
  });

  it('a stream that fails after its first byte: no fallback, the error event ends it', async () => {
    const r = await call(msg('claude-drops', { stream: true }));
    expect(r.status).toBe(200);
    expect(r.text).toContain('event: message_start');
    expect(r.text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
    expect(b.requests).toHaveLength(0);
    expect(line(r)).toMatchObject({ status: 200, streamError: true, attempts: [{ target: 'a/drop', outcome: 'error', status: 200 }] });
  });

  it('a client mistake (400) is the answer, not a reason to try elsewhere', async () => {
    const r = await call(msg('claude-bad'));
    expect(r.status).toBe(400);
    expect(b.requests).toHaveLength(0);
    expect(JSON.parse(r.text)).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('every target fails → the last one\'s answer', async () => {
    const r = await call(msg('claude-all-fail'));
    expect(r.status).toBe(500);
    expect(line(r).attempts).toEqual([
      { target: 'a/error-503', outcome: 'fallback', status: 503, error: expect.any(String) },
      { target: 'b/error-500', outcome: 'error', status: 500 },
    ]);
  });

  it('an Anthropic-type provider answering 529 → the fallback; relayed with its own model id', async () => {
    const r = await call(msg('claude-anth-busy'));
    expect(r.status).toBe(200);
    expect(anth.requests).toHaveLength(1);
    expect((anth.requests[0]!.json as { model: string }).model).toBe('claude-error-529');
    const ok = await call(msg('claude-to-anth', { messages: [{ role: 'user', content: 'hi' }, { role: 'system', content: 'be brief' }] }));
    expect(ok.status).toBe(200);
    // Passed through untouched (the provider judges mid-conversation system messages itself).
    expect((anth.requests[1]!.json as { model: string; messages: unknown[] })).toMatchObject({ model: 'claude-echo-1', messages: [{ role: 'user' }, { role: 'system', content: 'be brief' }] });
  });
});

describe('routes and their overrides', () => {
  it('background: the small model\'s id goes to its route with max_tokens capped, thinking and tools removed', async () => {
    const r = await call(
      msg('claude-haiku-4-5-20251001', {
        thinking: { type: 'adaptive' },
        output_config: { effort: 'high' },
        tools: [{ name: 'get_weather', input_schema: { type: 'object' } }],
      }),
    );
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).model).toBe('claude-haiku-4-5-20251001');
    const sent = b.requests[0]!.json as Record<string, unknown>;
    expect(sent).toMatchObject({ model: 'echo', max_tokens: 50 });
    expect(sent).not.toHaveProperty('reasoning_effort');
    expect(sent).not.toHaveProperty('tools');
  });

  it('a bare id no route matches stays native (pass-through as before routing)', async () => {
    const native = parseProxyConfig({ native: { baseUrl: anth.url }, providers: { b: { type: 'openai', baseUrl: b.url } }, routing: { background: 'b/echo' } }, {});
    const r = await call(msg('claude-echo-1'), { headers: { 'anthropic-version': '2023-06-01', 'x-api-key': 'caller-own-key' } }, native);
    expect(r.status).toBe(200);
    expect(b.requests).toHaveLength(0);
    expect(anth.requests[0]!.raw.toString()).toBe(JSON.stringify(msg('claude-echo-1')));
    expect(line(r)).toMatchObject({ route: 'native', status: 200 });
  });

  it('a routed bare id is gated in the worker: 401 without the key when enforced, 503 when the gate is unknown', async () => {
    expect((await call(msg('claude-haiku-4-5'), { gate: 'enforced', proxyKeyVerified: false })).status).toBe(401);
    expect((await call(msg('claude-haiku-4-5'), { gate: 'unknown' })).status).toBe(503);
    expect((await call(msg('claude-haiku-4-5'), { gate: 'enforced', proxyKeyVerified: true })).status).toBe(200);
    expect((await call(msg('claude-haiku-4-5'), { gate: 'open' })).status).toBe(200);
    expect(b.requests).toHaveLength(2);
  });

  it('a routed body is validated as any translated one', async () => {
    const r = await call({ model: 'claude-haiku-4-5', messages: [] });
    expect([r.status, r.text]).toEqual([400, 'max_tokens: Field required']);
  });

  it('usage per route and client key: requests, errors, tokens in and out', async () => {
    const labels = { route: 'background', client: 'sha256:0123456789ab' };
    const value = async (m: { get(): Promise<{ values: { labels: Record<string, string | number | undefined>; value: number }[] }> }, extra: Record<string, string> = {}) =>
      (await m.get()).values.find((v) => Object.entries({ ...labels, ...extra }).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
    const [req0, err0, in0, out0] = [await value(llmRequests), await value(llmErrors), await value(llmTokens, { direction: 'in' }), await value(llmTokens, { direction: 'out' })];
    const r = await call(msg('claude-haiku-4-5'), { client: labels.client });
    const usage = JSON.parse(r.text).usage as { input_tokens: number; output_tokens: number };
    expect(await value(llmRequests)).toBe(req0 + 1);
    expect(await value(llmErrors)).toBe(err0);
    expect(await value(llmTokens, { direction: 'in' })).toBe(in0 + usage.input_tokens);
    expect(await value(llmTokens, { direction: 'out' })).toBe(out0 + usage.output_tokens);
    expect(line(r)).toMatchObject({ route: 'background', client: labels.client, input_tokens: usage.input_tokens, output_tokens: usage.output_tokens });
    await call(msg('claude-haiku-4-5'), { client: labels.client, gate: 'unknown' });
    expect(await value(llmErrors)).toBe(err0 + 1);
  });
});

describe('mid-conversation system messages', () => {
  const withSystem = msg('b/echo', { messages: [{ role: 'user', content: 'hello' }, { role: 'system', content: 'be brief' }] });

  it('reach an OpenAI-style provider as a system message in place', async () => {
    const r = await call(withSystem);
    expect(r.status).toBe(200);
    expect((b.requests[0]!.json as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'system', content: 'be brief' },
    ]);
  });

  it('a provider that cannot take them: Anthropic\'s own 400 wording, nothing sent upstream', async () => {
    const r = await call({ ...withSystem, model: 'strict/echo' });
    expect([r.status, r.text]).toEqual([400, "role 'system' is not supported on this model"]);
    expect(b.requests).toHaveLength(0);
    expect((await call(msg('strict/echo'))).status).toBe(200);
  });
});

describe('listModels', () => {
  it('routed aliases (exact ids) first, in Anthropic\'s shape, then the providers\' models', () => {
    const withModels = parseProxyConfig({ providers: { b: { type: 'openai', baseUrl: b.url, models: ['echo'] } }, routing: { models: { 'claude-qwen': 'b/qwen3:8b', 'claude-opus-*': 'b/echo' } } }, {});
    expect(listModels(withModels)).toEqual({
      data: [
        { type: 'model', id: 'claude-qwen', display_name: 'qwen3:8b (b)', created_at: expect.any(String) },
        { type: 'model', id: 'b/echo', display_name: 'echo (b)', created_at: expect.any(String) },
      ],
      has_more: false,
      first_id: 'claude-qwen',
      last_id: 'b/echo',
    });
    // A live table replaces the file's.
    const live = parseRouting({ models: { 'claude-other': 'b/echo' } }, new Set(['b']));
    expect(listModels(withModels, live).data.map((m) => m.id)).toEqual(['claude-other', 'b/echo']);
  });
});
