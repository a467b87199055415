import {
  AnthropicCountTokensRequest,
  AnthropicMessagesRequest,
  anthropicIssueMessage,
} from '@gatehouse/contracts';
import { describe, expect, it } from 'vitest';
import { referenceExample } from './test-fixtures.ts';

function msg(body: unknown): string {
  const r = AnthropicMessagesRequest.safeParse(body);
  if (r.success) throw new Error('expected a validation error');
  return anthropicIssueMessage(r.error);
}

const base = { model: 'openai/gpt-4o', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

describe('AnthropicMessagesRequest', () => {
  it('accepts the reference example unchanged', () => {
    const r = AnthropicMessagesRequest.safeParse(referenceExample);
    expect(r.success).toBe(true);
    expect(r.data).toEqual(referenceExample);
  });

  it('keeps unknown fields and unknown block types (lenient)', () => {
    const body = {
      ...base,
      service_tier: 'auto',
      output_config: { effort: 'high' },
      system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral' } }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'x', citations: null, cache_control: { type: 'ephemeral' } },
            { type: 'search_result', source: 'u', title: 't', content: [] },
            { type: 'image', source: { type: 'file', file_id: 'file_1' } },
            { type: 'redacted_thinking', data: 'abc' },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'doc' }, title: 'T' },
          ],
        },
      ],
      tools: [
        { name: 'web_search', type: 'web_search_20250305', max_uses: 3 },
        { name: 'f', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } },
      ],
      thinking: { type: 'adaptive' },
      tool_choice: { type: 'tool', name: 'f', disable_parallel_tool_use: true },
    };
    const r = AnthropicMessagesRequest.safeParse(body);
    expect(r.error?.issues).toBeUndefined();
    expect(r.data).toEqual(body);
  });

  it.each([
    [{ ...base, max_tokens: undefined }, 'max_tokens: Field required'],
    [{ ...base, max_tokens: 0 }, 'max_tokens: Input should be greater than or equal to 1'],
    [{ ...base, max_tokens: 1.5 }, 'max_tokens: Input should be a valid integer'],
    [{ ...base, max_tokens: '10' }, 'max_tokens: Input should be a valid integer'],
    [{ ...base, model: undefined }, 'model: Field required'],
    [{ ...base, messages: undefined }, 'messages: Field required'],
    [{ ...base, messages: [{ role: 'developer', content: 'x' }] }, "messages.0.role: Input should be 'user', 'assistant' or 'system'"],
    [{ ...base, messages: [{ content: 'x' }] }, 'messages.0.role: Field required'],
    [{ ...base, messages: [{ role: 'user' }] }, 'messages.0.content: Field required'],
    [
      { ...base, messages: [{ role: 'user', content: 5 }] },
      'messages.0.content: Input should be a valid string or a list of content blocks',
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text' }] }] },
      'messages.0.content.1.text: Field required',
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ text: 'a' }] }] },
      'messages.0.content.0.type: Field required',
    ],
    [
      {
        ...base,
        messages: [
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: {} }] }] },
        ],
      },
      'messages.0.content.0.content.0.source.type: Field required',
    ],
    [
      { ...base, messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'b', input: 'x' }] }] },
      'messages.0.content.0.input: Input should be a valid dictionary',
    ],
    [{ ...base, tools: [{ name: 'f' }] }, 'tools.0.input_schema: Field required'],
    [
      { ...base, tool_choice: { type: 'sometimes' } },
      "tool_choice.type: Input tag 'sometimes' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'",
    ],
    [{ ...base, tool_choice: { type: 'tool' } }, 'tool_choice.name: Field required'],
    [{ ...base, thinking: { type: 'enabled' } }, 'thinking.budget_tokens: Field required'],
    [{ ...base, stream: 'yes' }, 'stream: Input should be a valid boolean'],
    [{ ...base, system: [{ type: 'text', text: 1 }] }, 'system.0.text: Input should be a valid string'],
    ['nope', 'Input should be a valid dictionary'],
  ])('rejects %# with a path: %s', (body, expected) => {
    expect(msg(body)).toBe(expected);
  });
});

describe('mid-conversation system messages', () => {
  it('are accepted in messages and in count_tokens', () => {
    const messages = [
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'answer briefly' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'more' },
      { role: 'system', content: [{ type: 'text', text: 'now in French' }] },
    ];
    expect(AnthropicMessagesRequest.safeParse({ ...base, messages }).success).toBe(true);
    expect(AnthropicCountTokensRequest.safeParse({ model: 'm', messages }).success).toBe(true);
  });
});

describe('AnthropicCountTokensRequest', () => {
  it('does not require max_tokens', () => {
    const { max_tokens: _, ...body } = base;
    expect(AnthropicCountTokensRequest.safeParse(body).success).toBe(true);
  });
  it('still validates messages', () => {
    const r = AnthropicCountTokensRequest.safeParse({ model: 'm', messages: [{ role: 'bot', content: '' }] });
    expect(r.success).toBe(false);
    expect(anthropicIssueMessage(r.error!)).toBe("messages.0.role: Input should be 'user', 'assistant' or 'system'");
  });
});
