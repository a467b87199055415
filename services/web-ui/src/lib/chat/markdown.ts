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
  let tokens: Token[] & { links?: unknown };
  try {
    tokens = marked.lexer(markdown);
  } catch {
    return [{ kind: 'html', html: sanitize(escapeHtml(markdown).replace(/\n/g, '<br>')) }];
  }
  const parts: Part[] = [];
  let run: Token[] = [];
  const flush = () => {
    if (!run.length) return;
    const list = Object.assign(run, { links: tokens.links ?? {} }) as unknown as Parameters<typeof marked.parser>[0];
    let html: string;
    try {
      html = marked.parser(list) as string;
    } catch {
      html = escapeHtml(run.map((t) => t.raw).join(''));
    }
    parts.push({ kind: 'html', html: sanitize(html) });
    run = [];
  };
  for (const t of tokens) {
    if (t.type === 'code') {
      flush();
      const c = t as Tokens.Code;
      const raw = c.raw.trimEnd();
      const fenced = /^ {0,3}(`{3,}|~{3,})/.test(c.raw);
      const closed = !fenced || /\n {0,3}(`{3,}|~{3,})\s*$/.test(raw);
      parts.push({ kind: 'code', lang: langOf(c.lang), code: c.text, closed });
    } else {
      run.push(t);
    }
  }
  flush();
  return parts;
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
