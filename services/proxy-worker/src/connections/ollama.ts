import { randomUUID } from 'node:crypto';
import { UpstreamStreamError } from '../upstream/errors.ts';

/**
 * Ollama's native /api/chat, spoken the way Open WebUI 0.10.2 speaks it: OpenAI bodies converted with
 * convert_payload_openai_to_ollama / convert_messages_openai_to_ollama (utils/payload.py), answers converted
 * back with convert_streaming_response_ollama_to_openai / convert_response_ollama_to_openai
 * (utils/response.py) and the chunk templates of utils/misc.py. Pure functions; the HTTP is in ./chat.ts.
 */

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Ollama's model options (api.md "Valid Parameters and Values"), as Open WebUI's mapping lists them. */
export const OLLAMA_OPTION_KEYS = [
  'temperature',
  'top_p',
  'seed',
  'mirostat',
  'mirostat_eta',
  'mirostat_tau',
  'num_ctx',
  'num_batch',
  'num_keep',
  'num_predict',
  'repeat_last_n',
  'top_k',
  'min_p',
  'typical_p',
  'repeat_penalty',
  'presence_penalty',
  'frequency_penalty',
  'penalize_newline',
  'stop',
  'numa',
  'num_gpu',
  'main_gpu',
  'low_vram',
  'vocab_only',
  'use_mmap',
  'use_mlock',
  'num_thread',
] as const;

function parseArguments(args: unknown): unknown {
  if (typeof args !== 'string') return isObject(args) ? args : {};
  try {
    const parsed = JSON.parse(args) as unknown;
    return isObject(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** convert_messages_openai_to_ollama: text parts joined, images as base64 without the data: prefix, tool-call arguments as objects. */
export function openAIMessagesToOllama(messages: unknown): Json[] {
  if (!Array.isArray(messages)) return [];
  const out: Json[] = [];
  for (const raw of messages) {
    if (!isObject(raw)) continue;
    const m: Json = { role: raw.role };
    const content = raw.content;
    const toolCalls = Array.isArray(raw.tool_calls) && raw.tool_calls.length ? raw.tool_calls : undefined;
    if (typeof content === 'string' && !toolCalls) {
      m.content = content;
      if (raw.tool_call_id) m.tool_call_id = raw.tool_call_id;
    } else if (toolCalls) {
      m.tool_calls = toolCalls.map((tc: unknown, i: number) => {
        const t = isObject(tc) ? tc : {};
        const fn = isObject(t.function) ? t.function : {};
        return {
          index: typeof t.index === 'number' ? t.index : i,
          ...(typeof t.id === 'string' ? { id: t.id } : {}),
          function: { name: typeof fn.name === 'string' ? fn.name : '', arguments: parseArguments(fn.arguments) },
        };
      });
      // Open WebUI sends "" here; text that came with the calls is kept rather than lost.
      m.content = typeof content === 'string' ? content : '';
    } else {
      let text = '';
      const images: string[] = [];
      for (const part of Array.isArray(content) ? content : []) {
        if (!isObject(part)) continue;
        if (part.type === 'text' && typeof part.text === 'string') text += part.text;
        else if (part.type === 'image_url') {
          const url = isObject(part.image_url) ? part.image_url.url : undefined;
          if (typeof url === 'string' && url) images.push(url.startsWith('data:') ? (url.split(',').pop() as string) : url);
        }
      }
      m.content = text.trim();
      if (images.length) m.images = images;
    }
    out.push(m);
  }
  return out;
}

/**
 * An OpenAI chat-completions body → an Ollama /api/chat body. Sampling parameters given at the top level
 * (as an OpenAI client sends them) go into `options` unless `options` already has them; `max_tokens` /
 * `max_completion_tokens` become `num_predict`; `stop` a list; `system`, `keep_alive`, `think` and `format`
 * found in `options` move to the top level, where Ollama reads them; `response_format.json_schema.schema`
 * becomes `format`. `tool_choice`, `stream_options` and other OpenAI-only fields are not sent.
 */
export function openAIToOllamaPayload(body: Json, model: string, stream: boolean): Json {
  const out: Json = { model, messages: openAIMessagesToOllama(body.messages), stream };
  if (Array.isArray(body.tools) && body.tools.length) out.tools = body.tools;
  if (body.format !== undefined) out.format = body.format;
  const options: Json = isObject(body.options) ? { ...body.options } : {};
  if (options.max_tokens !== undefined) {
    if (options.num_predict === undefined) options.num_predict = options.max_tokens;
    delete options.max_tokens;
  }
  for (const key of OLLAMA_OPTION_KEYS) {
    if (body[key] !== undefined && body[key] !== null && options[key] === undefined) options[key] = body[key];
  }
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (maxTokens !== undefined && maxTokens !== null && options.num_predict === undefined) options.num_predict = maxTokens;
  if (typeof options.stop === 'string') options.stop = [options.stop];
  for (const key of ['system', 'keep_alive', 'think', 'format'] as const) {
    if (options[key] !== undefined) {
      out[key] = options[key];
      delete options[key];
    }
  }
  for (const key of ['keep_alive', 'think'] as const) {
    if (body[key] !== undefined && out[key] === undefined) out[key] = body[key];
  }
  if (isObject(body.response_format)) {
    const type = body.response_format.type;
    const spec = typeof type === 'string' ? body.response_format[type] : undefined;
    if (isObject(spec) && spec.schema !== undefined) out.format = spec.schema;
  }
  if (Object.keys(options).length) out.options = options;
  return out;
}

/** convert_ollama_usage_to_openai. */
export function ollamaUsage(d: Json): Json {
  const n = (k: string): number => (typeof d[k] === 'number' ? (d[k] as number) : 0);
  const input = Math.trunc(n('prompt_eval_count'));
  const output = Math.trunc(n('eval_count'));
  const round2 = (x: number) => Math.round(x * 100) / 100;
  const seconds = Math.floor(n('total_duration') / 1_000_000_000);
  return {
    input_tokens: input,
    output_tokens: output,
    total_tokens: input + output,
    prompt_tokens: input,
    completion_tokens: output,
    'response_token/s': n('eval_duration') > 0 ? round2((n('eval_count') / (n('eval_duration') / 10_000_000)) * 100) : 'N/A',
    'prompt_token/s': n('prompt_eval_duration') > 0 ? round2((n('prompt_eval_count') / (n('prompt_eval_duration') / 10_000_000)) * 100) : 'N/A',
    total_duration: n('total_duration'),
    load_duration: n('load_duration'),
    prompt_eval_count: n('prompt_eval_count'),
    prompt_eval_duration: n('prompt_eval_duration'),
    eval_count: n('eval_count'),
    eval_duration: n('eval_duration'),
    approximate_total: `${Math.floor(seconds / 3600)}h${Math.floor((seconds % 3600) / 60)}m${seconds % 60}s`,
    completion_tokens_details: { reasoning_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

/** convert_ollama_tool_call_to_openai; `next` numbers calls that carry no index of their own. */
function toolCallsToOpenAI(calls: unknown[], next: () => number): Json[] {
  return calls.map((tc) => {
    const t = isObject(tc) ? tc : {};
    const fn = isObject(t.function) ? t.function : {};
    const index = typeof t.index === 'number' ? t.index : typeof fn.index === 'number' ? fn.index : next();
    return {
      index,
      id: typeof t.id === 'string' && t.id ? t.id : `call_${randomUUID()}`,
      type: 'function',
      function: { name: typeof fn.name === 'string' ? fn.name : '', arguments: JSON.stringify(fn.arguments ?? {}) },
    };
  });
}

/**
 * Ollama stream objects → OpenAI chunks, as convert_streaming_response_ollama_to_openai: one
 * `chatcmpl-<uuid>` id for the whole answer, `delta.role` on the first chunk, `message.thinking` →
 * `delta.reasoning_content`, tool calls with JSON-string arguments, and on the `done` object
 * `finish_reason` "tool_calls" (if any call was seen) or "stop" plus the usage. Two differences from Open
 * WebUI's template, which marks every chunk without content "stop": only the final chunk carries a
 * finish_reason, and empty intermediate objects (content "") are not forwarded.
 */
export class OllamaToOpenAIStream {
  readonly id = `chatcmpl-${randomUUID()}`;
  private first = true;
  private hasToolCalls = false;
  private nextToolIndex = 0;
  done = false;
  doneReason: string | undefined;

  /** One Ollama stream object → an OpenAI chunk, or undefined when it carries nothing. */
  push(data: Json): Json | undefined {
    const message = isObject(data.message) ? data.message : {};
    const content = typeof message.content === 'string' ? message.content : '';
    const thinking = typeof message.thinking === 'string' ? message.thinking : '';
    const rawCalls = Array.isArray(message.tool_calls) && message.tool_calls.length ? message.tool_calls : undefined;
    const done = data.done === true;
    const delta: Json = {};
    if (this.first) delta.role = 'assistant';
    if (content) delta.content = content;
    if (thinking) delta.reasoning_content = thinking;
    if (rawCalls) {
      delta.tool_calls = toolCallsToOpenAI(rawCalls, () => this.nextToolIndex++);
      this.hasToolCalls = true;
    }
    if (!done && !this.first && !content && !thinking && !rawCalls) return undefined;
    this.first = false;
    if (done) {
      this.done = true;
      if (typeof data.done_reason === 'string') this.doneReason = data.done_reason;
    }
    return {
      id: this.id,
      created: Math.floor(Date.now() / 1000),
      model: typeof data.model === 'string' ? data.model : 'ollama',
      choices: [{ index: 0, logprobs: null, finish_reason: done ? (this.hasToolCalls ? 'tool_calls' : 'stop') : null, delta }],
      object: 'chat.completion.chunk',
      ...(done ? { usage: ollamaUsage(data) } : {}),
    };
  }
}

/**
 * convert_response_ollama_to_openai: a whole /api/chat answer as a `chat.completion` (id
 * `<model>-<uuid>` and finish_reason "stop", as Open WebUI's template has them, tool calls or not).
 */
export function ollamaResponseToOpenAI(data: Json): Json {
  const model = typeof data.model === 'string' ? data.model : 'ollama';
  const message = isObject(data.message) ? data.message : {};
  const content = typeof message.content === 'string' ? message.content : '';
  const thinking = typeof message.thinking === 'string' ? message.thinking : '';
  const rawCalls = Array.isArray(message.tool_calls) && message.tool_calls.length ? message.tool_calls : undefined;
  let n = 0;
  return {
    id: `${model}-${randomUUID()}`,
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        logprobs: null,
        finish_reason: 'stop',
        message: {
          role: 'assistant',
          content,
          ...(thinking ? { reasoning_content: thinking } : {}),
          ...(rawCalls ? { tool_calls: toolCallsToOpenAI(rawCalls, () => n++) } : {}),
        },
      },
    ],
    object: 'chat.completion',
    usage: ollamaUsage(data),
  };
}

/** Newline-delimited JSON over any byte chunking (split lines, split UTF-8). */
export async function* parseNDJSON(body: AsyncIterable<Uint8Array>, maxLineChars = 16 * 1024 * 1024): AsyncGenerator<Json> {
  const decoder = new TextDecoder('utf-8');
  let buf = '';
  const parse = (line: string): Json => {
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (err) {
      throw new UpstreamStreamError(`upstream sent a line that is not JSON: ${line.slice(0, 200)}`, { cause: err });
    }
    if (!isObject(v)) throw new UpstreamStreamError(`upstream sent a line that is not a JSON object: ${line.slice(0, 200)}`);
    return v;
  };
  for await (const part of body) {
    buf += decoder.decode(part, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) yield parse(line);
    }
    if (buf.length > maxLineChars) throw new UpstreamStreamError(`upstream sent a line longer than ${maxLineChars} characters`);
  }
  buf += decoder.decode();
  const last = buf.trim();
  if (last) yield parse(last);
}
