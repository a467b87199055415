import { describe, expect, it } from 'vitest';
import { Marked } from 'marked';
import { PartsRenderer, type Part } from './markdown';

/**
 * The streaming renderer keeps the blocks before the last finished one and re-renders only the
 * rest: for every prefix of these answers (one character more each time, as a stream grows) it
 * must give exactly what rendering that prefix whole gives. Sanitising is left out (identity): it
 * needs a DOM and works on each part the same way.
 */
const same = (html: string) => html;
const whole = new Marked({ gfm: true, breaks: true, async: false });

/** Parts as one comparable string: HTML runs joined, code parts as a marker with their text. */
function flat(parts: Part[]): string {
  return parts.map((p) => (p.kind === 'html' ? p.html : `[[code ${p.lang} ${p.closed ? 'closed' : 'open'}]]${p.code}[[/code]]`)).join('');
}

const ANSWERS = [
  'echo: lighthouse harbour tide compass lantern orchard meadow granite violin saffron glacier ember',
  '# Title\nSome text.\n\nA second paragraph with **bold** and `code`.\n\n- one\n- two\n\n  still two\n- three\n\nAfter the list.\n',
  'Intro\n\n```python\nprint(sum(range(10)) * 7)\n```\n\nThen a table:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nand text\n===\n\n> quoted\n\n> again\n\nend',
  'Para one\n\n    indented code\n\n    more code\n\nPara two\n\n~~~js\nlet x = 1;\n~~~\n\n---\n\n1. a\n2. b\n\n<div>\n\nhtml\n\n</div>\n\nlast',
  'A [link][ref] here.\n\nMore text\n\n[ref]: https://example.com\n\nTail',
  'Windows\r\nlines\r\n\r\nsecond\r\n',
  'Steps:\n\n1. first\n\n2. second\n\n3. third\n\nDone.',
];

describe('PartsRenderer (streamed Markdown)', () => {
  for (const [n, answer] of ANSWERS.entries()) {
    it(`answer ${n + 1}: every prefix renders as the whole prefix would`, () => {
      const streaming = new PartsRenderer(same);
      let kept = 0;
      for (let end = 1; end <= answer.length; end += 1) {
        const prefix = answer.slice(0, end);
        const got = streaming.render(prefix);
        const want = new PartsRenderer(same).render(prefix);
        expect(flat(got), JSON.stringify(prefix)).toBe(flat(want));
        // And the same as marked on the whole text, apart from code blocks (their own parts).
        if (!want.some((p) => p.kind === 'code')) expect(flat(got)).toBe(whole.parser(whole.lexer(prefix.replace(/\r\n?/g, '\n'))));
        kept = Math.max(kept, (streaming as unknown as { stable: Part[] }).stable.length);
      }
      const full = streaming.render(answer);
      expect(flat(full)).toBe(flat(new PartsRenderer(same).render(answer)));
      // Answers with a blank line after a final block keep parts instead of redoing them.
      if (/\n\n\S/.test(answer.replace(/\r/g, ''))) expect(kept).toBeGreaterThan(0);
    });
  }

  it('keeps the finished parts as the same strings while the text grows', () => {
    const r = new PartsRenderer(same);
    const first = r.render('First paragraph.\n\nSecond, still');
    const second = r.render('First paragraph.\n\nSecond, still growing');
    expect(second[0]).toBe(first[0]);
    expect(flat(second)).toBe('<p>First paragraph.</p>\n<p>Second, still growing</p>\n');
  });

  it('starts over when the text is not a continuation', () => {
    const r = new PartsRenderer(same);
    r.render('One.\n\nTwo.\n\nThree');
    expect(flat(r.render('Other.\n\nText'))).toBe('<p>Other.</p>\n<p>Text</p>\n');
  });

  it('an open fence is reported open until it closes', () => {
    const r = new PartsRenderer(same);
    expect(r.render('x\n\n```py\nprint(1)').at(-1)).toEqual({ kind: 'code', lang: 'py', code: 'print(1)', closed: false });
    expect(r.render('x\n\n```py\nprint(1)\n```').at(-1)).toEqual({ kind: 'code', lang: 'py', code: 'print(1)', closed: true });
  });
});
