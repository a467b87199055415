import type { Readable } from 'node:stream';
import type { Sql } from 'postgres';
import type { Logger } from '@gatehouse/common';
import { stripNul } from '../access.ts';
import { USER_COLUMNS, type Tx, type UserRow } from '../context.ts';
import type { Emit } from '../events/outbox.ts';
import { chunkText, type ChunkOptions } from '../retrieval/chunk.ts';
import type { Embedder } from '../retrieval/embedder.ts';
import { extractText, ExtractError } from './extract.ts';
import type { IngestJob } from './ingest-queue.ts';
import { knowledgeAccess, mayWrite } from './access.ts';
import { linkFile } from './links.ts';
import type { UploadStore } from './uploads.ts';

/**
 * One ingest job: extract the file's text, store it as `data.content`, chunk it, embed the chunks
 * in batches, replace the file's `file_chunk` rows in one transaction with the status
 * `completed` and the `file.content_updated` event. A file that cannot be read fails at once
 * (PermanentError: retrying would fail the same way); anything else throws for the consumer to
 * retry. Re-running a job is harmless: the chunks are replaced, never added to.
 */
export class PermanentError extends Error {}

/** Chunk rows per insert statement. */
const INSERT_SLICE = 500;

/** Open WebUI's ERROR_MESSAGES.EMPTY_CONTENT. */
export const EMPTY_CONTENT = 'The content provided is empty. Please ensure that there is text or data present before proceeding.';

export interface IngestDeps {
  sql: Sql;
  uploads: UploadStore;
  embedder: Embedder;
  emit: Emit;
  log: Logger;
  chunking: ChunkOptions;
  /** Chunks per embedding call. */
  batchSize: number;
  /** Called between steps so a long job tells the queue it is alive (JetStream's "working"). */
  heartbeat(): void;
  /** Pause before each embedding batch (INGEST_BATCH_DELAY_MS; 0 in production): lets a test land a crash mid-job. */
  batchDelayMs: number;
}

interface FileRow {
  id: string;
  user_id: string;
  filename: string;
  path: string | null;
  data: Record<string, unknown> | null;
  meta: Record<string, unknown> | null;
}

export async function runIngestJob(deps: IngestDeps, job: IngestJob): Promise<'completed' | 'failed' | 'gone'> {
  const { sql } = deps;
  const [file] = await sql<FileRow[]>`select id, user_id, filename, path, data, meta from file where id = ${job.file_id}`;
  if (!file) return 'gone';
  try {
    const text = await textOf(deps, file, job);
    if (!text.trim()) throw new PermanentError(EMPTY_CONTENT);
    const chunks = chunkText(text, deps.chunking);
    const vectors: number[][] = [];
    for (let i = 0; i < chunks.length; i += deps.batchSize) {
      deps.heartbeat();
      if (deps.batchDelayMs > 0) await new Promise((r) => setTimeout(r, deps.batchDelayMs));
      vectors.push(...(await deps.embedder.embed(chunks.slice(i, i + deps.batchSize).map((c) => c.content))));
    }
    deps.heartbeat();
    const done = await sql.begin(async (tx) => {
      // Hold the row: a delete racing the job either happens first (nothing to write) or waits.
      const [held] = await tx`select id from file where id = ${file.id} for update`;
      if (!held) return false;
      await tx`delete from file_chunk where file_id = ${file.id}`;
      // In slices, so a long document never becomes one huge statement (still one transaction).
      for (let i = 0; i < chunks.length; i += INSERT_SLICE) {
        const part = chunks.slice(i, i + INSERT_SLICE);
        await tx`
          insert into file_chunk (file_id, chunk_index, content, meta, embedding_model, embedding)
          select ${file.id}, c.i, c.content, c.meta::jsonb, ${deps.embedder.model}, c.embedding::vector
          from unnest(${part.map((c) => c.index)}::int[], ${part.map((c) => c.content)}::text[],
                      ${part.map((c) => JSON.stringify({ name: file.filename, source: file.filename, file_id: file.id, start_index: c.start, end_index: c.end }))}::text[],
                      ${vectors.slice(i, i + INSERT_SLICE).map((v) => `[${v.join(',')}]`)}::text[]) as c(i, content, meta, embedding)`;
      }
      await tx`update file set data = (coalesce(data, '{}'::jsonb) - 'error') || ${tx.json({ status: 'completed', content: text })}, updated_at = ${now()} where id = ${file.id}`;
      const actor = await owner(tx, file.user_id);
      await deps.emit(tx, 'file.content_updated', { actor, subject: { type: 'file', id: file.id }, data: { status: 'completed', chunk_count: chunks.length }, source: 'system' });
      if (actor) await linkUploaded(deps, tx, actor, file);
      return true;
    });
    deps.log.info({ file: file.id, chunks: chunks.length, chars: text.length }, 'file processed');
    return done ? 'completed' : 'gone';
  } catch (err) {
    if (!(err instanceof PermanentError)) throw err;
    await markFailed(deps, file.id, err.message);
    return 'failed';
  }
}

async function textOf(deps: IngestDeps, file: FileRow, job: IngestJob): Promise<string> {
  if (job.use_content) return stripNul(String(file.data?.content ?? ''));
  if (!file.path) throw new PermanentError('The file has no stored content to process.');
  let stream: Readable;
  try {
    stream = await deps.uploads.get(file.path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new PermanentError('The file’s bytes are missing from the upload store.');
    throw err;
  }
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(chunk as Buffer);
  try {
    const meta = file.meta ?? {};
    return stripNul(await extractText(Buffer.concat(parts), { filename: String(meta.name ?? file.filename), contentType: typeof meta.content_type === 'string' ? meta.content_type : null }));
  } catch (err) {
    if (err instanceof ExtractError) throw new PermanentError(err.message);
    throw err;
  }
}

/** The file is `failed` with `reason` in data.error (Open WebUI's field), and says so in its event. */
export async function markFailed(deps: Pick<IngestDeps, 'sql' | 'emit' | 'log'>, fileId: string, reason: string): Promise<void> {
  await deps.sql.begin(async (tx) => {
    const [row] = await tx<{ user_id: string }[]>`
      update file set data = coalesce(data, '{}'::jsonb) || ${tx.json({ status: 'failed', error: reason })}, updated_at = ${now()}
      where id = ${fileId} returning user_id`;
    if (!row) return;
    await deps.emit(tx, 'file.content_updated', { actor: await owner(tx, row.user_id), subject: { type: 'file', id: fileId }, data: { status: 'failed', error: reason }, source: 'system' });
  });
  deps.log.warn({ file: fileId, reason }, 'file processing failed');
}

/**
 * An upload that named `metadata.knowledge_id` (the 0.10.2 folder upload) joins that knowledge
 * base once processed, as Open WebUI links it in its background task: only if the uploader may
 * write to the base, into `directory_id` when that is a directory of the same base.
 */
async function linkUploaded(deps: IngestDeps, tx: Tx, actor: UserRow, file: FileRow): Promise<void> {
  const meta = (file.meta?.data ?? {}) as Record<string, unknown>;
  const knowledgeId = typeof meta.knowledge_id === 'string' ? meta.knowledge_id : null;
  if (!knowledgeId) return;
  const found = await knowledgeAccess(tx, actor, knowledgeId);
  if (!found || !mayWrite(found.access)) {
    deps.log.warn({ file: file.id, knowledge: knowledgeId, user: actor.id }, 'upload names a knowledge base its owner may not write to; not linked');
    return;
  }
  let directoryId = typeof meta.directory_id === 'string' ? meta.directory_id : null;
  if (directoryId && !(await tx`select 1 from knowledge_directory where id = ${directoryId} and knowledge_id = ${knowledgeId}`).length) directoryId = null;
  await linkFile(tx, deps.emit, actor, { knowledgeId, fileId: file.id, filename: file.filename, directoryId }, now());
}

async function owner(tx: Sql, userId: string): Promise<UserRow | null> {
  const [u] = await tx<UserRow[]>`select ${tx(USER_COLUMNS)} from "user" where id = ${userId}`;
  return u ?? null;
}

const now = (): number => Math.floor(Date.now() / 1000);
