// A chat downloaded as Open WebUI's menu offers it: JSON (the chat records, an array, as
// `POST /api/v1/chats/import` takes them back), plain text and Markdown of the shown branch, and
// PDF through the browser's own print dialog ("Save as PDF") — no PDF library in the bundle.
import type { ChatRecord } from '../apis/chats/index.ts';
import { normalizeHistory, textOf, threadTo } from './history.ts';
import type { HistoryMessage } from './types.ts';

export type ExportFormat = 'json' | 'md' | 'txt' | 'pdf';

/** The shown branch of a stored chat, root first. */
export function shownThread(rec: Pick<ChatRecord, 'chat'>): HistoryMessage[] {
  const history = normalizeHistory(rec.chat?.history);
  return threadTo(history, history.currentId);
}

const titleOf = (rec: Pick<ChatRecord, 'chat'> & { title?: string }) => String(rec.chat?.title ?? rec.title ?? 'Chat');

/** Open WebUI's text export: `### USER` / `### ASSISTANT` then the content, a blank line between. */
export function chatAsText(rec: Pick<ChatRecord, 'chat'>): string {
  return shownThread(rec)
    .map((m) => `### ${m.role.toUpperCase()}\n${textOf(m.content)}`)
    .join('\n\n')
    .concat('\n');
}

/** Markdown: the title as heading, each message under its role (and model for answers). */
export function chatAsMarkdown(rec: Pick<ChatRecord, 'chat'> & { title?: string }): string {
  const parts = [`# ${titleOf(rec)}`];
  for (const m of shownThread(rec)) {
    const who = m.role === 'assistant' ? `Assistant${m.model ? ` (${m.model})` : ''}` : m.role === 'user' ? 'User' : m.role;
    parts.push(`## ${who}\n\n${textOf(m.content)}`);
  }
  return `${parts.join('\n\n')}\n`;
}

/** A file name from the title: what file systems accept, never empty. */
export function fileName(title: string, ext: string): string {
  const base = title.replace(/[\\/:*?"<>|\u0000-\u001f]+/g, ' ').trim().slice(0, 80) || 'chat';
  return `chat-${base}.${ext}`;
}

export function downloadBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.rel = 'noopener';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The printable page of a chat: its title and messages as preformatted text, no script. */
export function printableHtml(rec: Pick<ChatRecord, 'chat'> & { title?: string }): string {
  const body = shownThread(rec)
    .map((m) => `<section class="${m.role === 'user' ? 'user' : 'assistant'}"><h2>${escapeHtml(m.role === 'user' ? 'User' : `Assistant${m.model ? ` · ${m.model}` : ''}`)}</h2><div class="text">${escapeHtml(textOf(m.content))}</div></section>`)
    .join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(titleOf(rec))}</title><style>
body{font:14px/1.5 system-ui,sans-serif;color:#111;margin:2rem}h1{font-size:1.4rem}h2{font-size:.85rem;color:#555;margin:1.2rem 0 .3rem}
.text{white-space:pre-wrap;overflow-wrap:anywhere}.user .text{background:#f2f2f2;border-radius:.6rem;padding:.5rem .8rem}
</style></head><body><h1>${escapeHtml(titleOf(rec))}</h1>${body}</body></html>`;
}

/** PDF: the printable page in a hidden frame, handed to the browser's print dialog. */
export function printChat(rec: Pick<ChatRecord, 'chat'> & { title?: string }): void {
  const frame = document.createElement('iframe');
  frame.className = 'chat-print-frame';
  frame.title = 'Chat for printing';
  frame.setAttribute('aria-hidden', 'true');
  frame.style.cssText = 'position:fixed;width:0;height:0;border:0;right:0;bottom:0;';
  frame.srcdoc = printableHtml(rec);
  frame.onload = () => {
    frame.contentWindow?.focus();
    frame.contentWindow?.print();
    setTimeout(() => frame.remove(), 60_000);
  };
  document.body.appendChild(frame);
}

/** Download `rec` in `format` (the record as `GET /api/v1/chats/{id}` answers it). */
export function exportChat(rec: ChatRecord & { title?: string }, format: ExportFormat): void {
  const title = titleOf(rec);
  if (format === 'json') downloadBlob(new Blob([JSON.stringify([rec], null, 2)], { type: 'application/json' }), `chat-export-${Date.now()}.json`);
  else if (format === 'txt') downloadBlob(new Blob([chatAsText(rec)], { type: 'text/plain' }), fileName(title, 'txt'));
  else if (format === 'md') downloadBlob(new Blob([chatAsMarkdown(rec)], { type: 'text/markdown' }), fileName(title, 'md'));
  else printChat(rec);
}
