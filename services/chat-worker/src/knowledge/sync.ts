import type { Sql } from 'postgres';
import type { z } from 'zod';
import type { SyncDiffForm, SyncDiffReply } from '@gatehouse/contracts';
import type { Tx } from '../context.ts';
import { allDirectories, directoryPaths } from './directories.ts';

/**
 * Folder sync (Open WebUI 0.10.2 `POST /knowledge/{id}/sync/diff`, knowledge.py L1794-1815): the
 * client hashes every file of the folder it picked and sends a manifest; the answer says which to
 * upload (added, modified — with the stale file to replace), which linked files the folder no
 * longer has (deleted), which directories to create parent-first (mkdir) and which no file needs
 * any more (rmdir), plus every existing directory's id by path so uploads land in the right one.
 * A folder synced again unchanged uploads nothing: every entry counts as unmodified.
 */
type Manifest = z.infer<typeof SyncDiffForm>['manifest'];
type Diff = z.infer<typeof SyncDiffReply>;

export interface LinkedFile {
  file_id: string;
  filename: string;
  directory_id: string | null;
  /** SHA-256 of the stored bytes (file.hash), else the checksum the client gave at upload. */
  checksum: string | null;
}

export async function linkedFiles(db: Sql | Tx, knowledgeId: string): Promise<LinkedFile[]> {
  return db<LinkedFile[]>`
    select f.id as file_id, f.filename, kf.directory_id, coalesce(f.hash, f.meta->>'file_hash') as checksum
    from knowledge_file kf join file f on f.id = kf.file_id
    where kf.knowledge_id = ${knowledgeId}
    order by kf.created_at, f.id`;
}

/** The diff itself, from the manifest and the knowledge base's current files and directories. */
export function computeDiff(
  manifest: Manifest,
  files: readonly LinkedFile[],
  dirs: Parameters<typeof directoryPaths>[0],
): Diff {
  const { pathById, idByPath } = directoryPaths(dirs);
  const key = (path: string, filename: string) => `${path}\u0000${filename}`;
  const indexed = new Map<string, LinkedFile>();
  for (const f of files) {
    const path = f.directory_id ? (pathById.get(f.directory_id) ?? '') : '';
    indexed.set(key(path, f.filename), f);
  }
  const added: Diff['added'] = [];
  const modified: Diff['modified'] = [];
  const seen = new Set<string>();
  let unmodified = 0;
  for (const e of manifest) {
    const k = key(e.path, e.filename);
    seen.add(k);
    const have = indexed.get(k);
    if (!have) added.push({ filename: e.filename, path: e.path });
    // Hex digests compare case-insensitively: a client may print them upper-case.
    else if ((have.checksum ?? '').toLowerCase() !== e.checksum.toLowerCase()) modified.push({ filename: e.filename, path: e.path, stale_file_id: have.file_id });
    else unmodified += 1;
  }
  const deleted: Diff['deleted'] = [];
  for (const [k, f] of indexed) if (!seen.has(k)) deleted.push({ file_id: f.file_id, filename: f.filename });

  const required = new Set<string>();
  for (const e of manifest) {
    if (!e.path) continue;
    const segments = e.path.split('/');
    for (let depth = 1; depth <= segments.length; depth++) required.add(segments.slice(0, depth).join('/'));
  }
  const depth = (p: string) => p.split('/').length;
  const mkdir = [...required].filter((p) => !idByPath.has(p)).sort((a, b) => depth(a) - depth(b) || (a < b ? -1 : a > b ? 1 : 0));
  // Parents first like mkdir: sync/cleanup walks dir_ids backwards (children before parents).
  const rmdir = [...idByPath.keys()].filter((p) => !required.has(p)).sort((a, b) => depth(a) - depth(b) || (a < b ? -1 : a > b ? 1 : 0)).map((p) => idByPath.get(p)!);
  return {
    added,
    modified,
    deleted,
    mkdir,
    rmdir,
    unmodified_count: unmodified,
    directory_map: Object.fromEntries([...idByPath].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
  };
}

export async function syncDiff(db: Sql | Tx, knowledgeId: string, manifest: Manifest): Promise<Diff> {
  const [files, dirs] = await Promise.all([linkedFiles(db, knowledgeId), allDirectories(db, knowledgeId)]);
  return computeDiff(manifest, files, dirs);
}
