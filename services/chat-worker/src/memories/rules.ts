import { fail } from '../context.ts';

/**
 * Open WebUI 0.10's memory rules (utils/memory.py, models/memories.py), kept free of the database
 * so they can be tested alone: content and path cleaning, the text that gets embedded, and the
 * in-memory filtering/ranking behind `search`, `paths` and `path`. Open WebUI runs these over all
 * of a user's rows in Python; we do the same over the rows Postgres returns, so orderings and
 * edge cases (ties, limits, clamping) come out the same.
 */

/** A memory as the API returns it (Open WebUI's MemoryModel, in its field order). */
export type MemoryRow = {
  id: string;
  user_id: string;
  type: string;
  path: string | null;
  content: string;
  meta: Record<string, unknown> | null;
  updated_at: number;
  created_at: number;
};

export type MemoryTypeFilter = 'user' | 'context' | 'all';

// Python's str.strip() set (str.isspace): JS's \s lacks \x1c-\x1f and \x85 and adds \ufeff.
const PY_SPACE = '\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, 'g');

/** Python's `str.strip()`. */
export const pyStrip = (s: string): string => s.replace(PY_STRIP, '');

/** Anything but `user` is `context` (the column is never empty). */
export const normalizeMemoryType = (t: string | null | undefined): 'user' | 'context' => (t === 'user' ? 'user' : 'context');

/** Trimmed content; blank → 400. */
export function cleanMemoryContent(content: string | null | undefined): string {
  const value = pyStrip(content ?? '');
  if (!value) fail(400, 'Memory content cannot be empty');
  return value;
}

/**
 * `/work//projects/` → `work/projects`; blank → null. A path is an address, not a file name: empty,
 * `.` or `..` segments and control characters are refused rather than silently rewritten.
 */
export function cleanMemoryPath(path: string | null | undefined): string | null {
  const value = pyStrip(path ?? '').replace(/^\/+|\/+$/g, '').replace(/\/+/g, '/');
  if (!value) return null;
  const parts = value.split('/');
  // eslint-disable-next-line no-control-regex
  if (parts.some((p) => p === '' || p === '.' || p === '..') || /[\x00-\x1f]/.test(value)) fail(400, 'Invalid memory path');
  return value;
}

/** What is embedded: the path gives the content its context (`work/projects\nUses Rust`). */
export function memoryVectorText(content: string, path: string | null): string {
  const p = cleanMemoryPath(path);
  return p ? `${p}\n${content}` : content;
}

/** First 300 characters (code points, as Python slices), for event payloads. */
export function contentPreview(content: string | null | undefined): string {
  const s = content ?? '';
  return s.length <= 300 ? s : Array.from(s).slice(0, 300).join('');
}

const pathParts = (path: string | null): string[] => (path ?? '').split('/').filter((p) => p);

function parentPath(path: string | null): string | null {
  const parts = pathParts(path);
  return parts.length > 1 ? parts.slice(0, -1).join('/') : null;
}

type Key = readonly (number | string)[];

/** Python tuple ordering. */
function compareKeys(a: Key, b: Key): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return a.length - b.length;
}

/** How close a memory's path is to the looked-up one (lower is closer); null = unrelated. */
function pathRank(memoryPath: string | null, lookupPath: string | null): [number, number] | null {
  if (!lookupPath) return null;
  const m = cleanMemoryPath(memoryPath);
  const l = cleanMemoryPath(lookupPath);
  if (!m || !l) return null;
  if (m === l) return [0, 0];
  if (m.startsWith(`${l}/`)) return [1, pathParts(m).length - pathParts(l).length];
  if (l.startsWith(`${m}/`)) return [2, pathParts(l).length - pathParts(m).length];
  const mp = parentPath(m);
  if (mp && mp === parentPath(l)) return [3, 0];
  const lookupSet = new Set(pathParts(l));
  const shared = new Set(pathParts(m).filter((p) => lookupSet.has(p))).size;
  if (shared) return [4, -shared];
  if (pathParts(m).at(-1) === pathParts(l).at(-1)) return [5, 0];
  return null;
}

function matchesQuery(memory: MemoryRow, query: string): boolean {
  const value = pyStrip(query).toLowerCase();
  if (!value) return true;
  return memory.content.toLowerCase().includes(value) || (memory.path ?? '').toLowerCase().includes(value);
}

const byType = (type: MemoryTypeFilter) => (m: MemoryRow) => type === 'all' || m.type === type;
const clamp = (limit: number | null | undefined, dflt: number, max: number): number => Math.max(1, Math.min(limit || dflt, max));

export interface SearchOptions {
  query?: string | null;
  path?: string | null;
  memoryId?: string | null;
  type?: MemoryTypeFilter;
  limit?: number | null;
}

/** `POST /memories/search`: substring match, path neighbourhood first, then most recently updated. */
export function searchMemoryRows(memories: readonly MemoryRow[], opts: SearchOptions): MemoryRow[] {
  let rows = [...memories];
  if (opts.memoryId) rows = rows.filter((m) => m.id === opts.memoryId);
  rows = rows.filter(byType(opts.type ?? 'all'));
  const query = pyStrip(opts.query ?? '');
  const lookup = cleanMemoryPath(opts.path);
  if (lookup) {
    const basename = (pathParts(lookup).at(-1) ?? lookup).toLowerCase();
    const lookupLower = lookup.toLowerCase();
    rows = rows.filter((m) => {
      if (pathRank(m.path, lookup)) return true;
      const haystack = `${m.path ?? ''}\n${m.content}`.toLowerCase();
      return haystack.includes(lookupLower) || haystack.includes(basename);
    });
  }
  if (query) rows = rows.filter((m) => matchesQuery(m, query));
  const key = (m: MemoryRow): Key => [...((lookup ? pathRank(m.path, lookup) : null) ?? [9, 0]), -(m.updated_at || 0)];
  return rows.sort((a, b) => compareKeys(key(a), key(b))).slice(0, clamp(opts.limit, 20, 100));
}

export type PathGroup = {
  path: string | null;
  type: string;
  count: number;
  updated_at: number;
  children: string[];
};

/** `POST /memories/paths`: one group per (path, type), newest first, with direct child paths. */
export function listMemoryPathGroups(
  memories: readonly MemoryRow[],
  opts: { query?: string | null; type?: MemoryTypeFilter; limit?: number | null },
): { paths: PathGroup[]; count: number } {
  const rows = memories.filter(byType(opts.type ?? 'all')).filter((m) => matchesQuery(m, opts.query ?? ''));
  const grouped = new Map<string, PathGroup>();
  for (const m of rows) {
    const k = JSON.stringify([m.path, m.type]);
    let g = grouped.get(k);
    if (!g) {
      g = { path: m.path, type: m.type, count: 0, updated_at: 0, children: [] };
      grouped.set(k, g);
    }
    g.count += 1;
    g.updated_at = Math.max(g.updated_at, m.updated_at || 0);
  }
  const paths = [...grouped.values()].map((g) => g.path).filter((p): p is string => !!p);
  for (const g of grouped.values()) {
    if (!g.path) continue;
    const prefix = `${g.path}/`;
    const children: string[] = [];
    for (const candidate of paths) {
      if (!candidate.startsWith(prefix)) continue;
      const child = `${prefix}${candidate.slice(prefix.length).split('/', 1)[0]}`;
      if (!children.includes(child)) children.push(child);
    }
    g.children = children.slice(0, 20);
  }
  const groups = [...grouped.values()].sort((a, b) => b.updated_at - a.updated_at);
  return { paths: groups.slice(0, clamp(opts.limit, 100, 500)), count: groups.length };
}

/** `POST /memories/path`: the memories at a path, its ancestors that hold memories, and its children. */
export function readMemoryPathRows(
  memories: readonly MemoryRow[],
  opts: { path: string; type?: MemoryTypeFilter; includeChildren?: boolean; limit?: number | null },
): { path: string; parents: string[]; children: string[]; memories: MemoryRow[] } {
  const lookup = cleanMemoryPath(opts.path);
  if (!lookup) fail(400, 'Memory path is required');
  const rows = memories.filter(byType(opts.type ?? 'all'));
  const pathSet = new Set(rows.map((m) => m.path).filter((p): p is string => !!p));
  const parts = pathParts(lookup);
  const parents: string[] = [];
  for (let i = 1; i < parts.length; i++) {
    const p = parts.slice(0, i).join('/');
    if (pathSet.has(p)) parents.push(p);
  }
  const prefix = `${lookup}/`;
  const children = [
    ...new Set(rows.filter((m) => m.path?.startsWith(prefix)).map((m) => `${prefix}${m.path!.slice(prefix.length).split('/', 1)[0]}`)),
  ].sort();
  const includeChildren = opts.includeChildren ?? true;
  const selected = rows.filter(
    (m) => m.path === lookup || (m.path !== null && parents.includes(m.path)) || (includeChildren && !!m.path?.startsWith(prefix)),
  );
  const key = (m: MemoryRow): Key => {
    if (m.path === lookup) return [0, 0, -(m.updated_at || 0)];
    if (m.path?.startsWith(prefix)) return [1, pathParts(m.path).length, -(m.updated_at || 0)];
    return [2, -pathParts(m.path).length, -(m.updated_at || 0)];
  };
  return {
    path: lookup,
    parents,
    children: children.slice(0, 50),
    memories: selected.sort((a, b) => compareKeys(key(a), key(b))).slice(0, clamp(opts.limit, 50, 100)),
  };
}
