/**
 * Model output → safe HTML. marked turns Markdown (GFM: tables, task lists, strikethrough) into
 * HTML and DOMPurify cleans every piece before it reaches the DOM: raw HTML from the model
 * (`<img onerror>`, `<script>`, `javascript:` links, inline styles, ids that would collide with
 * the page's own) never survives. Top-level fenced code blocks are handed back as their own
 * parts so the view renders them as components (highlighting, Copy, Run for Python).
 */
import { Marked, type Token, type Tokens } from 'marked';
import DOMPurify from 'dompurify';

const marked = new Marked({ gfm: true, breaks: true, async: false });

let purifier: ReturnType<typeof DOMPurify> | null = null;

function purify(): ReturnType<typeof DOMPurify> {
  if (purifier) return purifier;
  const p = DOMPurify(window);
  p.addHook('afterSanitizeAttributes', (node) => {
    if (node.nodeName === 'A' && node.hasAttribute('href')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer nofollow');
    }
    if (node.nodeName === 'INPUT') node.setAttribute('disabled', '');
  });
  purifier = p;
  return p;
}

/** Sanitised HTML (safe for `{@html}`). */
export function sanitize(html: string): string {
  return purify().sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'button', 'textarea', 'select', 'option', 'iframe', 'object', 'embed', 'link', 'meta', 'base'],
    FORBID_ATTR: ['style', 'id', 'name', 'form', 'formaction', 'autofocus', 'srcset'],
    ALLOW_DATA_ATTR: false,
  }) as string;
}

export type Part =
  | { kind: 'html'; html: string }
  | { kind: 'code'; lang: string; code: string; closed: boolean };

/** The fence's language word (`python title="x"` → `python`), lower-cased. */
export function langOf(info: string | undefined): string {
  return (info ?? '').trim().split(/\s+/)[0]?.toLowerCase() ?? '';
}

/**
 * Markdown split into parts: runs of ordinary blocks as sanitised HTML, each top-level fenced
 * code block on its own. `closed` is false for a fence still streaming (no closing ```).
 */
export function toParts(markdown: string): Part[] {
  return new PartsRenderer().render(markdown);
}

/**
 * Blocks that nothing written after them (past a blank line) can change: a paragraph cannot turn
 * into a setext heading across a blank line, a closed fence stays closed. Lists (a later item
 * may continue them, loose), indented code, HTML blocks and link definitions are not.
 */
const FINAL = new Set(['paragraph', 'heading', 'table', 'hr', 'blockquote', 'code']);
/** A link reference definition anywhere: links elsewhere depend on it, so no part is final. */
const REF_DEF = /^ {0,3}\[[^\]\n]+\]:/m;
const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})/;
const FENCE_CLOSE = /\n {0,3}(`{3,}|~{3,})\s*$/;

/**
 * Markdown → parts for a text that grows (a streamed answer). The blocks before the last blank
 * line that ends a final block (FINAL) are rendered once and kept — same strings, so the view
 * leaves their DOM alone; each call lexes, parses and sanitises only the text after them. The
 * result is the same as rendering the whole text at once (markdown.test.ts checks every prefix).
 * Text that does not extend the previous one (an edit, another message) starts over.
 */
export class PartsRenderer {
  private stableSrc = '';
  private stable: Part[] = [];

  constructor(private readonly clean: (html: string) => string = sanitize) {}

  render(input: string): Part[] {
    // marked reads \r\n as \n; the kept prefix is compared on the same text.
    const markdown = input.includes('\r') ? input.replace(/\r\n?/g, '\n') : input;
    const incremental = !REF_DEF.test(markdown);
    if (!incremental || !markdown.startsWith(this.stableSrc)) {
      this.stableSrc = '';
      this.stable = [];
    }
    const tail = markdown.slice(this.stableSrc.length);
    let tokens: Token[] & { links?: unknown };
    try {
      tokens = marked.lexer(tail);
    } catch {
      return [...this.stable, { kind: 'html', html: this.clean(escapeHtml(tail).replace(/\n/g, '<br>')) }];
    }
    // The last blank line (a space token with a token after it) that ends a final block.
    let cut = -1;
    if (incremental) {
      for (let i = tokens.length - 2; i >= 1; i--) {
        const t = tokens[i]!;
        const before = tokens[i - 1]!;
        if (t.type !== 'space' || !FINAL.has(before.type)) continue;
        if (before.type === 'code' && !(FENCE_OPEN.test(before.raw) && FENCE_CLOSE.test(before.raw.trimEnd()))) continue;
        cut = i;
        break;
      }
    }
    if (cut >= 0) {
      const done = tokens.slice(0, cut + 1);
      this.stable = [...this.stable, ...this.partsOf(done, tokens.links)];
      this.stableSrc += done.map((t) => t.raw).join('');
      return [...this.stable, ...this.partsOf(tokens.slice(cut + 1), tokens.links)];
    }
    return [...this.stable, ...this.partsOf(tokens, tokens.links)];
  }

  private partsOf(tokens: Token[], links: unknown): Part[] {
    const parts: Part[] = [];
    let run: Token[] = [];
    const flush = () => {
      if (!run.length) return;
      const list = Object.assign(run, { links: links ?? {} }) as unknown as Parameters<typeof marked.parser>[0];
      let html: string;
      try {
        html = marked.parser(list) as string;
      } catch {
        html = escapeHtml(run.map((t) => t.raw).join(''));
      }
      // Blank lines alone (between a code block and the next one) make no part.
      if (html || run.some((t) => t.type !== 'space')) parts.push({ kind: 'html', html: this.clean(html) });
      run = [];
    };
    for (const t of tokens) {
      if (t.type === 'code') {
        flush();
        const c = t as Tokens.Code;
        const raw = c.raw.trimEnd();
        const fenced = FENCE_OPEN.test(c.raw);
        const closed = !fenced || FENCE_CLOSE.test(raw);
        parts.push({ kind: 'code', lang: langOf(c.lang), code: c.text, closed });
      } else {
        run.push(t);
      }
    }
    flush();
    return parts;
  }
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
