/*
 * Some servers (llama.cpp without a reasoning parser, vLLM without `--reasoning-parser`, raw
 * Qwen3/DeepSeek-R1 templates) put the reasoning inside the content as `<think>…</think>`.
 * This parser turns content fed in arbitrary pieces into ordered thinking/text segments.
 *
 * Rules:
 * - `<think>` is recognised only at the very start of the content (leading whitespace allowed);
 *   a `<think>` later in the text is ordinary text (a model explaining HTML, say).
 * - Tags may be split at any character boundary across pieces (`<th` + `ink>`); the ambiguous
 *   tail is held back until the next piece (or `flush`) decides it.
 * - Whitespace right after `<think>` and right after `</think>` is dropped (models emit
 *   `<think>\n…\n</think>\n\n`); whitespace inside the reasoning is kept.
 * - A `<think>` that is never closed (output cut at max_tokens) yields thinking only.
 * Not handled: templates that put `<think>` in the prompt so the output starts mid-reasoning with
 * only a closing `</think>` — detecting that would mean buffering the whole answer.
 */

export type Segment = { kind: 'thinking' | 'text'; text: string };

const OPEN = '<think>';
const CLOSE = '</think>';

type State = 'detect' | 'think-lead' | 'thinking' | 'text-lead' | 'text';

/** Length of the longest suffix of `s` that is a proper prefix of `tag`. */
function partialTagSuffix(s: string, tag: string): number {
  const max = Math.min(s.length, tag.length - 1);
  for (let n = max; n > 0; n--) {
    if (tag.startsWith(s.slice(s.length - n))) return n;
  }
  return 0;
}

export class ThinkTagParser {
  private state: State = 'detect';
  private buf = '';

  push(piece: string): Segment[] {
    const out: Segment[] = [];
    this.buf += piece;
    this.drain(out);
    return out;
  }

  /** End of content: release whatever is held back. */
  flush(): Segment[] {
    const out: Segment[] = [];
    const rest = this.buf;
    this.buf = '';
    if (!rest) return out;
    switch (this.state) {
      case 'detect':
      case 'text':
        out.push({ kind: 'text', text: rest });
        break;
      case 'thinking':
        out.push({ kind: 'thinking', text: rest });
        break;
      // *-lead states only ever hold whitespace, which is dropped.
    }
    return out;
  }

  private drain(out: Segment[]): void {
    for (;;) {
      switch (this.state) {
        case 'detect': {
          const s = this.buf.trimStart();
          if (s.length === 0) return; // only whitespace so far
          if (s.startsWith(OPEN)) {
            this.buf = s.slice(OPEN.length);
            this.state = 'think-lead';
            continue;
          }
          if (OPEN.startsWith(s)) return; // could still become `<think>`
          this.state = 'text';
          continue;
        }
        case 'think-lead':
        case 'text-lead': {
          const s = this.buf.trimStart();
          this.buf = s;
          if (!s) return;
          this.state = this.state === 'think-lead' ? 'thinking' : 'text';
          continue;
        }
        case 'thinking': {
          const at = this.buf.indexOf(CLOSE);
          if (at >= 0) {
            if (at > 0) out.push({ kind: 'thinking', text: this.buf.slice(0, at) });
            this.buf = this.buf.slice(at + CLOSE.length);
            this.state = 'text-lead';
            continue;
          }
          const hold = partialTagSuffix(this.buf, CLOSE);
          const emit = this.buf.slice(0, this.buf.length - hold);
          if (emit) out.push({ kind: 'thinking', text: emit });
          this.buf = this.buf.slice(this.buf.length - hold);
          return;
        }
        case 'text': {
          if (this.buf) out.push({ kind: 'text', text: this.buf });
          this.buf = '';
          return;
        }
      }
    }
  }
}

/** Whole-content helper for non-streaming responses. Adjacent segments of one kind are merged. */
export function splitThinkTags(content: string): Segment[] {
  const p = new ThinkTagParser();
  const segs = [...p.push(content), ...p.flush()];
  const merged: Segment[] = [];
  for (const s of segs) {
    const last = merged[merged.length - 1];
    if (last && last.kind === s.kind) last.text += s.text;
    else merged.push({ ...s });
  }
  return merged;
}
