import { describe, expect, it } from 'vitest';
import { computeDiff, type LinkedFile } from './sync.ts';
import type { DirectoryRow } from './directories.ts';

/** The sync diff on its own (the HTTP flow is in tests/integration/chat-knowledge.test.ts). */
const dir = (id: string, name: string, parent_id: string | null): DirectoryRow => ({ id, knowledge_id: 'k', parent_id, name, user_id: 'u', created_at: 1, updated_at: 1 });
const file = (file_id: string, filename: string, directory_id: string | null, checksum: string): LinkedFile => ({ file_id, filename, directory_id, checksum });
const entry = (path: string, filename: string, checksum: string) => ({ path, filename, checksum, size: 1 });

describe('computeDiff', () => {
  const dirs = [dir('d1', 'docs', null), dir('d2', 'api', 'd1'), dir('d3', 'old', null), dir('d4', 'deeper', 'd3')];
  const files = [file('f1', 'a.md', 'd2', 'aaa'), file('f2', 'b.md', null, 'bbb'), file('f3', 'c.md', 'd4', 'ccc')];

  it('sorts the manifest into added, modified, deleted and unmodified by path and name', () => {
    const d = computeDiff([entry('docs/api', 'a.md', 'AAA'), entry('', 'b.md', 'changed'), entry('docs/api', 'new.md', 'nnn')], files, dirs);
    expect(d.added).toEqual([{ filename: 'new.md', path: 'docs/api' }]);
    expect(d.modified).toEqual([{ filename: 'b.md', path: '', stale_file_id: 'f2' }]);
    expect(d.deleted).toEqual([{ file_id: 'f3', filename: 'c.md' }]);
    expect(d.unmodified_count).toBe(1);
    expect(d.directory_map).toEqual({ docs: 'd1', 'docs/api': 'd2', old: 'd3', 'old/deeper': 'd4' });
    // Directories no manifest path needs, parents first (cleanup walks them backwards).
    expect(d.rmdir).toEqual(['d3', 'd4']);
    expect(d.mkdir).toEqual([]);
  });

  it('lists the directories to make parent-first, and the same name in another directory is another file', () => {
    const d = computeDiff([entry('x/y/z', 'a.md', 'aaa'), entry('x', 'a.md', 'aaa')], [], []);
    expect(d.mkdir).toEqual(['x', 'x/y', 'x/y/z']);
    expect(d.added).toHaveLength(2);
  });
});
