import { createHash } from 'node:crypto';
import { AnthropicMessagesRequest } from '@gatehouse/contracts';
import { describe, expect, it } from 'vitest';
import { openAIToolName, toolNameMap } from './ids.ts';
import { anthropicToOpenAI, hasSystemMessages, pairToolMessages, reasoningEffortFor } from './request.ts';
import type { OpenAIMessage } from './openai-types.ts';
import { referenceExample } from './test-fixtures.ts';

/** Parse through the contract first, as the worker will. */
function req(body: Record<string, unknown>): AnthropicMessagesRequest {
  return AnthropicMessagesRequest.parse({ model: 'openai/gpt-4o', max_tokens: 100, ...body });
}
const hi = [{ role: 'user', content: 'hi' }];

describe('anthropicToOpenAI: system', () => {
  it('string system → first system message', () => {
    expect(anthropicToOpenAI(req({ system: 'Be brief.', messages: hi }), 'gpt-4o')).toEqual({
      model: 'gpt-4o',
      max_tokens: 100,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
    });
  });

  it('system blocks → joined with a blank line (cache_control dropped)', () => {
    const out = anthropicToOpenAI(
      req({
        system: [
          { type: 'text', text: 'A', cache_control: { type: 'ephemeral' } },
          { type: 'text', text: 'B' },
        ],
        messages: hi,
      }),
      'm',
    );
    expect(out.messages[0]).toEqual({ role: 'system', content: 'A\n\nB' });
  });

  it('empty system is omitted', () => {
    expect(anthropicToOpenAI(req({ system: [], messages: hi }), 'm').messages).toEqual([{ role: 'user', content: 'hi' }]);
    expect(anthropicToOpenAI(req({ system: '', messages: hi }), 'm').messages).toEqual([{ role: 'user', content: 'hi' }]);
  });
});

describe('anthropicToOpenAI: user content', () => {
  it('text-only blocks collapse to one string', () => {
    const out = anthropicToOpenAI(
      req({ messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }] }),
      'm',
    );
    expect(out.messages).toEqual([{ role: 'user', content: 'a\n\nb' }]);
  });

  it('images: base64 → data URL, url → url, file source dropped; parts keep order', () => {
    const out = anthropicToOpenAI(
      req({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Compare' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR' } },
              { type: 'image', source: { type: 'url', url: 'https://x.test/a.jpg' } },
              { type: 'image', source: { type: 'file', file_id: 'file_1' } },
            ],
          },
        ],
      }),
      'm',
    );
    expect(out.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Compare' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR' } },
          { type: 'image_url', image_url: { url: 'https://x.test/a.jpg' } },
        ],
      },
    ]);
  });

  it('documents: text source → titled text, base64 PDF → file part, url → text reference', () => {
    const out = anthropicToOpenAI(
      req({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'body' }, title: 'Notes' },
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBER' } },
              { type: 'document', source: { type: 'url', url: 'https://x.test/d.pdf' } },
            ],
          },
        ],
      }),
      'm',
    );
    expect(out.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Notes\n\nbody' },
          { type: 'file', file: { filename: 'document.pdf', file_data: 'data:application/pdf;base64,JVBER' } },
          { type: 'text', text: 'Document: https://x.test/d.pdf' },
        ],
      },
    ]);
  });
});

const toolUseTurn = (ids: string[]) => ({
  role: 'assistant',
  content: ids.map((id) => ({ type: 'tool_use', id, name: 'get_weather', input: { city: id } })),
});

describe('anthropicToOpenAI: tools in the history', () => {
  it('the reference example translates row by row', () => {
    const out = anthropicToOpenAI(AnthropicMessagesRequest.parse(referenceExample), 'gpt-4o-mini');
    expect(out).toEqual({
      model: 'gpt-4o-mini',
      max_tokens: 1024,
      temperature: 0.7,
      top_p: 0.9,
      stop: ['###'],
      reasoning_effort: 'medium',
      messages: [
        { role: 'system', content: 'You are…' },
        { role: 'user', content: 'Hello' },
        {
          role: 'assistant',
          content: 'Let me check.',
          reasoning_content: '…',
          tool_calls: [
            { id: 'toolu_01A', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_01A', content: '18C' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'and tomorrow?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR…' } },
          ],
        },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: '…',
            parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          },
        },
      ],
      tool_choice: 'auto',
    });
  });

  it('tool_results go BEFORE the user text of the same turn, even when the text comes first', () => {
    const out = anthropicToOpenAI(
      req({
        messages: [
          { role: 'user', content: 'weather?' },
          toolUseTurn(['t1', 't2']),
          {
            role: 'user',
            content: [
              { type: 'text', text: 'here you go' },
              { type: 'tool_result', tool_use_id: 't1', content: 'sunny' },
              { type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: 'rain' }, { type: 'text', text: 'wind' }] },
              { type: 'text', text: 'thanks' },
            ],
          },
        ],
      }),
      'm',
    );
    expect(out.messages).toEqual([
      { role: 'user', content: 'weather?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 't1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"t1"}' } },
          { id: 't2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"t2"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 't1', content: 'sunny' },
      { role: 'tool', tool_call_id: 't2', content: 'rain\nwind' },
      { role: 'user', content: 'here you go\n\nthanks' },
    ]);
  });

  it('a turn of only tool_results produces no user message; is_error gets an "Error: " prefix once', () => {
    const out = anthropicToOpenAI(
      req({
        messages: [
          toolUseTurn(['a', 'b', 'c']),
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'a', content: 'file not found', is_error: true },
              { type: 'tool_result', tool_use_id: 'b', content: 'Error: already said', is_error: true },
              { type: 'tool_result', tool_use_id: 'c' },
            ],
          },
        ],
      }),
      'm',
    );
    expect(out.messages.slice(1)).toEqual([
      { role: 'tool', tool_call_id: 'a', content: 'Error: file not found' },
      { role: 'tool', tool_call_id: 'b', content: 'Error: already said' },
      { role: 'tool', tool_call_id: 'c', content: '' },
    ]);
  });

  it('images inside a tool_result move to the user message after the tool messages', () => {
    const out = anthropicToOpenAI(
      req({
        messages: [
          toolUseTurn(['s']),
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 's',
                content: [
                  { type: 'text', text: 'screenshot:' },
                  { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'AAA' } },
                ],
              },
              { type: 'text', text: 'what do you see?' },
            ],
          },
        ],
      }),
      'm',
    );
    expect(out.messages.slice(1)).toEqual([
      { role: 'tool', tool_call_id: 's', content: 'screenshot:' },
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,AAA' } },
          { type: 'text', text: 'what do you see?' },
        ],
      },
    ]);
  });

  it('assistant: text blocks joined, thinking → reasoning_content, redacted_thinking dropped', () => {
    const out = anthropicToOpenAI(
      req({
        messages: [
          { role: 'user', content: 'q' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'step 1', signature: 'sig' },
              { type: 'redacted_thinking', data: 'opaque' },
              { type: 'thinking', thinking: 'step 2', signature: '' },
              { type: 'text', text: 'First.' },
              { type: 'text', text: 'Second.' },
            ],
          },
          { role: 'assistant', content: 'plain' },
        ],
      }),
      'deepseek-reasoner',
    );
    expect(out.messages).toEqual([
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'First.\n\nSecond.', reasoning_content: 'step 1\n\nstep 2' },
      { role: 'assistant', content: 'plain' },
    ]);
  });

  it('assistant with only thinking keeps it with empty content; with nothing is dropped', () => {
    const out = anthropicToOpenAI(
      req({
        messages: [
          { role: 'user', content: 'q' },
          { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: '' }] },
          { role: 'user', content: 'q2' },
          { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'x' }] },
        ],
      }),
      'm',
    );
    expect(out.messages).toEqual([
      { role: 'user', content: 'q' },
      { role: 'assistant', content: '', reasoning_content: 'hmm' },
      { role: 'user', content: 'q2' },
    ]);
  });

  it('unmatched tool_calls and orphan tool messages are dropped', () => {
    const out = anthropicToOpenAI(
      req({
        messages: [
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'calling' },
              { type: 'tool_use', id: 'ok', name: 'f', input: {} },
              { type: 'tool_use', id: 'lost', name: 'f', input: {} },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'ok', content: '1' },
              { type: 'tool_result', tool_use_id: 'ok', content: 'duplicate' },
              { type: 'tool_result', tool_use_id: 'ghost', content: '?' },
              { type: 'text', text: 'next' },
            ],
          },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'never', name: 'f', input: {} }] },
          { role: 'user', content: 'go on' },
          { role: 'assistant', content: [{ type: 'text', text: 'kept' }, { type: 'tool_use', id: 'x', name: 'f', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'orphan', content: 'o' }] },
        ],
      }),
      'm',
    );
    expect(out.messages).toEqual([
      {
        role: 'assistant',
        content: 'calling',
        tool_calls: [{ id: 'ok', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'ok', content: '1' },
      { role: 'user', content: 'next' },
      { role: 'user', content: 'go on' },
      { role: 'assistant', content: 'kept' },
    ]);
  });

  it('pairToolMessages leaves a valid sequence unchanged', () => {
    const seq: OpenAIMessage[] = [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: null, tool_calls: [{ id: '1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: '1', content: 'r' },
      { role: 'assistant', content: 'done' },
    ];
    expect(pairToolMessages(seq)).toEqual(seq);
  });
});

describe('anthropicToOpenAI: tools, tool_choice, sampling, thinking, stream', () => {
  const longName = `mcp__some_server_with_a_long_name__${'very_long_tool_name_'.repeat(3)}end`;
  const tools = [
    { name: 'short', description: 'S', input_schema: { type: 'object', properties: {} } },
    { name: longName, input_schema: { type: 'object' } },
    { name: 'web_search', type: 'web_search_20250305' },
  ];

  it('long tool names → prefix55_hash8 everywhere, and the reverse map restores them', () => {
    expect(longName.length).toBeGreaterThan(64);
    const short = openAIToolName(longName);
    const hash = createHash('sha256').update(longName).digest('hex').slice(0, 8);
    expect(short).toBe(`${longName.slice(0, 55)}_${hash}`);
    expect(short).toHaveLength(64);
    expect(openAIToolName('short')).toBe('short');

    const out = anthropicToOpenAI(
      req({
        tools,
        tool_choice: { type: 'tool', name: longName },
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'l', name: longName, input: { a: 1 } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'l', content: 'ok' }] },
        ],
      }),
      'm',
    );
    expect(out.tools).toEqual([
      { type: 'function', function: { name: 'short', description: 'S', parameters: { type: 'object', properties: {} } } },
      { type: 'function', function: { name: short, parameters: { type: 'object' } } },
    ]);
    expect(out.tool_choice).toEqual({ type: 'function', function: { name: short } });
    expect(out.messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'l', type: 'function', function: { name: short, arguments: '{"a":1}' } }],
    });
    expect(toolNameMap(tools)).toEqual(new Map([[short, longName]]));
  });

  it.each([
    [{ type: 'auto' }, { tool_choice: 'auto' }],
    [{ type: 'any' }, { tool_choice: 'required' }],
    [{ type: 'none' }, { tool_choice: 'none' }],
    [{ type: 'tool', name: 'short' }, { tool_choice: { type: 'function', function: { name: 'short' } } }],
    [{ type: 'auto', disable_parallel_tool_use: true }, { tool_choice: 'auto', parallel_tool_calls: false }],
    [{ type: 'any', disable_parallel_tool_use: false }, { tool_choice: 'required' }],
  ])('tool_choice %j → %j', (choice, expected) => {
    const out = anthropicToOpenAI(req({ tools: tools.slice(0, 1), tool_choice: choice, messages: hi }), 'm');
    expect({ tool_choice: out.tool_choice, parallel_tool_calls: out.parallel_tool_calls }).toEqual({
      parallel_tool_calls: undefined,
      ...expected,
    });
  });

  it('tool_choice without usable tools is not sent (OpenAI 400s on it)', () => {
    const out = anthropicToOpenAI(req({ tool_choice: { type: 'any' }, messages: hi }), 'm');
    expect(out).toEqual({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    const serverOnly = anthropicToOpenAI(req({ tools: [tools[2]], tool_choice: { type: 'auto' }, messages: hi }), 'm');
    expect(serverOnly.tools).toBeUndefined();
    expect(serverOnly.tool_choice).toBeUndefined();
  });

  it('sampling parameters; top_k only with passTopK; max_completion_tokens option', () => {
    const r = req({
      messages: hi,
      temperature: 0,
      top_p: 0.5,
      top_k: 20,
      stop_sequences: ['END', '###'],
      metadata: { user_id: 'u-1' },
    });
    expect(anthropicToOpenAI(r, 'm')).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 100,
      temperature: 0,
      top_p: 0.5,
      stop: ['END', '###'],
    });
    const withK = anthropicToOpenAI(r, 'm', { passTopK: true, maxTokensParam: 'max_completion_tokens' });
    expect(withK.top_k).toBe(20);
    expect(withK.max_completion_tokens).toBe(100);
    expect(withK.max_tokens).toBeUndefined();
    expect(anthropicToOpenAI(req({ messages: hi, stop_sequences: [], metadata: { user_id: null } }), 'm')).toEqual({
      model: 'm',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    });
  });

  it.each([
    [{ type: 'enabled', budget_tokens: 1 }, 'low'],
    [{ type: 'enabled', budget_tokens: 1024 }, 'low'],
    [{ type: 'enabled', budget_tokens: 1025 }, 'medium'],
    [{ type: 'enabled', budget_tokens: 8192 }, 'medium'],
    [{ type: 'enabled', budget_tokens: 8193 }, 'high'],
    [{ type: 'adaptive' }, 'medium'],
    [{ type: 'disabled' }, undefined],
  ])('thinking %j → reasoning_effort %s', (thinking, effort) => {
    const r = req({ messages: hi, thinking });
    expect(reasoningEffortFor(r.thinking)).toBe(effort);
    expect(anthropicToOpenAI(r, 'm').reasoning_effort).toBe(effort);
    expect(anthropicToOpenAI(r, 'm', { reasoningEffort: false }).reasoning_effort).toBeUndefined();
  });

  it.each([
    ['low', 'low'],
    ['medium', 'medium'],
    ['high', 'high'],
    ['max', 'high'],
  ])('adaptive thinking with output_config.effort %s → reasoning_effort %s', (asked, effort) => {
    const r = req({ messages: hi, thinking: { type: 'adaptive' }, output_config: { effort: asked } });
    expect(anthropicToOpenAI(r, 'm').reasoning_effort).toBe(effort);
    // A budget is overruled by the effort the client asked for.
    expect(anthropicToOpenAI(req({ messages: hi, thinking: { type: 'enabled', budget_tokens: 500 }, output_config: { effort: asked } }), 'm').reasoning_effort).toBe(effort);
  });

  it('effort max → the provider\'s highest when it has xhigh; no thinking, no reasoning_effort', () => {
    const r = req({ messages: hi, thinking: { type: 'adaptive' }, output_config: { effort: 'max' } });
    expect(anthropicToOpenAI(r, 'm', { maxEffort: 'xhigh' }).reasoning_effort).toBe('xhigh');
    expect(anthropicToOpenAI(req({ messages: hi, output_config: { effort: 'high' } }), 'm').reasoning_effort).toBeUndefined();
    expect(anthropicToOpenAI(req({ messages: hi, thinking: { type: 'disabled' }, output_config: { effort: 'high' } }), 'm').reasoning_effort).toBeUndefined();
    expect(anthropicToOpenAI(req({ messages: hi, thinking: { type: 'adaptive' }, output_config: { effort: 'bogus' } }), 'm').reasoning_effort).toBe('medium');
  });

  it('metadata.user_id: not forwarded by default; hashed or raw when the operator allows it', () => {
    const id = '{"device_id":"d1","session_id":"s1"}';
    const r = req({ messages: hi, metadata: { user_id: id } });
    expect(anthropicToOpenAI(r, 'm').user).toBeUndefined();
    expect(anthropicToOpenAI(r, 'm', { userId: 'off' }).user).toBeUndefined();
    expect(anthropicToOpenAI(r, 'm', { userId: 'raw' }).user).toBe(id);
    const hashed = anthropicToOpenAI(r, 'm', { userId: 'hashed' }).user;
    expect(hashed).toMatch(/^[0-9a-f]{64}$/);
    expect(hashed).not.toContain('d1');
    expect(anthropicToOpenAI(r, 'm', { userId: 'hashed' }).user).toBe(hashed);
    expect(anthropicToOpenAI(req({ messages: hi, metadata: { user_id: 'other' } }), 'm', { userId: 'hashed' }).user).not.toBe(hashed);
  });

  it('stream → stream:true + include_usage; the option overrides the body', () => {
    const streaming = anthropicToOpenAI(req({ messages: hi, stream: true }), 'm');
    expect(streaming.stream).toBe(true);
    expect(streaming.stream_options).toEqual({ include_usage: true });
    const forcedOff = anthropicToOpenAI(req({ messages: hi, stream: true }), 'm', { stream: false });
    expect('stream' in forcedOff || 'stream_options' in forcedOff).toBe(false);
    const forcedOn = anthropicToOpenAI(req({ messages: hi }), 'm', { stream: true });
    expect(forcedOn).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });
});

describe('anthropicToOpenAI: mid-conversation system messages', () => {
  it('become a system message at the same position (string or text blocks)', () => {
    const r = req({
      system: 'top',
      messages: [
        { role: 'user', content: 'one' },
        { role: 'system', content: 'now answer in French' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'two' },
        { role: 'system', content: [{ type: 'text', text: 'a', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'b' }] },
      ],
    });
    expect(hasSystemMessages(r)).toBe(true);
    expect(anthropicToOpenAI(r, 'm').messages).toEqual([
      { role: 'system', content: 'top' },
      { role: 'user', content: 'one' },
      { role: 'system', content: 'now answer in French' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'two' },
      { role: 'system', content: 'a\n\nb' },
    ]);
  });

  it('after a tool result: tool message, then the system message; an empty one is dropped', () => {
    const r = req({
      messages: [
        { role: 'user', content: 'weather?' },
        toolUseTurn(['t1']),
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: '18C' }] },
        { role: 'system', content: 'be brief' },
        { role: 'system', content: [] },
      ],
    });
    expect(anthropicToOpenAI(r, 'm').messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'system']);
    expect(hasSystemMessages(req({ messages: hi }))).toBe(false);
  });
});
