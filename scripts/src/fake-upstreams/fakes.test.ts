// The fakes speak the real protocols: the official SDKs talk to them without noticing.
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from './anthropic.ts';
import type { FakeUpstream } from './common.ts';
import { startFakeOllama } from './ollama.ts';
import { startFakeOpenAI } from './openai.ts';

const openaiKey = `test-${randomBytes(16).toString('hex')}`;
const anthropicKey = `test-${randomBytes(16).toString('hex')}`;
let oa: FakeUpstream;
let an: FakeUpstream;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  oa = await startFakeOpenAI({ apiKey: openaiKey });
  an = await startFakeAnthropic({ apiKey: anthropicKey });
  openai = new OpenAI({ baseURL: oa.url, apiKey: openaiKey, maxRetries: 0, timeout: 5000 });
  anthropic = new Anthropic({ baseURL: an.url, apiKey: anthropicKey, maxRetries: 0, timeout: 5000 });
});
afterAll(async () => {
  await oa?.close();
  await an?.close();
});

describe('fake OpenAI upstream with the openai SDK', () => {
  it('non-stream echo with usage', async () => {
    const r = await openai.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi sdk' }] }] });
    expect(r.choices[0]?.message.content).toBe('echo: hi sdk');
    expect(r.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    expect(oa.requests.at(-1)?.headers.authorization).toBe(`Bearer ${openaiKey}`);
  });

  it('stream with include_usage', async () => {
    const stream = await openai.chat.completions.create({ model: 'echo', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'a b c' }] });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('echo: a b c');
    expect(usage?.total_tokens).toBeGreaterThan(0);
  });

  it('streamed tool calls assemble into complete calls', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } },
    ];
    const final = await openai.chat.completions.stream({ model: 'tools', tools, messages: [{ role: 'user', content: 'weather?' }] }).finalChatCompletion();
    const calls = final.choices[0]?.message.tool_calls ?? [];
    expect(calls.map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : []))).toEqual([
      ['get_weather', '{"city":"Paris"}'],
      ['get_time', '{"city":"Paris"}'],
    ]);
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('call: the tool the prompt names, then the tool result as the answer', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'Read', parameters: { type: 'object', properties: { file_path: { type: 'string' } } } } },
      { type: 'function', function: { name: 'Bash', parameters: { type: 'object' } } },
    ];
    const prompt = 'please\nCALL Read {"file_path":"/tmp/x y.txt"}';
    const final = await openai.chat.completions.stream({ model: 'call', tools, messages: [{ role: 'user', content: prompt }] }).finalChatCompletion();
    const call = final.choices[0]?.message.tool_calls?.[0];
    expect(call?.type === 'function' && [call.function.name, call.function.arguments]).toEqual(['Read', '{"file_path":"/tmp/x y.txt"}']);
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    const answered = await openai.chat.completions.create({
      model: 'call',
      tools,
      messages: [
        { role: 'user', content: prompt },
        { role: 'assistant', content: null, tool_calls: [{ id: call?.id ?? '', type: 'function', function: { name: 'Read', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: call?.id ?? '', content: [{ type: 'text', text: 'file body' }] },
        { role: 'system', content: 'a reminder after the result' },
      ],
    });
    expect(answered.choices[0]?.message.content).toBe('tool said: file body');
    const missing = await openai.chat.completions.create({ model: 'call', messages: [{ role: 'user', content: 'CALL Write {}' }] });
    expect(missing.choices[0]?.message.content).toBe('no tool named Write was offered');
  });

  it('think-tags and reasoning models', async () => {
    const stream = await openai.chat.completions.create({ model: 'think-tags', stream: true, messages: [{ role: 'user', content: 'x' }] });
    const pieces: string[] = [];
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) pieces.push(chunk.choices[0].delta.content);
    expect(pieces.join('')).toBe('<think>pondering</think>The answer.');
    expect(pieces).not.toContain('<think>');
    const r = await openai.chat.completions.create({ model: 'reasoning', messages: [{ role: 'user', content: 'x' }] });
    expect((r.choices[0]?.message as unknown as { reasoning_content: string } | undefined)?.reasoning_content).toBeTruthy();
  });

  it('errors are OpenAI envelopes the SDK understands', async () => {
    const err = await openai.chat.completions.create({ model: 'error-429', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('rate_limit_exceeded');
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe('1');
    const bad = new OpenAI({ baseURL: oa.url, apiKey: 'wrong', maxRetries: 0 });
    await expect(bad.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('lists models', async () => {
    const ids: string[] = [];
    for await (const m of openai.models.list()) ids.push(m.id);
    expect(ids).toContain('echo');
  });
});

describe('fake Anthropic upstream with the Anthropic SDK', () => {
  it('non-stream message', async () => {
    const msg = await anthropic.messages.create({ model: 'claude-echo-1', max_tokens: 32, messages: [{ role: 'user', content: 'hello' }] });
    expect(msg.content).toEqual([{ type: 'text', text: 'echo: hello' }]);
    expect(msg.stop_reason).toBe('end_turn');
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
    const seen = an.requests.at(-1);
    expect(Buffer.isBuffer(seen?.body)).toBe(true);
    expect(seen?.headers['x-api-key']).toBe(anthropicKey);
  });

  it('stream: the SDK assembles the exact event sequence', async () => {
    const stream = anthropic.messages.stream({ model: 'claude-echo-1', max_tokens: 32, messages: [{ role: 'user', content: 'stream me please' }] });
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'echo: stream me please' }]);
    expect(final.usage.output_tokens).toBeGreaterThan(1);
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
  });

  it('errors: 429 with retry-after, request-id and rate-limit headers; wrong key 401', async () => {
    const err = await anthropic.messages.create({ model: 'claude-error-429', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    const e = err as InstanceType<typeof Anthropic.RateLimitError>;
    expect(e.headers?.get('retry-after')).toBe('3');
    expect(e.headers?.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    expect(e.requestID).toMatch(/^req_/);
    const bad = new Anthropic({ baseURL: an.url, apiKey: 'wrong', maxRetries: 0 });
    await expect(bad.messages.create({ model: 'claude-echo-1', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    const oauth = new Anthropic({ baseURL: an.url, authToken: anthropicKey, apiKey: null, maxRetries: 0 });
    const r = await oauth.messages.create({ model: 'claude-echo-1', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }).withResponse();
    expect(r.response.headers.get('x-fake-saw-auth')).toBe('authorization');
  });

  it('count_tokens and models', async () => {
    const n = await anthropic.messages.countTokens({ model: 'claude-echo-1', messages: [{ role: 'user', content: 'count these words' }] });
    expect(n.input_tokens).toBeGreaterThan(0);
    const page = await anthropic.models.list();
    expect(page.data.map((m) => m.id)).toContain('claude-echo-1');
  });
});

describe('fake Ollama upstream (native API)', () => {
  let ol: FakeUpstream;
  const ollamaKey = `test-${randomBytes(16).toString('hex')}`;
  beforeAll(async () => {
    ol = await startFakeOllama({ apiKey: ollamaKey });
  });
  afterAll(async () => {
    await ol?.close();
  });
  const chat = (body: unknown, key = ollamaKey) =>
    fetch(`${ol.url}/api/chat`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
  const lines = async (r: Response) => (await r.text()).trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);

  it('lists models as /api/tags does', async () => {
    const r = await fetch(`${ol.url}/api/tags`, { headers: { authorization: `Bearer ${ollamaKey}` } });
    const body = (await r.json()) as { models: Array<Record<string, unknown>> };
    expect(body.models.map((m) => m.model)).toContain('echo:latest');
    expect(body.models[0]).toMatchObject({ name: 'echo:latest', details: { format: 'gguf' } });
    expect((await fetch(`${ol.url}/api/tags`)).status).toBe(401);
  });

  it('streams NDJSON by default and ends with done, done_reason and the counts', async () => {
    const r = await chat({ model: 'echo', messages: [{ role: 'user', content: 'hi there' }] });
    expect(r.headers.get('content-type')).toBe('application/x-ndjson');
    const objs = await lines(r);
    expect(objs.slice(0, -1).map((o) => o.message.content).join('')).toBe('echo: hi there');
    const last = objs.at(-1)!;
    expect(last).toMatchObject({ model: 'echo', done: true, done_reason: 'stop', message: { role: 'assistant', content: '' } });
    expect(last.prompt_eval_count).toBeGreaterThan(0);
    expect(last.eval_count).toBeGreaterThan(0);
    expect(ol.requests.at(-1)?.json).toMatchObject({ model: 'echo' });
  });

  it('non-stream, thinking, tool calls with object arguments, errors as {"error"}', async () => {
    const one = (await (await chat({ model: 'reasoning:latest', stream: false, messages: [{ role: 'user', content: 'q' }] })).json()) as Record<string, any>;
    expect(one.message).toEqual({ role: 'assistant', content: 'echo: q', thinking: 'Let me think about this step by step.' });
    const noThink = await lines(await chat({ model: 'reasoning', think: false, messages: [{ role: 'user', content: 'q' }] }));
    expect(noThink.some((o) => o.message.thinking)).toBe(false);
    const tools = [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } }];
    const t = await lines(await chat({ model: 'tools', tools, messages: [{ role: 'user', content: 'q' }] }));
    expect(t[0]?.message.tool_calls[0].function).toEqual({ index: 0, name: 'get_time', arguments: { city: 'Paris' } });
    const e = await chat({ model: 'error-404', messages: [] });
    expect(e.status).toBe(404);
    expect(await e.json()).toEqual({ error: 'model "error-404" not found, try pulling it first' });
    const mid = await lines(await chat({ model: 'error-midstream', messages: [] }));
    expect(mid.at(-1)).toEqual({ error: 'llama runner process has terminated: exit status 2' });
  });
});

describe('close()', () => {
  it('ends hanging requests and open streams, and is idempotent', async () => {
    const fake = await startFakeOpenAI();
    const outcome = new Promise<string>((resolve) => {
      const req = request(`${fake.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, () => resolve('answered'));
      req.on('error', (e) => resolve(`error: ${e.message}`));
      req.end(JSON.stringify({ model: 'hang', messages: [] }));
    });
    for (let i = 0; i < 200 && fake.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(fake.requests).toHaveLength(1);
    // `hang` never answers by itself, so close() resolving at all means it ended the request; by
    // then the request is recorded as aborted (not finished), and the client sees an error, not a reply.
    await fake.close();
    expect(fake.requests[0]).toMatchObject({ aborted: true, finished: false });
    await fake.close();
    expect(await outcome).toMatch(/^error/);
  });
});
