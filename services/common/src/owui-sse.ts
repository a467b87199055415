import { randomUUID } from 'node:crypto';

/**
 * Server-Sent Events as Open WebUI writes them (the chat worker's completions; the proxy worker
 * writes a completion's chunks in this form when the chat worker asks, so they are serialised once). Every SSE line Open WebUI builds itself
 * (`data: {"selected_model_id": …}`, chunks it converts, in-stream errors) is Python's
 * `json.dumps` with its defaults: `", "` and `": "` separators and every non-ASCII character
 * escaped. Clients parse either, but byte-level comparisons (and caches keyed on bytes) see the
 * difference, so the stream uses the same serialisation throughout.
 */

const encoder = new TextEncoder();

/**
 * Python's `json.dumps(value)` (default separators, insertion order kept); `ascii` false is
 * `ensure_ascii=False` (non-ASCII characters written as they are).
 */
export function pyJson(value: unknown, ascii = true): string {
  if (ascii) {
    // Native JSON.stringify, then Python's separators and escapes in one pass over its tokens
    // (per chunk of a stream this is most of the chat worker's work; the walk below is 3× slower).
    const text = nativeJson(value);
    if (text !== undefined) return text.replace(TOKENS, pyToken);
  }
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'string':
      return pyString(value, ascii);
    case 'number':
      // Python refuses nothing here but writes NaN/Infinity; JSON parsed in JS never holds them.
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return value.toString();
    case 'object': {
      if (Array.isArray(value)) return `[${value.map((v) => pyJson(v, ascii)).join(', ')}]`;
      const parts: string[] = [];
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (v === undefined || typeof v === 'function') continue;
        parts.push(`${pyString(k, ascii)}: ${pyJson(v, ascii)}`);
      }
      return `{${parts.join(', ')}}`;
    }
    default:
      return 'null';
  }
}

const SHORT_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

/** Characters `JSON.stringify` leaves as they are and Python's ASCII mode escapes (DEL and beyond). */
const NON_ASCII = /[\u007f-\uffff]/g;
const pyEscape = (ch: string): string => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** A string literal, or a separator outside one, in JSON.stringify's output. */
const TOKENS = /"(?:[^"\\]|\\.)*"|[,:]/g;
const pyToken = (t: string): string => (t === ',' ? ', ' : t === ':' ? ': ' : t.replace(NON_ASCII, pyEscape));

/** JSON.stringify's text, or undefined where its answer would differ from the walk (bigint, nothing). */
function nativeJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/** A JSON string literal with Python's ASCII escaping (everything outside space…tilde). */
function pyString(s: string, ascii: boolean): string {
  // JSON.stringify escapes quotes, backslashes and control characters exactly as Python does
  // (\n, \t…, lowercase \u001f, lone surrogates as \udxxx); what it leaves raw beyond ASCII is
  // escaped after.
  if (ascii) return JSON.stringify(s).replace(NON_ASCII, pyEscape);
  // ensure_ascii=False: everything but quotes, backslashes and control characters as it is.
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    const code = s.charCodeAt(i);
    const short = SHORT_ESCAPES[ch];
    if (short) out += short;
    else if (code >= 0x20) out += ch;
    else out += `\\u${code.toString(16).padStart(4, '0')}`;
  }
  return `${out}"`;
}

/** One SSE event carrying a JSON object: `data: {…}\n\n`. */
export const sseData = (value: unknown): string => `data: ${pyJson(value)}\n\n`;

/** The OpenAI stream terminator. */
export const SSE_DONE = 'data: [DONE]\n\n';

/** An error after the stream began, as Open WebUI writes it (then the stream ends). */
export const sseError = (detail: string): string => sseData({ error: { detail } });

export const utf8 = (s: string): Uint8Array => encoder.encode(s);

const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);
const now = () => Math.floor(Date.now() / 1000);

/** Open WebUI's normalize_usage: the usage as given plus input/output/total tokens. */
export function normalizeOwuiUsage(usage: unknown): Record<string, unknown> | null {
  if (!isObject(usage) || Object.keys(usage).length === 0) return null;
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const input = n(usage.input_tokens) || n(usage.prompt_tokens) || n(usage.prompt_eval_count) || n(usage.prompt_n) || 0;
  const output = n(usage.output_tokens) || n(usage.completion_tokens) || n(usage.eval_count) || n(usage.predicted_n) || 0;
  const total = n(usage.total_tokens) || input + output;
  return { ...usage, input_tokens: Math.trunc(input), output_tokens: Math.trunc(output), total_tokens: Math.trunc(total) };
}

/** `pyJson` with the values most chunk fields hold (null, a number) written without a pass over text. */
const py = (v: unknown): string => (v === null ? 'null' : typeof v === 'number' ? (Number.isFinite(v) ? String(v) : 'null') : pyJson(v));

/**
 * A proxy chunk as Open WebUI's SSE event (openai_chat_chunk_message_template's fields, in its
 * order): `data: {"id": …, "object": "chat.completion.chunk", "created": …, "model": …, "choices":
 * [{"index", "logprobs", "finish_reason", "delta"}…], "usage"?}\n\n`. The same bytes as `sseData`
 * of that object (Python's separators compose: each value is written by `pyJson` on its own), built
 * from the parts so the per-chunk work is the delta, not the whole object: the head (id, created,
 * model) is reused while it does not change, which within one stream it never does.
 */
export class ChunkWriter {
  private head: { id: unknown; created: unknown; model: unknown; text: string } | undefined;

  constructor(private readonly fallbackModel: string) {}

  sse(c: Record<string, unknown>): string {
    const id = c.id ?? `chatcmpl-${randomUUID()}`;
    const created = c.created ?? now();
    const model = c.model ?? this.fallbackModel;
    let head = this.head;
    if (!head || head.id !== id || head.created !== created || head.model !== model || typeof id === 'object' || typeof created === 'object' || typeof model === 'object') {
      head = { id, created, model, text: `data: {"id": ${pyJson(id)}, "object": "chat.completion.chunk", "created": ${pyJson(created)}, "model": ${pyJson(model)}, "choices": [` };
      this.head = head;
    }
    let out = head.text;
    const choices = Array.isArray(c.choices) ? c.choices : [];
    for (let i = 0; i < choices.length; i++) {
      const raw: unknown = choices[i];
      const ch = isObject(raw) ? raw : {};
      out += `${i ? ', ' : ''}{"index": ${py(ch.index ?? 0)}, "logprobs": ${py(ch.logprobs ?? null)}, "finish_reason": ${py(ch.finish_reason ?? null)}, "delta": ${pyJson(isObject(ch.delta) ? ch.delta : {})}}`;
    }
    const usage = normalizeOwuiUsage(c.usage);
    return `${out}]${usage ? `, "usage": ${pyJson(usage)}` : ''}}\n\n`;
  }
}
