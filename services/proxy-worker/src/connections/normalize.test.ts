import { describe, expect, it } from 'vitest';
import { ChunkNormalizer, normalizeCompletion, normalizeUsage } from './normalize.ts';
import { ReasoningTagSplitter, splitReasoningTags } from './reasoning-tags.ts';

const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  ...extra,
});

/** Runs pieces through a normaliser and returns each forwarded chunk as the exact JSON text sent. */
function run(inputs: unknown[]): string[] {
  const n = new ChunkNormalizer();
  const out: string[] = [];
  for (const c of inputs) for (const o of n.push(c)) out.push(JSON.stringify(o));
  for (const o of n.end()) out.push(JSON.stringify(o));
  return out;
}

const deltas = (out: string[]) => out.map((s) => (JSON.parse(s) as { choices: Array<{ delta: Record<string, unknown> }> }).choices[0]?.delta);

describe('ReasoningTagSplitter', () => {
  it('splits tags that straddle pieces at any character', () => {
    const text = '<think>\npondering hard\n</think>\n\nThe answer.';
    for (let size = 1; size <= text.length; size++) {
      const s = new ReasoningTagSplitter();
      let reasoning = '';
      let plain = '';
      for (let i = 0; i < text.length; i += size) {
        for (const seg of s.push(text.slice(i, i + size))) seg.kind === 'reasoning' ? (reasoning += seg.text) : (plain += seg.text);
      }
      for (const seg of s.flush()) seg.kind === 'reasoning' ? (reasoning += seg.text) : (plain += seg.text);
      expect([reasoning, plain], `piece size ${size}`).toEqual(['pondering hard\n', 'The answer.']);
    }
  });

  it("knows Open WebUI's other tag pairs, anywhere in the text, and unclosed reasoning", () => {
    expect(splitReasoningTags('<thinking>a</thinking>b')).toEqual({ reasoning: 'a', text: 'b' });
    expect(splitReasoningTags('<|begin_of_thought|>x<|end_of_thought|>y')).toEqual({ reasoning: 'x', text: 'y' });
    expect(splitReasoningTags('◁think▷x◁/think▷y')).toEqual({ reasoning: 'x', text: 'y' });
    expect(splitReasoningTags('Intro <reason>why</reason> outro')).toEqual({ reasoning: 'why', text: 'Intro outro' });
    expect(splitReasoningTags('<think>cut off at max_tokens')).toEqual({ reasoning: 'cut off at max_tokens', text: '' });
    expect(splitReasoningTags('a < b and <thin')).toEqual({ reasoning: '', text: 'a < b and <thin' });
    expect(splitReasoningTags('no tags at all')).toEqual({ reasoning: '', text: 'no tags at all' });
  });
});

describe('ChunkNormalizer (streamed chunks, exact bytes)', () => {
  it('passes plain chunks through byte for byte and adds no reasoning_content', () => {
    const inputs = [chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hello' }), chunk({ content: ' world' }), chunk({}, 'stop'), chunk({}, null, { choices: [], usage: { prompt_tokens: 3 } })];
    const out = run(structuredClone(inputs));
    expect(out).toEqual(inputs.map((c) => JSON.stringify(c)));
    expect(out.join('')).not.toContain('reasoning');
  });

  it('renames reasoning / thinking to reasoning_content and drops null reasoning fields', () => {
    const out = run([chunk({ reasoning: 'a' }), chunk({ thinking: 'b' }), chunk({ reasoning_content: 'c', reasoning: 'c' }), chunk({ content: 'x', reasoning_content: null })]);
    expect(out).toEqual([
      JSON.stringify(chunk({ reasoning_content: 'a' })),
      JSON.stringify(chunk({ reasoning_content: 'b' })),
      JSON.stringify(chunk({ reasoning_content: 'c' })),
      JSON.stringify(chunk({ content: 'x' })),
    ]);
  });

  it('moves <think> content to reasoning_content when the tags straddle chunks, holding back only what is ambiguous', () => {
    const out = run([chunk({ role: 'assistant', content: '' }), ...['<thi', 'nk>ponder', 'ing</th', 'ink>The ', 'answer.'].map((c) => chunk({ content: c })), chunk({}, 'stop')]);
    expect(out).toEqual([
      JSON.stringify(chunk({ role: 'assistant', content: '' })),
      JSON.stringify(chunk({ reasoning_content: 'ponder' })),
      JSON.stringify(chunk({ reasoning_content: 'ing' })),
      JSON.stringify(chunk({ content: 'The ' })),
      JSON.stringify(chunk({ content: 'answer.' })),
      JSON.stringify(chunk({}, 'stop')),
    ]);
  });

  it('releases held-back text on the finish chunk, or in a last chunk when the stream ends without one', () => {
    expect(deltas(run([chunk({ content: 'a <' }), chunk({}, 'stop')]))).toEqual([{ content: 'a ' }, { content: '<' }]);
    expect(deltas(run([chunk({ content: '<think>never closed' })]))).toEqual([{ reasoning_content: 'never closed' }]);
    expect(deltas(run([chunk({ content: 'x <thi' })]))).toEqual([{ content: 'x ' }, { content: '<thi' }]);
  });

  it('turns object tool-call arguments into JSON strings', () => {
    const out = run([chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: { city: 'Paris' } } }] })]);
    expect(deltas(out)[0]).toEqual({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '{"city":"Paris"}' } }] });
  });
});

describe('normalizeCompletion and normalizeUsage', () => {
  it('normalises a whole message', () => {
    const c = normalizeCompletion({
      choices: [{ index: 0, message: { role: 'assistant', content: '<think>hmm</think>\nYes.', reasoning: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: { x: 1 } } }] }, finish_reason: 'stop' }],
    });
    expect(c).toEqual({
      choices: [{ index: 0, message: { role: 'assistant', content: 'Yes.', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{"x":1}' } }], reasoning_content: 'hmm' }, finish_reason: 'stop' }],
    });
    const plain = normalizeCompletion({ choices: [{ message: { role: 'assistant', content: 'Hi', reasoning_content: null } }] });
    expect(JSON.stringify(plain)).toBe('{"choices":[{"message":{"role":"assistant","content":"Hi"}}]}');
  });

  it('adds input/output/total tokens whatever the naming', () => {
    expect(normalizeUsage({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 })).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, input_tokens: 3, output_tokens: 4 });
    expect(normalizeUsage({ prompt_eval_count: 5, eval_count: 6 })).toMatchObject({ input_tokens: 5, output_tokens: 6, total_tokens: 11 });
    expect(normalizeUsage(undefined)).toBeNull();
    expect(normalizeUsage({})).toBeNull();
  });
});
