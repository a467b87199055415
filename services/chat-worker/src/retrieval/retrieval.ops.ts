import { createHash, randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { OWUI_ERRORS, type QueryDocForm } from '@gatehouse/contracts';
import { USER_COLUMNS, fail, me, now, ok, opTable, type OpContext, type OpRequest, type Tx, type UserRow } from '../context.ts';
import { vectorLiteral } from '../db.ts';
import { saveSettings, type ChatSettings } from '../config/settings.ts';
import { chunkerFor, type TextChunk } from './chunk.ts';
import { createEmbedder, EmbeddingError, type Embedder } from './embedder.ts';
import { EMPTY_CONTENT } from '../knowledge/ingest.ts';
import { writableAmong } from '../knowledge/access.ts';
import { linkFile } from '../knowledge/links.ts';
import { createReranker } from './rerank.ts';
import { searchChunks, searchMode, type ChunkHit } from './search.ts';
import { webConfig, webOps, withWebConfig } from './web.ops.ts';

/**
 * Handlers of the catalog's retrieval operations (contracts/src/chat/catalog-retrieval.ts), Open
 * WebUI 0.10.2's routers/retrieval.py on this platform's tables: a collection is a knowledge base
 * (its files' chunks), `file-<id>` (one file's) or a name process/text gave; searches run as one
 * statement (search.ts) filtered by what the caller may read, so a collection they may
 * not read answers nothing rather than someone else's text. Settings are read per request:
 * /config/update and /embedding/update apply to the next query on every replica.
 */

type Settings = ChatSettings;

/** Open WebUI's ERROR_MESSAGES.DEFAULT(err): `[ERROR: …]`. */
const errorDetail = (message: string) => `[ERROR: ${message}]`;

function embedderOf(s: Settings): Embedder {
  try {
    return createEmbedder(s);
  } catch (err) {
    if (err instanceof EmbeddingError) fail(400, errorDetail(err.message));
    throw err;
  }
}

/** Collection names → what search.ts scopes by. */
function scopeOf(names: readonly string[]): { fileIds: string[]; knowledgeIds: string[]; collectionNames: string[] } {
  const fileIds: string[] = [];
  const others: string[] = [];
  for (const n of names) (n.startsWith('file-') ? fileIds.push(n.slice(5)) : others.push(n));
  return { fileIds, knowledgeIds: others, collectionNames: others };
}

type QueryForm = Omit<z.infer<typeof QueryDocForm>, 'collection_name'>;

async function runQuery(ctx: OpContext, names: readonly string[], form: QueryForm, withIds: boolean) {
  const user = me(ctx);
  const s = await ctx.settings();
  // Open WebUI: hybrid when the setting is on and the form does not say hybrid: false; `k`, `r`
  // and `k_reranker` fall back to the settings when missing or 0.
  const hybrid = s.ENABLE_RAG_HYBRID_SEARCH && form.hybrid !== false;
  const k = form.k || s.RAG_TOP_K;
  const kReranker = form.k_reranker || s.RAG_TOP_K_RERANKER;
  const threshold = form.r || s.RAG_RELEVANCE_THRESHOLD;
  const weight = Math.min(1, Math.max(0, form.hybrid_bm25_weight ?? s.RAG_HYBRID_BM25_WEIGHT));
  if (k < 1 || kReranker < 1) fail(400, errorDetail('k and k_reranker must be positive'));
  const mode = searchMode({ hybrid, bm25Weight: weight });
  const empty = { ...(withIds && mode === 'vector' ? { ids: [[]] } : {}), distances: [[]], documents: [[]], metadatas: [[]] };
  if (!form.query.trim() || !names.length) return ok(empty);
  const embedder = embedderOf(s);
  const reranker = hybrid ? createReranker(s, (m) => ctx.log.warn({ reason: m }, 'reranking skipped')) : null;
  let hits: ChunkHit[];
  try {
    hits = await searchChunks(ctx.searchSql, embedder, {
      query: form.query,
      userId: user.id,
      ...scopeOf(names),
      k,
      hybrid,
      bm25Weight: weight,
      threshold,
      ...(reranker ? { rerank: { reranker, topK: kReranker } } : {}),
    });
  } catch (err) {
    if (err instanceof EmbeddingError) fail(400, errorDetail(err.message));
    throw err;
  }
  const metadatas = hits.map((h) => ({
    ...h.meta,
    file_id: h.fileId,
    name: h.filename,
    source: h.filename,
    ...(h.knowledgeId ? { knowledge_id: h.knowledgeId } : {}),
    // Open WebUI's hybrid path writes the score into each chunk's metadata.
    ...(mode === 'vector' ? {} : { score: h.score }),
  }));
  return ok({
    ...(withIds && mode === 'vector' ? { ids: [hits.map((h) => h.chunkId)] } : {}),
    distances: [hits.map((h) => h.score)],
    documents: [hits.map((h) => h.content)],
    metadatas: [metadatas],
  });
}

// ---- indexing (process/text, process/file) ------------------------------------------------------

interface Indexed {
  chunks: TextChunk[];
  vectors: number[][];
  model: string;
}

/** Chunk and embed outside any transaction (an embeddings endpoint may take seconds). */
async function indexText(s: Settings, text: string): Promise<Indexed> {
  let chunks: TextChunk[];
  try {
    chunks = (await chunkerFor(s))(text);
  } catch (err) {
    fail(400, errorDetail((err as Error).message));
  }
  if (!chunks.length) fail(400, EMPTY_CONTENT);
  const embedder = embedderOf(s);
  let vectors: number[][];
  try {
    vectors = await embedder.embed(chunks.map((c) => c.content));
  } catch (err) {
    if (err instanceof EmbeddingError) fail(400, errorDetail(err.message));
    throw err;
  }
  return { chunks, vectors, model: embedder.model };
}

/** Replace a file's chunks (inside the caller's transaction). */
async function writeChunks(tx: Tx, fileId: string, filename: string, ix: Indexed): Promise<void> {
  await tx`delete from file_chunk where file_id = ${fileId}`;
  await tx`
    insert into file_chunk (file_id, chunk_index, content, meta, embedding_model, embedding)
    select ${fileId}, c.i, c.content, c.meta, ${ix.model}, c.embedding::vector
    from unnest(${ix.chunks.map((c) => c.index)}::int[], ${ix.chunks.map((c) => c.content)}::text[],
                ${ix.chunks.map((c) => ({ name: filename, source: filename, file_id: fileId, start_index: c.start })) as never}::jsonb[],
                ${ix.vectors.map(vectorLiteral)}::text[]) as c(i, content, meta, embedding)`;
}

/** Link a file to a knowledge base the caller may write to (knowledge/links.ts; its event once). */
const linkToKnowledge = (tx: Tx, ctx: OpContext, user: UserRow, knowledgeId: string, fileId: string, filename: string) =>
  linkFile(tx, ctx.emit, user, { knowledgeId, fileId, filename, directoryId: null }, now());

/**
 * A named target collection must be one the caller may write to (Open WebUI's
 * _validate_collection_access(write)): a knowledge base they own or have a write grant on.
 * Anything else that names an existing knowledge base is ACCESS_PROHIBITED; a name that is no
 * knowledge base stays a plain collection of the caller's own.
 */
async function targetKnowledge(ctx: OpContext, user: UserRow, name: string | null | undefined): Promise<string | null> {
  if (!name || name.startsWith('file-')) return null;
  const [exists] = await ctx.sql`select 1 from knowledge where id = ${name}`;
  if (!exists) return null;
  if (!(await writableAmong(ctx.sql, user, [name])).has(name)) fail(403, OWUI_ERRORS.accessProhibited);
  return name;
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

interface FileRow {
  id: string;
  user_id: string;
  filename: string;
  hash: string | null;
  data: Record<string, unknown> | null;
  meta: Record<string, unknown> | null;
}

export async function processText(req: OpRequest<'retrieval.processText'>, ctx: OpContext) {
  const user = me(ctx);
  const form = req.body;
  const s = await ctx.settings();
  const knowledgeId = await targetKnowledge(ctx, user, form.collection_name);
  const collection = form.collection_name ?? sha256(form.content);
  const content = form.content.replaceAll('\u0000', '');
  const hash = sha256(content);
  // The same text into the same collection again adds nothing (Open WebUI keeps an existing collection).
  const [existing] = await ctx.sql<{ id: string }[]>`
    select id from file where user_id = ${user.id} and hash = ${hash} and meta ->> 'collection_name' = ${collection} limit 1`;
  if (existing) return ok({ status: true as const, collection_name: collection, content: form.content });
  const ix = await indexText(s, content);
  const id = randomUUID();
  const t = now();
  const size = Buffer.byteLength(content, 'utf8');
  const meta = { name: form.name, content_type: 'text/plain', size, collection_name: collection, source: 'retrieval.process.text' };
  await ctx.sql.begin(async (tx) => {
    await tx`
      insert into file (id, user_id, hash, filename, path, data, meta, created_at, updated_at)
      values (${id}, ${user.id}, ${hash}, ${form.name}, null, ${tx.json({ status: 'completed', content })}, ${tx.json(meta)}, ${t}, ${t})`;
    await writeChunks(tx, id, form.name, ix);
    await ctx.emit(tx, 'file.uploaded', { actor: user, subject: { type: 'file', id }, data: { filename: form.name, content_type: 'text/plain', size, hash, knowledge_id: knowledgeId } });
    await ctx.emit(tx, 'file.content_updated', { actor: user, subject: { type: 'file', id }, data: { status: 'completed', chunk_count: ix.chunks.length } });
    if (knowledgeId) await linkToKnowledge(tx, ctx, user, knowledgeId, id, form.name);
  });
  return ok({ status: true as const, collection_name: collection, content: form.content });
}

async function processFile(req: OpRequest<'retrieval.processFile'>, ctx: OpContext) {
  const user = me(ctx);
  const form = req.body;
  const s = await ctx.settings();
  const [file] = await ctx.sql<FileRow[]>`
    select id, user_id, filename, hash, data, meta from file where id = ${form.file_id} and (user_id = ${user.id} or ${user.role === 'admin'})`;
  if (!file) fail(404, OWUI_ERRORS.notFound);
  const knowledgeId = await targetKnowledge(ctx, user, form.collection_name);
  const collection = form.collection_name ?? `file-${file.id}`;
  const stored = typeof file.data?.content === 'string' ? file.data.content : null;
  const content = form.content != null ? form.content.replaceAll('<br/>', '\n').replaceAll('\u0000', '') : stored;
  if (content === null) {
    // Not extracted yet: the ingest queue does it (and retries); the status route tells when.
    await ctx.ingest.enqueue([file.id]);
    if (knowledgeId) await ctx.sql.begin((tx) => linkToKnowledge(tx, ctx, user, knowledgeId, file.id, file.filename));
    return ok({ status: true as const, collection_name: collection, filename: file.filename, content: '' });
  }
  const [counted] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from file_chunk where file_id = ${file.id}`;
  const n = counted?.n ?? 0;
  // Adding an indexed file to a knowledge base reuses its chunks (they belong to the file).
  const reindex = form.content != null || n === 0;
  const ix = reindex ? await indexText(s, content) : null;
  await ctx.sql.begin(async (tx) => {
    const [held] = await tx`select id from file where id = ${file.id} for update`;
    if (!held) fail(404, OWUI_ERRORS.notFound);
    if (ix) {
      await writeChunks(tx, file.id, file.filename, ix);
      await tx`update file set data = (coalesce(data, '{}'::jsonb) - 'error') || ${tx.json({ status: 'completed', content })},
                              hash = ${sha256(content)}, updated_at = ${now()} where id = ${file.id}`;
      const [owner] = await tx<UserRow[]>`select ${tx(USER_COLUMNS)} from "user" where id = ${file.user_id}`;
      await ctx.emit(tx, 'file.content_updated', { actor: owner ?? user, subject: { type: 'file', id: file.id }, data: { status: 'completed', chunk_count: ix.chunks.length } });
    }
    if (knowledgeId) await linkToKnowledge(tx, ctx, user, knowledgeId, file.id, file.filename);
  });
  return ok({ status: true as const, collection_name: collection, filename: file.filename, content });
}

// ---- settings ---------------------------------------------------------------------------------

function ragConfig(s: Settings) {
  return {
    status: true as const,
    RAG_TEMPLATE: s.RAG_TEMPLATE,
    TOP_K: s.RAG_TOP_K,
    BYPASS_EMBEDDING_AND_RETRIEVAL: false,
    RAG_FULL_CONTEXT: false,
    ENABLE_RAG_HYBRID_SEARCH: s.ENABLE_RAG_HYBRID_SEARCH,
    ENABLE_RAG_HYBRID_SEARCH_ENRICHED_TEXTS: false,
    TOP_K_RERANKER: s.RAG_TOP_K_RERANKER,
    RELEVANCE_THRESHOLD: s.RAG_RELEVANCE_THRESHOLD,
    HYBRID_BM25_WEIGHT: s.RAG_HYBRID_BM25_WEIGHT,
    CONTENT_EXTRACTION_ENGINE: '',
    PDF_EXTRACT_IMAGES: false,
    RAG_RERANKING_MODEL: s.RAG_RERANKING_MODEL,
    RAG_RERANKING_ENGINE: s.RAG_RERANKING_ENGINE,
    RAG_EXTERNAL_RERANKER_URL: s.RAG_EXTERNAL_RERANKER_URL,
    RAG_EXTERNAL_RERANKER_API_KEY: s.RAG_EXTERNAL_RERANKER_API_KEY,
    RAG_EXTERNAL_RERANKER_TIMEOUT: s.RAG_EXTERNAL_RERANKER_TIMEOUT,
    TEXT_SPLITTER: s.TEXT_SPLITTER,
    TIKTOKEN_ENCODING_NAME: s.TIKTOKEN_ENCODING_NAME,
    ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER: false,
    CHUNK_SIZE: s.CHUNK_SIZE,
    CHUNK_MIN_SIZE_TARGET: 0,
    CHUNK_OVERLAP: s.CHUNK_OVERLAP,
    web: webConfig(s),
  };
}

/** The effective model: the offline default's name when no engine is set. */
const embeddingModel = (s: Settings) => (s.RAG_EMBEDDING_ENGINE === '' ? createEmbedder(s).model : s.RAG_EMBEDDING_MODEL);

function embeddingConfig(s: Settings) {
  return {
    status: true as const,
    RAG_EMBEDDING_ENGINE: s.RAG_EMBEDDING_ENGINE,
    RAG_EMBEDDING_MODEL: embeddingModel(s),
    RAG_EMBEDDING_BATCH_SIZE: s.RAG_EMBEDDING_BATCH_SIZE,
    ENABLE_ASYNC_EMBEDDING: true,
    RAG_EMBEDDING_CONCURRENT_REQUESTS: 0,
    openai_config: { url: s.RAG_OPENAI_API_BASE_URL, key: s.RAG_OPENAI_API_KEY },
    ollama_config: { url: s.RAG_OLLAMA_BASE_URL, key: s.RAG_OLLAMA_API_KEY },
    azure_openai_config: { url: '', key: '', version: '' },
  };
}

const SPLITTERS = ['', 'character', 'token'] as const;
const ENGINES = ['', 'openai', 'ollama'] as const;

/** Values that would only fail later (at the next upload or query) are refused now, with the reason. */
function checked(s: Settings): Settings {
  if (!SPLITTERS.includes(s.TEXT_SPLITTER)) fail(400, errorDetail(`TEXT_SPLITTER must be one of '', 'character', 'token'`));
  if (s.CHUNK_SIZE < 1) fail(400, errorDetail('CHUNK_SIZE must be positive'));
  if (s.CHUNK_OVERLAP < 0 || s.CHUNK_OVERLAP >= s.CHUNK_SIZE) fail(400, errorDetail('CHUNK_OVERLAP must be at least 0 and smaller than CHUNK_SIZE'));
  if (s.RAG_TOP_K < 1 || s.RAG_TOP_K_RERANKER < 1) fail(400, errorDetail('TOP_K and TOP_K_RERANKER must be positive'));
  if (!(s.RAG_HYBRID_BM25_WEIGHT >= 0 && s.RAG_HYBRID_BM25_WEIGHT <= 1)) fail(400, errorDetail('HYBRID_BM25_WEIGHT must be between 0 and 1'));
  if (s.RAG_RERANKING_ENGINE !== '' && s.RAG_RERANKING_ENGINE !== 'external') fail(400, errorDetail(`RAG_RERANKING_ENGINE must be '' or 'external'`));
  if (!ENGINES.includes(s.RAG_EMBEDDING_ENGINE)) fail(400, errorDetail(`RAG_EMBEDDING_ENGINE must be one of '', 'openai', 'ollama'`));
  return s;
}

async function save(ctx: OpContext, before: Settings, after: Settings): Promise<void> {
  const changed = (Object.keys(after) as (keyof Settings)[]).filter((key) => after[key] !== before[key]);
  if (!changed.length) return;
  await ctx.sql.begin(async (tx) => {
    await saveSettings(tx, Object.fromEntries(changed.map((key) => [key, after[key]])) as Partial<Settings>, now(), ctx.saved);
    // Key names only: values may be secrets (API keys).
    await ctx.emit(tx, 'config.updated', { actor: me(ctx), subject: { type: 'config', id: 'retrieval' }, data: { keys: changed } });
  });
}

const pick = <T>(v: T | null | undefined, d: T): T => (v === null || v === undefined ? d : v);

export const retrievalOps = opTable({
  'retrieval.queryDoc': async (req, ctx) => {
    const form = req.body;
    return runQuery(ctx, [form.collection_name], form, true);
  },
  'retrieval.queryCollection': async (req, ctx) => {
    const form = req.body;
    return runQuery(ctx, form.collection_names, form, false);
  },
  'retrieval.processText': processText,
  'retrieval.processFile': processFile,
  ...webOps(processText),
  'retrieval.config.get': async (_req, ctx) => ok(ragConfig(await ctx.settings())),
  'retrieval.config.update': async (req, ctx) => {
    const f = req.body;
    const before = await ctx.settings();
    const after = checked(withWebConfig({
      ...before,
      RAG_TEMPLATE: pick(f.RAG_TEMPLATE, before.RAG_TEMPLATE),
      RAG_TOP_K: pick(f.TOP_K, before.RAG_TOP_K),
      ENABLE_RAG_HYBRID_SEARCH: pick(f.ENABLE_RAG_HYBRID_SEARCH, before.ENABLE_RAG_HYBRID_SEARCH),
      RAG_TOP_K_RERANKER: pick(f.TOP_K_RERANKER, before.RAG_TOP_K_RERANKER),
      RAG_RELEVANCE_THRESHOLD: pick(f.RELEVANCE_THRESHOLD, before.RAG_RELEVANCE_THRESHOLD),
      RAG_HYBRID_BM25_WEIGHT: pick(f.HYBRID_BM25_WEIGHT, before.RAG_HYBRID_BM25_WEIGHT),
      RAG_RERANKING_MODEL: pick(f.RAG_RERANKING_MODEL, before.RAG_RERANKING_MODEL),
      RAG_RERANKING_ENGINE: pick(f.RAG_RERANKING_ENGINE, before.RAG_RERANKING_ENGINE) as Settings['RAG_RERANKING_ENGINE'],
      RAG_EXTERNAL_RERANKER_URL: pick(f.RAG_EXTERNAL_RERANKER_URL, before.RAG_EXTERNAL_RERANKER_URL),
      RAG_EXTERNAL_RERANKER_API_KEY: pick(f.RAG_EXTERNAL_RERANKER_API_KEY, before.RAG_EXTERNAL_RERANKER_API_KEY),
      RAG_EXTERNAL_RERANKER_TIMEOUT: pick(f.RAG_EXTERNAL_RERANKER_TIMEOUT, before.RAG_EXTERNAL_RERANKER_TIMEOUT),
      TEXT_SPLITTER: pick(f.TEXT_SPLITTER, before.TEXT_SPLITTER) as Settings['TEXT_SPLITTER'],
      CHUNK_SIZE: pick(f.CHUNK_SIZE, before.CHUNK_SIZE),
      CHUNK_OVERLAP: pick(f.CHUNK_OVERLAP, before.CHUNK_OVERLAP),
    }, f.web));
    await save(ctx, before, after);
    return ok(ragConfig(after));
  },
  'retrieval.embedding.get': async (_req, ctx) => ok(embeddingConfig(await ctx.settings())),
  'retrieval.embedding.update': async (req, ctx) => {
    const f = req.body;
    const before = await ctx.settings();
    const engine = f.RAG_EMBEDDING_ENGINE as Settings['RAG_EMBEDDING_ENGINE'];
    const after = checked({
      ...before,
      RAG_EMBEDDING_ENGINE: engine,
      // The offline default has one model; its name is not a setting.
      RAG_EMBEDDING_MODEL: engine === '' ? '' : f.RAG_EMBEDDING_MODEL.trim(),
      RAG_EMBEDDING_BATCH_SIZE: Math.max(1, pick(f.RAG_EMBEDDING_BATCH_SIZE, 1)),
      ...(f.openai_config ? { RAG_OPENAI_API_BASE_URL: f.openai_config.url, RAG_OPENAI_API_KEY: f.openai_config.key } : {}),
      ...(f.ollama_config ? { RAG_OLLAMA_BASE_URL: f.ollama_config.url, RAG_OLLAMA_API_KEY: f.ollama_config.key } : {}),
    });
    embedderOf(after);
    await save(ctx, before, after);
    return ok(embeddingConfig(after));
  },
});
