// /api/v1/files: my uploads (with progress), one file, its processing status, removal. Files are
// read leniently where 0.10.x releases differ (a list or `{items, total}`, status in `data` or
// beside it), so their type is this view rather than the catalog's FileModelResponse.
import { api, ApiError, authHeaders, type Reply } from '../client.ts';

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

export type FileStatus = Reply<'files.status'>;

const enc = encodeURIComponent;

/** A list answer's entries: the list itself, or its `items`. */
export function itemsOf<T>(v: unknown): T[] {
  if (Array.isArray(v)) return v as T[];
  if (v && typeof v === 'object' && Array.isArray((v as { items?: unknown }).items)) return (v as { items: T[] }).items;
  return [];
}

/** One page of my files, newest first (`content: false`: without their text). */
export const listFilesPage = (page: number): Promise<unknown> => api.get<unknown>('/api/v1/files/', { query: { page, content: false } });
/** My files, the first page as the server pages it (the `#` picker). */
export async function listFiles(): Promise<KnowledgeFile[]> {
  return itemsOf<KnowledgeFile>(await api.get<unknown>('/api/v1/files/')).filter((f) => f && typeof f.id === 'string');
}

/** `GET /api/v1/files/{id}/process/status` → `{status: pending|completed|failed, error?}`. */
export const fileStatus = (fileId: string): Promise<FileStatus> =>
  api.get<FileStatus>(`/api/v1/files/${enc(fileId)}/process/status`);

/** `GET /api/v1/files/{id}`: the FileModel, whose `data.error` says why processing failed. */
export const getFile = (fileId: string): Promise<KnowledgeFile> => api.get<KnowledgeFile>(`/api/v1/files/${enc(fileId)}`);

export const deleteFile = (fileId: string): Promise<Reply<'files.delete'>> => api.del<Reply<'files.delete'>>(`/api/v1/files/${enc(fileId)}`);

/** A file's status and failure reason, wherever this release keeps them. */
export function statusOf(f: KnowledgeFile): { status: string; error: string } {
  const status = String(f.data?.status ?? f.status ?? 'completed');
  const error = String(f.data?.error ?? f.error ?? '');
  return { status, error };
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
