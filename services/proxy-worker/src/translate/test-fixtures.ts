/* Shared test data (not a test file itself). */

/** The example request of the reference, §2.1 (comments removed). */
export const referenceExample = {
  model: 'claude-sonnet-4-5',
  max_tokens: 1024,
  messages: [
    { role: 'user', content: 'Hello' },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: '…', signature: '…' },
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Paris' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_01A', content: '18C', is_error: false },
        { type: 'text', text: 'and tomorrow?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR…' } },
      ],
    },
  ],
  system: 'You are…',
  stream: false,
  temperature: 0.7,
  top_p: 0.9,
  top_k: 40,
  stop_sequences: ['###'],
  metadata: { user_id: 'opaque-id' },
  tools: [
    {
      name: 'get_weather',
      description: '…',
      input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  ],
  tool_choice: { type: 'auto' },
  thinking: { type: 'enabled', budget_tokens: 2048 },
};
