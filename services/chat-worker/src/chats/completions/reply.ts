import { randomUUID } from 'node:crypto';
import { normalizeOwuiUsage as normalizeUsage } from '@gatehouse/common';
import { now } from '../../context.ts';
import type { Source } from '../../retrieval/rag-template.ts';
import { isObject } from './messages.ts';

/**
 * The reply's side of a completion: what it produced, gathered from the chunks (or the one
 * completion) for the stored turn and the non-streamed answer, and that answer's shape. Apart from
 * the handler (../completions.ops.ts): it knows Open WebUI's reply fields, not the bus or the turn.
 */

/** What a reply produced, gathered from chunks (or the one completion) for storage. */
export class Reply {
  content = '';
  reasoning = '';
  toolCalls: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
  private byIndex = new Map<number, (typeof this.toolCalls)[number]>();
  finishReason: string | null = null;
  usage: Record<string, unknown> | null = null;
  /** What retrieval grounded the reply on (stored with it). */
  sources: Source[] = [];
  /** When the request left, the first of the answer arrived, and it ended (performance.now()). */
  private readonly startedAt = performance.now();
  private firstAt: number | null = null;

  addDelta(delta: Record<string, unknown>): void {
    this.firstAt ??= performance.now();
    if (typeof delta.content === 'string') this.content += delta.content;
    if (typeof delta.reasoning_content === 'string') this.reasoning += delta.reasoning_content;
    if (Array.isArray(delta.tool_calls)) {
      for (const raw of delta.tool_calls) {
        if (!isObject(raw)) continue;
        const index = typeof raw.index === 'number' ? raw.index : this.byIndex.size;
        let call = this.byIndex.get(index);
        if (!call) {
          call = { id: '', type: 'function', function: { name: '', arguments: '' } };
          this.byIndex.set(index, call);
          this.toolCalls.push(call);
        }
        if (typeof raw.id === 'string' && raw.id) call.id = raw.id;
        if (typeof raw.type === 'string') call.type = raw.type;
        const fn = isObject(raw.function) ? raw.function : {};
        if (typeof fn.name === 'string' && fn.name) call.function.name = fn.name;
        if (typeof fn.arguments === 'string') call.function.arguments += fn.arguments;
        else if (isObject(fn.arguments)) call.function.arguments += JSON.stringify(fn.arguments);
      }
    }
  }

  /** SSE events as sent (the proxy's own), read into the reply when it is stored (`absorbSse`). */
  private sse: Uint8Array[] = [];
  addSse(bytes: Uint8Array): void {
    this.firstAt ??= performance.now();
    this.sse.push(bytes);
  }

  /** The events kept by `addSse`, read as chunks (an event cut short at the end is left out, as an unparsed chunk was). */
  absorbSse(): void {
    if (!this.sse.length) return;
    const text = Buffer.concat(this.sse).toString('utf8');
    this.sse = [];
    for (let at = 0, cut = text.indexOf('\n\n'); cut >= 0; at = cut + 2, cut = text.indexOf('\n\n', at)) {
      const event = text.slice(at, cut);
      if (!event.startsWith('data: ')) continue;
      let chunk: unknown;
      try {
        chunk = JSON.parse(event.slice(6));
      } catch {
        continue;
      }
      if (isObject(chunk)) this.addChunk(chunk);
    }
  }

  addChunk(c: Record<string, unknown>): void {
    for (const raw of Array.isArray(c.choices) ? c.choices : []) {
      if (!isObject(raw) || (raw.index ?? 0) !== 0) continue;
      if (isObject(raw.delta)) this.addDelta(raw.delta);
      if (typeof raw.finish_reason === 'string') this.finishReason = raw.finish_reason;
    }
    const u = normalizeUsage(c.usage);
    if (u) this.usage = u;
  }

  /**
   * The usage to store with the answer, with its timing as this worker saw it where the connection
   * reported none (OpenAI-style usage carries no time; Ollama's carries `total_duration`): the whole
   * answer's time as `total_duration` (nanoseconds, Ollama's unit) and the output tokens over the
   * time from the first piece to the end as `response_token/s`, Open WebUI's name. Generation Info
   * shows both under the answer.
   */
  timed(endedAt: number): Record<string, unknown> | null {
    const u = this.usage;
    if (!u || 'total_duration' in u || 'response_token/s' in u) return u;
    const out: Record<string, unknown> = { ...u, total_duration: Math.round((endedAt - this.startedAt) * 1e6) };
    const tokens = typeof u.output_tokens === 'number' ? u.output_tokens : typeof u.completion_tokens === 'number' ? u.completion_tokens : null;
    const seconds = (endedAt - (this.firstAt ?? this.startedAt)) / 1000;
    if (tokens !== null && tokens > 0 && seconds > 0) out['response_token/s'] = Math.round((tokens / seconds) * 100) / 100;
    return out;
  }
}

/** Open WebUI's non-streamed answer (openai_chat_completion_message_template's fields). */
export function completionShape(c: Record<string, unknown>, reply: Reply, fallbackModel: string, selectedModelId: string | null): Record<string, unknown> {
  const choice = isObject((c.choices as unknown[] | undefined)?.[0]) ? ((c.choices as unknown[])[0] as Record<string, unknown>) : {};
  // The upstream's own tool calls (as the proxy normalised them), else what was gathered.
  const given = isObject(choice.message) && Array.isArray(choice.message.tool_calls) ? choice.message.tool_calls : [];
  const toolCalls = given.length ? given : reply.toolCalls.length ? reply.toolCalls : null;
  const message: Record<string, unknown> = {
    role: 'assistant',
    // Open WebUI 0.10's rule: a reply that calls tools has content "" (never null), text kept if any.
    content: reply.content,
    ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
    ...(toolCalls ? { tool_calls: toolCalls } : {}),
  };
  return {
    id: c.id ?? `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: c.created ?? now(),
    model: c.model ?? fallbackModel,
    choices: [{ index: 0, logprobs: choice.logprobs ?? null, finish_reason: reply.finishReason ?? (toolCalls ? 'tool_calls' : 'stop'), message }],
    ...(reply.usage ? { usage: reply.usage } : {}),
    ...(selectedModelId ? { selected_model_id: selectedModelId } : {}),
  };
}
