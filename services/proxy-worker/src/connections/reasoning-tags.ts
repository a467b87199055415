/**
 * Reasoning that arrives inside the content between tags (raw Qwen3/DeepSeek-R1 templates, llama.cpp or
 * vLLM without a reasoning parser). Open WebUI 0.10.2 recognises the pairs below (middleware.py
 * DEFAULT_REASONING_TAGS) wherever they appear in the text, not only at its start; so does this splitter.
 *
 * - Tags may be split at any character across pieces (`<th` + `ink>`): the ambiguous tail is held back
 *   until the next piece or `flush()` decides it.
 * - Whitespace right after an opening or closing tag is dropped (models emit `<think>\n…\n</think>\n\n`),
 *   and so is whitespace before a tag that opens the content.
 * - A reasoning block never closed (output cut at max_tokens) is reasoning to the end.
 */

export const DEFAULT_REASONING_TAGS: ReadonlyArray<readonly [string, string]> = [
  ['<think>', '</think>'],
  ['<thinking>', '</thinking>'],
  ['<reason>', '</reason>'],
  ['<reasoning>', '</reasoning>'],
  ['<thought>', '</thought>'],
  ['<Thought>', '</Thought>'],
  ['<|begin_of_thought|>', '<|end_of_thought|>'],
  ['◁think▷', '◁/think▷'],
];

export type Segment = { kind: 'reasoning' | 'text'; text: string };

/** Length of the longest suffix of `s` that is a proper prefix of one of `tags`. */
function heldSuffix(s: string, tags: readonly string[]): number {
  let best = 0;
  for (const tag of tags) {
    const max = Math.min(s.length, tag.length - 1);
    for (let n = max; n > best; n--) {
      if (tag.startsWith(s.slice(s.length - n))) {
        best = n;
        break;
      }
    }
  }
  return best;
}

export class ReasoningTagSplitter {
  private readonly starts: string[];
  private readonly ends: Map<string, string>;
  private mode: 'text' | 'reasoning' = 'text';
  private endTag = '';
  private buf = '';
  /** Drop the whitespace at the head of `buf` (just after a tag). */
  private lead = false;
  /** Nothing emitted yet: leading whitespace before an opening tag is dropped. */
  private atStart = true;

  constructor(tags: ReadonlyArray<readonly [string, string]> = DEFAULT_REASONING_TAGS) {
    this.starts = tags.map(([s]) => s);
    this.ends = new Map(tags.map(([s, e]) => [s, e]));
  }

  push(piece: string): Segment[] {
    const out: Segment[] = [];
    this.buf += piece;
    this.drain(out);
    return out;
  }

  /** End of the content: whatever was held back is released. */
  flush(): Segment[] {
    const rest = this.buf;
    this.buf = '';
    if (!rest || (this.lead && !rest.trim())) return [];
    const text = this.lead ? rest.trimStart() : rest;
    this.lead = false;
    this.atStart = false;
    return [{ kind: this.mode, text }];
  }

  private emit(out: Segment[], kind: Segment['kind'], text: string): void {
    if (!text) return;
    this.atStart = false;
    const last = out[out.length - 1];
    if (last && last.kind === kind) last.text += text;
    else out.push({ kind, text });
  }

  private drain(out: Segment[]): void {
    for (;;) {
      if (this.lead) {
        this.buf = this.buf.trimStart();
        if (!this.buf) return;
        this.lead = false;
      }
      if (this.mode === 'text') {
        let at = -1;
        let tag = '';
        for (const start of this.starts) {
          const i = this.buf.indexOf(start);
          if (i >= 0 && (at < 0 || i < at)) {
            at = i;
            tag = start;
          }
        }
        if (at >= 0) {
          const before = this.buf.slice(0, at);
          if (!(this.atStart && !before.trim())) this.emit(out, 'text', before);
          this.buf = this.buf.slice(at + tag.length);
          this.mode = 'reasoning';
          this.endTag = this.ends.get(tag) as string;
          this.lead = true;
          continue;
        }
        if (this.atStart && !this.buf.trim()) return;
        const hold = heldSuffix(this.buf, this.starts);
        const emit = this.buf.slice(0, this.buf.length - hold);
        // Whitespace before a possible opening tag at the very start stays held with it.
        if (this.atStart && hold && !emit.trim()) return;
        this.emit(out, 'text', emit);
        this.buf = this.buf.slice(this.buf.length - hold);
        return;
      }
      const at = this.buf.indexOf(this.endTag);
      if (at >= 0) {
        this.emit(out, 'reasoning', this.buf.slice(0, at));
        this.buf = this.buf.slice(at + this.endTag.length);
        this.mode = 'text';
        this.lead = true;
        continue;
      }
      const hold = heldSuffix(this.buf, [this.endTag]);
      this.emit(out, 'reasoning', this.buf.slice(0, this.buf.length - hold));
      this.buf = this.buf.slice(this.buf.length - hold);
      return;
    }
  }
}

/** Whole-content helper (non-streamed answers): all reasoning joined, all text joined. */
export function splitReasoningTags(content: string): { reasoning: string; text: string } {
  const s = new ReasoningTagSplitter();
  let reasoning = '';
  let text = '';
  for (const seg of [...s.push(content), ...s.flush()]) {
    if (seg.kind === 'reasoning') reasoning += seg.text;
    else text += seg.text;
  }
  return { reasoning, text };
}
