import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BusError, busRequest, busStream, type Bus } from '@gatehouse/common';
import { llmConnectionContracts } from '@gatehouse/contracts';
import { freePort, newKey, Stack, waitFor, type Proc } from '../support/local-stack.ts';
import { startFakeOllama, MODELS as OLLAMA_MODELS } from '../../scripts/src/fake-upstreams/ollama.ts';
import { startFakeOpenAI, MODELS as OPENAI_MODELS } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream } from '../../scripts/src/fake-upstreams/common.ts';

/**
 * The proxy worker's connection registry over the bus, as the chat worker uses it: a real proxy-worker
 * process configured the Open WebUI way (OLLAMA_BASE_URLS, OPENAI_API_BASE_URLS + OPENAI_API_KEYS,
 * *_API_CONFIGS, LLMPROXY_CONFIG), fake Ollama and OpenAI servers speaking their real protocols.
 *
 * Ollama connections: 0 = fake A, 1 = fake B (prefix "b", tags, key), 2 = nothing listening,
 * 3 = fake A again (merged ids), 4 = fake C (disabled). OpenAI: 0 = fake, 1 = fake with prefix "p" and
 * model_ids (errors, slow, hang). LLMPROXY provider "prov" on the fake OpenAI.
 */
const stack = new Stack();
let bus: Bus;
let worker: Proc;
let olA: FakeUpstream;
let olB: FakeUpstream;
let olC: FakeUpstream;
let oa: FakeUpstream;
const openaiKey = newKey();
const ollamaKey = newKey();
let deadPort: number;

beforeAll(async () => {
  olA = await startFakeOllama({ models: [...OLLAMA_MODELS, 'error-400', 'error-404', 'error-500'] });
  olB = await startFakeOllama({ apiKey: ollamaKey });
  olC = await startFakeOllama();
  oa = await startFakeOpenAI({ apiKey: openaiKey });
  deadPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'llm-connections-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      providers: { prov: { type: 'openai', baseUrl: oa.url, apiKeyEnv: 'FAKE_OPENAI_KEY', models: ['echo', 'slow'] } },
      timeoutMs: 5000,
      retries: { max: 0 },
    }),
  );
  worker = await stack.startProxyWorker({
    LLMPROXY_CONFIG: config,
    FAKE_OPENAI_KEY: openaiKey,
    OLLAMA_BASE_URLS: [olA.url, `${olB.url}/`, `http://127.0.0.1:${deadPort}`, olA.url, olC.url].join(';'),
    OLLAMA_API_CONFIGS: JSON.stringify({
      '1': { prefix_id: 'b', tags: [{ name: 'team-b' }], key: ollamaKey, connection_type: 'external' },
      '4': { enable: false },
    }),
    OPENAI_API_BASE_URLS: `${oa.url};${oa.url}`,
    OPENAI_API_KEYS: `${openaiKey};${openaiKey}`,
    OPENAI_API_CONFIGS: JSON.stringify({ '1': { prefix_id: 'p', model_ids: ['echo', 'error-400', 'error-429', 'slow', 'hang'], tags: ['pinned'] } }),
  });
  bus = await stack.busHandle();
});

afterAll(async () => {
  await stack.close();
  await Promise.all([olA, olB, olC, oa].map((f) => f?.close()));
});

type Chunk = { id: string; object: string; model: string; choices: Array<{ index: number; delta: Record<string, any>; finish_reason: string | null }>; usage?: Record<string, unknown> };

async function chat(model: string, body: Record<string, unknown>, stream = true) {
  const frames: Array<{ kind: string; value: unknown }> = [];
  for await (const f of busStream(bus, llmConnectionContracts.chat, { model, body, stream }, { idleTimeoutMs: 10_000 })) {
    if (f.kind === 'meta') frames.push({ kind: 'meta', value: f.meta });
    else if (f.kind === 'chunk') frames.push({ kind: 'chunk', value: new TextDecoder().decode(f.data) });
    else frames.push({ kind: 'end', value: f.end });
  }
  const raw = frames.filter((f) => f.kind === 'chunk').map((f) => f.value as string);
  return {
    kinds: frames.map((f) => f.kind),
    meta: frames.find((f) => f.kind === 'meta')?.value,
    end: frames.find((f) => f.kind === 'end')?.value as { finish_reason: string | null; usage: Record<string, unknown> | null },
    raw,
    chunks: raw.map((r) => JSON.parse(r) as Chunk),
  };
}

const user = (text: string) => ({ messages: [{ role: 'user', content: text }] });
const text = (chunks: Chunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
const reasoning = (chunks: Chunk[]) => chunks.map((c) => c.choices[0]?.delta.reasoning_content ?? '').join('');

async function failure(p: Promise<unknown>): Promise<BusError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof BusError) return err;
    throw err;
  }
  throw new Error('expected a BusError');
}

const tagRequests = (f: FakeUpstream) => f.requests.filter((r) => r.path === '/api/tags').length;

describe('llm.connections.models', () => {
  it("lists every connection in Open WebUI's shape and order", async () => {
    const { data } = await busRequest(bus, llmConnectionContracts.models, { refresh: true });
    const ids = data.map((m) => m.id);
    expect(ids).toEqual([
      ...OPENAI_MODELS,
      'p.echo',
      'p.error-400',
      'p.error-429',
      'p.slow',
      'p.hang',
      'prov/echo',
      'prov/slow',
      ...[...OLLAMA_MODELS, 'error-400', 'error-404', 'error-500'].map((m) => `${m}:latest`),
      ...OLLAMA_MODELS.map((m) => `b.${m}:latest`),
    ]);

    const byId = new Map(data.map((m) => [m.id, m]));
    expect(byId.get('echo')).toEqual({
      id: 'echo',
      object: 'model',
      created: 1_700_000_000,
      owned_by: 'openai',
      connection_type: 'external',
      tags: [],
      name: 'echo',
      openai: { id: 'echo', object: 'model', created: 1_700_000_000, owned_by: 'fake-upstream', connection_type: 'external' },
      urlIdx: 0,
    });
    expect(byId.get('p.echo')).toMatchObject({ name: 'echo', owned_by: 'openai', urlIdx: 1, tags: [{ name: 'pinned' }], openai: { id: 'p.echo', openai: { id: 'echo' } } });
    expect(byId.get('prov/echo')).toMatchObject({ owned_by: 'openai', connection_type: 'external' });
    expect(byId.get('prov/echo')?.urlIdx).toBeUndefined();

    const echo = byId.get('echo:latest');
    expect(echo).toMatchObject({ name: 'echo:latest', object: 'model', created: 0, owned_by: 'ollama', connection_type: 'local', tags: [], loaded: false });
    expect(echo?.ollama).toMatchObject({ model: 'echo:latest', details: { format: 'gguf' }, urls: [0, 3], connection_type: 'local' });
    expect(byId.get('b.reasoning:latest')).toMatchObject({ name: 'reasoning:latest', owned_by: 'ollama', connection_type: 'external', tags: [{ name: 'team-b' }] });
    expect(byId.get('b.reasoning:latest')?.ollama).toMatchObject({ model: 'b.reasoning:latest', urls: [1] });
  });

  it('asks no disabled connection, uses the key of its connection, caches per connection, refresh bypasses', async () => {
    expect(tagRequests(olC)).toBe(0);
    expect(olB.requests.find((r) => r.path === '/api/tags')?.headers.authorization).toBe(`Bearer ${ollamaKey}`);
    expect(oa.requests.find((r) => r.path === '/v1/models')?.headers.authorization).toBe(`Bearer ${openaiKey}`);
    const before = tagRequests(olA);
    await busRequest(bus, llmConnectionContracts.models, {});
    expect(tagRequests(olA)).toBe(before);
    await busRequest(bus, llmConnectionContracts.models, { refresh: true });
    expect(tagRequests(olA)).toBe(before + 2);
  });

  it('an unreachable connection lists nothing and is logged once, never an error', async () => {
    await busRequest(bus, llmConnectionContracts.models, { refresh: true });
    const { data } = await busRequest(bus, llmConnectionContracts.models, { refresh: true });
    expect(data.length).toBeGreaterThan(10);
    const warnings = worker.log().split('\n').filter((l) => l.includes('connection unavailable'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('"connection":"ollama[2]"');
    expect(warnings[0]).toContain(`127.0.0.1:${deadPort}`);
  });
});

describe('llm.connections.chat — Ollama native API', () => {
  it('streams text as OpenAI chunks: meta first, one id, role first, finish and usage last', async () => {
    const r = await chat('echo:latest', { ...user('hello there'), temperature: 0.3, max_tokens: 50, stop: ['END'], tool_choice: 'auto' });
    expect(r.kinds[0]).toBe('meta');
    expect(r.kinds.at(-1)).toBe('end');
    expect(r.meta).toEqual({ model: 'echo:latest', owned_by: 'ollama' });
    expect(text(r.chunks)).toBe('echo: hello there');
    expect(new Set(r.chunks.map((c) => c.id)).size).toBe(1);
    expect(r.chunks[0]?.id).toMatch(/^chatcmpl-[0-9a-f-]{36}$/);
    expect(r.chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(r.chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'echo:latest')).toBe(true);
    expect(r.chunks.slice(0, -1).every((c) => c.choices[0]?.finish_reason === null)).toBe(true);
    expect(r.chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
    expect(r.end.finish_reason).toBe('stop');
    expect(r.end.usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), input_tokens: expect.any(Number), eval_count: expect.any(Number) });
    expect(r.raw.join('')).not.toContain('reasoning_content');
    const sent = [...olA.requests].reverse().find((q) => q.path === '/api/chat')?.json;
    expect(sent).toEqual({ model: 'echo:latest', messages: [{ role: 'user', content: 'hello there' }], stream: true, options: { temperature: 0.3, stop: ['END'], num_predict: 50 } });
  });

  it('strips prefix_id, sends the connection key, and thinking arrives as reasoning_content only', async () => {
    const r = await chat('b.reasoning:latest', user('why'));
    expect(r.meta).toEqual({ model: 'reasoning:latest', owned_by: 'ollama' });
    expect(reasoning(r.chunks)).toBe('Let me think about this step by step.');
    expect(text(r.chunks)).toBe('echo: why');
    const req = olB.requests.at(-1);
    expect(req?.json).toMatchObject({ model: 'reasoning:latest' });
    expect(req?.headers.authorization).toBe(`Bearer ${ollamaKey}`);
  });

  it('<think> tags in the content become reasoning_content, even split across objects', async () => {
    const r = await chat('think-tags:latest', user('x'));
    expect(reasoning(r.chunks)).toBe('pondering');
    expect(text(r.chunks)).toBe('The answer.');
    expect(r.raw.join('')).not.toContain('think>');
  });

  it('tool calls: string arguments, finish_reason tool_calls', async () => {
    const tools = ['get_weather', 'get_time'].map((name) => ({ type: 'function', function: { name, parameters: { type: 'object' } } }));
    const r = await chat('tools:latest', { ...user('weather?'), tools });
    const calls = r.chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(calls.map((c: any) => [c.index, c.type, c.function.name, c.function.arguments])).toEqual([
      [0, 'function', 'get_weather', '{"city":"Paris"}'],
      [1, 'function', 'get_time', '{"city":"Paris"}'],
    ]);
    expect(r.end.finish_reason).toBe('tool_calls');
    expect([...olA.requests].reverse().find((q) => q.path === '/api/chat')?.json).toMatchObject({ tools });
  });

  it('not streamed: one frame with the whole chat.completion', async () => {
    const r = await chat('reasoning:latest', user('q'), false);
    expect(r.kinds).toEqual(['meta', 'chunk', 'end']);
    const c = JSON.parse(r.raw[0] as string);
    expect(c).toMatchObject({ object: 'chat.completion', model: 'reasoning:latest', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'echo: q', reasoning_content: 'Let me think about this step by step.' } }] });
    expect(r.end).toMatchObject({ finish_reason: 'stop', usage: { prompt_tokens: expect.any(Number) } });
    expect([...olA.requests].reverse().find((q) => q.path === '/api/chat')?.json).toMatchObject({ stream: false });
  });

  it('upstream errors carry the status and Ollama’s message; mid-stream errors and drops end the stream with an error', async () => {
    const e404 = await failure(chat('error-404:latest', user('x')));
    expect([e404.status, e404.message]).toEqual([404, 'model "error-404:latest" not found, try pulling it first']);
    const e500 = await failure(chat('error-500:latest', user('x'), false));
    expect([e500.status, e500.message]).toEqual([500, 'llama runner process has terminated: exit status 2']);

    const seen: string[] = [];
    const mid = await failure(
      (async () => {
        for await (const f of busStream(bus, llmConnectionContracts.chat, { model: 'error-midstream:latest', body: user('x'), stream: true })) seen.push(f.kind);
      })(),
    );
    expect(seen[0]).toBe('meta');
    expect(seen.slice(1)).toEqual(seen.slice(1).map(() => 'chunk'));
    expect(seen.length).toBeGreaterThan(1);
    expect([mid.status, mid.message]).toEqual([500, 'llama runner process has terminated: exit status 2']);
    const drop = await failure(chat('drop:latest', user('x')));
    expect(drop.status).toBe(502);
  });

  it('slow streams arrive as they are produced', async () => {
    const times: number[] = [];
    const start = performance.now();
    for await (const f of busStream(bus, llmConnectionContracts.chat, { model: 'slow:latest', body: user('a b c d'), stream: true })) {
      if (f.kind === 'chunk') times.push(performance.now() - start);
    }
    expect(times.length).toBeGreaterThanOrEqual(4);
    // The fake waits 200 ms between objects: the first chunk must not wait for the last.
    expect((times.at(-1) as number) - (times[0] as number)).toBeGreaterThan(450);
  });

  it('cancelling aborts the upstream request at once', async () => {
    const before = olA.requests.length;
    const ac = new AbortController();
    const run = (async () => {
      for await (const _ of busStream(bus, llmConnectionContracts.chat, { model: 'hang:latest', body: user('x'), stream: true }, { signal: ac.signal })) {
        // nothing comes
      }
    })();
    await waitFor(() => olA.requests.slice(before).some((r) => r.path === '/api/chat'), 5000, () => 'the fake never saw the request');
    ac.abort();
    const err = await failure(run);
    expect(err.status).toBe(499);
    const req = olA.requests.slice(before).find((r) => r.path === '/api/chat');
    await waitFor(() => req?.aborted === true, 2000, () => 'the fake Ollama still has the connection open');
  });
});

describe('llm.connections.chat — OpenAI-compatible', () => {
  it('passes chunks through with usage requested, no reasoning when none emitted', async () => {
    const r = await chat('echo', user('hi'));
    expect(r.meta).toEqual({ model: 'echo', owned_by: 'openai' });
    expect(text(r.chunks)).toBe('echo: hi');
    expect(r.raw.join('')).not.toContain('reasoning_content');
    expect(r.end).toMatchObject({ finish_reason: 'stop', usage: { prompt_tokens: expect.any(Number), input_tokens: expect.any(Number), output_tokens: expect.any(Number) } });
    const sent = oa.requests.at(-1);
    expect(sent?.json).toMatchObject({ model: 'echo', stream: true, stream_options: { include_usage: true } });
    expect(sent?.headers.authorization).toBe(`Bearer ${openaiKey}`);
  });

  it('reasoning in each form ends up in reasoning_content', async () => {
    for (const model of ['reasoning', 'ollama-reasoning', 'think-tags']) {
      const r = await chat(model, user('q'));
      expect(reasoning(r.chunks), model).toBe(model === 'think-tags' ? 'pondering' : model === 'reasoning' ? 'Let me think about this step by step.' : 'The user wants an answer. I will give one.');
      expect(text(r.chunks), model).toBe(model === 'think-tags' ? 'The answer.' : 'echo: q');
      expect(r.raw.join(''), model).not.toMatch(/"reasoning":|"thinking":|<think>|<\/think>/);
    }
  });

  it('tool calls stream through as the upstream sent them', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
    const r = await chat('tools', { ...user('w?'), tools, tool_choice: 'auto' });
    const args = r.chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).map((t: any) => t.function?.arguments ?? '').join('');
    expect(args).toBe('{"city":"Paris"}');
    expect(r.end.finish_reason).toBe('tool_calls');
    expect(oa.requests.at(-1)?.json).toMatchObject({ tool_choice: 'auto', tools });
  });

  it('prefix_id is stripped for model_ids connections; non-stream answers one chat.completion', async () => {
    const r = await chat('p.echo', user('np'), false);
    expect(r.kinds).toEqual(['meta', 'chunk', 'end']);
    expect(JSON.parse(r.raw[0] as string)).toMatchObject({ object: 'chat.completion', choices: [{ message: { content: 'echo: np' } }] });
    expect(oa.requests.at(-1)?.json).toMatchObject({ model: 'echo', stream: false });
    expect(r.end.finish_reason).toBe('stop');
  });

  it('LLMPROXY providers are served too', async () => {
    const r = await chat('prov/echo', user('via provider'));
    expect(text(r.chunks)).toBe('echo: via provider');
    expect(oa.requests.at(-1)?.json).toMatchObject({ model: 'echo' });
  });

  it('upstream errors: status, message and {type, code}; unknown model 404', async () => {
    const e400 = await failure(chat('p.error-400', user('x')));
    expect([e400.status, e400.message, e400.details]).toEqual([400, 'Invalid request (fake upstream).', { type: 'invalid_request_error', code: null }]);
    const e429 = await failure(chat('p.error-429', user('x'), false));
    expect([e429.status, e429.details.code]).toEqual([429, 'rate_limit_exceeded']);
    const unknown = await failure(chat('no-such-model', user('x')));
    expect([unknown.status, unknown.message]).toEqual([404, 'Model not found']);
  });

  it('cancelling mid-stream closes the upstream connection', async () => {
    const before = oa.requests.length;
    let chunks = 0;
    for await (const f of busStream(bus, llmConnectionContracts.chat, { model: 'p.slow', body: user('one two three four five'), stream: true })) {
      if (f.kind === 'chunk' && ++chunks === 2) break;
    }
    const req = oa.requests.slice(before).find((r) => r.path === '/v1/chat/completions');
    expect(req?.json).toMatchObject({ model: 'slow' });
    await waitFor(() => req?.aborted === true, 2000, () => 'the fake OpenAI still has the connection open');
    expect(req?.finished).toBe(false);
  });

  it('keys never reach the log', () => {
    expect(worker.log()).not.toContain(openaiKey);
    expect(worker.log()).not.toContain(ollamaKey);
  });
});
