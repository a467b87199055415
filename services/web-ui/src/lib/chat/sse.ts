/**
 * The chat face's streamed completions (Open WebUI's format): `data: <json>\n\n` events, ending
 * `data: [DONE]\n\n`. The first event may be `{"selected_model_id": …}` (arena models); an
 * upstream failure after the first byte is `{"error": {"detail": …}}` and the stream ends there.
 */
import { createParser } from 'eventsource-parser';
import type { ToolCall } from './types';

export type StreamEvent =
  | { type: 'selected_model'; id: string }
  /** Retrieval's citations, sent before the answer (Open WebUI's `{"sources": […]}` event). */
  | { type: 'sources'; sources: unknown[] }
  | { type: 'delta'; content: string; reasoning: string; toolCalls: ToolCall[]; usage?: Record<string, unknown> }
  | { type: 'error'; detail: string }
  | { type: 'done' };

/**
 * The `data` payloads of a server-sent event stream, one per event, as they arrive
 * (eventsource-parser does the line protocol). An event the stream ends in without its blank line
 * is still given: a reply cut short keeps its last piece.
 */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const ready: string[] = [];
  const parser = createParser({ onEvent: (e) => ready.push(e.data) });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      // The stream's end closes any open line and event, as a blank line would.
      parser.feed(done ? decoder.decode() + '\n\n' : decoder.decode(value, { stream: true }));
      while (ready.length) yield ready.shift()!;
      if (done) break;
    }
  } finally {
    reader.releaseLock();
  }
}

/** A FastAPI `detail` (string, or 422's list) as one line of text. */
export function detailText(detail: unknown, fallback = 'Something went wrong.'): string {
  if (typeof detail === 'string' && detail) return detail;
  if (Array.isArray(detail)) {
    const parts = detail.map((d) => (d && typeof d === 'object' && typeof (d as { msg?: unknown }).msg === 'string' ? (d as { msg: string }).msg : JSON.stringify(d)));
    if (parts.length) return parts.join('; ');
  }
  if (detail && typeof detail === 'object') {
    const m = (detail as { message?: unknown }).message;
    if (typeof m === 'string' && m) return m;
    return JSON.stringify(detail);
  }
  return fallback;
}

/** One event's payload as what the view needs (unknown shapes are ignored). */
export function interpret(data: string): StreamEvent | null {
  if (data.trim() === '[DONE]') return { type: 'done' };
  let v: unknown;
  try {
    v = JSON.parse(data);
  } catch {
    return null;
  }
  if (!v || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  if ('error' in o && o.error) {
    const e = o.error as { detail?: unknown; message?: unknown } | string;
    return { type: 'error', detail: typeof e === 'string' ? e : detailText(e.detail ?? e.message ?? e) };
  }
  if (Array.isArray(o.sources) && !Array.isArray(o.choices)) return { type: 'sources', sources: o.sources };
  if (typeof o.selected_model_id === 'string' && !Array.isArray(o.choices)) return { type: 'selected_model', id: o.selected_model_id };
  const choice = Array.isArray(o.choices) ? (o.choices[0] as Record<string, unknown> | undefined) : undefined;
  const delta = (choice?.delta ?? choice?.message) as Record<string, unknown> | undefined;
  // The usage chunk at the end of a stream has no choices; it is kept on the answer as the worker does.
  const usage = o.usage && typeof o.usage === 'object' && !Array.isArray(o.usage) ? (o.usage as Record<string, unknown>) : undefined;
  if (!delta || typeof delta !== 'object') return usage ? { type: 'delta', content: '', reasoning: '', toolCalls: [], usage } : null;
  const str = (x: unknown) => (typeof x === 'string' ? x : '');
  return {
    type: 'delta',
    content: str(delta.content),
    reasoning: str(delta.reasoning_content) || str(delta.reasoning) || str(delta.thinking),
    toolCalls: Array.isArray(delta.tool_calls) ? (delta.tool_calls as ToolCall[]) : [],
    ...(usage ? { usage } : {}),
  };
}

/** Streamed tool-call fragments merged by index (name once, arguments appended). */
export function mergeToolCalls(into: ToolCall[], parts: ToolCall[]): void {
  for (const p of parts) {
    if (!p || typeof p !== 'object') continue;
    const index = typeof p.index === 'number' ? p.index : into.length;
    let call = into.find((c) => c.index === index);
    if (!call) {
      call = { index, id: '', type: 'function', function: { name: '', arguments: '' } };
      into.push(call);
    }
    if (p.id) call.id = p.id;
    const fn = p.function ?? {};
    if (fn.name) call.function!.name = fn.name;
    if (typeof fn.arguments === 'string') call.function!.arguments += fn.arguments;
    else if (fn.arguments && typeof fn.arguments === 'object') call.function!.arguments += JSON.stringify(fn.arguments);
  }
}
