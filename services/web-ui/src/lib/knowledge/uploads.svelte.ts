/**
 * Uploads into one knowledge base, with a progress entry per file and an overall total.
 *
 * A folder goes the 0.10.2 way (KnowledgeBase.svelte `uploadDirectoryEntries` / sync): every file
 * is hashed in the browser (SHA-256, crypto.subtle) → `POST /api/v1/knowledge/{id}/sync/diff`
 * with the manifest `{filename, path, checksum, size}` → the missing directories are created
 * parent-first (`dirs/create`) → each added or modified file is uploaded (`POST /api/v1/files/`
 * with metadata `{knowledge_id, directory_id, file_hash}`) → `sync/cleanup` removes the versions
 * the new uploads replaced (and, when mirroring, files and directories no longer in the folder).
 * Relative paths keep the picked folder's own name as their first segment, as Open WebUI does.
 *
 * Processing runs on the server after the upload returns; each uploaded file's status is then
 * read (`/api/v1/files/{id}/process/status`) until it is completed or failed, a bounded number
 * of times.
 */
import { ApiError } from '../apis/client.ts';
import { createDirectory, syncCleanup, syncDiff, type ManifestEntry, type SyncDiff } from '../apis/knowledge/index.ts';
import { fileStatus, getFile, statusOf, uploadFile } from '../apis/files/index.ts';
import { sha256Hex } from './tree.ts';

/** A file picked or dropped: its directory path relative to the upload root ('' = top) and name. */
export interface PickedFile {
  path: string;
  filename: string;
  file: File;
}

export type UploadStatus = 'hashing' | 'queued' | 'uploading' | 'processing' | 'completed' | 'failed' | 'unchanged';

export interface UploadItem {
  key: string;
  /** `path/filename` */
  relPath: string;
  size: number;
  sent: number;
  status: UploadStatus;
  error: string;
  fileId: string | null;
}

const hidden = (p: string) => p.split('/').some((s) => s.startsWith('.'));
const join = (path: string, name: string) => (path ? `${path}/${name}` : name);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Files of an `<input webkitdirectory>` (webkitRelativePath = `root/sub/file`), hidden ones left out. */
export function fromDirectoryInput(files: FileList | File[]): PickedFile[] {
  const out: PickedFile[] = [];
  for (const file of Array.from(files)) {
    const rel = (file as File & { webkitRelativePath?: string }).webkitRelativePath || file.name;
    if (hidden(rel)) continue;
    const parts = rel.split('/');
    const filename = parts.pop() || file.name;
    out.push({ path: parts.join('/'), filename, file });
  }
  return out;
}

interface FsEntry {
  name: string;
  isFile: boolean;
  isDirectory: boolean;
  file?(ok: (f: File) => void, fail: (e: unknown) => void): void;
  createReader?(): { readEntries(ok: (e: FsEntry[]) => void, fail: (e: unknown) => void): void };
}

async function walkEntry(entry: FsEntry, path: string, out: PickedFile[], budget: { left: number }): Promise<void> {
  if (entry.name.startsWith('.') || budget.left <= 0) return;
  if (entry.isFile && entry.file) {
    const file = await new Promise<File>((ok, fail) => entry.file!(ok, fail));
    budget.left--;
    out.push({ path, filename: entry.name, file });
    return;
  }
  if (entry.isDirectory && entry.createReader) {
    const reader = entry.createReader();
    const here = join(path, entry.name);
    // readEntries answers in batches until an empty one.
    for (let i = 0; i < 10_000; i++) {
      const batch = await new Promise<FsEntry[]>((ok, fail) => reader.readEntries(ok, fail));
      if (batch.length === 0) break;
      for (const child of batch) await walkEntry(child, here, out, budget);
    }
  }
}

/** What was dropped: folders (walked, their paths kept) and loose files. */
export async function fromDrop(dt: DataTransfer): Promise<{ folders: PickedFile[]; files: File[] }> {
  const folders: PickedFile[] = [];
  const files: File[] = [];
  const budget = { left: 10_000 };
  const items = Array.from(dt.items ?? []);
  const entries = items.map((it) => (it.kind === 'file' ? ((it as DataTransferItem & { webkitGetAsEntry?: () => FsEntry | null }).webkitGetAsEntry?.() ?? null) : null));
  for (let i = 0; i < items.length; i++) {
    const entry = entries[i];
    if (entry?.isDirectory) await walkEntry(entry, '', folders, budget);
    else {
      const f = items[i]!.getAsFile();
      if (f && !f.name.startsWith('.')) files.push(f);
    }
  }
  if (!items.length) files.push(...Array.from(dt.files ?? []));
  return { folders, files };
}

export class Uploads {
  items = $state<UploadItem[]>([]);
  /** A line about the phase (hashing, comparing, uploading i/n). */
  phase = $state<string | null>(null);
  /** The last run's outcome, or an error. */
  message = $state<string | null>(null);
  error = $state<string | null>(null);
  running = $state(false);

  /** 0…1 over the bytes to upload (hashing counts as nothing sent). */
  overall = $derived.by(() => {
    const moving = this.items.filter((i) => i.status !== 'unchanged');
    const total = moving.reduce((n, i) => n + Math.max(1, i.size), 0);
    const sent = moving.reduce((n, i) => n + (i.status === 'failed' || i.status === 'processing' || i.status === 'completed' ? Math.max(1, i.size) : Math.min(i.sent, Math.max(1, i.size))), 0);
    // Nothing to send (every file unchanged) is done too.
    return total ? sent / total : this.items.length ? 1 : 0;
  });

  /** Called when something changed on the server (tree to re-read). */
  onChanged: (() => void) | null = null;

  constructor(private readonly knowledgeId: string) {}

  private add(relPath: string, size: number, status: UploadStatus): UploadItem {
    const item: UploadItem = { key: `${Date.now()}-${Math.random()}-${relPath}`, relPath, size, sent: 0, status, error: '', fileId: null };
    this.items.push(item);
    return this.items[this.items.length - 1]!;
  }

  clearFinished(): void {
    this.items = this.items.filter((i) => i.status === 'uploading' || i.status === 'queued' || i.status === 'hashing' || i.status === 'processing');
    this.message = null;
    this.error = null;
  }

  /** Loose files into a directory (null = the top level). */
  async uploadFiles(files: File[], directoryId: string | null): Promise<void> {
    if (this.running || !files.length) return;
    this.clearFinished();
    this.running = true;
    try {
      const items = files.map((f) => ({ f, item: this.add(f.name, f.size, 'hashing') }));
      for (const [i, { f, item }] of items.entries()) {
        this.phase = `Uploading ${i + 1}/${items.length}: ${f.name}`;
        if (f.size === 0) {
          item.status = 'failed';
          item.error = 'You cannot upload an empty file.';
          continue;
        }
        const hash = await sha256Hex(f);
        await this.send(item, f, { knowledge_id: this.knowledgeId, directory_id: directoryId, file_hash: hash });
      }
      this.onChanged?.();
      this.report(items.map((r) => r.item));
    } finally {
      this.phase = null;
      this.running = false;
    }
    await this.watchProcessing();
  }

  /**
   * A folder (its files with paths relative to its parent, first segment the folder's name).
   * `mirror`: also remove what the knowledge base has and the folder no longer has.
   */
  async uploadFolder(picked: PickedFile[], mirror = false): Promise<void> {
    if (this.running) return;
    const files = picked.filter((p) => !hidden(join(p.path, p.filename)));
    if (!files.length) {
      this.error = 'The folder has no files to upload.';
      return;
    }
    this.clearFinished();
    this.running = true;
    try {
      const rows = files.map((p) => ({ p, item: this.add(join(p.path, p.filename), p.file.size, 'hashing') }));
      this.phase = `Computing checksums (${rows.length} files)`;
      const manifest: ManifestEntry[] = [];
      for (const { p } of rows) manifest.push({ filename: p.filename, path: p.path, checksum: await sha256Hex(p.file), size: p.file.size });

      this.phase = 'Comparing with knowledge base…';
      const diff: SyncDiff = await syncDiff(this.knowledgeId, manifest);
      const wanted = new Set([...(diff.added ?? []), ...(diff.modified ?? [])].map((e) => join(e.path, e.filename)));
      for (const { item } of rows) if (!wanted.has(item.relPath)) item.status = 'unchanged';
      for (const { item } of rows) if (item.status === 'hashing') item.status = 'queued';

      this.phase = (diff.mkdir ?? []).length ? `Creating ${(diff.mkdir ?? []).length} folders…` : null;
      const dirIds: Record<string, string> = { ...(diff.directory_map ?? {}) };
      // Parents first: shorter paths before longer ones (the server already sorts them so).
      for (const dirPath of [...(diff.mkdir ?? [])].sort((a, b) => a.split('/').length - b.split('/').length)) {
        if (dirIds[dirPath]) continue;
        const segs = dirPath.split('/');
        const name = segs.pop()!;
        const parent = segs.join('/');
        const d = await createDirectory(this.knowledgeId, name, parent ? (dirIds[parent] ?? null) : null);
        dirIds[dirPath] = d.id;
      }
      if ((diff.mkdir ?? []).length) this.onChanged?.();

      const toSend = rows.filter((r) => r.item.status === 'queued');
      const replaced: string[] = [];
      for (const [i, { p, item }] of toSend.entries()) {
        this.phase = `Uploading ${i + 1}/${toSend.length}: ${item.relPath}`;
        const checksum = manifest[rows.findIndex((r) => r.item === item)]!.checksum;
        const ok = await this.send(item, p.file, {
          knowledge_id: this.knowledgeId,
          directory_id: p.path ? (dirIds[p.path] ?? null) : null,
          file_hash: checksum,
        });
        const stale = (diff.modified ?? []).find((m) => m.path === p.path && m.filename === p.filename)?.stale_file_id;
        if (ok && stale) replaced.push(stale);
      }

      const removed = mirror ? (diff.deleted ?? []).map((d) => d.file_id) : [];
      const rmdir = mirror ? (diff.rmdir ?? []) : [];
      if (replaced.length || removed.length || rmdir.length) {
        this.phase = 'Removing replaced files…';
        await syncCleanup(this.knowledgeId, [...replaced, ...removed], rmdir);
      }
      this.report(
        rows.map((r) => r.item),
        rows.length - toSend.length,
        removed.length,
      );
      this.onChanged?.();
    } catch (err) {
      this.error = err instanceof ApiError ? err.detail : String(err);
      for (const i of this.items) if (i.status === 'hashing' || i.status === 'queued') i.status = 'failed';
    } finally {
      this.phase = null;
      this.running = false;
    }
    await this.watchProcessing();
  }

  /** The run's outcome line: what was sent, left alone, removed, failed. */
  private report(run: UploadItem[], unchanged = 0, removed = 0): void {
    const failed = run.filter((i) => i.status === 'failed').length;
    const sent = run.filter((i) => i.status === 'processing' || i.status === 'completed').length;
    const parts = [`${sent} uploaded`];
    if (unchanged) parts.push(`${unchanged} unchanged`);
    if (removed) parts.push(`${removed} removed`);
    if (failed) parts.push(`${failed} failed`);
    this.message = parts.join(', ');
  }

  /** One upload; true when the server took it. */
  private async send(item: UploadItem, file: File, metadata: Record<string, unknown>): Promise<boolean> {
    item.status = 'uploading';
    try {
      const res = await uploadFile(file, metadata, (sent, total) => {
        item.sent = sent;
        if (total) item.size = total;
      });
      item.fileId = res.id;
      item.sent = item.size;
      const st = String(res.data?.status ?? res.status ?? 'pending');
      if (st === 'failed') {
        item.status = 'failed';
        item.error = String(res.data?.error ?? res.error ?? 'Processing failed');
      } else item.status = st === 'completed' ? 'completed' : 'processing';
      return true;
    } catch (err) {
      item.status = 'failed';
      item.error = err instanceof ApiError ? err.detail : String(err);
      return false;
    }
  }

  /** Read the processing status of uploaded files until each is done (at most ~2 minutes). */
  private async watchProcessing(): Promise<void> {
    for (let round = 0; round < 120; round++) {
      const waiting = this.items.filter((i) => i.status === 'processing' && i.fileId);
      if (!waiting.length) return;
      await sleep(round < 10 ? 300 : 1000);
      let changed = false;
      await Promise.all(
        waiting.map(async (i) => {
          try {
            const s = await fileStatus(i.fileId!);
            if (s.status === 'completed' || s.status === 'failed') {
              // The status route says only the state (Open WebUI's); the file itself says why.
              const why = s.status === 'failed' ? (s.error || statusOf(await getFile(i.fileId!)).error) : '';
              i.status = s.status;
              i.error = s.status === 'failed' ? why || 'Processing failed' : '';
              changed = true;
            }
          } catch (err) {
            if (err instanceof ApiError && err.status === 404) {
              i.status = 'failed';
              i.error = 'The file is gone.';
              changed = true;
            }
          }
        }),
      );
      if (changed) this.onChanged?.();
    }
  }
}
