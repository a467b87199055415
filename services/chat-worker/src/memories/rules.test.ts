import { describe, expect, it } from 'vitest';
import { BusError } from '@gatehouse/common';
import {
  cleanMemoryContent,
  cleanMemoryPath,
  contentPreview,
  listMemoryPathGroups,
  memoryVectorText,
  normalizeMemoryType,
  pyStrip,
  readMemoryPathRows,
  searchMemoryRows,
  type MemoryRow,
} from './rules.ts';

const row = (id: string, path: string | null, updated_at: number, extra: Partial<MemoryRow> = {}): MemoryRow => ({
  id,
  user_id: 'u',
  type: 'context',
  path,
  content: `memory ${id}`,
  meta: null,
  updated_at,
  created_at: updated_at,
  ...extra,
});

function detail(f: () => unknown): { status: number; message: string } {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(BusError);
    return { status: (err as BusError).status, message: (err as Error).message };
  }
  throw new Error('did not throw');
}

describe('cleaning (utils/memory.py)', () => {
  it('strips what Python’s str.strip() strips, not what JS trim() strips', () => {
    expect(pyStrip('\x1c\x1f\x85 a b \t\n')).toBe('a b');
    expect(pyStrip('\ufeffa')).toBe('\ufeffa');
    expect(cleanMemoryContent('  keep inner  spaces \n')).toBe('keep inner  spaces');
    expect(detail(() => cleanMemoryContent(' \u3000 '))).toEqual({ status: 400, message: 'Memory content cannot be empty' });
    expect(detail(() => cleanMemoryContent(null))).toEqual({ status: 400, message: 'Memory content cannot be empty' });
  });

  it('normalises paths and refuses dot segments and control characters', () => {
    expect(cleanMemoryPath(' /a//b/ ')).toBe('a/b');
    expect(cleanMemoryPath('/ a /')).toBe(' a ');
    expect(cleanMemoryPath('//')).toBeNull();
    expect(cleanMemoryPath(undefined)).toBeNull();
    for (const bad of ['a/..', '../a', 'a/./b', '.', 'a\x00b', 'a\x1fb']) {
      expect(detail(() => cleanMemoryPath(bad)), bad).toEqual({ status: 400, message: 'Invalid memory path' });
    }
    // DEL and non-ASCII are not control characters to Open WebUI.
    expect(cleanMemoryPath('a\x7fb/é')).toBe('a\x7fb/é');
  });

  it('embeds "{path}\\n{content}" when there is a path', () => {
    expect(memoryVectorText('x', 'a/b')).toBe('a/b\nx');
    expect(memoryVectorText('x', null)).toBe('x');
  });

  it('types other than user are context; previews are 300 code points', () => {
    expect(normalizeMemoryType('user')).toBe('user');
    expect(normalizeMemoryType('USER')).toBe('context');
    expect(normalizeMemoryType(null)).toBe('context');
    expect(contentPreview('😀'.repeat(301))).toBe('😀'.repeat(300));
    expect(contentPreview(null)).toBe('');
  });
});

describe('search ranking', () => {
  const rows = [
    row('exact', 'a/b', 1),
    row('child', 'a/b/c', 2),
    row('grandchild', 'a/b/c/d', 9),
    row('ancestor', 'a', 3),
    row('sibling', 'a/x', 4),
    row('shares-a-part', 'z/b/q', 5),
    row('unrelated', 'q/r', 6),
    row('mentions', null, 7, { content: 'something about a/b' }),
    row('names-basename', 'k', 8, { content: 'the b project' }),
  ];

  it('ranks exact, children by depth, ancestors, siblings, shared parts, then text mentions by recency', () => {
    expect(searchMemoryRows(rows, { path: 'a/b' }).map((m) => m.id)).toEqual([
      'exact',
      'child',
      'grandchild',
      'ancestor',
      'sibling',
      'shares-a-part',
      'names-basename',
      'mentions',
    ]);
  });

  it('clamps the limit to 1..100 (0 means the default 20)', () => {
    const many = Array.from({ length: 150 }, (_, i) => row(String(i), null, i));
    expect(searchMemoryRows(many, { limit: 0 })).toHaveLength(20);
    expect(searchMemoryRows(many, { limit: 500 })).toHaveLength(100);
    expect(searchMemoryRows(many, { limit: -3 })).toHaveLength(1);
  });
});

describe('paths and path', () => {
  it('groups by path and type, keeps at most 20 children per group', () => {
    const rows = [row('p', 'p', 1), ...Array.from({ length: 25 }, (_, i) => row(`c${i}`, `p/c${i}/leaf`, 2 + i)), row('u', 'p', 3, { type: 'user' })];
    const { paths, count } = listMemoryPathGroups(rows, {});
    expect(count).toBe(27);
    const p = paths.find((g) => g.path === 'p' && g.type === 'context')!;
    expect(p.children).toHaveLength(20);
    expect(p.children[0]).toBe('p/c0');
    expect(paths.find((g) => g.path === 'p' && g.type === 'user')).toMatchObject({ count: 1, updated_at: 3 });
  });

  it('path needs a path', () => {
    expect(detail(() => readMemoryPathRows([], { path: ' / ' }))).toEqual({ status: 400, message: 'Memory path is required' });
  });

  it('path lists only ancestors that hold memories, and children one level down', () => {
    const out = readMemoryPathRows([row('root', 'a', 1), row('deep', 'a/b/c/d', 2), row('here', 'a/b/c', 3)], { path: 'a/b/c' });
    expect(out).toMatchObject({ path: 'a/b/c', parents: ['a'], children: ['a/b/c/d'] });
    expect(out.memories.map((m) => m.id)).toEqual(['here', 'deep', 'root']);
  });
});
