/**
 * Reasoning that arrives inside the content between tags (raw Qwen3/DeepSeek-R1 templates, llama.cpp or
 * vLLM without a reasoning parser). One splitter for both faces; each face's rules are parameters:
 *
 * - The chat face (OPEN_WEBUI_RULES): Open WebUI 0.10.2's tag pairs (middleware.py DEFAULT_REASONING_TAGS)
 *   wherever they appear in the text, not only at its start.
 * - The Anthropic face (THINK_AT_START, translate/think-tags.ts): `<think>` only at the very start of the
 *   content (leading whitespace allowed); anything else, and everything after the block, is plain text
 *   (a model explaining HTML, say).
 *
 * Common to both:
 * - Tags may be split at any character across pieces (`<th` + `ink>`): the ambiguous tail is held back
 *   until the next piece or `flush()` decides it.
 * - Whitespace right after an opening or closing tag is dropped (models emit `<think>\n…\n</think>\n\n`),
 *   and so is whitespace before a tag that opens the content; whitespace inside the reasoning is kept.
 * - A reasoning block never closed (output cut at max_tokens) is reasoning to the end.
 * Not handled: templates that put `<think>` in the prompt so the output starts mid-reasoning with only a
 * closing `</think>` — detecting that would mean buffering the whole answer.
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

export interface ReasoningTagRules<K extends string> {
  /** Opening and closing tag pairs. */
  tags: ReadonlyArray<readonly [string, string]>;
  /** Only a tag that opens the content counts; after it closes (or without it) everything is text. */
  onlyAtStart: boolean;
  /** The name of the reasoning segments (the faces call it differently). */
  kind: K;
}

export const OPEN_WEBUI_RULES: ReasoningTagRules<'reasoning'> = { tags: DEFAULT_REASONING_TAGS, onlyAtStart: false, kind: 'reasoning' };

export type Segment<K extends string = 'reasoning'> = { kind: K | 'text'; text: string };

/** Length of the longest suffix of `s` that is a proper prefix of one of `tags`. */
function heldSuffix(s: string, tags: readonly string[]): number {
  let best = 0;
  for (const tag of tags) {
    const max = Math.min(s.length, tag.length - 1);
    const first = tag.charCodeAt(0);
    for (let n = max; n > best; n--) {
      // Only a suffix starting with the tag's first character can be its prefix (no slice for the others).
      if (s.charCodeAt(s.length - n) === first && tag.startsWith(s.slice(s.length - n))) {
        best = n;
        break;
      }
    }
  }
  return best;
}

export class ReasoningTagSplitter<K extends string = 'reasoning'> {
  private readonly starts: string[];
  private readonly ends: Map<string, string>;
  private mode: 'text' | 'reasoning' = 'text';
  private endTag = '';
  private buf = '';
  /** Drop the whitespace at the head of `buf` (just after a tag). */
  private lead = false;
  /** Nothing emitted yet: leading whitespace before an opening tag is dropped. */
  private atStart = true;
  /** `onlyAtStart`: no tag can open any more, the rest is text as it comes. */
  private plain = false;

  constructor(private readonly rules: ReasoningTagRules<K> = OPEN_WEBUI_RULES as unknown as ReasoningTagRules<K>) {
    this.starts = rules.tags.map(([s]) => s);
    this.ends = new Map(rules.tags.map(([s, e]) => [s, e]));
  }

  push(piece: string): Segment<K>[] {
    const out: Segment<K>[] = [];
    this.buf += piece;
    this.drain(out);
    return out;
  }

  /** End of the content: whatever was held back is released. */
  flush(): Segment<K>[] {
    const rest = this.buf;
    this.buf = '';
    if (!rest || (this.lead && !rest.trim())) return [];
    const text = this.lead ? rest.trimStart() : rest;
    this.lead = false;
    this.atStart = false;
    return [{ kind: this.mode === 'reasoning' ? this.rules.kind : 'text', text }];
  }

  private emit(out: Segment<K>[], kind: Segment<K>['kind'], text: string): void {
    if (!text) return;
    this.atStart = false;
    const last = out[out.length - 1];
    if (last && last.kind === kind) last.text += text;
    else out.push({ kind, text });
  }

  private drain(out: Segment<K>[]): void {
    for (;;) {
      if (this.lead) {
        this.buf = this.buf.trimStart();
        if (!this.buf) return;
        this.lead = false;
      }
      if (this.mode === 'text') {
        if (this.plain) {
          this.emit(out, 'text', this.buf);
          this.buf = '';
          return;
        }
        let at = -1;
        let tag = '';
        for (const start of this.starts) {
          const i = this.buf.indexOf(start);
          if (i >= 0 && (at < 0 || i < at)) {
            at = i;
            tag = start;
          }
        }
        const opensContent = this.atStart && !this.buf.slice(0, Math.max(at, 0)).trim();
        if (at >= 0 && (opensContent || !this.rules.onlyAtStart)) {
          if (!opensContent) this.emit(out, 'text', this.buf.slice(0, at));
          this.buf = this.buf.slice(at + tag.length);
          this.mode = 'reasoning';
          this.endTag = this.ends.get(tag) as string;
          this.lead = true;
          continue;
        }
        if (this.atStart && !this.buf.trim()) return;
        if (this.rules.onlyAtStart) {
          // Still a possible opening tag (`<th`)? Wait. Anything else decides: plain text from here on.
          const head = this.buf.trimStart();
          if (this.atStart && this.starts.some((s) => s.startsWith(head))) return;
          this.plain = true;
          continue;
        }
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
        this.emit(out, this.rules.kind, this.buf.slice(0, at));
        this.buf = this.buf.slice(at + this.endTag.length);
        this.mode = 'text';
        this.lead = true;
        this.plain = this.rules.onlyAtStart;
        continue;
      }
      const hold = heldSuffix(this.buf, [this.endTag]);
      this.emit(out, this.rules.kind, this.buf.slice(0, this.buf.length - hold));
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
