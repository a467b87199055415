import type { Sql } from 'postgres';
import type { Logger } from '@gatehouse/common';
import { fail, type UserRow } from '../context.ts';
import { knowledgeAccess, type KnowledgeRow } from '../knowledge/access.ts';
import { accessibleFile } from '../knowledge/file-access.ts';
import type { ChatSettings } from '../config/settings.ts';
import { appendToSystem } from '../memories/system-context.ts';
import { createEmbedder, type Embedder } from './embedder.ts';
import { createReranker, type Reranker } from './rerank.ts';
import { externalOf, getConnection, retrieveExternal, ExternalSourceError } from '../knowledge/external.ts';
import { searchChunks, searchMode, type ChunkHit, type SearchRequest } from './search.ts';
import { ragTemplate, sourceContext, type Source } from './rag-template.ts';

/**
 * Retrieval for a chat completion (Open WebUI 0.10.2's chat_completion_files_handler with
 * get_sources_from_items): the request's `files` (top level, or `metadata.files` as its front end
 * sends them) name knowledge bases (`collection`) and files (`file`); each is searched for the
 * last user message and becomes one entry of `sources` — `{source: <the item>, document: [chunk
 * texts], metadata: [per chunk: file_id, name, source…], distances: [scores]}`.
 *
 * - A knowledge base or file the caller may not read is skipped without a word, as Open WebUI
 *   does (an id reveals nothing). Other item types (images, web search results) are not ours.
 * - `context: "full"` on an item, or the full-context settings (RAG_FULL_CONTEXT,
 *   BYPASS_EMBEDDING_AND_RETRIEVAL), give whole documents instead of the best chunks.
 * - External knowledge bases are asked through their connection (external.ts), side by side (four
 *   items at a time), each with its own deadline. One that fails becomes a source whose `source.error` says why and whose
 *   one document tells the model the base could not be searched — so the answer can say so — and
 *   the chat goes on with what the others found.
 * - Queries: the plain last user message (Open WebUI may first ask the task model for search
 *   queries; one extra model round trip per message is left out).
 */

export interface RagSettings {
  topK: number;
  hybrid: boolean;
  bm25Weight: number;
  threshold: number;
  /** RAG_TOP_K_RERANKER: hits kept after the external reranker (hybrid only). */
  topKReranker: number;
  /** RAG_FULL_CONTEXT / BYPASS_EMBEDDING_AND_RETRIEVAL: whole documents, no search. */
  fullContext: boolean;
  /** The admin's RAG_TEMPLATE ('' → Open WebUI's default). */
  template: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);

/**
 * The RAG settings as the retrieval routes read them (RAG_TOP_K, ENABLE_RAG_HYBRID_SEARCH,
 * RAG_HYBRID_BM25_WEIGHT, RAG_RELEVANCE_THRESHOLD, RAG_TOP_K_RERANKER, RAG_TEMPLATE). The
 * full-context switches (RAG_FULL_CONTEXT, BYPASS_EMBEDDING_AND_RETRIEVAL) are read by name, so
 * they apply as soon as the settings carry them; until then only `context: "full"` items do.
 */
export function ragSettings(s: ChatSettings): RagSettings {
  const loose = s as unknown as Record<string, unknown>;
  return {
    topK: s.RAG_TOP_K,
    hybrid: s.ENABLE_RAG_HYBRID_SEARCH,
    bm25Weight: Math.min(1, Math.max(0, s.RAG_HYBRID_BM25_WEIGHT)),
    threshold: s.RAG_RELEVANCE_THRESHOLD,
    topKReranker: s.RAG_TOP_K_RERANKER,
    fullContext: loose.RAG_FULL_CONTEXT === true || loose.BYPASS_EMBEDDING_AND_RETRIEVAL === true,
    template: s.RAG_TEMPLATE,
  };
}

/**
 * The embedder the stored settings ask for (RAG_EMBEDDING_ENGINE…), made per request so an
 * admin's change applies to the next message. Throws on a misconfigured engine.
 */
export function embedderFor(settings: ChatSettings): Embedder {
  return createEmbedder(settings);
}

export interface RagItem extends Record<string, unknown> {
  type: string;
  id: string;
}

/**
 * The request's retrieval items: `files`, else `metadata.files`. Absent or null is none; anything
 * else that is not a list of objects is the client's mistake (400), as is a collection or file
 * item without a string id.
 */
export function ragItems(body: Record<string, unknown>): RagItem[] {
  const raw = body.files ?? (isObject(body.metadata) ? body.metadata.files : undefined);
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw) || !raw.every(isObject)) fail(400, 'files must be a list of objects like {"type": "collection", "id": "…"}');
  const out: RagItem[] = [];
  const seen = new Set<string>();
  for (const item of raw as Record<string, unknown>[]) {
    if (item.type !== 'collection' && item.type !== 'file') continue;
    if (typeof item.id !== 'string' || !item.id) fail(400, `a files item of type ${item.type} needs a string id`);
    // The same base or file twice is searched once (Open WebUI skips collections already extracted).
    const key = `${item.type}:${item.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(item as RagItem);
  }
  return out;
}

/** Text of the last user message (text blocks joined), Open WebUI's get_last_user_message. */
export function lastUserText(messages: readonly Record<string, unknown>[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'user') continue;
    if (typeof m.content === 'string') return m.content;
    if (Array.isArray(m.content)) return m.content.map((b) => (isObject(b) && b.type === 'text' && typeof b.text === 'string' ? b.text : '')).filter(Boolean).join('\n');
    return '';
  }
  return null;
}

export interface RagDeps {
  sql: Sql;
  /** The pool searches run on (db.ts openSearchDb). */
  searchSql: Sql;
  embedder: Embedder;
  /** The external reranker (hybrid search with RAG_RERANKING_ENGINE 'external'), or null. */
  reranker: Reranker | null;
  user: UserRow;
  settings: RagSettings;
  log: Logger;
}

/** What a chat needs to retrieve with the stored settings: embedder, reranker, numbers. */
export function ragDeps(sql: Sql, user: UserRow, log: Logger, stored: ChatSettings, searchSql: Sql): RagDeps {
  const settings = ragSettings(stored);
  const reranker = settings.hybrid ? createReranker(stored, (m) => log.warn({ reason: m }, 'reranking skipped')) : null;
  return { sql, searchSql, embedder: embedderFor(stored), reranker, user, settings, log };
}

/** The item as a source names it: the client's object without its `data`, named when it was not. */
function sourceItem(item: RagItem, name: string): Source['source'] {
  const { data: _data, ...rest } = item;
  return { ...rest, name: typeof rest.name === 'string' && rest.name ? rest.name : name };
}

/**
 * Chunk metadata as Open WebUI stores it with each vector (the file's id and name as its source),
 * plus the score its hybrid path writes into each chunk's metadata.
 */
function hitsToSource(source: Source['source'], hits: readonly ChunkHit[], hybrid: boolean): Source {
  return {
    source,
    document: hits.map((h) => h.content),
    metadata: hits.map((h) => ({
      ...h.meta,
      file_id: h.fileId,
      name: h.filename,
      source: h.filename,
      ...(h.knowledgeId ? { knowledge_id: h.knowledgeId } : {}),
      ...(hybrid ? { score: h.score } : {}),
    })),
    distances: hits.map((h) => h.score),
  };
}

/** The search of one knowledge base or file, with the settings' numbers and the reranker. */
async function search(deps: RagDeps, query: string, scope: Pick<SearchRequest, 'knowledgeIds' | 'fileIds'>, source: Source['source']): Promise<Source | null> {
  const { settings } = deps;
  const hits = await searchChunks(deps.searchSql, deps.embedder, {
    query,
    userId: deps.user.id,
    ...scope,
    k: settings.topK,
    hybrid: settings.hybrid,
    bm25Weight: settings.bm25Weight,
    threshold: settings.threshold,
    ...(deps.reranker ? { rerank: { reranker: deps.reranker, topK: settings.topKReranker } } : {}),
  });
  return hits.length ? hitsToSource(source, hits, searchMode(settings) !== 'vector') : null;
}

interface FullDoc {
  id: string;
  filename: string;
  content: string | null;
}

/** Whole documents (full-context mode): the extracted text, else the chunks in order. */
async function fullDocs(sql: Sql, fileIds: readonly string[] | null, knowledgeId: string | null): Promise<FullDoc[]> {
  const rows = await sql<FullDoc[]>`
    select f.id, f.filename, coalesce(f.data ->> 'content',
      (select string_agg(c.content, E'\n' order by c.chunk_index) from file_chunk c where c.file_id = f.id)) as content
    from file f
    where ${knowledgeId ? sql`f.id in (select file_id from knowledge_file where knowledge_id = ${knowledgeId})` : sql`f.id = any(${[...(fileIds ?? [])]}::text[])`}
    order by f.created_at, f.id`;
  return rows.filter((r) => r.content);
}

function docsToSource(source: Source['source'], docs: readonly FullDoc[], knowledgeId: string | null): Source {
  return {
    source,
    document: docs.map((d) => d.content ?? ''),
    metadata: docs.map((d) => ({ file_id: d.id, name: d.filename, source: d.filename, ...(knowledgeId ? { knowledge_id: knowledgeId } : {}) })),
  };
}

async function externalSource(deps: RagDeps, item: RagItem, kb: KnowledgeRow, query: string): Promise<Source | null> {
  const ext = externalOf(kb.meta)!;
  const source = sourceItem(item, kb.name);
  try {
    const connection = await getConnection(deps.sql, ext.connectionId);
    if (!connection) throw new ExternalSourceError('its connection was removed');
    const r = await retrieveExternal(connection, { id: kb.id, name: kb.name, source: ext.source }, query, deps.settings.topK, deps.embedder);
    return r.documents.length ? { source, document: r.documents, metadata: r.metadatas, distances: r.distances } : null;
  } catch (err) {
    const why = err instanceof ExternalSourceError ? err.message : 'an unexpected error';
    if (!(err instanceof ExternalSourceError)) deps.log.error({ err, knowledge: kb.id }, 'external knowledge retrieval failed');
    else deps.log.warn({ knowledge: kb.id, why }, 'external knowledge source did not answer');
    const notice = `The knowledge base "${kb.name}" could not be searched: ${why}.`;
    return {
      source: { ...source, error: notice },
      document: [notice],
      metadata: [{ name: kb.name, source: kb.name, knowledge_id: kb.id, knowledge_name: kb.name, external: true, error: true }],
      distances: [0],
    };
  }
}

async function itemSource(deps: RagDeps, item: RagItem, query: string): Promise<Source | null> {
  const { sql, user, settings } = deps;
  const full = item.context === 'full' || settings.fullContext;
  if (item.type === 'collection') {
    const found = await knowledgeAccess(sql, user, item.id);
    if (!found || !found.access) return null;
    const kb = found.knowledge;
    if (externalOf(kb.meta)) return externalSource(deps, item, kb, query);
    const source = sourceItem(item, kb.name);
    if (full) {
      const docs = await fullDocs(sql, null, kb.id);
      return docs.length ? docsToSource(source, docs, kb.id) : null;
    }
    return search(deps, query, { knowledgeIds: [kb.id] }, source);
  }
  // Open WebUI's file rule, shared with the files API: owner, admin, or through a readable base.
  const file = await accessibleFile(sql, user, item.id, 'read');
  if (!file) return null;
  const source = sourceItem(item, file.filename);
  if (full) {
    const docs = await fullDocs(sql, [file.id], null);
    return docs.length ? docsToSource(source, docs, null) : null;
  }
  return search(deps, query, { fileIds: [file.id] }, source);
}

/**
 * Items searched at once: enough that slow external sources wait side by side (each bounded by its
 * own deadline), few enough that a request naming hundreds of bases cannot take the whole pool.
 */
const ITEM_CONCURRENCY = 4;

/** Every item's source, in the request's order. */
export async function retrieveSources(deps: RagDeps, items: readonly RagItem[], query: string): Promise<Source[]> {
  if (!items.length || !query.trim()) return [];
  const found: (Source | null)[] = new Array(items.length).fill(null);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      found[i] = await itemSource(deps, items[i]!, query);
    }
  };
  await Promise.all(Array.from({ length: Math.min(ITEM_CONCURRENCY, items.length) }, lane));
  return found.filter((s): s is Source => s !== null);
}

/**
 * The messages with the context put in as Open WebUI does: by default (RAG_SYSTEM_CONTEXT off)
 * the filled template before the last user message's text (add_or_update_user_message with
 * append=False), or a new user message when the conversation does not end with one; with
 * `systemContext` after the system message's text (add_or_update_system_message, append=True),
 * which keeps the conversation's prefix stable for providers that cache prompts.
 */
export function withRagContext<M extends Record<string, unknown>>(messages: readonly M[], sources: readonly Source[], template: string, query: string, systemContext = false): M[] {
  const context = sourceContext(sources);
  if (!context) return [...messages];
  const text = ragTemplate(template, context, query);
  if (systemContext) return appendToSystem(messages, text);
  const out = [...messages];
  const last = out.at(-1);
  if (last && last.role === 'user') {
    if (Array.isArray(last.content)) {
      out[out.length - 1] = { ...last, content: last.content.map((b) => (isObject(b) && b.type === 'text' ? { ...b, text: `${text}\n${String(b.text ?? '')}` } : b)) };
    } else {
      out[out.length - 1] = { ...last, content: `${text}\n${typeof last.content === 'string' ? last.content : String(last.content ?? '')}` };
    }
  } else {
    out.push({ role: 'user', content: text } as unknown as M);
  }
  return out;
}
