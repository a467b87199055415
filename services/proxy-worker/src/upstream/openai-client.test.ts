import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeUpstream } from '../../../../scripts/src/fake-upstreams/openai.ts';
import { parseProxyConfig, type RetryPolicy } from './config.ts';
import { UpstreamHttpError, UpstreamNetworkError, UpstreamStreamError, UpstreamTimeoutError } from './errors.ts';
import { createChatCompletion, type OpenAIUpstream, streamChatCompletion } from './openai-client.ts';
import { collectAll, failure, waitUntil } from './test-helpers.ts';

const apiKey = randomBytes(24).toString('hex');
let fake: FakeUpstream;
let provider: OpenAIUpstream;

const noRetry: RetryPolicy = { max: 0, baseDelayMs: 10, maxDelayMs: 1000 };
const fastRetry: RetryPolicy = { max: 2, baseDelayMs: 10, maxDelayMs: 2000 };
const opts = (extra: Partial<{ retries: RetryPolicy; timeoutMs: number; signal: AbortSignal }> = {}) => ({ timeoutMs: 5000, retries: noRetry, ...extra });

const user = (text: string) => [{ role: 'user', content: text }];
const testId = () => randomBytes(8).toString('hex');
const requestsFor = (id: string) => fake.requests.filter((r) => r.headers['x-test-id'] === id);

interface Chunk {
  choices: { delta: { content?: string; reasoning_content?: string; reasoning?: string; tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[] }; finish_reason: string | null }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details?: { cached_tokens: number } } | null;
}

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey });
  provider = { baseUrl: fake.url, apiKey, headers: { 'x-extra': 'static' } };
});
afterAll(async () => {
  await fake?.close();
});

describe('createChatCompletion', () => {
  it('returns the upstream JSON and headers; sends the bearer key, provider headers and stream:false', async () => {
    const id = testId();
    const { json, headers } = await createChatCompletion(
      { ...provider, headers: { ...provider.headers, 'x-test-id': id } },
      { model: 'echo', messages: user('hello there'), stream: true, stream_options: { include_usage: true } },
      opts(),
    );
    const body = json as { object: string; choices: { message: { content: string }; finish_reason: string }[]; usage: Chunk['usage'] };
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0]?.message.content).toBe('echo: hello there');
    expect(body.choices[0]?.finish_reason).toBe('stop');
    expect(body.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    expect(body.usage?.total_tokens).toBe((body.usage?.prompt_tokens ?? 0) + (body.usage?.completion_tokens ?? 0));
    expect(headers.get('x-request-id')).toMatch(/^req_/);
    const [seen] = requestsFor(id);
    expect(seen?.method).toBe('POST');
    expect(seen?.path).toBe('/v1/chat/completions');
    expect(seen?.headers.authorization).toBe(`Bearer ${apiKey}`);
    expect(seen?.headers['x-extra']).toBe('static');
    expect(seen?.headers['content-type']).toBe('application/json');
    expect((seen!.body as { stream: unknown }).stream).toBe(false);
    expect(seen?.body).not.toHaveProperty('stream_options');
  });

  it('uses the non-enumerable key of a configured provider', async () => {
    const env = { FAKE_KEY: apiKey };
    const config = parseProxyConfig({ providers: { fake: { type: 'openai', baseUrl: fake.url, apiKeyEnv: 'FAKE_KEY' } } }, env);
    const p = config.providers.fake;
    if (!p) throw new Error('no provider');
    expect(JSON.stringify(p)).not.toContain(apiKey);
    const { json } = await createChatCompletion(p, { model: 'echo', messages: user('via config') }, opts());
    expect((json as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('echo: via config');
  });

  it('non-2xx → UpstreamHttpError with the parsed body; 4xx are not retried', async () => {
    const id = testId();
    const { error } = await failure(() =>
      createChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'error-400', messages: user('x') }, opts({ retries: fastRetry })),
    );
    expect(error).toBeInstanceOf(UpstreamHttpError);
    const e = error as UpstreamHttpError;
    expect(e.status).toBe(400);
    expect(e.body).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: null } });
    expect(e.headers.get('content-type')).toBe('application/json');
    expect(requestsFor(id)).toHaveLength(1);
  });

  it('a wrong key → 401 UpstreamHttpError, no key in the message', async () => {
    const { error } = await failure(() => createChatCompletion({ baseUrl: fake.url, apiKey: 'wrong' }, { model: 'echo', messages: user('x') }, opts()));
    expect((error as UpstreamHttpError).status).toBe(401);
    expect(((error as UpstreamHttpError).body as { error: { code: string } }).error.code).toBe('invalid_api_key');
    expect(error.message).not.toContain(apiKey);
  });

  it('retries flaky-500 and succeeds; the fake saw 2 attempts', async () => {
    const id = testId();
    const retriesSeen: (number | undefined)[] = [];
    const { json } = await createChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'flaky-500', messages: user('again') }, {
      ...opts({ retries: fastRetry }),
      onRetry: (info) => retriesSeen.push(info.status),
    });
    expect((json as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('echo: again');
    expect(requestsFor(id)).toHaveLength(2);
    expect(retriesSeen).toEqual([500]);
  });

  it('503 without retry-after: exponential backoff, then UpstreamHttpError after max retries', async () => {
    const id = testId();
    const { error } = await failure(() =>
      createChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'error-503', messages: user('x') }, opts({ retries: fastRetry })),
    );
    expect((error as UpstreamHttpError).status).toBe(503);
    expect(requestsFor(id)).toHaveLength(3);
  });

  it('429 with retry-after 1 s within maxDelay: waits, retries, then gives up carrying retryAfter', async () => {
    const id = testId();
    const waits: number[] = [];
    const { error } = await failure(() =>
      createChatCompletion(
        { ...provider, headers: { 'x-test-id': id } },
        { model: 'error-429', messages: user('x') },
        { ...opts({ retries: { max: 1, baseDelayMs: 10, maxDelayMs: 2000 } }), onRetry: (i) => waits.push(i.delayMs) },
      ),
    );
    expect(error).toBeInstanceOf(UpstreamHttpError);
    expect((error as UpstreamHttpError).status).toBe(429);
    expect((error as UpstreamHttpError).retryAfter).toBe('1');
    // The one wait is the upstream's retry-after, not the (10 ms) backoff.
    expect(waits).toEqual([1000]);
    expect(requestsFor(id)).toHaveLength(2);
  });

  it('retry-after larger than maxDelayMs: gives up at once without waiting', async () => {
    const id = testId();
    const waits: number[] = [];
    const { error } = await failure(() =>
      createChatCompletion(
        { ...provider, headers: { 'x-test-id': id } },
        { model: 'error-429', messages: user('x') },
        { ...opts({ retries: { max: 3, baseDelayMs: 10, maxDelayMs: 500 } }), onRetry: (i) => waits.push(i.delayMs) },
      ),
    );
    expect((error as UpstreamHttpError).status).toBe(429);
    expect((error as UpstreamHttpError).retryAfter).toBe('1');
    expect(requestsFor(id)).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('retry-after as an HTTP date is honoured', async () => {
    const id = testId();
    const when = new Date(Date.now() + 1500).toUTCString(); // second precision: 0.5–1.5 s from now
    const retries: number[] = [];
    await failure(() =>
      createChatCompletion(
        { ...provider, headers: { 'x-test-id': id, 'x-fake-retry-after': when } },
        { model: 'error-429', messages: user('x') },
        { ...opts({ retries: { max: 1, baseDelayMs: 10, maxDelayMs: 3000 } }), onRetry: (i) => retries.push(i.delayMs) },
      ),
    );
    expect(retries).toHaveLength(1);
    expect(retries[0]).toBeGreaterThan(0);
    expect(retries[0]).toBeLessThanOrEqual(1500);
  });

  it('hang → UpstreamTimeoutError (headers) per attempt, retried', async () => {
    const id = testId();
    const retried: (Error | undefined)[] = [];
    const { error } = await failure(() =>
      createChatCompletion(
        { ...provider, headers: { 'x-test-id': id } },
        { model: 'hang', messages: user('x') },
        { ...opts({ timeoutMs: 150, retries: { max: 1, baseDelayMs: 10, maxDelayMs: 100 } }), onRetry: (i) => retried.push(i.error) },
      ),
    );
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    expect((error as UpstreamTimeoutError).phase).toBe('headers');
    // The first attempt timed out the same way and was retried once.
    expect(retried).toHaveLength(1);
    expect(retried[0]).toBeInstanceOf(UpstreamTimeoutError);
    await waitUntil(() => requestsFor(id).length === 2 && requestsFor(id).every((r) => r.aborted), 2000, 'both hanging attempts closed');
  });

  it('a connection dropped in the middle of a 200 body → UpstreamStreamError, not retried', async () => {
    const id = testId();
    const { error } = await failure(() =>
      createChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'drop', messages: user('x') }, opts({ retries: fastRetry })),
    );
    expect(error).toBeInstanceOf(UpstreamStreamError);
    expect(requestsFor(id)).toHaveLength(1);
  });

  it('slow non-stream answer (200 ms) within the timeout succeeds', async () => {
    const { json } = await createChatCompletion(provider, { model: 'slow', messages: user('patience') }, opts({ timeoutMs: 2000 }));
    expect((json as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('echo: patience');
  });

  it('unreachable upstream → UpstreamNetworkError after the retries', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    let retries = 0;
    const { error } = await failure(() =>
      createChatCompletion({ baseUrl: `http://127.0.0.1:${port}/v1` }, { model: 'echo', messages: user('x') }, { ...opts({ retries: fastRetry }), onRetry: () => retries++ }),
    );
    expect(error).toBeInstanceOf(UpstreamNetworkError);
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(retries).toBe(2);
  });

  it('an aborted signal stops a hanging request at once with an AbortError', async () => {
    const id = testId();
    const ac = new AbortController();
    const pending = failure(() =>
      createChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'hang', messages: user('x') }, opts({ signal: ac.signal, timeoutMs: 3_600_000 })),
    );
    await waitUntil(() => requestsFor(id).length === 1, 2000, 'the fake to receive the request');
    ac.abort();
    // Not the hour-long timeout: the abort ended it.
    const { error } = await pending;
    expect(error.name).toBe('AbortError');
    await waitUntil(() => requestsFor(id)[0]?.aborted === true, 2000, 'the fake to see the disconnect');
  });

  it('an abort during the retry wait ends the wait at once', async () => {
    const id = testId();
    const ac = new AbortController();
    const waits: number[] = [];
    // An hour-long retry-after: only the abort can end this wait.
    const { error } = await failure(() =>
      createChatCompletion(
        { ...provider, headers: { 'x-test-id': id, 'x-fake-retry-after': '3600' } },
        { model: 'error-429', messages: user('x') },
        {
          ...opts({ signal: ac.signal, retries: { max: 2, baseDelayMs: 10, maxDelayMs: 3_600_000 } }),
          onRetry: (i) => {
            waits.push(i.delayMs);
            ac.abort(new Error('client went away'));
          },
        },
      ),
    );
    expect(error.name).toBe('AbortError');
    expect((error as Error & { cause?: unknown }).cause).toBeInstanceOf(Error);
    expect(waits).toEqual([3_600_000]);
    expect(requestsFor(id)).toHaveLength(1);
  });

  it('an already-aborted signal sends nothing', async () => {
    const id = testId();
    const { error } = await failure(() =>
      createChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'echo', messages: user('x') }, opts({ signal: AbortSignal.abort() })),
    );
    expect(error.name).toBe('AbortError');
    expect(requestsFor(id)).toHaveLength(0);
  });
});

describe('streamChatCompletion', () => {
  it('yields every chunk until [DONE], including the trailing usage chunk; sends stream:true', async () => {
    const id = testId();
    const { headers, chunks } = await streamChatCompletion(
      { ...provider, headers: { 'x-test-id': id } },
      { model: 'echo', messages: user('stream this please'), stream_options: { include_usage: true } },
      opts(),
    );
    expect(headers.get('content-type')).toMatch(/^text\/event-stream/);
    const all = (await collectAll(chunks)) as Chunk[];
    const text = all.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('echo: stream this please');
    expect(all.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThanOrEqual(3);
    expect(all.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason).toBe('stop');
    const last = all.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage?.completion_tokens).toBeGreaterThan(0);
    const seen = requestsFor(id)[0];
    expect((seen!.body as { stream: unknown }).stream).toBe(true);
    expect(seen?.headers.accept).toBe('text/event-stream');
  });

  it('streams tool calls as OpenAI does: id and name first, arguments in fragments, two calls for two tools', async () => {
    const tools = ['lookup', 'get_time'].map((name) => ({ type: 'function', function: { name, parameters: { type: 'object' } } }));
    const { chunks } = await streamChatCompletion(provider, { model: 'tools', messages: user('x'), tools }, opts());
    const all = (await collectAll(chunks)) as Chunk[];
    const calls = new Map<number, { id?: string; name?: string; args: string; fragments: number }>();
    for (const c of all) {
      for (const tc of c.choices[0]?.delta.tool_calls ?? []) {
        const call = calls.get(tc.index) ?? { args: '', fragments: 0 };
        if (tc.id) call.id = tc.id;
        if (tc.function?.name) call.name = tc.function.name;
        if (tc.function?.arguments) {
          call.args += tc.function.arguments;
          call.fragments++;
        }
        calls.set(tc.index, call);
      }
    }
    expect([...calls.values()].map((c) => [c.name, JSON.parse(c.args)])).toEqual([
      ['lookup', { city: 'Paris' }],
      ['get_time', { city: 'Paris' }],
    ]);
    for (const c of calls.values()) {
      expect(c.id).toMatch(/^call_/);
      expect(c.fragments).toBeGreaterThanOrEqual(3);
    }
    expect(all.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('reasoning deltas come before content (reasoning_content; Ollama: reasoning, tool calls whole)', async () => {
    const r = (await collectAll((await streamChatCompletion(provider, { model: 'reasoning', messages: user('q') }, opts())).chunks)) as Chunk[];
    const firstContent = r.findIndex((c) => c.choices[0]?.delta.content);
    const lastReasoning = r.map((c) => Boolean(c.choices[0]?.delta.reasoning_content)).lastIndexOf(true);
    expect(lastReasoning).toBeGreaterThan(0);
    expect(lastReasoning).toBeLessThan(firstContent);

    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
    const o = (await collectAll((await streamChatCompletion(provider, { model: 'ollama-reasoning', messages: user('q'), tools }, opts())).chunks)) as Chunk[];
    expect(o.some((c) => c.choices[0]?.delta.reasoning)).toBe(true);
    const withCalls = o.filter((c) => c.choices[0]?.delta.tool_calls);
    expect(withCalls).toHaveLength(1);
    expect(withCalls[0]?.choices[0]?.delta.tool_calls?.[0]).toMatchObject({ index: 0, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
  });

  it('drop → UpstreamStreamError after the chunks that did arrive, and no retry mid-stream', async () => {
    const id = testId();
    const { chunks } = await streamChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'drop', messages: user('x') }, opts({ retries: fastRetry }));
    const got: unknown[] = [];
    const { error } = await failure(async () => {
      for await (const c of chunks) got.push(c);
    });
    expect(error).toBeInstanceOf(UpstreamStreamError);
    expect(got.length).toBeGreaterThanOrEqual(1);
    expect(got.length).toBeLessThanOrEqual(2);
    expect(requestsFor(id)).toHaveLength(1);
  });

  it('a stream that ends cleanly without [DONE] → UpstreamStreamError', async () => {
    const server: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const { chunks } = await streamChatCompletion({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }, { model: 'x', messages: user('x') }, opts());
      const got: unknown[] = [];
      const { error } = await failure(async () => {
        for await (const c of chunks) got.push(c);
      });
      expect(got).toHaveLength(1);
      expect(error).toBeInstanceOf(UpstreamStreamError);
      expect(error.message).toContain('[DONE]');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('idle timeout between chunks → UpstreamTimeoutError (idle)', async () => {
    const { chunks } = await streamChatCompletion(provider, { model: 'slow', messages: user('x') }, opts({ timeoutMs: 80 }));
    const { error } = await failure(() => collectAll(chunks));
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    expect((error as UpstreamTimeoutError).phase).toBe('idle');
  });

  it('the abort signal stops a slow stream mid-way and the fake records the disconnect', async () => {
    const id = testId();
    const ac = new AbortController();
    const { chunks } = await streamChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'slow', messages: user('one two three four') }, opts({ signal: ac.signal }));
    const first = await chunks.next();
    expect(first.done).toBe(false);
    ac.abort();
    const { error } = await failure(async () => {
      for await (const _ of chunks) {
        // keep reading until the abort lands
      }
    });
    expect(error.name).toBe('AbortError');
    await waitUntil(() => requestsFor(id)[0]?.aborted === true, 2000, 'the fake to see the disconnect');
    expect(requestsFor(id)[0]?.finished).toBe(false);
  });

  it('return() before reading closes the upstream connection', async () => {
    const id = testId();
    const { chunks } = await streamChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'slow', messages: user('x') }, opts());
    await chunks.return(undefined);
    await waitUntil(() => requestsFor(id)[0]?.aborted === true, 2000, 'the fake to see the disconnect');
  });

  it('breaking out of the loop closes the upstream connection', async () => {
    const id = testId();
    const { chunks } = await streamChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'slow', messages: user('a b c d e') }, opts());
    for await (const _ of chunks) break;
    await waitUntil(() => requestsFor(id)[0]?.aborted === true, 2000, 'the fake to see the disconnect');
  });

  it('an error status before the stream → UpstreamHttpError (retried first)', async () => {
    const id = testId();
    const { error } = await failure(() =>
      streamChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'error-500', messages: user('x') }, opts({ retries: { max: 1, baseDelayMs: 10, maxDelayMs: 100 } })),
    );
    expect((error as UpstreamHttpError).status).toBe(500);
    expect(((error as UpstreamHttpError).body as { error: { type: string } }).error.type).toBe('server_error');
    expect(requestsFor(id)).toHaveLength(2);
  });

  it('flaky-500 stream is retried before the first byte and then streams', async () => {
    const id = testId();
    const { chunks } = await streamChatCompletion({ ...provider, headers: { 'x-test-id': id } }, { model: 'flaky-500', messages: user('x') }, opts({ retries: fastRetry }));
    const all = (await collectAll(chunks)) as Chunk[];
    expect(all.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('echo: x');
    expect(requestsFor(id)).toHaveLength(2);
  });

  it('runs many streams at once over the keep-alive pool', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, async (_v, i) => {
        const { chunks } = await streamChatCompletion(provider, { model: 'echo', messages: user(`n${i}`) }, opts());
        return ((await collectAll(chunks)) as Chunk[]).map((c) => c.choices[0]?.delta.content ?? '').join('');
      }),
    );
    expect(results).toEqual(Array.from({ length: 20 }, (_v, i) => `echo: n${i}`));
  });
});
