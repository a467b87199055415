import { describe, expect, it } from 'vitest';
import { tokensPerSecond, usageLines, usageSeconds } from './usage.ts';

const values = (u: Record<string, unknown>) => Object.fromEntries(usageLines(u).map((l) => [l.key, l.value]));

describe('usage lines (Generation Info)', () => {
  it('OpenAI-style usage: tokens in, out and total, no timing invented', () => {
    const u = { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42, input_tokens: 12, output_tokens: 30, completion_tokens_details: { reasoning_tokens: 8 } };
    expect(values(u)).toEqual({ input: '12', output: '30', total: '42', reasoning: '8' });
    expect(usageSeconds(u)).toBeNull();
    expect(tokensPerSecond(u)).toBeNull();
  });

  it("Ollama's durations (ns): time and tokens per second", () => {
    const u = { prompt_eval_count: 10, eval_count: 50, total_duration: 2_500_000_000, eval_duration: 2_000_000_000 };
    expect(values(u)).toEqual({ input: '10', output: '50', total: '60', time: '2.50 s', tps: '25.0' });
  });

  it("Open WebUI's converted Ollama usage keeps its reported rates", () => {
    const u = { input_tokens: 5, output_tokens: 9, total_tokens: 14, 'response_token/s': 41.26, 'prompt_token/s': 300, total_duration: 1e9 };
    expect(values(u)).toMatchObject({ tps: '41.3', 'prompt-tps': '300.0', time: '1.00 s' });
  });

  it('nothing known says so', () => {
    expect(values({})).toEqual({ none: 'not reported' });
  });
});
