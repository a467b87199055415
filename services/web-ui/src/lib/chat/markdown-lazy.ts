/**
 * markdown.ts (marked + DOMPurify, ~80 KB) is its own chunk: the chat input does not wait for it
 * at start. main.ts starts loading it right after the first render; Markdown.svelte shows an
 * answer as plain text in the moment before it is there (it is usually there before any message).
 */
import type * as MarkdownModule from './markdown';

export type Markdown = typeof MarkdownModule;

let loaded: Markdown | null = null;
let loading: Promise<Markdown> | null = null;

/** The module if it has loaded, else null. */
export function markdownNow(): Markdown | null {
  return loaded;
}

/** Load it (once; a failed load is tried again on the next call). */
export function loadMarkdown(): Promise<Markdown> {
  loading ??= import('./markdown').then(
    (m) => (loaded = m),
    (err: unknown) => {
      loading = null;
      throw err;
    },
  );
  return loading;
}
