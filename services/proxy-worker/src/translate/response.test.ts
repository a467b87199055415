import { describe, expect, it } from 'vitest';
import { openAIToolName, toolNameMap } from './ids.ts';
import type { OpenAIChatResponse } from './openai-types.ts';
import { mapFinishReason, mapUsage, openAIToAnthropic, parseToolArguments } from './response.ts';
import { splitThinkTags } from './think-tags.ts';

const usage = { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 };
const resp = (message: Record<string, unknown>, finish_reason: string | null = 'stop', extra = {}): OpenAIChatResponse => ({
  id: 'chatcmpl-123',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-4o-2024-08-06',
  choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason }],
  usage,
  ...extra,
});

describe('openAIToAnthropic', () => {
  it('plain text', () => {
    expect(openAIToAnthropic(resp({ content: 'Hi!' }), 'openai/gpt-4o')).toEqual({
      id: 'msg_chatcmpl-123',
      type: 'message',
      role: 'assistant',
      model: 'openai/gpt-4o',
      content: [{ type: 'text', text: 'Hi!' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 20, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('reasoning_content → thinking block first, with signature ""', () => {
    const out = openAIToAnthropic(resp({ content: 'Answer', reasoning_content: 'Because.' }), 'deepseek/deepseek-reasoner');
    expect(out.content).toEqual([
      { type: 'thinking', thinking: 'Because.', signature: '' },
      { type: 'text', text: 'Answer' },
    ]);
  });

  it("Ollama's `reasoning` field, even with empty content", () => {
    const out = openAIToAnthropic(resp({ content: '', reasoning: 'Thinking only' }), 'ollama/qwen3');
    expect(out.content).toEqual([{ type: 'thinking', thinking: 'Thinking only', signature: '' }]);
  });

  it('<think>…</think> at the start of content → thinking block, rest → text', () => {
    const out = openAIToAnthropic(resp({ content: '\n<think>\nplan it\n</think>\n\nThe answer is 4.' }), 'vllm/qwen3');
    expect(out.content).toEqual([
      { type: 'thinking', thinking: 'plan it\n', signature: '' },
      { type: 'text', text: 'The answer is 4.' },
    ]);
  });

  it('<think> not at the start stays text; an unclosed one is all thinking', () => {
    expect(openAIToAnthropic(resp({ content: 'Use <think> tags.' }), 'm').content).toEqual([
      { type: 'text', text: 'Use <think> tags.' },
    ]);
    expect(openAIToAnthropic(resp({ content: '<think>cut off' }, 'length'), 'm')).toMatchObject({
      content: [{ type: 'thinking', thinking: 'cut off', signature: '' }],
      stop_reason: 'max_tokens',
    });
  });

  it('tool calls: JSON input, bad JSON → raw_arguments, empty → {}, missing id generated, long names restored', () => {
    const longName = 'mcp__'.padEnd(80, 'x');
    const map = toolNameMap([{ name: longName }]);
    const out = openAIToAnthropic(
      resp(
        {
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: openAIToolName(longName), arguments: '{"a":' } },
            { type: 'function', function: { name: 'noargs', arguments: '' } },
          ],
        },
        'tool_calls',
      ),
      'openai/gpt-4o',
      map,
    );
    expect(out.stop_reason).toBe('tool_use');
    expect(out.content).toHaveLength(3);
    expect(out.content[0]).toEqual({ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } });
    expect(out.content[1]).toEqual({ type: 'tool_use', id: 'call_2', name: longName, input: { raw_arguments: '{"a":' } });
    expect(out.content[2]).toMatchObject({ type: 'tool_use', name: 'noargs', input: {} });
    expect((out.content[2] as { id: string }).id).toMatch(/^toolu_[0-9A-Za-z]{24}$/);
  });

  it('text + tool call in one message keep native order; tool calls with finish "stop" → tool_use', () => {
    const out = openAIToAnthropic(
      resp({ content: 'Checking.', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] }, 'stop'),
      'm',
    );
    expect(out.content).toEqual([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'c', name: 'f', input: {} },
    ]);
    expect(out.stop_reason).toBe('tool_use');
  });

  it('legacy function_call → tool_use', () => {
    const out = openAIToAnthropic(resp({ content: null, function_call: { name: 'f', arguments: '{"x":1}' } }, 'function_call'), 'm');
    expect(out.content).toEqual([{ type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'f', input: { x: 1 } }]);
    expect(out.stop_reason).toBe('tool_use');
  });

  it('always at least one content block', () => {
    expect(openAIToAnthropic(resp({ content: null }), 'm').content).toEqual([{ type: 'text', text: '' }]);
    expect(openAIToAnthropic({ choices: [] }, 'm').content).toEqual([{ type: 'text', text: '' }]);
  });

  it('refusal text → text block, stop_reason refusal', () => {
    const out = openAIToAnthropic(resp({ content: null, refusal: "I can't help with that." }), 'm');
    expect(out.content).toEqual([{ type: 'text', text: "I can't help with that." }]);
    expect(out.stop_reason).toBe('refusal');
  });

  it('usage with cache tokens (OpenAI prompt_tokens_details and gateway fields)', () => {
    const a = openAIToAnthropic(
      resp({ content: 'x' }, 'stop', {
        usage: { prompt_tokens: 2006, completion_tokens: 300, total_tokens: 2306, prompt_tokens_details: { cached_tokens: 1920 } },
      }),
      'm',
    );
    expect(a.usage).toEqual({ input_tokens: 86, output_tokens: 300, cache_creation_input_tokens: 0, cache_read_input_tokens: 1920 });
    expect(
      mapUsage({ prompt_tokens: 100, completion_tokens: 7, cache_read_input_tokens: 30, cache_creation_input_tokens: 50 }),
    ).toEqual({ input_tokens: 20, output_tokens: 7, cache_creation_input_tokens: 50, cache_read_input_tokens: 30 });
    expect(
      mapUsage({ prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 8, cache_creation_tokens: 8 } }),
    ).toEqual({ input_tokens: 0, output_tokens: 1, cache_creation_input_tokens: 8, cache_read_input_tokens: 8 });
  });

  it('no usage from upstream → input from the estimate option, output estimated (> 0)', () => {
    const out = openAIToAnthropic(resp({ content: 'Hello there, how are you?' }, 'stop', { usage: undefined }), 'm', undefined, {
      inputTokens: 42,
    });
    expect(out.usage.input_tokens).toBe(42);
    expect(out.usage.output_tokens).toBeGreaterThan(0);
  });

  it('id: upstream id prefixed, msg_ ids kept, random when missing', () => {
    expect(openAIToAnthropic(resp({ content: 'x' }, 'stop', { id: 'msg_abc' }), 'm').id).toBe('msg_abc');
    expect(openAIToAnthropic(resp({ content: 'x' }, 'stop', { id: undefined }), 'm').id).toMatch(/^msg_[0-9A-Za-z]{24}$/);
  });
});

describe('mapFinishReason', () => {
  it.each([
    ['stop', 'end_turn'],
    ['length', 'max_tokens'],
    ['tool_calls', 'tool_use'],
    ['function_call', 'tool_use'],
    ['content_filter', 'refusal'],
    ['eos', 'end_turn'],
    [null, 'end_turn'],
    [undefined, 'end_turn'],
  ])('%s → %s', (finish, stop) => {
    expect(mapFinishReason(finish)).toBe(stop);
  });
  it('stop with tool calls → tool_use; length with tool calls stays max_tokens', () => {
    expect(mapFinishReason('stop', true)).toBe('tool_use');
    expect(mapFinishReason('length', true)).toBe('max_tokens');
  });
});

describe('parseToolArguments', () => {
  it.each([
    ['{"a":1}', { a: 1 }],
    ['', {}],
    ['  ', {}],
    [null, {}],
    ['[1,2]', { raw_arguments: '[1,2]' }],
    ['"str"', { raw_arguments: '"str"' }],
    ['{broken', { raw_arguments: '{broken' }],
  ])('%j → %j', (args, input) => {
    expect(parseToolArguments(args)).toEqual(input);
  });
});

describe('splitThinkTags', () => {
  it.each([
    ['plain', [{ kind: 'text', text: 'plain' }]],
    ['<think>a</think>b', [{ kind: 'thinking', text: 'a' }, { kind: 'text', text: 'b' }]],
    ['  <think>\n\na</think>\n\nb', [{ kind: 'thinking', text: 'a' }, { kind: 'text', text: 'b' }]],
    ['<think></think>b', [{ kind: 'text', text: 'b' }]],
    ['<thinking>x', [{ kind: 'text', text: '<thinking>x' }]],
    ['<', [{ kind: 'text', text: '<' }]],
    ['\n\n', [{ kind: 'text', text: '\n\n' }]],
    ['<think>a</thi', [{ kind: 'thinking', text: 'a</thi' }]],
  ])('%j', (content, segments) => {
    expect(splitThinkTags(content)).toEqual(segments);
  });
});
