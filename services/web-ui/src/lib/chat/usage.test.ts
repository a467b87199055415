import { describe, expect, it } from 'vitest';
import { tokensPerSecond, usageLines, usageSeconds, withTiming } from './usage.ts';

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

  it('timing measured here is added only where the connection reported none', () => {
    const u = { input_tokens: 5, output_tokens: 40, total_tokens: 45 };
    const timed = withTiming(u, 1000, 1500, 3500);
    expect(timed).toEqual({ ...u, total_duration: 2_500_000_000, 'response_token/s': 20 });
    expect(values(timed)).toMatchObject({ time: '2.50 s', tps: '20.0' });
    const ollama = { eval_count: 9, total_duration: 7 };
    expect(withTiming(ollama, 0, 1, 2)).toBe(ollama);
    expect(withTiming({ output_tokens: 0 }, 0, null, 10)).toEqual({ output_tokens: 0, total_duration: 10_000_000 });
  });
});
