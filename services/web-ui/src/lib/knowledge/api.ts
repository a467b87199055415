// The knowledge workspace's calls: Open WebUI 0.10.2's /api/v1/knowledge, /api/v1/files and
// /api/v1/retrieval routes, as its own front end (src/lib/apis/knowledge, apis/files) calls them.
// Answers are read leniently where 0.10.x releases differ (a list or `{items, total}`).
import { api, authHeaders, ApiError } from '../api.ts';

export interface KnowledgeBase {
  id: string;
  user_id: string;
  name: string;
  description: string;
  meta?: Record<string, unknown> | null;
  data?: Record<string, unknown> | null;
  access_grants?: unknown[];
  write_access?: boolean | null;
  user?: { id: string; name?: string; email?: string } | null;
  files?: KnowledgeFile[] | null;
  /** In list answers: how many files it has. */
  file_count?: number | null;
  created_at: number;
  updated_at: number;
}

/** A file as Open WebUI's FileModelResponse (`data.status`: pending | completed | failed). */
export interface KnowledgeFile {
  id: string;
  user_id?: string;
  hash?: string | null;
  filename: string;
  data?: { status?: string; error?: string; [k: string]: unknown } | null;
  meta?: { name?: string; content_type?: string; size?: number; knowledge_id?: string; directory_id?: string | null; file_hash?: string; [k: string]: unknown } | null;
  directory_id?: string | null;
  status?: string;
  error?: string;
  created_at?: number;
  updated_at?: number;
}

export interface KnowledgeDirectory {
  id: string;
  knowledge_id: string;
  parent_id: string | null;
  name: string;
  created_at?: number;
  updated_at?: number;
}

export interface FileListPage {
  items: KnowledgeFile[];
  directories: KnowledgeDirectory[];
  breadcrumbs?: KnowledgeDirectory[];
  total: number;
}

export interface ManifestEntry {
  filename: string;
  path: string;
  checksum: string;
  size: number;
}

export interface SyncDiff {
  added: { filename: string; path: string }[];
  modified: { filename: string; path: string; stale_file_id: string }[];
  deleted: { file_id: string; filename: string }[];
  mkdir: string[];
  rmdir: string[];
  unmodified_count: number;
  directory_map: Record<string, string>;
}

/** `POST /api/v1/retrieval/query/collection`: one list per query (Chroma's shape). */
export interface QueryResult {
  documents?: string[][];
  metadatas?: Record<string, unknown>[][];
  distances?: number[][];
}

const enc = encodeURIComponent;

function itemsOf<T>(v: unknown): T[] {
  if (Array.isArray(v)) return v as T[];
  if (v && typeof v === 'object' && Array.isArray((v as { items?: unknown }).items)) return (v as { items: T[] }).items;
  return [];
}

/** Open WebUI's page size for knowledge lists. */
const PAGE = 30;
/** Pages read at most for one list (30 × 100 = 3000 entries). */
const MAX_PAGES = 100;

/** All knowledge bases I can read (mine and shared with me): `GET /api/v1/knowledge/?page=`. */
export async function listKnowledge(): Promise<KnowledgeBase[]> {
  const out: KnowledgeBase[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const res = await api.get<unknown>('/api/v1/knowledge/', { query: { page } });
    const items = itemsOf<KnowledgeBase>(res);
    out.push(...items.filter((k) => !out.some((o) => o.id === k.id)));
    const total = res && typeof res === 'object' && 'total' in res ? Number((res as { total: unknown }).total) : NaN;
    if (Array.isArray(res) || items.length < PAGE || (Number.isFinite(total) && out.length >= total)) break;
  }
  return out;
}

export const createKnowledge = (name: string, description: string): Promise<KnowledgeBase> =>
  api.post<KnowledgeBase>('/api/v1/knowledge/create', { name, description, access_grants: [] });

export const getKnowledge = (id: string): Promise<KnowledgeBase> => api.get<KnowledgeBase>(`/api/v1/knowledge/${enc(id)}`);

export const deleteKnowledge = (id: string): Promise<boolean> => api.del<boolean>(`/api/v1/knowledge/${enc(id)}/delete`);

export const removeFile = (id: string, fileId: string): Promise<KnowledgeBase> =>
  api.post<KnowledgeBase>(`/api/v1/knowledge/${enc(id)}/file/remove`, { file_id: fileId });

/**
 * One directory level (`directory_id` '' = the root): its files and sub-directories, all pages
 * (`GET /api/v1/knowledge/{id}/files?directory_id=&page=`).
 */
export async function listLevel(id: string, directoryId: string | null): Promise<FileListPage> {
  const items: KnowledgeFile[] = [];
  let directories: KnowledgeDirectory[] = [];
  let total = 0;
  for (let page = 1; page <= MAX_PAGES; page++) {
    const res = await api.get<unknown>(`/api/v1/knowledge/${enc(id)}/files`, { query: { directory_id: directoryId ?? '', page } });
    const got = itemsOf<KnowledgeFile>(res);
    items.push(...got.filter((f) => !items.some((o) => o.id === f.id)));
    const r = (res && typeof res === 'object' ? res : {}) as Partial<FileListPage>;
    if (page === 1 && Array.isArray(r.directories)) directories = r.directories;
    total = typeof r.total === 'number' ? r.total : items.length;
    if (Array.isArray(res) || got.length < PAGE || items.length >= total) break;
  }
  return { items, directories, total };
}

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

export const createDirectory = (id: string, name: string, parentId: string | null): Promise<KnowledgeDirectory> =>
  api.post<KnowledgeDirectory>(`/api/v1/knowledge/${enc(id)}/dirs/create`, parentId ? { name, parent_id: parentId } : { name });

export const syncDiff = (id: string, manifest: ManifestEntry[]): Promise<SyncDiff> =>
  api.post<SyncDiff>(`/api/v1/knowledge/${enc(id)}/sync/diff`, { manifest });

export const syncCleanup = (id: string, fileIds: string[], dirIds: string[]): Promise<unknown> =>
  api.post(`/api/v1/knowledge/${enc(id)}/sync/cleanup`, { file_ids: fileIds, dir_ids: dirIds });

/** `GET /api/v1/files/{id}/process/status` → `{status: pending|completed|failed, error?}`. */
export const fileStatus = (fileId: string): Promise<{ status: string; error?: string }> =>
  api.get<{ status: string; error?: string }>(`/api/v1/files/${enc(fileId)}/process/status`);

/** `GET /api/v1/files/{id}`: the FileModel, whose `data.error` says why processing failed. */
export const getFile = (fileId: string): Promise<KnowledgeFile> => api.get<KnowledgeFile>(`/api/v1/files/${enc(fileId)}`);

export const queryCollection = (collectionNames: string[], query: string, k = 5): Promise<QueryResult> =>
  api.post<QueryResult>('/api/v1/retrieval/query/collection', { collection_names: collectionNames, query, k });

/**
 * My uploads that name this knowledge base but are not in it (yet): still processing, or failed —
 * a file joins the knowledge base once processed, as in Open WebUI. Newest first, bounded.
 */
export async function unlinkedUploads(knowledgeId: string, linked: Set<string>): Promise<KnowledgeFile[]> {
  const out: KnowledgeFile[] = [];
  for (let page = 1; page <= 5; page++) {
    const res = await api.get<unknown>('/api/v1/files/', { query: { page, content: false } });
    const items = itemsOf<KnowledgeFile>(res);
    for (const f of items) {
      const meta = (f.meta?.['data'] ?? {}) as Record<string, unknown>;
      if (meta['knowledge_id'] === knowledgeId && !linked.has(f.id) && statusOf(f).status !== 'completed') out.push(f);
    }
    if (Array.isArray(res) || items.length < PAGE) break;
  }
  return out;
}

export const deleteFile = (fileId: string): Promise<unknown> => api.del(`/api/v1/files/${enc(fileId)}`);

/** A file's status and failure reason, wherever this release keeps them. */
export function statusOf(f: KnowledgeFile): { status: string; error: string } {
  const status = String(f.data?.status ?? f.status ?? 'completed');
  const error = String(f.data?.error ?? f.error ?? '');
  return { status, error };
}

/** SHA-256 of the bytes, hex (what `sync/diff`'s `checksum` and the upload's `file_hash` are). */
export async function sha256Hex(blob: Blob): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', await blob.arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * `POST /api/v1/files/` (multipart `file` + `metadata` JSON), with upload progress (fetch has
 * none, so XMLHttpRequest). Resolves with the FileModelResponse; rejects with ApiError.
 */
export function uploadFile(
  file: File,
  metadata: Record<string, unknown>,
  onProgress: (sent: number, total: number) => void,
  signal?: AbortSignal,
): Promise<KnowledgeFile> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/v1/files/?process=true&process_in_background=true');
    for (const [k, v] of Object.entries(authHeaders({ Accept: 'application/json' }))) xhr.setRequestHeader(k, v);
    xhr.withCredentials = true;
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => {
      let body: unknown = null;
      try {
        body = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        body = null;
      }
      if (xhr.status >= 200 && xhr.status < 300 && body && typeof body === 'object') {
        onProgress(file.size, file.size);
        resolve(body as KnowledgeFile);
      } else {
        const d = body && typeof body === 'object' ? (body as { detail?: unknown }).detail : null;
        const text = typeof d === 'string' ? d : Array.isArray(d) ? d.map((x) => (x && typeof x === 'object' && 'msg' in x ? String(x.msg) : JSON.stringify(x))).join('; ') : xhr.statusText || `HTTP ${xhr.status}`;
        reject(new ApiError(xhr.status, text));
      }
    };
    xhr.onerror = () => reject(new ApiError(0, 'Network error: the server could not be reached'));
    xhr.onabort = () => reject(new DOMException('Upload cancelled', 'AbortError'));
    signal?.addEventListener('abort', () => xhr.abort(), { once: true });
    const form = new FormData();
    form.append('file', file, file.name);
    form.append('metadata', JSON.stringify(metadata));
    xhr.send(form);
  });
}
