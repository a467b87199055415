import { describe, expect, it } from 'vitest';
import { tokenCount } from '../../scripts/src/fake-upstreams/common.ts';
import { bob, completeJson, completeStream, deltas, joined, marker, ol, oa, sentTo, useCompletionsStack } from './chat-completions-fixture.ts';

/**
 * `POST /api/chat/completions` answers on the wire, as Open WebUI clients read them: streamed and
 * non-streamed shapes byte for byte, reasoning apart from the answer, native tool calls, arena
 * models. The stack and helpers are chat-completions-fixture.ts's; stored chats, memories and
 * compaction are chat-completions-stored.test.ts, failures chat-completions-errors.test.ts.
 */
useCompletionsStack();

describe('streamed and non-streamed answers', () => {
  it('streams OpenAI chunks byte for byte in Open WebUI form, ending with [DONE]', async () => {
    const text = `Grüße 🌍 ${marker('bytes')}`;
    const r = await completeStream(bob, { model: 'echo', messages: [{ role: 'user', content: text }] });
    expect(r.status).toBe(200);
    expect(r.type).toBe('text/event-stream; charset=utf-8');
    const head = /^data: \{"id": "(chatcmpl-[^"]+)", "object": "chat\.completion\.chunk", "created": (\d+), /.exec(r.text);
    expect(head).not.toBeNull();
    const [, id, created] = head!;
    // Python's json.dumps: ", " and ": " separators, every non-ASCII character escaped.
    const esc = (s: string) => JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const chunk = (delta: string, finish: string | null) =>
      `data: {"id": "${id}", "object": "chat.completion.chunk", "created": ${created}, "model": "echo", "choices": [{"index": 0, "logprobs": null, "finish_reason": ${finish ? `"${finish}"` : 'null'}, "delta": ${delta}}]}\n\n`;
    const prompt = tokenCount(text);
    const completion = tokenCount(`echo: ${text}`);
    const words = `echo: ${text}`.match(/\s*\S+/g)!;
    const expected = [
      chunk('{"role": "assistant", "content": "", "refusal": null}', null),
      ...words.map((w) => chunk(`{"content": ${esc(w)}}`, null)),
      chunk('{}', 'stop'),
      `data: {"id": "${id}", "object": "chat.completion.chunk", "created": ${created}, "model": "echo", "choices": [], "usage": {"prompt_tokens": ${prompt}, "completion_tokens": ${completion}, "total_tokens": ${prompt + completion}, "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}, "input_tokens": ${prompt}, "output_tokens": ${completion}}}\n\n`,
      'data: [DONE]\n\n',
    ].join('');
    expect(r.text).toBe(expected);
    expect(r.text).toContain('{"content": " Gr\\u00fc\\u00dfe"}');
    expect(r.text).toContain('\\ud83c\\udf0d');
  });

  it('streams an Ollama model as OpenAI chunks with one shared id, the role first, usage on the last', async () => {
    const text = marker('ollama-stream');
    const r = await completeStream(bob, { model: 'echo:latest', messages: [{ role: 'user', content: text }] });
    expect(r.status).toBe(200);
    expect(r.events.at(-1)).toBe('data: [DONE]\n\n');
    for (const e of r.events.slice(0, -1)) {
      const d = JSON.parse(e.slice(6));
      expect(Object.keys(d).slice(0, 5)).toEqual(['id', 'object', 'created', 'model', 'choices']);
      expect(Object.keys(d.choices[0])).toEqual(['index', 'logprobs', 'finish_reason', 'delta']);
      expect(e).toMatch(/^data: \{"id": "chatcmpl-[0-9a-f-]{36}", "object": "chat\.completion\.chunk", /);
    }
    expect(new Set(r.data.map((d) => d.id)).size).toBe(1);
    expect(r.data.every((d) => d.model === 'echo:latest')).toBe(true);
    expect(r.data[0].choices[0].delta.role).toBe('assistant');
    expect(joined(r.data, 'content')).toBe(`echo: ${text}`);
    const last = r.data.at(-1);
    expect(last.choices[0]).toEqual({ index: 0, logprobs: null, finish_reason: 'stop', delta: {} });
    expect(last.usage).toMatchObject({ input_tokens: tokenCount(text), output_tokens: tokenCount(`echo: ${text}`), prompt_eval_count: tokenCount(text) });
    expect(sentTo(ol, text)!.json).toMatchObject({ model: 'echo:latest', stream: true, messages: [{ role: 'user', content: text }] });
  });

  it('answers one chat.completion object when not streamed, usage with Open WebUI\'s token fields', async () => {
    const text = marker('plain');
    const r = await completeJson(bob, { model: 'echo', messages: [{ role: 'user', content: text }], temperature: 0.3, params: { top_p: 0.5, stop: ['\\n\\n'], function_calling: 'native' } });
    expect(r.status).toBe(200);
    expect(r.type).toBe('application/json');
    const prompt = tokenCount(text);
    const completion = tokenCount(`echo: ${text}`);
    expect(r.body).toEqual({
      id: r.body.id,
      object: 'chat.completion',
      created: r.body.created,
      model: 'echo',
      choices: [{ index: 0, logprobs: null, finish_reason: 'stop', message: { role: 'assistant', content: `echo: ${text}` } }],
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
        input_tokens: prompt,
        output_tokens: completion,
      },
    });
    expect(Object.keys(r.body)).toEqual(['id', 'object', 'created', 'model', 'choices', 'usage']);
    expect(r.body.id).toMatch(/^chatcmpl-/);
    // Params become body fields (stop sequences unescaped); Open WebUI's own fields stay home.
    const sent = sentTo(oa, text)!.json as Record<string, unknown>;
    expect(sent).toMatchObject({ model: 'echo', stream: false, temperature: 0.3, top_p: 0.5, stop: ['\n\n'], messages: [{ role: 'user', content: text }] });
    for (const k of ['params', 'chat_id', 'features', 'function_calling']) expect(sent).not.toHaveProperty(k);
  });
});

describe('reasoning arrives apart from the answer', () => {
  const cases: { model: string; reasoning: (t: string) => string; content: (t: string) => string }[] = [
    { model: 'reasoning', reasoning: () => 'Let me think about this step by step.', content: (t) => `echo: ${t}` },
    { model: 'ollama-reasoning', reasoning: () => 'The user wants an answer. I will give one.', content: (t) => `echo: ${t}` },
    { model: 'think-tags', reasoning: () => 'pondering', content: () => 'The answer.' },
    { model: 'reasoning:latest', reasoning: () => 'Let me think about this step by step.', content: (t) => `echo: ${t}` },
    { model: 'think-tags:latest', reasoning: () => 'pondering', content: () => 'The answer.' },
  ];
  for (const c of cases) {
    it(`${c.model}: streamed as delta.reasoning_content, and message.reasoning_content when not streamed`, async () => {
      const t = marker(c.model);
      const s = await completeStream(bob, { model: c.model, messages: [{ role: 'user', content: t }] });
      expect(s.status).toBe(200);
      expect(joined(s.data, 'reasoning_content')).toBe(c.reasoning(t));
      expect(joined(s.data, 'content')).toBe(c.content(t));
      for (const d of deltas(s.data)) {
        expect(d).not.toHaveProperty('reasoning');
        expect(d).not.toHaveProperty('thinking');
        expect(String(d.content ?? '')).not.toMatch(/<\/?think/);
      }
      const j = await completeJson(bob, { model: c.model, messages: [{ role: 'user', content: t }] });
      expect(j.body.choices[0].message).toEqual({ role: 'assistant', content: c.content(t), reasoning_content: c.reasoning(t) });
    });
  }

  it('a model without reasoning sends none: no reasoning_content anywhere', async () => {
    for (const model of ['echo', 'echo:latest']) {
      const t = marker('plain');
      const s = await completeStream(bob, { model, messages: [{ role: 'user', content: t }] });
      expect(s.text).not.toContain('reasoning_content');
      const j = await completeJson(bob, { model, messages: [{ role: 'user', content: t }] });
      expect(Object.keys(j.body.choices[0].message)).toEqual(['role', 'content']);
    }
  });
});

describe('native tool calling', () => {
  const tools = [
    { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    { type: 'function', function: { name: 'get_time', description: 'Local time', parameters: { type: 'object', properties: {} } } },
  ];

  it('sends tools and tool_choice upstream as given and streams the calls as tool_call deltas', async () => {
    const t = marker('tools-stream');
    const s = await completeStream(bob, { model: 'tools', messages: [{ role: 'user', content: t }], tools, tool_choice: 'auto' });
    expect(s.status).toBe(200);
    const sent = sentTo(oa, t)!.json as Record<string, unknown>;
    expect(sent.tools).toEqual(tools);
    expect(sent.tool_choice).toBe('auto');
    const calls = new Map<number, { id: string; name: string; args: string }>();
    for (const d of deltas(s.data)) {
      for (const tc of d.tool_calls ?? []) {
        const c = calls.get(tc.index) ?? { id: '', name: '', args: '' };
        if (tc.id) c.id = tc.id;
        if (tc.function?.name) c.name = tc.function.name;
        c.args += tc.function?.arguments ?? '';
        calls.set(tc.index, c);
      }
    }
    expect([...calls.values()].map((c) => [c.name, c.args])).toEqual([
      ['get_weather', '{"city":"Paris"}'],
      ['get_time', '{"city":"Paris"}'],
    ]);
    expect([...calls.values()].every((c) => c.id.startsWith('call_'))).toBe(true);
    expect(s.data.flatMap((d) => d.choices.map((c: any) => c.finish_reason)).filter(Boolean)).toEqual(['tool_calls']);
  });

  it('not streamed: tool_calls with content "" (OpenAI and Ollama connections)', async () => {
    const t = marker('tools-json');
    const j = await completeJson(bob, { model: 'tools', messages: [{ role: 'user', content: t }], tools });
    expect(j.body.choices[0].finish_reason).toBe('tool_calls');
    const msg = j.body.choices[0].message;
    expect(Object.keys(msg)).toEqual(['role', 'content', 'tool_calls']);
    expect(msg.content).toBe('');
    expect(msg.tool_calls).toEqual([
      { id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      { id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'get_time', arguments: '{"city":"Paris"}' } },
    ]);
    const o = await completeJson(bob, { model: 'tools:latest', messages: [{ role: 'user', content: marker('ollama-tools') }], tools });
    expect(o.body.choices[0].message.content).toBe('');
    expect(o.body.choices[0].message.tool_calls.map((c: any) => [c.type, c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['function', 'get_weather', { city: 'Paris' }],
      ['function', 'get_time', { city: 'Paris' }],
    ]);
  });
});

describe('arena models', () => {
  it('streamed: the first event names the member picked, which then answers', async () => {
    const t = marker('arena-stream');
    const s = await completeStream(bob, { model: 'duel', messages: [{ role: 'user', content: t }] });
    expect(s.status).toBe(200);
    const m = /^data: \{"selected_model_id": "(echo|echo:latest)"\}\n\n$/.exec(s.events[0]!);
    expect(m).not.toBeNull();
    const picked = m![1]!;
    expect(s.data.slice(1).every((d) => d.model === picked)).toBe(true);
    expect(joined(s.data.slice(1), 'content')).toBe(`echo: ${t}`);
    expect(Boolean(sentTo(picked === 'echo' ? oa : ol, t))).toBe(true);
    expect(sentTo(picked === 'echo' ? ol : oa, t)).toBeUndefined();
  });

  it('not streamed: selected_model_id is the last key; over many requests both members are picked', async () => {
    const picked = new Set<string>();
    for (let i = 0; i < 24 && picked.size < 2; i++) {
      const t = marker('arena');
      const j = await completeJson(bob, { model: 'duel', messages: [{ role: 'user', content: t }] });
      expect(j.status).toBe(200);
      expect(Object.keys(j.body).at(-1)).toBe('selected_model_id');
      expect(j.body.model).toBe(j.body.selected_model_id);
      expect(j.body.choices[0].message.content).toBe(`echo: ${t}`);
      picked.add(j.body.selected_model_id);
    }
    expect([...picked].sort()).toEqual(['echo', 'echo:latest']);
  });
});
