/**
 * highlight.js, loaded on first use with only the common languages (each its own chunk).
 */
import type { HLJSApi, LanguageFn } from 'highlight.js';

type Loader = () => Promise<{ default: LanguageFn }>;

const LANGUAGES: Record<string, Loader> = {
  python: () => import('highlight.js/lib/languages/python'),
  javascript: () => import('highlight.js/lib/languages/javascript'),
  typescript: () => import('highlight.js/lib/languages/typescript'),
  json: () => import('highlight.js/lib/languages/json'),
  bash: () => import('highlight.js/lib/languages/bash'),
  shell: () => import('highlight.js/lib/languages/shell'),
  css: () => import('highlight.js/lib/languages/css'),
  xml: () => import('highlight.js/lib/languages/xml'),
  sql: () => import('highlight.js/lib/languages/sql'),
  yaml: () => import('highlight.js/lib/languages/yaml'),
  markdown: () => import('highlight.js/lib/languages/markdown'),
  java: () => import('highlight.js/lib/languages/java'),
  c: () => import('highlight.js/lib/languages/c'),
  cpp: () => import('highlight.js/lib/languages/cpp'),
  csharp: () => import('highlight.js/lib/languages/csharp'),
  go: () => import('highlight.js/lib/languages/go'),
  rust: () => import('highlight.js/lib/languages/rust'),
  ruby: () => import('highlight.js/lib/languages/ruby'),
  php: () => import('highlight.js/lib/languages/php'),
  diff: () => import('highlight.js/lib/languages/diff'),
  dockerfile: () => import('highlight.js/lib/languages/dockerfile'),
  ini: () => import('highlight.js/lib/languages/ini'),
};

const ALIASES: Record<string, string> = {
  py: 'python', python3: 'python', js: 'javascript', jsx: 'javascript', mjs: 'javascript', ts: 'typescript',
  tsx: 'typescript', sh: 'bash', zsh: 'bash', console: 'shell', html: 'xml', svg: 'xml', yml: 'yaml', md: 'markdown',
  'c++': 'cpp', cc: 'cpp', h: 'c', cs: 'csharp', golang: 'go', rs: 'rust', rb: 'ruby', toml: 'ini', docker: 'dockerfile',
  patch: 'diff',
};

let core: Promise<HLJSApi> | null = null;
const loaded = new Map<string, Promise<boolean>>();

export function languageName(lang: string): string | null {
  const l = lang.toLowerCase();
  const name = ALIASES[l] ?? l;
  return LANGUAGES[name] ? name : null;
}

async function ensure(name: string): Promise<HLJSApi> {
  core ??= import('highlight.js/lib/core').then((m) => m.default);
  const hljs = await core;
  let p = loaded.get(name);
  if (!p) {
    p = LANGUAGES[name]!()
      .then((m) => {
        hljs.registerLanguage(name, m.default);
        return true;
      })
      .catch(() => false);
    loaded.set(name, p);
  }
  await p;
  return hljs;
}

/** Highlighted HTML (hljs escapes the code), or null for a language we don't load. */
export async function highlight(code: string, lang: string): Promise<string | null> {
  const name = languageName(lang);
  if (!name) return null;
  const hljs = await ensure(name);
  if (!hljs.getLanguage(name)) return null;
  return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
}
