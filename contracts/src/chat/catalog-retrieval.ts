import { z } from 'zod';
import { catalog, GET, POST } from './catalog-kit.ts';

/**
 * The chat platform's retrieval (/api/v1/retrieval, Open WebUI 0.10.2 routers/retrieval.py):
 * query one collection or several, process text and files into collections, the RAG and
 * embedding settings. A collection is a knowledge base id, `file-<id>` (one file), or the name
 * process/text gave (the SHA-256 of its content unless one was asked for). Forms are Open WebUI's
 * pydantic forms (optional fields nullable); spread into CHAT_CATALOG (catalog.ts).
 */

const num = z.number();
const int = z.number().int();

export const QueryDocForm = z.object({
  collection_name: z.string(),
  query: z.string(),
  k: int.nullish(),
  k_reranker: int.nullish(),
  r: num.nullish(),
  hybrid: z.boolean().nullish(),
  hybrid_bm25_weight: num.nullish(),
});
export const QueryCollectionsForm = QueryDocForm.omit({ collection_name: true }).extend({
  collection_names: z.array(z.string()),
  enable_enriched_texts: z.boolean().nullish(),
});
export const ProcessTextForm = z.object({ name: z.string(), content: z.string(), collection_name: z.string().nullish() });
export const ProcessFileForm = z.object({ file_id: z.string(), content: z.string().nullish(), collection_name: z.string().nullish() });
export const ProcessUrlForm = z.object({ url: z.string(), collection_name: z.string().nullish() });
export const SearchForm = z.object({ queries: z.array(z.string()) });

/** The `web` section of the retrieval settings (Open WebUI's WebConfig); every field optional. */
export const WebConfigForm = z.looseObject({
  ENABLE_WEB_SEARCH: z.boolean().nullish(),
  WEB_SEARCH_ENGINE: z.string().nullish(),
  WEB_SEARCH_RESULT_COUNT: int.nullish(),
  WEB_LOADER_TIMEOUT: z.union([z.string(), num]).nullish(),
  WEB_FETCH_MAX_CONTENT_LENGTH: int.nullish(),
  SEARXNG_QUERY_URL: z.string().nullish(),
  SEARXNG_LANGUAGE: z.string().nullish(),
  BRAVE_SEARCH_API_KEY: z.string().nullish(),
  BRAVE_SEARCH_API_URL: z.string().nullish(),
  TAVILY_API_KEY: z.string().nullish(),
  TAVILY_API_URL: z.string().nullish(),
  YOUCOM_API_KEY: z.string().nullish(),
  YDC_API_KEY: z.string().nullish(),
  YOUCOM_API_URL: z.string().nullish(),
});

/** POST /config/update: every field optional (a missing or null one keeps its value); others are ignored. */
export const RetrievalConfigForm = z.looseObject({
  RAG_TEMPLATE: z.string().nullish(),
  TOP_K: int.nullish(),
  BYPASS_EMBEDDING_AND_RETRIEVAL: z.boolean().nullish(),
  RAG_FULL_CONTEXT: z.boolean().nullish(),
  ENABLE_RAG_HYBRID_SEARCH: z.boolean().nullish(),
  ENABLE_RAG_HYBRID_SEARCH_ENRICHED_TEXTS: z.boolean().nullish(),
  TOP_K_RERANKER: int.nullish(),
  RELEVANCE_THRESHOLD: num.nullish(),
  HYBRID_BM25_WEIGHT: num.nullish(),
  RAG_RERANKING_MODEL: z.string().nullish(),
  RAG_RERANKING_ENGINE: z.string().nullish(),
  RAG_EXTERNAL_RERANKER_URL: z.string().nullish(),
  RAG_EXTERNAL_RERANKER_API_KEY: z.string().nullish(),
  RAG_EXTERNAL_RERANKER_TIMEOUT: z.string().nullish(),
  TEXT_SPLITTER: z.string().nullish(),
  CHUNK_SIZE: int.nullish(),
  CHUNK_OVERLAP: int.nullish(),
  web: WebConfigForm.nullish(),
});

const ConnForm = z.object({ url: z.string(), key: z.string() });
export const EmbeddingUpdateForm = z.object({
  openai_config: ConnForm.nullish(),
  ollama_config: ConnForm.nullish(),
  azure_openai_config: ConnForm.extend({ version: z.string() }).nullish(),
  RAG_EMBEDDING_ENGINE: z.string(),
  RAG_EMBEDDING_MODEL: z.string(),
  RAG_EMBEDDING_BATCH_SIZE: int.nullish(),
  ENABLE_ASYNC_EMBEDDING: z.boolean().nullish(),
  RAG_EMBEDDING_CONCURRENT_REQUESTS: int.nullish(),
});

/**
 * A query's answer, one inner list per query (Open WebUI's SearchResult): vector search also
 * names the chunks (`ids`); hybrid answers distances (scores, higher is better), documents and
 * metadatas only.
 */
export const QueryResult = z.looseObject({
  ids: z.array(z.array(z.string())).optional(),
  distances: z.array(z.array(num)),
  documents: z.array(z.array(z.string())),
  metadatas: z.array(z.array(z.record(z.string(), z.unknown()))),
});
export const ProcessTextReply = z.looseObject({ status: z.literal(true), collection_name: z.string(), content: z.string() });
export const ProcessFileReply = z.looseObject({ status: z.literal(true), collection_name: z.string().nullable(), filename: z.string(), content: z.string() });
/** process/web: the page's collection and its text (Open WebUI's answer). */
export const ProcessWebReply = z.looseObject({
  status: z.literal(true),
  collection_name: z.string(),
  filename: z.string(),
  file: z.looseObject({ data: z.looseObject({ content: z.string() }), meta: z.looseObject({ name: z.string(), source: z.string() }) }),
});
/** process/web/search: the collection the fetched results went into, their links and the results. */
export const ProcessWebSearchReply = z.looseObject({
  status: z.literal(true),
  collection_names: z.array(z.string()),
  filenames: z.array(z.string()),
  items: z.array(z.looseObject({ link: z.string(), title: z.string().nullable(), snippet: z.string().nullable() })),
  loaded_count: int,
});
export const RetrievalConfig = z.looseObject({
  status: z.literal(true),
  TOP_K: int,
  ENABLE_RAG_HYBRID_SEARCH: z.boolean(),
  TOP_K_RERANKER: int,
  RELEVANCE_THRESHOLD: num,
  HYBRID_BM25_WEIGHT: num,
  TEXT_SPLITTER: z.string(),
  CHUNK_SIZE: int,
  CHUNK_OVERLAP: int,
});
export const EmbeddingConfig = z.looseObject({
  status: z.literal(true),
  RAG_EMBEDDING_ENGINE: z.string(),
  RAG_EMBEDDING_MODEL: z.string(),
  RAG_EMBEDDING_BATCH_SIZE: int,
  openai_config: z.object({ url: z.string(), key: z.string() }),
  ollama_config: z.object({ url: z.string(), key: z.string() }),
});

export const RETRIEVAL_OPS = catalog({
  'retrieval.queryDoc': { subject: 'chat.retrieval.queryDoc', routes: [POST('/api/v1/retrieval/query/doc')], body: QueryDocForm, reply: QueryResult, auth: 'verified', events: [] },
  'retrieval.queryCollection': {
    subject: 'chat.retrieval.queryCollection',
    routes: [POST('/api/v1/retrieval/query/collection')],
    body: QueryCollectionsForm,
    reply: QueryResult,
    auth: 'verified',
    events: [],
  },
  'retrieval.processText': {
    subject: 'chat.retrieval.processText',
    routes: [POST('/api/v1/retrieval/process/text')],
    body: ProcessTextForm,
    reply: ProcessTextReply,
    auth: 'verified',
    events: ['file.uploaded', 'file.content_updated', 'knowledge.file.added'],
  },
  'retrieval.processFile': {
    subject: 'chat.retrieval.processFile',
    routes: [POST('/api/v1/retrieval/process/file')],
    body: ProcessFileForm,
    reply: ProcessFileReply,
    auth: 'verified',
    events: ['file.content_updated', 'knowledge.file.added'],
  },
  'retrieval.processWeb': {
    subject: 'chat.retrieval.processWeb',
    routes: [POST('/api/v1/retrieval/process/web')],
    body: ProcessUrlForm,
    reply: ProcessWebReply,
    auth: 'verified',
    events: ['file.uploaded', 'file.content_updated', 'knowledge.file.added'],
  },
  'retrieval.processWebSearch': {
    subject: 'chat.retrieval.processWebSearch',
    routes: [POST('/api/v1/retrieval/process/web/search')],
    body: SearchForm,
    reply: ProcessWebSearchReply,
    auth: 'verified',
    events: ['file.uploaded', 'file.content_updated'],
  },
  'retrieval.config.get': { subject: 'chat.retrieval.config.get', routes: [GET('/api/v1/retrieval/config')], reply: RetrievalConfig, auth: 'admin', events: [] },
  // Open WebUI's route is /config/update; POST /config is accepted too (the issue names it).
  'retrieval.config.update': {
    subject: 'chat.retrieval.config.update',
    routes: [POST('/api/v1/retrieval/config/update'), POST('/api/v1/retrieval/config')],
    body: RetrievalConfigForm,
    reply: RetrievalConfig,
    auth: 'admin',
    events: ['config.updated'],
  },
  'retrieval.embedding.get': { subject: 'chat.retrieval.embedding.get', routes: [GET('/api/v1/retrieval/embedding')], reply: EmbeddingConfig, auth: 'admin', events: [] },
  'retrieval.embedding.update': {
    subject: 'chat.retrieval.embedding.update',
    routes: [POST('/api/v1/retrieval/embedding/update')],
    body: EmbeddingUpdateForm,
    reply: EmbeddingConfig,
    auth: 'admin',
    events: ['config.updated'],
  },
});
