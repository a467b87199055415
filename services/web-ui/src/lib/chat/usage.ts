// An answer's stored `usage` as the lines of its Generation Info: what every connection reports
// (input_tokens / output_tokens / total_tokens, which the worker adds to any usage), and timing
// when the connection gives it — Ollama's durations in nanoseconds and Open WebUI's
// `response_token/s` / `prompt_token/s`, or a total time in seconds (`total_time`, `completion_time`).

export interface UsageLine {
  key: string;
  label: string;
  value: string;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const first = (u: Record<string, unknown>, ...keys: string[]): number | null => {
  for (const k of keys) {
    const v = num(u[k]);
    if (v !== null) return v;
  }
  return null;
};

const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const fmtSeconds = (s: number) => (s < 10 ? `${s.toFixed(2)} s` : s < 120 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`);

/** Seconds the answer took, when known. */
export function usageSeconds(u: Record<string, unknown>): number | null {
  const ns = first(u, 'total_duration');
  if (ns !== null && ns > 0) return ns / 1e9;
  const s = first(u, 'total_time', 'completion_time', 'duration');
  return s !== null && s > 0 ? s : null;
}

/** Output tokens per second, when known (reported, or out / generation time). */
export function tokensPerSecond(u: Record<string, unknown>): number | null {
  const reported = first(u, 'response_token/s', 'tokens_per_second');
  if (reported !== null && reported > 0) return reported;
  const out = first(u, 'output_tokens', 'completion_tokens', 'eval_count');
  const evalNs = first(u, 'eval_duration');
  const seconds = evalNs !== null && evalNs > 0 ? evalNs / 1e9 : first(u, 'completion_time');
  return out !== null && seconds && seconds > 0 ? out / seconds : null;
}

export function usageLines(u: Record<string, unknown>): UsageLine[] {
  const lines: UsageLine[] = [];
  const input = first(u, 'input_tokens', 'prompt_tokens', 'prompt_eval_count');
  const output = first(u, 'output_tokens', 'completion_tokens', 'eval_count');
  const total = first(u, 'total_tokens') ?? (input !== null && output !== null ? input + output : null);
  if (input !== null) lines.push({ key: 'input', label: 'Tokens in', value: fmtInt(input) });
  if (output !== null) lines.push({ key: 'output', label: 'Tokens out', value: fmtInt(output) });
  if (total !== null) lines.push({ key: 'total', label: 'Total tokens', value: fmtInt(total) });
  const details = u.completion_tokens_details;
  const reasoning = details && typeof details === 'object' ? num((details as Record<string, unknown>).reasoning_tokens) : null;
  if (reasoning) lines.push({ key: 'reasoning', label: 'Reasoning tokens', value: fmtInt(reasoning) });
  const seconds = usageSeconds(u);
  if (seconds !== null) lines.push({ key: 'time', label: 'Time', value: fmtSeconds(seconds) });
  const tps = tokensPerSecond(u);
  if (tps !== null) lines.push({ key: 'tps', label: 'Tokens per second', value: tps.toFixed(1) });
  const promptTps = first(u, 'prompt_token/s');
  if (promptTps !== null && promptTps > 0) lines.push({ key: 'prompt-tps', label: 'Prompt tokens per second', value: promptTps.toFixed(1) });
  if (!lines.length) lines.push({ key: 'none', label: 'Usage', value: 'not reported' });
  return lines;
}

/**
 * `usage` with the answer's timing where the connection reported none — the rule the chat worker
 * applies to the answers it stores, for the ones this client stores (a new chat's first answer):
 * the whole time as `total_duration` (ns, Ollama's unit) and the output tokens over the time from
 * the first piece to the end as `response_token/s` (Open WebUI's name). Times: performance.now().
 */
export function withTiming(usage: Record<string, unknown>, startedAt: number, firstAt: number | null, endedAt: number): Record<string, unknown> {
  if ('total_duration' in usage || 'response_token/s' in usage) return usage;
  const out: Record<string, unknown> = { ...usage, total_duration: Math.round((endedAt - startedAt) * 1e6) };
  const tokens = first(usage, 'output_tokens', 'completion_tokens');
  const seconds = (endedAt - (firstAt ?? startedAt)) / 1000;
  if (tokens !== null && tokens > 0 && seconds > 0) out['response_token/s'] = Math.round((tokens / seconds) * 100) / 100;
  return out;
}
