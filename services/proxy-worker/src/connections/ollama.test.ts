import { describe, expect, it } from 'vitest';
import { ollamaResponseToOpenAI, OllamaToOpenAIStream, ollamaUsage, openAIToOllamaPayload, parseNDJSON } from './ollama.ts';

const done = {
  model: 'llama3:latest',
  created_at: '2025-01-01T00:00:00Z',
  message: { role: 'assistant', content: '' },
  done_reason: 'stop',
  done: true,
  total_duration: 4_935_886_791,
  load_duration: 1_000,
  prompt_eval_count: 26,
  prompt_eval_duration: 130_079_000,
  eval_count: 259,
  eval_duration: 4_232_710_000,
};

describe('OpenAI body → Ollama /api/chat', () => {
  it('maps messages, tools and sampling parameters into options', () => {
    const body = {
      model: 'x',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'look ' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '42' },
      ],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      tool_choice: 'auto',
      temperature: 0.2,
      top_p: 0.9,
      seed: 7,
      max_tokens: 100,
      stop: 'END',
      stream_options: { include_usage: true },
      response_format: { type: 'json_schema', json_schema: { name: 's', schema: { type: 'object' } } },
    };
    expect(openAIToOllamaPayload(body, 'llama3:latest', true)).toEqual({
      model: 'llama3:latest',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'look', images: ['AAAA'] },
        { role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', function: { name: 'f', arguments: { a: 1 } } }], content: '' },
        { role: 'tool', content: '42', tool_call_id: 'call_1' },
      ],
      stream: true,
      tools: body.tools,
      format: { type: 'object' },
      options: { temperature: 0.2, top_p: 0.9, seed: 7, stop: ['END'], num_predict: 100 },
    });
  });

  it('explicit options win; max_tokens inside options and keep_alive/think move to where Ollama reads them', () => {
    const p = openAIToOllamaPayload({ messages: [], temperature: 1, options: { temperature: 0.5, max_tokens: 9, keep_alive: '5m', think: false } }, 'm', false);
    expect(p).toEqual({ model: 'm', messages: [], stream: false, options: { temperature: 0.5, num_predict: 9 }, keep_alive: '5m', think: false });
    expect(openAIToOllamaPayload({ messages: [] }, 'm', true)).toEqual({ model: 'm', messages: [], stream: true });
  });
});

describe('Ollama answers → OpenAI chunks (convert_streaming_response_ollama_to_openai)', () => {
  it('text stream: one id, role first, finish and usage on the done object', () => {
    const s = new OllamaToOpenAIStream();
    const a = s.push({ model: 'llama3:latest', message: { role: 'assistant', content: 'Hi' }, done: false })!;
    const empty = s.push({ model: 'llama3:latest', message: { role: 'assistant', content: '' }, done: false });
    const b = s.push(done)!;
    expect(empty).toBeUndefined();
    expect(a.id).toMatch(/^chatcmpl-[0-9a-f-]{36}$/);
    expect(b.id).toBe(a.id);
    const created = a.created as number;
    expect(JSON.stringify(a)).toBe(
      `{"id":"${a.id}","created":${created},"model":"llama3:latest","choices":[{"index":0,"logprobs":null,"finish_reason":null,"delta":{"role":"assistant","content":"Hi"}}],"object":"chat.completion.chunk"}`,
    );
    expect(b.choices).toEqual([{ index: 0, logprobs: null, finish_reason: 'stop', delta: {} }]);
    expect(b.usage).toEqual({
      input_tokens: 26,
      output_tokens: 259,
      total_tokens: 285,
      prompt_tokens: 26,
      completion_tokens: 259,
      'response_token/s': 61.19,
      'prompt_token/s': 199.88,
      total_duration: 4_935_886_791,
      load_duration: 1_000,
      prompt_eval_count: 26,
      prompt_eval_duration: 130_079_000,
      eval_count: 259,
      eval_duration: 4_232_710_000,
      approximate_total: '0h0m4s',
      completion_tokens_details: { reasoning_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    });
    expect(s.done).toBe(true);
  });

  it('thinking → reasoning_content; tool calls with string arguments and finish_reason tool_calls', () => {
    const s = new OllamaToOpenAIStream();
    const t = s.push({ model: 'q', message: { role: 'assistant', content: '', thinking: 'hmm' }, done: false })!;
    expect((t.choices as Array<{ delta: unknown }>)[0]?.delta).toEqual({ role: 'assistant', reasoning_content: 'hmm' });
    const c = s.push({ model: 'q', message: { role: 'assistant', content: '', tool_calls: [{ function: { name: 'a', arguments: { x: 1 } } }, { id: 'call_k', function: { index: 5, name: 'b', arguments: {} } }] }, done: false })!;
    const calls = (c.choices as Array<{ delta: { tool_calls: Array<Record<string, unknown>> } }>)[0]?.delta.tool_calls;
    expect(calls?.[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'a', arguments: '{"x":1}' } });
    expect(calls?.[0]?.id).toMatch(/^call_[0-9a-f-]{36}$/);
    expect(calls?.[1]).toEqual({ index: 5, id: 'call_k', type: 'function', function: { name: 'b', arguments: '{}' } });
    const end = s.push({ ...done, model: 'q' })!;
    expect((end.choices as Array<{ finish_reason: string }>)[0]?.finish_reason).toBe('tool_calls');
  });

  it('non-stream: convert_response_ollama_to_openai', () => {
    const r = ollamaResponseToOpenAI({ ...done, message: { role: 'assistant', content: 'Yes', thinking: 'why' } });
    expect(r.id).toMatch(/^llama3:latest-[0-9a-f-]{36}$/);
    expect(r).toMatchObject({
      object: 'chat.completion',
      model: 'llama3:latest',
      choices: [{ index: 0, logprobs: null, finish_reason: 'stop', message: { role: 'assistant', content: 'Yes', reasoning_content: 'why' } }],
      usage: { prompt_tokens: 26, completion_tokens: 259 },
    });
    expect(ollamaUsage({}).approximate_total).toBe('0h0m0s');
    expect(ollamaUsage({})['response_token/s']).toBe('N/A');
  });

  it('parses NDJSON over any chunking, split UTF-8 included', async () => {
    const text = '{"a":"é"}\n\n{"b":2}\n{"c":3}';
    const bytes = new TextEncoder().encode(text);
    for (let size = 1; size <= 4; size++) {
      async function* parts() {
        for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
      }
      const got = [];
      for await (const o of parseNDJSON(parts())) got.push(o);
      expect(got).toEqual([{ a: 'é' }, { b: 2 }, { c: 3 }]);
    }
  });
});
