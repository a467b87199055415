import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { fail, type Tx } from '../context.ts';

/**
 * A knowledge base's directory tree (Open WebUI 0.10.2 knowledge_directory): folder uploads keep
 * their relative paths as directories, files hang off them through knowledge_file.directory_id.
 * Paths are the names from the root joined with "/", as the sync manifest writes them.
 */
export interface DirectoryRow {
  id: string;
  knowledge_id: string;
  parent_id: string | null;
  name: string;
  user_id: string;
  created_at: number;
  updated_at: number;
}

type Db = Sql | Tx;

/** Open WebUI's words for a failed create / update (a name taken at that level, or a cycle). */
export const DIR_CREATE_FAILED = 'Failed to create directory. A directory with this name may already exist at this level.';
export const DIR_UPDATE_FAILED = 'Failed to update directory. This may be caused by a naming conflict or circular move.';
export const TARGET_DIR_NOT_FOUND = 'Target directory not found.';

/**
 * A name must be one path segment: a "/" in it, or an empty name, would make two different trees
 * print the same path and the sync diff would then upload into the wrong directory.
 */
export function checkDirName(name: string): string {
  // Not trimmed: the name must stay the segment the client's manifest has, or the next diff would
  // not find it again.
  if (!name.trim() || name.includes('/') || name === '.' || name === '..') fail(400, 'A directory name must be one non-empty path segment (no "/", not "." or "..").');
  return name;
}

export async function allDirectories(db: Db, knowledgeId: string): Promise<DirectoryRow[]> {
  return db<DirectoryRow[]>`select * from knowledge_directory where knowledge_id = ${knowledgeId} order by name, id`;
}

/** The directories directly under `parentId` (null: the root), by name. */
export async function childDirectories(db: Db, knowledgeId: string, parentId: string | null): Promise<DirectoryRow[]> {
  return db<DirectoryRow[]>`
    select * from knowledge_directory
    where knowledge_id = ${knowledgeId} and parent_id is not distinct from ${parentId}
    order by name, id`;
}

export async function getDirectory(db: Db, knowledgeId: string, id: string): Promise<DirectoryRow | null> {
  const [row] = await db<DirectoryRow[]>`select * from knowledge_directory where id = ${id} and knowledge_id = ${knowledgeId}`;
  return row ?? null;
}

/** The chain from the root down to `id` (Open WebUI's breadcrumbs), empty for the root. */
export async function breadcrumbs(db: Db, knowledgeId: string, id: string | null): Promise<DirectoryRow[]> {
  if (!id) return [];
  return db<DirectoryRow[]>`
    with recursive chain as (
      select d.*, 0 as depth from knowledge_directory d where d.id = ${id} and d.knowledge_id = ${knowledgeId}
      union
      select p.*, c.depth + 1 from knowledge_directory p join chain c on p.id = c.parent_id
    )
    select id, knowledge_id, parent_id, name, user_id, created_at, updated_at from chain order by depth desc`;
}

/** Every directory's full path, both ways. A parent missing from the list ends the walk (Open WebUI's). */
export function directoryPaths(dirs: readonly DirectoryRow[]): { pathById: Map<string, string>; idByPath: Map<string, string> } {
  const byId = new Map(dirs.map((d) => [d.id, d]));
  const pathById = new Map<string, string>();
  const idByPath = new Map<string, string>();
  for (const d of dirs) {
    const segments = [d.name];
    const seen = new Set([d.id]);
    let parent = d.parent_id ? byId.get(d.parent_id) : undefined;
    while (parent && !seen.has(parent.id)) {
      seen.add(parent.id);
      segments.unshift(parent.name);
      parent = parent.parent_id ? byId.get(parent.parent_id) : undefined;
    }
    const path = segments.join('/');
    pathById.set(d.id, path);
    idByPath.set(path, d.id);
  }
  return { pathById, idByPath };
}

/** The ids of a directory and everything under it. */
export async function subtree(db: Db, id: string): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    with recursive tree (id) as (
      select id from knowledge_directory where id = ${id}
      union
      select d.id from knowledge_directory d join tree t on d.parent_id = t.id
    )
    select id from tree`;
  return rows.map((r) => r.id);
}

export async function insertDirectory(tx: Tx, d: { knowledgeId: string; parentId: string | null; name: string; userId: string }, t: number): Promise<DirectoryRow> {
  const [row] = await tx<DirectoryRow[]>`
    insert into knowledge_directory (id, knowledge_id, parent_id, name, user_id, created_at, updated_at)
    values (${randomUUID()}, ${d.knowledgeId}, ${d.parentId}, ${d.name}, ${d.userId}, ${t}, ${t})
    returning *`;
  return row!;
}

/**
 * Rename and/or move a directory. `parentId` undefined keeps the parent; a move under itself or
 * one of its descendants is refused (the tree would detach into a loop).
 */
export async function updateDirectory(tx: Tx, dir: DirectoryRow, change: { name?: string; parentId?: string | null }, t: number): Promise<DirectoryRow> {
  const parentId = change.parentId === undefined ? dir.parent_id : change.parentId;
  if (parentId !== null && change.parentId !== undefined) {
    if (!(await getDirectory(tx, dir.knowledge_id, parentId))) fail(404, TARGET_DIR_NOT_FOUND);
    if ((await subtree(tx, dir.id)).includes(parentId)) fail(400, DIR_UPDATE_FAILED);
  }
  const [row] = await tx<DirectoryRow[]>`
    update knowledge_directory set name = ${change.name ?? dir.name}, parent_id = ${parentId}, updated_at = ${t}
    where id = ${dir.id} returning *`;
  return row!;
}

/**
 * Delete a directory and those under it. `moveFiles` (Open WebUI's default) hands their files to
 * the deleted directory's parent (or the root); otherwise the files leave the knowledge base.
 * Returns the ids of the files that left.
 */
export async function deleteDirectory(tx: Tx, dir: DirectoryRow, moveFiles: boolean, t: number): Promise<string[]> {
  const ids = await subtree(tx, dir.id);
  let removed: string[] = [];
  if (moveFiles) {
    await tx`update knowledge_file set directory_id = ${dir.parent_id}, updated_at = ${t} where knowledge_id = ${dir.knowledge_id} and directory_id = any(${ids}::text[])`;
  } else {
    const rows = await tx<{ file_id: string }[]>`
      delete from knowledge_file where knowledge_id = ${dir.knowledge_id} and directory_id = any(${ids}::text[]) returning file_id`;
    removed = rows.map((r) => r.file_id);
  }
  // The rows under it go with it (parent_id cascades).
  await tx`delete from knowledge_directory where id = ${dir.id}`;
  return removed;
}
