import { Readable } from 'node:stream';
import type { Sql } from 'postgres';
import { ZipFile } from 'yazl';
import { allDirectories, directoryPaths } from './directories.ts';

/**
 * Export of a knowledge base (Open WebUI 0.10.2 `GET /knowledge/{id}/export`): a zip of each
 * file's extracted text, named as the file with `.txt` added unless it already ends so — and,
 * unlike Open WebUI's flat zip, under the directory path the file has in the knowledge base, so a
 * folder upload comes back as the folder. Files without extracted text are left out (as Open
 * WebUI). The zip is streamed: the list of names is read first, the texts a batch at a time as
 * the zip writer reaches them, so a large base never sits in memory whole.
 */
export interface ExportEntry {
  fileId: string;
  /** Path inside the zip, "/"-separated. */
  name: string;
}

/** The zip entries of a knowledge base, in a stable order (directory path, then name). */
export async function exportEntries(sql: Sql, knowledgeId: string): Promise<ExportEntry[]> {
  const [dirs, files] = await Promise.all([
    allDirectories(sql, knowledgeId),
    sql<{ id: string; filename: string; directory_id: string | null }[]>`
      select f.id, f.filename, kf.directory_id
      from knowledge_file kf join file f on f.id = kf.file_id
      where kf.knowledge_id = ${knowledgeId} and coalesce(f.data->>'content', '') <> ''
      order by f.filename, f.id`,
  ]);
  const { pathById } = directoryPaths(dirs);
  const taken = new Set<string>();
  const entries = files.map((f) => {
    const dir = f.directory_id ? pathById.get(f.directory_id) : undefined;
    const base = f.filename.endsWith('.txt') ? f.filename : `${f.filename}.txt`;
    const name = uniqueName(dir ? `${dir}/${safeSegment(base)}` : safeSegment(base), taken);
    return { fileId: f.id, name };
  });
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * A file name as one zip path segment: "/" and "\" would create directories (or climb out of the
 * target with "..") when the zip is extracted.
 */
function safeSegment(name: string): string {
  const s = name.replace(/[/\\]/g, '_');
  return s === '.' || s === '..' || s === '' ? '_' : s;
}

/** Two files of one name in one directory both stay: the second becomes `name (2).txt`. */
function uniqueName(name: string, taken: Set<string>): string {
  let candidate = name;
  for (let n = 2; taken.has(candidate); n++) candidate = name.replace(/(\.txt)$/, ` (${n})$1`);
  taken.add(candidate);
  return candidate;
}

/** Texts are read this many files at a time: one round trip per batch, at most a batch in memory. */
const BATCH = 100;

/**
 * The zip as a byte stream. Each file's text is read from the database when the zip writer reaches
 * it, a batch of the following files in the same round trip (one query per file made a
 * 5,000-file base take seconds longer).
 */
export function knowledgeZip(sql: Sql, entries: readonly ExportEntry[]): Readable {
  const zip = new ZipFile();
  let batch = new Map<string, string>();
  const text = async (i: number): Promise<string> => {
    const id = entries[i]!.fileId;
    if (!batch.has(id)) {
      const ids = entries.slice(i, i + BATCH).map((e) => e.fileId);
      const rows = await sql<{ id: string; content: string | null }[]>`select id, data->>'content' as content from file where id = any(${ids}::text[])`;
      // A file deleted since the list was read comes out empty rather than failing the whole zip.
      batch = new Map(ids.map((fid) => [fid, '']));
      for (const r of rows) batch.set(r.id, r.content ?? '');
    }
    return batch.get(id) ?? '';
  };
  // yazl asks for the entries one after another, in the order they were added.
  entries.forEach((e, i) => {
    zip.addReadStreamLazy(e.name, { mtime: new Date(0) }, (cb) => {
      text(i).then(
        (content) => cb(null, Readable.from([Buffer.from(content, 'utf8')])),
        (err: unknown) => cb(err, Readable.from([])),
      );
    });
  });
  zip.end();
  return Readable.from(zip.outputStream as AsyncIterable<Buffer>);
}

/** Open WebUI's download name: the base's name with anything but letters, digits, " -_" as "_". */
export function exportFileName(name: string): string {
  return `${[...name].map((c) => (/[\p{L}\p{N} \-_]/u.test(c) ? c : '_')).join('')}.zip`;
}
