import { randomUUID } from 'node:crypto';
import { posix, win32 } from 'node:path';
import { Readable } from 'node:stream';
import { OWUI_ERRORS } from '@gatehouse/contracts';
import { BusError } from '@gatehouse/common';
import { queryBool, queryInt, stripNul } from '../access.ts';
import { fail, me, now, ok, opTable, type OpContext, type Tx } from '../context.ts';
import { accessibleFile, FILE_COLUMNS, type FileRow } from './file-access.ts';
import { contentDisposition, deleteObject, readObject, replyWithBytes } from './object-reply.ts';
import { markFailed } from './ingest.ts';

/**
 * Handlers of the catalog's files operations (contracts/src/chat/catalog-files.ts), as Open WebUI
 * 0.10.2's routers/files.py. The bytes arrive as an object the edge streamed into the bus's object
 * store; they are hashed into the upload store (content-addressed: the same bytes once), the row
 * and its `file.uploaded` event commit together, and processing is queued for the ingest worker.
 */
const PAGE_SIZE = 50;
/** Open WebUI's ERROR_MESSAGES.DEFAULT(err): `[ERROR: err]`. */
const errorMessage = (err: string) => `[ERROR: ${err}]`;
/** Open WebUI's ERROR_MESSAGES.FILE_TOO_LARGE. */
export const fileTooLarge = (size: string) => `Oops! The file you're trying to upload is too large. Please upload a file that is less than ${size}.`;
/** How long `process_in_background=false` waits for the ingest worker before answering the row as it is. */
const FOREGROUND_WAIT_MS = 10 * 60 * 1000;

/** FileModelResponse (and FileModel, which adds path and access_control). */
const fileModel = (f: FileRow) => ({
  id: f.id,
  user_id: f.user_id,
  hash: f.hash,
  filename: f.filename,
  path: f.path,
  data: f.data ?? {},
  meta: f.meta ?? {},
  access_control: f.access_control,
  created_at: f.created_at,
  updated_at: f.updated_at,
});
const withoutContent = (f: FileRow): FileRow => {
  if (!f.data || !('content' in f.data)) return f;
  const { content: _content, ...data } = f.data;
  return { ...f, data };
};

/** Serialise writers of the same bytes: publishing a blob and deleting its last row never interleave. */
const lockHash = (tx: Tx, hash: string) => tx`select pg_advisory_xact_lock(hashtextextended(${`file-blob:${hash}`}, 0))`;

/** Remove the blob under `hash` if no row uses it any more (inside the transaction that deleted rows; knowledge removals use it too). */
export async function dropUnusedBlob(ctx: OpContext, tx: Tx, hash: string | null, path: string | null): Promise<void> {
  if (!hash || !path) return;
  await lockHash(tx, hash);
  const [used] = await tx`select 1 from file where path = ${path} limit 1`;
  if (!used) await ctx.blobs.uploads.delete(path);
}

async function readable(ctx: OpContext, id: string, need: 'read' | 'write' = 'read'): Promise<FileRow> {
  return (await accessibleFile(ctx.sql, me(ctx), id, need)) ?? fail(404, OWUI_ERRORS.notFound);
}

function parseMetadata(raw: string | null): Record<string, unknown> {
  if (raw === null || raw.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return fail(400, errorMessage('Invalid metadata format'));
  }
  if (v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) return fail(400, errorMessage('Error uploading file'));
  return v as Record<string, unknown>;
}

export const filesOps = opTable({
  'files.upload': async (req, ctx) => {
    const user = me(ctx);
    const form = req.body;
    try {
      const process = queryBool(req.query, 'process', true);
      const inBackground = queryBool(req.query, 'process_in_background', true);
      const metadata = stripNul(parseMetadata(form.metadata));
      // os.path.basename: a client's directories never reach the name.
      const name = stripNul(win32.basename(posix.basename(form.filename))) || 'file';
      const max = ctx.blobs.maxFileBytes;
      // The edge stops a stream over the limit; this catches an edge configured with a larger one.
      if (max !== null && form.size > max) fail(413, fileTooLarge(ctx.blobs.maxFileLabel));
      const staged = await ctx.blobs.uploads.stage(await readObject(ctx.blobs.bus, form.object));
      const id = randomUUID();
      const t = now();
      const fileHash = typeof metadata.file_hash === 'string' && metadata.file_hash ? metadata.file_hash : staged.hash;
      const row = await ctx.sql
        .begin(async (tx) => {
          await lockHash(tx, staged.hash);
          await staged.commit();
          const [f] = await tx<FileRow[]>`
            insert into file (id, user_id, hash, filename, path, data, meta, created_at, updated_at)
            values (${id}, ${user.id}, ${staged.hash}, ${name}, ${staged.path}, ${tx.json(process ? { status: 'pending' } : {})},
                    ${tx.json({ name, content_type: form.content_type, size: staged.size, file_hash: fileHash, data: metadata } as never)}, ${t}, ${t})
            returning ${tx(FILE_COLUMNS)}`;
          await ctx.emit(tx, 'file.uploaded', {
            actor: user,
            subject: { type: 'file', id },
            data: { filename: name, content_type: form.content_type, size: staged.size, hash: staged.hash, knowledge_id: typeof metadata.knowledge_id === 'string' ? metadata.knowledge_id : null },
          });
          return f!;
        })
        .catch(async (err) => {
          await staged.discard();
          throw err;
        });
      if (!process) return ok(fileModel(row));
      try {
        await ctx.ingest.enqueue([id]);
      } catch (err) {
        // Never a hung `pending`: a file whose job could not be queued says why.
        ctx.log.error({ file: id, err: (err as Error).message }, 'could not queue file processing');
        await markFailed({ sql: ctx.sql, emit: ctx.emit, log: ctx.log }, id, 'Processing could not be queued; upload the file again.');
      }
      let latest = row;
      if (!inBackground) latest = await waitProcessed(ctx, id, row);
      return ok({ status: true, ...fileModel(latest) });
    } finally {
      await deleteObject(ctx.blobs.bus, form.object);
    }
  },

  'files.list': async (req, ctx) => {
    const user = me(ctx);
    const page = queryInt(req.query, 'page', 1) ?? 1;
    const content = queryBool(req.query, 'content', true);
    const all = user.role === 'admin';
    const rows = await ctx.sql<(FileRow & { total: number })[]>`
      select ${ctx.sql(FILE_COLUMNS)}, count(*) over () as total from file
      where ${all ? ctx.sql`true` : ctx.sql`user_id = ${user.id}`}
      order by created_at desc, id limit ${PAGE_SIZE} offset ${(page - 1) * PAGE_SIZE}`;
    const total = rows[0]?.total ?? (page > 1 ? Number((await ctx.sql`select count(*)::int as n from file where ${all ? ctx.sql`true` : ctx.sql`user_id = ${user.id}`}`)[0]!.n) : 0);
    return ok({ items: rows.map(({ total: _t, ...f }) => fileModel(content ? f : withoutContent(f))), total: Number(total) });
  },

  'files.count': async (_req, ctx) => {
    const user = me(ctx);
    const [{ n }] = await ctx.sql<[{ n: number }]>`select count(*)::int as n from file where ${user.role === 'admin' ? ctx.sql`true` : ctx.sql`user_id = ${user.id}`}`;
    return ok(n);
  },

  'files.search': async (req, ctx) => {
    const user = me(ctx);
    const pattern = req.query.filename;
    if (pattern === undefined) throw new BusError(422, 'validation failed', { detail: [{ type: 'missing', loc: ['query', 'filename'], msg: 'Field required', input: null }] });
    const content = queryBool(req.query, 'content', true);
    const skip = queryInt(req.query, 'skip', 0) ?? 0;
    const limit = Math.min(queryInt(req.query, 'limit', 1) ?? 100, 1000);
    // Open WebUI's wildcards: `*` any run, `?` one character; everything else literal.
    const like = pattern.replace(/[\\%_]/g, (c) => `\\${c}`).replaceAll('*', '%').replaceAll('?', '_');
    const rows = await ctx.sql<FileRow[]>`
      select ${ctx.sql(FILE_COLUMNS)} from file
      where filename ilike ${like} and ${user.role === 'admin' ? ctx.sql`true` : ctx.sql`user_id = ${user.id}`}
      order by created_at desc, id limit ${limit} offset ${skip}`;
    if (!rows.length) fail(404, 'No files found matching the pattern.');
    return ok(rows.map((f) => fileModel(content ? f : withoutContent(f))));
  },

  'files.deleteAll': async (_req, ctx) => {
    const user = me(ctx);
    await ctx.sql.begin(async (tx) => {
      const gone = await tx<{ hash: string | null; path: string | null }[]>`delete from file returning hash, path`;
      await ctx.emit(tx, 'file.deleted_all', { actor: user, subject: { type: 'file', id: null }, data: { count: gone.length } });
      const blobs = new Map(gone.filter((g) => g.hash && g.path).map((g) => [g.path!, g.hash!]));
      for (const [path, hash] of blobs) await dropUnusedBlob(ctx, tx, hash, path);
    });
    return ok({ message: 'All files deleted successfully' });
  },

  'files.get': async (req, ctx) => ok(fileModel(await readable(ctx, req.params.id!))),

  'files.status': async (req, ctx) => {
    const f = await readable(ctx, req.params.id!);
    const status = f.data?.status;
    // The edge's event stream (?stream=true) also needs the reason, and to know a file never processed.
    if (queryBool(req.query, 'stream', false)) return ok({ status: typeof status === 'string' ? status : null, ...(status === 'failed' ? { error: String(f.data?.error ?? '') } : {}) });
    return ok({ status: typeof status === 'string' ? status : 'pending' });
  },

  'files.dataContent': async (req, ctx) => {
    const f = await readable(ctx, req.params.id!);
    return ok({ content: typeof f.data?.content === 'string' ? f.data.content : '' });
  },

  'files.updateDataContent': async (req, ctx) => {
    const { content } = req.body;
    const f = await readable(ctx, req.params.id!, 'write');
    const max = ctx.blobs.maxFileBytes;
    if (max !== null && Buffer.byteLength(content) > max) fail(413, fileTooLarge(ctx.blobs.maxFileLabel));
    const text = stripNul(content);
    await ctx.sql`update file set data = (coalesce(data, '{}'::jsonb) - 'error') || ${ctx.sql.json({ status: 'pending', content: text })}, updated_at = ${now()} where id = ${f.id}`;
    await ctx.ingest.enqueue([f.id], { useContent: true });
    return ok({ content: text });
  },

  'files.content': async (req, ctx) => {
    const f = await readable(ctx, req.params.id!);
    const name = String(f.meta?.name ?? f.filename);
    let type = typeof f.meta?.content_type === 'string' && f.meta.content_type ? f.meta.content_type : 'application/octet-stream';
    let disposition: string | undefined;
    if (req.params.file_name !== undefined || queryBool(req.query, 'attachment', false)) disposition = contentDisposition('attachment', name);
    else if (type === 'application/pdf' || name.toLowerCase().endsWith('.pdf')) {
      // Open WebUI shows PDFs in the browser; anything else but plain text is downloaded.
      disposition = contentDisposition('inline', name);
      type = 'application/pdf';
    } else if (type !== 'text/plain') disposition = contentDisposition('attachment', name);
    if (!f.path) {
      if (req.params.file_name === undefined) fail(404, OWUI_ERRORS.notFound);
      // No stored bytes: Open WebUI answers the extracted text.
      return replyWithBytes(ctx.blobs.bus, Readable.from([Buffer.from(String(f.data?.content ?? ''))]), { contentType: 'text/plain', disposition });
    }
    const bytes = await ctx.blobs.uploads.get(f.path).catch(() => fail(404, OWUI_ERRORS.notFound));
    return replyWithBytes(ctx.blobs.bus, bytes, { contentType: type, disposition });
  },

  'files.rename': async (req, ctx) => {
    const user = me(ctx);
    const { filename } = req.body;
    const f = await readable(ctx, req.params.id!, 'write');
    const name = stripNul(filename);
    const row = await ctx.sql.begin(async (tx) => {
      // meta.name is what lists and downloads show: it follows the new name too.
      const [r] = await tx<FileRow[]>`
        update file set filename = ${name}, meta = coalesce(meta, '{}'::jsonb) || ${tx.json({ name })}, updated_at = ${now()}
        where id = ${f.id} returning ${tx(FILE_COLUMNS)}`;
      if (!r) fail(404, OWUI_ERRORS.notFound);
      await ctx.emit(tx, 'file.renamed', { actor: user, subject: { type: 'file', id: f.id }, data: { filename: name } });
      return r;
    });
    return ok(fileModel(row));
  },

  'files.delete': async (req, ctx) => {
    const user = me(ctx);
    const f = await readable(ctx, req.params.id!, 'write');
    await ctx.sql.begin(async (tx) => {
      // Its chunks and knowledge-base links go with it (foreign keys cascade).
      const [gone] = await tx`delete from file where id = ${f.id} returning id`;
      if (!gone) fail(404, OWUI_ERRORS.notFound);
      await ctx.emit(tx, 'file.deleted', { actor: user, subject: { type: 'file', id: f.id }, data: { filename: f.filename } });
      await dropUnusedBlob(ctx, tx, f.hash, f.path);
    });
    return ok({ message: 'File deleted successfully' });
  },
});

/** `process_in_background=false`: answer once the ingest worker has finished with the file (bounded). */
async function waitProcessed(ctx: OpContext, id: string, row: FileRow): Promise<FileRow> {
  const deadline = Date.now() + FOREGROUND_WAIT_MS;
  let latest = row;
  while (Date.now() < deadline) {
    const [f] = await ctx.sql<FileRow[]>`select ${ctx.sql(FILE_COLUMNS)} from file where id = ${id}`;
    if (!f) return latest;
    latest = f;
    if (f.data?.status !== 'pending') return f;
    await new Promise((r) => setTimeout(r, 250));
  }
  return latest;
}
