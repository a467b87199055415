import Anthropic from '@anthropic-ai/sdk';
import type { AnthropicSSEEvent } from '@gatehouse/contracts';
import { describe, expect, it } from 'vitest';
import { openAIToolName, toolNameMap } from './ids.ts';
import type { OpenAIChatChunk } from './openai-types.ts';
import { formatSSE, OpenAIToAnthropicStream } from './stream.ts';

const MODEL = 'openai/gpt-4o';

/** An OpenAI chunk for choice 0. */
function chunk(delta: Record<string, unknown>, finish_reason: string | null = null, extra: Partial<OpenAIChatChunk> = {}): OpenAIChatChunk {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gpt-4o',
    choices: [{ index: 0, delta, finish_reason }],
    ...extra,
  };
}
const usageChunk = (prompt: number, completion: number, details?: Record<string, number>): OpenAIChatChunk => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, ...(details ? { prompt_tokens_details: details } : {}) },
});
const tc = (index: number | undefined, fn: { name?: string; arguments?: string }, id?: string) => ({
  ...(index === undefined ? {} : { index }),
  ...(id ? { id, type: 'function' } : {}),
  function: fn,
});

function run(chunks: OpenAIChatChunk[], opts: Partial<ConstructorParameters<typeof OpenAIToAnthropicStream>[0]> = {}) {
  const s = new OpenAIToAnthropicStream({ requestedModel: MODEL, inputTokens: 50, messageId: 'msg_test', ...opts });
  const events: AnthropicSSEEvent[] = [];
  for (const c of chunks) events.push(...s.push(c));
  events.push(...s.end());
  return { events, stream: s };
}

/** Anthropic's ordering rules: start first, one open block at a time, indexes 0..n in order. */
function assertWellFormed(events: AnthropicSSEEvent[]): void {
  expect(events[0]?.type).toBe('message_start');
  let open: number | null = null;
  let next = 0;
  let stopped = false;
  for (const e of events.slice(1)) {
    expect(stopped, 'nothing after message_stop').toBe(false);
    if (e.type === 'content_block_start') {
      expect(open).toBeNull();
      expect(e.index).toBe(next++);
      open = e.index;
    } else if (e.type === 'content_block_delta') {
      expect(e.index).toBe(open);
    } else if (e.type === 'content_block_stop') {
      expect(e.index).toBe(open);
      open = null;
    } else if (e.type === 'message_delta') {
      expect(open).toBeNull();
    } else if (e.type === 'message_stop') {
      stopped = true;
    }
  }
  expect(stopped).toBe(true);
}

/** Replay events as SSE bytes through the official SDK's MessageStream. */
async function viaSDK(events: AnthropicSSEEvent[]) {
  const body = events.map(formatSSE).join('');
  const client = new Anthropic({
    apiKey: 'test',
    maxRetries: 0,
    fetch: async () => new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream', 'request-id': 'req_x' } }),
  });
  return client.messages.stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
}

describe('OpenAIToAnthropicStream', () => {
  it('text stream with usage in a trailing choices:[] chunk → exact event sequence', () => {
    const s = new OpenAIToAnthropicStream({ requestedModel: MODEL, inputTokens: 50 });
    const events = [
      ...s.push(chunk({ role: 'assistant', content: '' })),
      ...s.push(chunk({ content: 'Hel' })),
      ...s.push(chunk({ content: 'lo' })),
      ...s.push(chunk({}, 'stop')),
    ];
    // message_delta is held until usage arrives
    expect(events.at(-1)).toEqual({ type: 'content_block_stop', index: 0 });
    events.push(...s.push(usageChunk(42, 2)));
    expect(s.end()).toEqual([]);
    expect(events).toEqual([
      {
        type: 'message_start',
        message: {
          id: 'msg_chatcmpl-1',
          type: 'message',
          role: 'assistant',
          model: MODEL,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 50, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
        },
      },
      { type: 'ping' },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 2, input_tokens: 42, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
      { type: 'message_stop' },
    ]);
    expect(s.usage).toEqual({ input_tokens: 42, output_tokens: 2, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
  });

  it('usage with cache counters in the finish chunk completes immediately', () => {
    const s = new OpenAIToAnthropicStream({ requestedModel: MODEL, inputTokens: 5 });
    s.push(chunk({ content: 'x' }));
    const out = s.push(chunk({}, 'length', { usage: { prompt_tokens: 1000, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 900 } } }));
    expect(out.slice(-2)).toEqual([
      {
        type: 'message_delta',
        delta: { stop_reason: 'max_tokens', stop_sequence: null },
        usage: { output_tokens: 9, input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 900 },
      },
      { type: 'message_stop' },
    ]);
    expect(s.done).toBe(true);
    expect(s.push(chunk({ content: 'late' }))).toEqual([]);
  });

  const reasoningTextTools: OpenAIChatChunk[] = [
    chunk({ role: 'assistant', reasoning_content: 'The user wants ' }),
    chunk({ reasoning_content: 'weather.' }),
    chunk({ content: 'Let me check ' }),
    chunk({ content: 'both.' }),
    chunk({ tool_calls: [tc(0, { name: 'get_weather', arguments: '' }, 'call_A')] }),
    chunk({ tool_calls: [tc(0, { arguments: '{"ci' })] }),
    chunk({ tool_calls: [tc(0, { arguments: 'ty": "Par' })] }),
    chunk({ tool_calls: [tc(0, { arguments: 'is"}' })] }),
    chunk({ tool_calls: [tc(1, { name: 'get_time', arguments: '{"tz":' }, 'call_B')] }),
    chunk({ tool_calls: [tc(1, { arguments: ' "Europe/Paris"}' })] }),
    chunk({}, 'tool_calls'),
    usageChunk(120, 80),
  ];

  it('reasoning → text → two tool calls with fragmented arguments: blocks 0..3, sequential, exact', () => {
    const { events } = run(reasoningTextTools);
    assertWellFormed(events);
    expect(events.slice(2)).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'The user wants ' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'weather.' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Let me check ' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'both.' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'call_A', name: 'get_weather', input: {} } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"ci' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: 'ty": "Par' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: 'is"}' } },
      { type: 'content_block_stop', index: 2 },
      { type: 'content_block_start', index: 3, content_block: { type: 'tool_use', id: 'call_B', name: 'get_time', input: {} } },
      { type: 'content_block_delta', index: 3, delta: { type: 'input_json_delta', partial_json: '{"tz":' } },
      { type: 'content_block_delta', index: 3, delta: { type: 'input_json_delta', partial_json: ' "Europe/Paris"}' } },
      { type: 'content_block_stop', index: 3 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'tool_use', stop_sequence: null },
        usage: { output_tokens: 80, input_tokens: 120, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
      { type: 'message_stop' },
    ]);
  });

  it('the official SDK accumulates that stream into the expected message', async () => {
    const { events } = run(reasoningTextTools);
    const stream = await viaSDK(events);
    const message = await stream.finalMessage();
    expect(message).toEqual({
      id: 'msg_test',
      type: 'message',
      role: 'assistant',
      model: MODEL,
      content: [
        { type: 'thinking', thinking: 'The user wants weather.', signature: '' },
        { type: 'text', text: 'Let me check both.' },
        { type: 'tool_use', id: 'call_A', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'call_B', name: 'get_time', input: { tz: 'Europe/Paris' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      // message_start's estimate (50) replaced by the real count from message_delta
      usage: { input_tokens: 120, output_tokens: 80, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('Ollama-style whole tool calls in one chunk each (same index 0, distinct ids) and no usage', async () => {
    const longName = 'mcp__server__'.padEnd(70, 'z');
    const { events } = run(
      [
        chunk({ role: 'assistant', content: '' }),
        chunk({ tool_calls: [tc(0, { name: 'read_file', arguments: '{"path":"a.txt"}' }, 'call_1')] }),
        chunk({ tool_calls: [tc(0, { name: openAIToolName(longName), arguments: '{}' }, 'call_2')] }),
        chunk({ tool_calls: [{ id: 'call_3', function: { name: 'noargs', arguments: '' } }] }),
        chunk({ content: '' }, 'tool_calls'),
      ],
      { toolNames: toolNameMap([{ name: longName }]) },
    );
    assertWellFormed(events);
    const starts = events.filter((e) => e.type === 'content_block_start');
    expect(starts.map((e) => e.content_block)).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'read_file', input: {} },
      { type: 'tool_use', id: 'call_2', name: longName, input: {} },
      { type: 'tool_use', id: 'call_3', name: 'noargs', input: {} },
    ]);
    const message = await (await viaSDK(events)).finalMessage();
    expect(message.content).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'read_file', input: { path: 'a.txt' } },
      { type: 'tool_use', id: 'call_2', name: longName, input: {} },
      { type: 'tool_use', id: 'call_3', name: 'noargs', input: {} },
    ]);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.usage.input_tokens).toBe(50);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it('tool fragments: arguments before the name are held; no id → generated toolu_ id', () => {
    const { events } = run([
      chunk({ tool_calls: [tc(0, { arguments: '{"q":' })] }),
      chunk({ tool_calls: [tc(0, { name: 'search', arguments: '"x"}' })] }),
      chunk({}, 'tool_calls'),
    ]);
    assertWellFormed(events);
    const start = events.find((e) => e.type === 'content_block_start');
    expect(start).toMatchObject({ content_block: { type: 'tool_use', name: 'search', input: {} } });
    expect((start as { content_block: { id: string } }).content_block.id).toMatch(/^toolu_[0-9A-Za-z]{24}$/);
    const partials = events.flatMap((e) =>
      e.type === 'content_block_delta' && e.delta.type === 'input_json_delta' ? [e.delta.partial_json] : [],
    );
    // held fragments go out right after content_block_start, joined with the chunk that named the tool
    expect(partials).toEqual(['{"q":"x"}']);
  });

  it('one chunk mixing reasoning, content and a tool call is split thinking → text → tool_use', () => {
    const { events } = run([
      chunk(
        { reasoning: 'r', content: 't', tool_calls: [tc(0, { name: 'f', arguments: '{"a":1}' }, 'c1')] },
        'tool_calls',
        { usage: { prompt_tokens: 3, completion_tokens: 4 } },
      ),
    ]);
    assertWellFormed(events);
    expect(events.filter((e) => e.type === 'content_block_start').map((e) => [e.index, e.content_block.type])).toEqual([
      [0, 'thinking'],
      [1, 'text'],
      [2, 'tool_use'],
    ]);
  });

  it('<think> split across chunks (`<th` + `ink>`, `</thi` + `nk>`) → thinking block, then text', async () => {
    const { events } = run([
      chunk({ content: '<th' }),
      chunk({ content: 'ink>\nI should' }),
      chunk({ content: ' greet.</thi' }),
      chunk({ content: 'nk>\n\nHello' }),
      chunk({ content: ' <think> is just text now' }),
      chunk({}, 'stop'),
    ]);
    assertWellFormed(events);
    expect(events.slice(2, -2)).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'I should' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: ' greet.' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hello' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: ' <think> is just text now' } },
      { type: 'content_block_stop', index: 1 },
    ]);
  });

  it('<think> split at every possible character boundary gives the same result', () => {
    const content = '<think>a</think>b';
    for (let i = 1; i < content.length; i++) {
      for (let j = i + 1; j < content.length; j++) {
        const pieces = [content.slice(0, i), content.slice(i, j), content.slice(j)];
        const { events } = run([...pieces.map((p) => chunk({ content: p })), chunk({}, 'stop')]);
        assertWellFormed(events);
        const text = (kind: string) =>
          events
            .flatMap((e) => (e.type === 'content_block_delta' ? [e.delta] : []))
            .map((d) => (d.type === kind ? (d as { thinking?: string; text?: string }).thinking ?? (d as { text?: string }).text : ''))
            .join('');
        expect([text('thinking_delta'), text('text_delta')], pieces.join('|')).toEqual(['a', 'b']);
      }
    }
  });

  it('no usage from upstream: message_delta at end() with an estimated output_tokens > 0', () => {
    const s = new OpenAIToAnthropicStream({ requestedModel: MODEL, inputTokens: 77 });
    const first = s.push(chunk({ content: 'A reasonably long answer with several words in it.' }));
    expect(first[0]).toMatchObject({ type: 'message_start', message: { usage: { input_tokens: 77, output_tokens: 1 } } });
    expect(s.push(chunk({}, 'stop')).map((e) => e.type)).toEqual(['content_block_stop']);
    const last = s.end();
    expect(last).toEqual([
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 13 } },
      { type: 'message_stop' },
    ]);
    expect(s.usage).toEqual({ input_tokens: 77, output_tokens: 13 });
  });

  it('upstream reporting 0 completion tokens for produced text is overridden by the estimate', () => {
    const { events } = run([chunk({ content: 'abcdefgh' }, 'stop'), usageChunk(0, 0)]);
    expect(events.at(-2)).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 2 },
    });
  });

  it('EOF without finish_reason: blocks closed, end_turn; an empty upstream still yields a valid message', () => {
    const { events } = run([chunk({ content: 'partial' })]);
    assertWellFormed(events);
    expect(events.at(-2)).toMatchObject({ type: 'message_delta', delta: { stop_reason: 'end_turn' } });
    const empty = new OpenAIToAnthropicStream({ requestedModel: MODEL, inputTokens: 3, messageId: 'msg_e', ping: false });
    expect(empty.end()).toEqual([
      {
        type: 'message_start',
        message: {
          id: 'msg_e',
          type: 'message',
          role: 'assistant',
          model: MODEL,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 3, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
        },
      },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 0 } },
      { type: 'message_stop' },
    ]);
  });

  it('content_filter → refusal; Ollama `reasoning` deltas → thinking', () => {
    const { events } = run([chunk({ reasoning: 'hmm' }), chunk({ content: 'no' }, 'content_filter')]);
    expect(events.find((e) => e.type === 'content_block_start')).toMatchObject({ content_block: { type: 'thinking' } });
    expect(events.at(-2)).toMatchObject({ type: 'message_delta', delta: { stop_reason: 'refusal' } });
  });

  it('mid-stream error → one error event, then nothing', async () => {
    const s = new OpenAIToAnthropicStream({ requestedModel: MODEL, inputTokens: 1, messageId: 'msg_err' });
    const events = [...s.push(chunk({ content: 'Hi' }))];
    const err = s.error(529, 'Overloaded');
    expect(err).toEqual([{ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]);
    expect(formatSSE(err[0]!)).toBe(
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    );
    expect(s.push(chunk({ content: 'more' }))).toEqual([]);
    expect(s.end()).toEqual([]);
    expect(s.error(500, 'again')).toEqual([]);

    // The SDK surfaces it as an APIError carrying the envelope.
    const stream = await viaSDK([...events, ...err]);
    const failure = await stream.finalMessage().then(
      () => null,
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(Anthropic.APIError);
    expect((failure as InstanceType<typeof Anthropic.APIError>).error).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
  });

  it('formatSSE produces exact bytes', () => {
    expect(formatSSE({ type: 'ping' })).toBe('event: ping\ndata: {"type":"ping"}\n\n');
    expect(
      formatSSE({ type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"city": "Pa' } }),
    ).toBe(
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\\"city\\": \\"Pa"}}\n\n',
    );
    expect(formatSSE({ type: 'message_stop' })).toBe('event: message_stop\ndata: {"type":"message_stop"}\n\n');
  });

  it('error events can carry the request id', () => {
    const s = new OpenAIToAnthropicStream({ requestedModel: MODEL });
    expect(s.error(504, 'upstream timed out', 'req_42')).toEqual([
      { type: 'error', error: { type: 'timeout_error', message: 'upstream timed out' }, request_id: 'req_42' },
    ]);
  });

  it('text held by the <think> detector is released before a tool call', () => {
    const { events } = run([chunk({ content: '<' }), chunk({ tool_calls: [tc(0, { name: 'f', arguments: '{}' }, 'c')] }), chunk({}, 'tool_calls')]);
    assertWellFormed(events);
    expect(events.filter((e) => e.type === 'content_block_start').map((e) => e.content_block.type)).toEqual(['text', 'tool_use']);
  });

  it('the index re-exports the public surface', async () => {
    const api = await import('./index.ts');
    for (const name of [
      'anthropicToOpenAI',
      'openAIToAnthropic',
      'OpenAIToAnthropicStream',
      'formatSSE',
      'anthropicErrorType',
      'anthropicError',
      'openAIErrorToAnthropic',
      'estimateInputTokens',
      'estimateTokens',
      'toolNameMap',
    ]) {
      expect(typeof (api as Record<string, unknown>)[name], name).toBe('function');
    }
  });

  it('message_start takes the prompt count when the first chunk already carries usage', () => {
    const s = new OpenAIToAnthropicStream({ requestedModel: MODEL, inputTokens: 5 });
    const [start] = s.push(chunk({ content: 'x' }, null, { usage: { prompt_tokens: 64, completion_tokens: 1 } }));
    expect(start).toMatchObject({ message: { usage: { input_tokens: 64, output_tokens: 1 } } });
  });
});
