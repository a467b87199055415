// /api/v1/knowledge: knowledge bases, one level of a knowledge base's directory tree, its
// directories and the folder sync (`sync/diff`, `sync/cleanup`), as Open WebUI 0.10.2's own front
// end calls them. Lists are read leniently where 0.10.x releases differ (a list or `{items,
// total}`), so a knowledge base's type is this view rather than the catalog's reply.
import { api, type Body, type Reply } from '../client.ts';
import { itemsOf, type KnowledgeFile } from '../files/index.ts';

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

export type SyncDiff = Reply<'knowledge.syncDiff'>;

const enc = encodeURIComponent;

/** Open WebUI's page size for knowledge lists. */
export const PAGE = 30;
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
  api.post<KnowledgeBase>('/api/v1/knowledge/create', { name, description, access_grants: [] } satisfies Body<'knowledge.create'>);

export const getKnowledge = (id: string): Promise<KnowledgeBase> => api.get<KnowledgeBase>(`/api/v1/knowledge/${enc(id)}`);

export const deleteKnowledge = (id: string): Promise<Reply<'knowledge.delete'>> => api.del<Reply<'knowledge.delete'>>(`/api/v1/knowledge/${enc(id)}/delete`);

export const removeFile = (id: string, fileId: string): Promise<KnowledgeBase> =>
  api.post<KnowledgeBase>(`/api/v1/knowledge/${enc(id)}/file/remove`, { file_id: fileId } satisfies Body<'knowledge.removeFile'>);

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

export const createDirectory = (id: string, name: string, parentId: string | null): Promise<KnowledgeDirectory> =>
  api.post<KnowledgeDirectory>(`/api/v1/knowledge/${enc(id)}/dirs/create`, (parentId ? { name, parent_id: parentId } : { name }) satisfies Body<'knowledge.dirs.create'>);

export const syncDiff = (id: string, manifest: ManifestEntry[]): Promise<SyncDiff> =>
  api.post<SyncDiff>(`/api/v1/knowledge/${enc(id)}/sync/diff`, { manifest } satisfies Body<'knowledge.syncDiff'>);

export const syncCleanup = (id: string, fileIds: string[], dirIds: string[]): Promise<Reply<'knowledge.syncCleanup'>> =>
  api.post<Reply<'knowledge.syncCleanup'>>(`/api/v1/knowledge/${enc(id)}/sync/cleanup`, { file_ids: fileIds, dir_ids: dirIds } satisfies Body<'knowledge.syncCleanup'>);

