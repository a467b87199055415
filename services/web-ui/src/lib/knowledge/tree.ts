// A knowledge base's whole directory tree (read level by level, bounded), my uploads that name a
// knowledge base but are not in it yet, and the SHA-256 the folder sync compares.
import { listLevel, PAGE, type KnowledgeDirectory } from '../apis/knowledge/index.ts';
import { itemsOf, listFilesPage, statusOf, type KnowledgeFile } from '../apis/files/index.ts';

export interface TreeDir {
  dir: KnowledgeDirectory;
  /** Relative path from the root, e.g. `docs/api`. */
  path: string;
  dirs: TreeDir[];
  files: KnowledgeFile[];
}

export interface Tree {
  dirs: TreeDir[];
  files: KnowledgeFile[];
  /** Directories visited (the walk stops at MAX_DIRS). */
  count: number;
  truncated: boolean;
}

const MAX_DIRS = 500;

/** The whole directory tree of a knowledge base, level by level (breadth first, bounded). */
export async function loadTree(id: string): Promise<Tree> {
  const byName = (files: KnowledgeFile[]) => [...files].sort((a, b) => (a.meta?.name ?? a.filename).localeCompare(b.meta?.name ?? b.filename));
  const root = await listLevel(id, null);
  const tree: Tree = { dirs: [], files: byName(root.items), count: 0, truncated: false };
  const queue: { into: TreeDir[]; dirs: KnowledgeDirectory[]; prefix: string }[] = [{ into: tree.dirs, dirs: root.directories, prefix: '' }];
  while (queue.length) {
    const { into, dirs, prefix } = queue.shift()!;
    const sorted = [...dirs].sort((a, b) => a.name.localeCompare(b.name));
    const levels = await Promise.all(
      sorted.map((d) => {
        if (tree.count >= MAX_DIRS) {
          tree.truncated = true;
          return Promise.resolve(null);
        }
        tree.count++;
        return listLevel(id, d.id);
      }),
    );
    sorted.forEach((d, i) => {
      const level = levels[i];
      if (!level) return;
      const node: TreeDir = { dir: d, path: prefix ? `${prefix}/${d.name}` : d.name, dirs: [], files: byName(level.items) };
      into.push(node);
      queue.push({ into: node.dirs, dirs: level.directories, prefix: node.path });
    });
  }
  return tree;
}

/**
 * My uploads that name this knowledge base but are not in it (yet): still processing, or failed —
 * a file joins the knowledge base once processed, as in Open WebUI. Newest first, bounded.
 */
export async function unlinkedUploads(knowledgeId: string, linked: Set<string>): Promise<KnowledgeFile[]> {
  const out: KnowledgeFile[] = [];
  for (let page = 1; page <= 5; page++) {
    const res = await listFilesPage(page);
    const items = itemsOf<KnowledgeFile>(res);
    for (const f of items) {
      const meta = (f.meta?.['data'] ?? {}) as Record<string, unknown>;
      if (meta['knowledge_id'] === knowledgeId && !linked.has(f.id) && statusOf(f).status !== 'completed') out.push(f);
    }
    if (Array.isArray(res) || items.length < PAGE) break;
  }
  return out;
}

/** SHA-256 of the bytes, hex (what `sync/diff`'s `checksum` and the upload's `file_hash` are). */
export async function sha256Hex(blob: Blob): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', await blob.arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

