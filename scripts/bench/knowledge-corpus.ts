import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

/**
 * The knowledge benchmark's corpus: the manual pages Debian installed on this machine
 * (/usr/share/man/man{1,8,5,7,3}, gzip'd roff), read straight from their source — no `man`
 * process per page — and turned into plain text per page: the NAME section's one-line
 * description is kept apart (it becomes the page's query) and left out of the text, so a query
 * never appears verbatim in the document it should find. Symbolic links and `.so` redirects (the
 * same page under another name) are skipped; pages are taken in sorted order, so a run is
 * reproducible on one machine.
 */
export interface ManPage {
  /** `ls(1)` */
  name: string;
  /** The NAME line after its dash: "list directory contents". */
  description: string;
  /** Every other section, headings included, as plain text. */
  text: string;
}

const SECTIONS = ['man1', 'man8', 'man5', 'man7', 'man3'];
const ROOT = '/usr/share/man';

export function* manPages(): Generator<ManPage> {
  for (const section of SECTIONS) {
    let files: string[];
    try {
      files = readdirSync(join(ROOT, section)).filter((f) => f.endsWith('.gz')).sort();
    } catch {
      continue;
    }
    for (const f of files) {
      const path = join(ROOT, section, f);
      try {
        if (lstatSync(path).isSymbolicLink()) continue;
        const page = parsePage(gunzipSync(readFileSync(path)).toString('utf8'), `${f.replace(/\.gz$/, '').replace(/\.([^.]+)$/, '($1)')}`);
        if (page) yield page;
      } catch {
        // unreadable page: skip
      }
    }
  }
}

/** Inline roff escapes → text. */
function inline(s: string): string {
  return s
    .replace(/\\f(\[[^\]]*\]|\(..|.)/g, '')
    .replace(/\\s[-+]?\d/g, '')
    .replace(/\\\*(\(..|\[[^\]]*\]|.)/g, '')
    .replace(/\\\((em|en|hy)/g, '-')
    .replace(/\\\(.{2}/g, ' ')
    .replace(/\\\[[^\]]*\]/g, ' ')
    .replace(/\\[-]/g, '-')
    .replace(/\\e/g, '\\')
    .replace(/\\[&|^%:,/]/g, '')
    .replace(/\\ /g, ' ')
    .replace(/\\(.)/g, '$1');
}

const MDOC_WORD = /^(Fl|Ar|Op|Oo|Oc|Pa|Nm|Xr|Cm|Ic|Ev|Va|Dv|Er|Fn|Fa|Ft|Li|Sy|Em|Ql|Dq|Sq|Pq|Qq|Ns|No|Bro|Brc|Aq|Ta|It|Ux|Bx|At|Ox|Nx|Fx)$/;

/** Macro line → the text it prints (or null for layout-only macros). */
function macroText(line: string): { heading?: string; text?: string } {
  const m = /^[.'](\S+)\s*(.*)$/.exec(line);
  if (!m) return {};
  const [, name, rest] = m as unknown as [string, string, string];
  if (name === 'SH' || name === 'Sh' || name === 'SS' || name === 'Ss') return { heading: inline(rest.replace(/"/g, '')).trim() };
  if (['B', 'I', 'BR', 'IR', 'RB', 'RI', 'BI', 'IB', 'SM', 'SB', 'IP', 'TP', 'Nd', 'Dl', 'D1'].includes(name)) {
    return { text: inline(rest.replace(/"/g, '')) };
  }
  // mdoc lines carry text between their macro words (".Fl a Ar file").
  if (/^[A-Z][a-z]$/.test(name) && !['Dd', 'Dt', 'Os', 'Bl', 'El', 'Bd', 'Ed', 'Pp', 'Sx'].includes(name)) {
    return { text: inline(rest.split(/\s+/).filter((w) => !MDOC_WORD.test(w)).join(' ').replace(/"/g, '')) };
  }
  return {};
}

export function parsePage(src: string, name: string): ManPage | null {
  if (/^\.so\s/m.test(src.slice(0, 200))) return null;
  const sections: { heading: string; lines: string[] }[] = [];
  let cur: { heading: string; lines: string[] } | null = null;
  for (const raw of src.split('\n')) {
    if (raw.startsWith('.\\"') || raw.startsWith("'\\\"") || raw.startsWith('.\\}')) continue;
    if (raw.startsWith('.') || raw.startsWith("'")) {
      const { heading, text } = macroText(raw);
      if (heading !== undefined) {
        cur = { heading: heading.toUpperCase(), lines: [] };
        sections.push(cur);
      } else if (text && cur) cur.lines.push(text);
      continue;
    }
    if (cur) cur.lines.push(inline(raw));
  }
  const nameSection = sections.find((s) => s.heading === 'NAME');
  if (!nameSection) return null;
  const nameLine = nameSection.lines.join(' ').replace(/\s+/g, ' ').trim();
  const dash = nameLine.search(/\s-+\s/);
  const description = (dash >= 0 ? nameLine.slice(dash).replace(/^\s-+\s/, '') : nameLine).trim();
  const text = sections
    .filter((s) => s !== nameSection)
    .map((s) => `${s.heading}\n${s.lines.join('\n').replace(/\n{3,}/g, '\n\n').trim()}`)
    .join('\n\n')
    .trim();
  if (!description || text.length < 200) return null;
  return { name, description, text };
}
