import { ReasoningTagSplitter, splitReasoningTags } from './reasoning-tags.ts';

/**
 * What the chat worker receives from `llm.connections.chat`, whatever the upstream spoke: OpenAI chunks /
 * completions where reasoning is only ever `reasoning_content` (never `reasoning`, `thinking`, or tags in
 * the content) and tool-call arguments are strings. Everything else passes through untouched.
 */

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The first non-empty string among a message's or delta's reasoning fields. */
function takeReasoning(m: Json): string | undefined {
  let found: string | undefined;
  for (const key of ['reasoning_content', 'reasoning', 'thinking'] as const) {
    const v = m[key];
    if (found === undefined && typeof v === 'string' && v !== '') found = v;
    delete m[key];
  }
  return found;
}

/** Tool-call arguments given as JSON values become strings; true if any did. */
function stringifyArguments(toolCalls: unknown): boolean {
  if (!Array.isArray(toolCalls)) return false;
  let changed = false;
  for (const tc of toolCalls) {
    const fn = isObject(tc) ? tc.function : undefined;
    if (isObject(fn) && fn.arguments !== undefined && fn.arguments !== null && typeof fn.arguments !== 'string') {
      fn.arguments = JSON.stringify(fn.arguments);
      changed = true;
    }
  }
  return changed;
}

/**
 * Streamed chunks. `push` returns the chunks to forward (none when a chunk only carried text that is held
 * back because it may be the start of a tag); `end` releases what is still held when the upstream stream
 * ends without a finish_reason. A chunk carrying `finish_reason` first gets the held-back text of its
 * choice, so nothing follows the finish.
 */
export class ChunkNormalizer {
  private readonly splitters = new Map<number, ReasoningTagSplitter>();
  private last: Json | undefined;
  /**
   * The last `push` forwarded its input exactly as it came (nothing renamed, split, moved or
   * stringified): the upstream's own JSON text of it parses to the same value, key order included,
   * so it may be forwarded instead of serialising the chunk again.
   */
  untouched = false;

  push(input: unknown): Json[] {
    this.untouched = false;
    if (!isObject(input)) return [];
    const chunk = input;
    this.last = chunk;
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    let heldBack = false;
    let changed = false;
    for (const choice of choices) {
      if (!isObject(choice)) continue;
      const index = typeof choice.index === 'number' ? choice.index : 0;
      const delta: Json = isObject(choice.delta) ? choice.delta : {};
      if (!isObject(choice.delta) && choice.delta !== undefined) {
        choice.delta = delta;
        changed = true;
      }
      if ('reasoning_content' in delta || 'reasoning' in delta || 'thinking' in delta) changed = true;
      let reasoning = takeReasoning(delta) ?? '';
      if (typeof delta.content === 'string' && delta.content !== '') {
        const split = this.splitter(index).push(delta.content);
        let text = '';
        for (const seg of split) {
          if (seg.kind === 'reasoning') reasoning += seg.text;
          else text += seg.text;
        }
        if (text) {
          if (text !== delta.content) changed = true;
          delta.content = text;
        } else {
          delete delta.content;
          heldBack = true;
          changed = true;
        }
      }
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
        const rest = this.splitters.get(index)?.flush() ?? [];
        for (const seg of rest) {
          changed = true;
          if (seg.kind === 'reasoning') reasoning += seg.text;
          else delta.content = (typeof delta.content === 'string' ? delta.content : '') + seg.text;
        }
      }
      if (reasoning) {
        delta.reasoning_content = reasoning;
        changed = true;
      }
      if (stringifyArguments(delta.tool_calls)) changed = true;
    }
    if (heldBack && chunk.usage == null && choices.every((c) => isObject(c) && c.finish_reason == null && (!isObject(c.delta) || Object.keys(c.delta).length === 0))) {
      return [];
    }
    this.untouched = !changed;
    return [chunk];
  }

  /** Upstream ended: a chunk with whatever text or reasoning is still held, if any. */
  end(): Json[] {
    const out: Json[] = [];
    for (const [index, splitter] of this.splitters) {
      const rest = splitter.flush();
      if (!rest.length) continue;
      const delta: Json = {};
      for (const seg of rest) {
        const key = seg.kind === 'reasoning' ? 'reasoning_content' : 'content';
        delta[key] = (typeof delta[key] === 'string' ? delta[key] : '') + seg.text;
      }
      const base = this.last ?? {};
      out.push({
        id: base.id,
        object: 'chat.completion.chunk',
        created: base.created,
        model: base.model,
        choices: [{ index, delta, logprobs: null, finish_reason: null }],
      });
    }
    return out;
  }

  private splitter(index: number): ReasoningTagSplitter {
    let s = this.splitters.get(index);
    if (!s) {
      s = new ReasoningTagSplitter();
      this.splitters.set(index, s);
    }
    return s;
  }
}

/** A whole `chat.completion`: the same rules on each choice's message. */
export function normalizeCompletion(input: unknown): Json {
  if (!isObject(input)) return {};
  const choices = Array.isArray(input.choices) ? input.choices : [];
  for (const choice of choices) {
    if (!isObject(choice) || !isObject(choice.message)) continue;
    const m = choice.message;
    let reasoning = takeReasoning(m) ?? '';
    if (typeof m.content === 'string' && m.content !== '') {
      const { reasoning: tagged, text } = splitReasoningTags(m.content);
      if (tagged) {
        reasoning += tagged;
        m.content = text;
      }
    }
    if (reasoning) m.reasoning_content = reasoning;
    stringifyArguments(m.tool_calls);
  }
  return input;
}

/**
 * Open WebUI's normalize_usage (utils/response.py): the upstream's usage plus input_tokens, output_tokens
 * and total_tokens, whichever naming (OpenAI, Ollama, llama.cpp) it used. Null when there is none.
 */
export function normalizeUsage(usage: unknown): Json | null {
  if (!isObject(usage) || Object.keys(usage).length === 0) return null;
  const num = (...keys: string[]): number => {
    for (const k of keys) {
      const v = usage[k];
      if (typeof v === 'number' && v) return v;
    }
    return 0;
  };
  const input = num('input_tokens', 'prompt_tokens', 'prompt_eval_count', 'prompt_n');
  const output = num('output_tokens', 'completion_tokens', 'eval_count', 'predicted_n');
  const total = num('total_tokens') || input + output;
  return { ...usage, input_tokens: Math.trunc(input), output_tokens: Math.trunc(output), total_tokens: Math.trunc(total) };
}
