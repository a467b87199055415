import type { PendingQuery, Row, Sql } from 'postgres';
import { LEXICAL_HASH_DIMENSION, LEXICAL_HASH_MODEL } from '@gatehouse/common';
import type { UserRow } from '../context.ts';
import { vectorLiteral } from '../db.ts';
import { readableKnowledgeIds } from '../knowledge/access.ts';
import type { Embedder } from './embedder.ts';
import type { Reranker } from './rerank.ts';

/** One chunk a search found, with the file it came from. */
export interface ChunkHit {
  chunkId: string;
  fileId: string;
  /** The knowledge base the chunk was reached through, when the search was over knowledge bases. */
  knowledgeId: string | null;
  filename: string;
  content: string;
  meta: Record<string, unknown>;
  chunkIndex: number;
  /**
   * Higher is better, in Open WebUI's ranges: vector search (2 − cosine distance) / 2 in [0, 1]
   * (its pgvector client); hybrid the cosine similarity of query and chunk (its RerankCompressor
   * without a reranker) or the reranker's relevance score.
   */
  score: number;
}

export interface SearchRequest {
  query: string;
  /**
   * Whose access limits the search, checked inside the statement: knowledge bases they own or
   * have a grant on (theirs, a group's, everyone's), files they own or that are in such a
   * knowledge base; an admin (read from "user" in the same statement) reaches everything.
   */
  userId: string;
  knowledgeIds?: string[];
  fileIds?: string[];
  /** Collections named by process/text (file.meta.collection_name), the owner's only. */
  collectionNames?: string[];
  k: number;
  hybrid: boolean;
  /** RAG_HYBRID_BM25_WEIGHT: the full-text ranking's share in the fusion (0..1; 1 = full text only, 0 = vectors only). */
  bm25Weight: number;
  /** RAG_RELEVANCE_THRESHOLD: hits scoring below it are dropped. */
  threshold: number;
  /** Text-search configurations the query is parsed with (the chunks' `language`s); default english. */
  languages?: string[];
  /** Hybrid with a reranker: its scores order the fused candidates; RAG_TOP_K_RERANKER of them are kept. */
  rerank?: { reranker: Reranker; topK: number };
}

/** Reciprocal rank fusion's constant (LangChain's EnsembleRetriever, which Open WebUI uses: c = 60). */
export const RRF_K = 60;
/** Each arm of the hybrid contributes this many candidates per result asked for (at least 20). */
const CANDIDATES_PER_RESULT = 5;
const MIN_CANDIDATES = 20;
const MAX_CANDIDATES = 400;
/**
 * A scope of at most this many chunks is ranked exactly: every chunk in it scored (by vector, and
 * matched by words), then sorted. The HNSW graph is walked, and the full-text GIN index read, for
 * larger ones. Walking the graph for a small scope (one file of a chat's attachment, a small
 * knowledge base in a big store) visits up to hnsw.max_scan_tuples graph entries to find the few
 * that pass the filter: 150 ms for one file among 100 000 chunks, where scoring its chunks takes
 * well under a millisecond; the GIN index finds every matching chunk of the store (hundreds for a
 * common word) to keep the file's few. Counting stops at the bound.
 */
export const EXACT_SCOPE_MAX = 2000;
/** Beyond this many files a scope counts as large without counting its chunks (reading them would cost more than it saves). */
const EXACT_SCOPE_FILES = 200;

export type SearchMode = 'vector' | 'fulltext' | 'hybrid';

/** Open WebUI's choice: hybrid off → vectors; on → weight 1 is BM25 alone, 0 vectors alone, else both. */
export function searchMode(req: Pick<SearchRequest, 'hybrid' | 'bm25Weight'>): SearchMode {
  if (!req.hybrid) return 'vector';
  if (req.bm25Weight >= 1) return 'fulltext';
  if (req.bm25Weight <= 0) return 'vector';
  return 'hybrid';
}

/**
 * A chunk `c` is in the caller's scope (the `kbs` and `files` of the statement), checked per chunk
 * through knowledge_file's file index. `offset 0` keeps the planner from turning the EXISTS into a
 * hashed list of every file of the knowledge bases (16 500 rows for the benchmark's, built again
 * in each arm before the first row: a few ms), which it prefers when it expects many rows to test;
 * an arm tests at most a few hundred.
 */
const inScope = (sql: Sql) =>
  sql`(c.file_id in (select id from files)
       or exists (select 1 from knowledge_file kf where kf.file_id = c.file_id and kf.knowledge_id in (select id from kbs) offset 0))`;

/** SQL text: a lexeme escaped for a quoted tsquery operand (backslash and quote doubled). */
const LEXEME_ESCAPE = (col: string) => `replace(replace(${col}, '\\', '\\\\'), '''', '''''')`;

/** A lexeme in more than this share of chunks (ANALYZE's statistics) does not select fallback chunks. */
const COMMON_LEXEME = 0.01;

export const candidatesFor = (k: number): number => Math.min(MAX_CANDIDATES, Math.max(MIN_CANDIDATES, k * CANDIDATES_PER_RESULT));

/**
 * Search chunks in one SQL statement: the caller's scope (the files of the knowledge bases they
 * may read, and the files they may read, computed inside the query so nothing unreadable is ever
 * ranked), the pgvector nearest neighbours of the query embedding (the HNSW index of the default
 * model, iterative scan so the scope filter does not cut results short), the full-text matches
 * ranked by ts_rank_cd, fused by weighted reciprocal rank, then the threshold (and a reranker,
 * when configured, over the fused candidates).
 */
export async function searchChunks(sql: Sql, embedder: Embedder, req: SearchRequest): Promise<ChunkHit[]> {
  const k = Math.max(1, Math.floor(req.k));
  const mode = searchMode(req);
  const [q] = await embedder.embed([req.query]);
  const rerank = mode !== 'vector' && req.rerank ? req.rerank : undefined;
  // With a reranker, it picks from a wider fused list (Open WebUI reranks the union of both arms).
  const limit = rerank ? Math.max(k, rerank.topK) * 2 : k;
  const rows = await sql<HitRow[]>`${hybridStatement(sql, embedder.model, vectorLiteral(q!), req, mode, limit)}`;
  let hits = rows.map(toHit(mode));
  if (rerank && hits.length) {
    const scores = await rerank.reranker(req.query, hits.map((h) => h.content));
    if (scores) {
      hits = hits
        .map((h, i) => ({ ...h, score: scores[i]! }))
        .filter((h) => Number.isFinite(h.score))
        .sort((a, b) => b.score - a.score);
    }
    hits = hits.filter((h) => h.score >= req.threshold).slice(0, Math.min(k, rerank.topK));
    return hits;
  }
  return hits.filter((h) => h.score >= req.threshold).slice(0, k);
}

interface HitRow {
  id: string;
  file_id: string;
  knowledge_id: string | null;
  filename: string;
  content: string;
  meta: Record<string, unknown>;
  chunk_index: number;
  distance: number | null;
}

/**
 * A chunk's meta as an object. Rows written with a JSON *string* bound to a jsonb parameter hold a
 * JSON string (postgres.js serialises the string again); read those back as the object they say.
 */
function metaObject(m: unknown): Record<string, unknown> {
  if (typeof m === 'string') {
    try {
      const parsed: unknown = JSON.parse(m);
      return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  }
  return m && typeof m === 'object' && !Array.isArray(m) ? (m as Record<string, unknown>) : {};
}

const toHit =
  (mode: SearchMode) =>
  (r: HitRow): ChunkHit => {
    const d = r.distance === null ? 2 : Number(r.distance);
    return {
      chunkId: r.id,
      fileId: r.file_id,
      knowledgeId: r.knowledge_id,
      filename: r.filename,
      content: r.content,
      meta: metaObject(r.meta),
      chunkIndex: r.chunk_index,
      // Open WebUI: pgvector's vector search normalises (2 − d) / 2; hybrid reports cosine similarity.
      score: mode === 'vector' ? (2 - d) / 2 : 1 - d,
    };
  };

/** A piece of the statement's text, with its parameters (a tagged `sql` fragment or `sql.unsafe` text). */
type Fragment = PendingQuery<(Row & Iterable<Row>)[]> | PendingQuery<Row[]>;

/** What the statement's parts share: the request and the constants and expressions it is planned with. */
interface StatementPlan {
  sql: Sql;
  req: SearchRequest;
  /** The embedder's model and the query's vector (a pgvector literal). */
  model: string;
  vec: string;
  /** An integer as a constant of the text, not a parameter (see `hybridStatement`). */
  int: (n: number) => Fragment;
  /** Candidates each arm ranks. */
  cand: Fragment;
  exactMax: number;
  /** The embedder's model is the one the HNSW index covers. */
  indexed: boolean;
  /** The arms' weights in the fusion (one is 0 in a single-arm mode). */
  wText: number;
  wVec: number;
  langs: string[];
  vecExpr: Fragment;
  qVec: Fragment;
  modelIs: Fragment;
  /** hnsw.ef_search for this statement. */
  ef: string;
  /** The caller as a plain user: the grant fragments' input (admins are decided in SQL). */
  user: UserRow;
}

/**
 * The one statement. Exported for the benchmark, which times it in Postgres alone.
 * `$model` is the embedder's model: only chunks embedded by it are compared by vector (a
 * different model's vectors mean nothing to this query); full text reaches every chunk in scope.
 * Its parts, in order: the caller's scope (`scopeCtes`), the scope's size when an arm needs it
 * (`scopeSizeCtes`), the vector arm (`vectorCtes`), the full-text arm (`fullTextCtes`), and the
 * fusion with the rows answered (`fusedSelect`).
 */
export function hybridStatement(
  sql: Sql,
  model: string,
  vec: string,
  req: SearchRequest,
  mode: SearchMode,
  limit: number,
  depth = candidatesFor(limit),
  /** The exact-ranking bound; the benchmark passes 0 to time a small scope through the indexes. */
  exactMax = EXACT_SCOPE_MAX,
) {
  const p = statementPlan(sql, model, vec, req, mode, depth, exactMax);
  return sql`
${scopeCtes(p)}    ${scopeSizeCtes(p)}
    ${vectorCtes(p)}
    ${fullTextCtes(p)}
${fusedSelect(p, limit)}`;
}

function statementPlan(sql: Sql, model: string, vec: string, req: SearchRequest, mode: SearchMode, depth: number, exactMax: number): StatementPlan {
  // Integers computed here go into the text as constants, not parameters: a LIMIT the planner
  // cannot see is assumed to take a tenth of the table, which changes the plan it caches.
  const int = (n: number) => sql.unsafe(String(Math.floor(n)));
  const wText = mode === 'fulltext' ? 1 : mode === 'vector' ? 0 : req.bm25Weight;
  const indexed = model === LEXICAL_HASH_MODEL;
  return {
    sql,
    req,
    model,
    vec,
    int,
    cand: int(depth),
    exactMax,
    indexed,
    wText,
    wVec: 1 - wText,
    langs: req.languages?.length ? req.languages : ['english'],
    // The HNSW index is on (embedding::vector(384)) for the default model only: its expression and
    // predicate must appear verbatim (constants, not parameters) for the planner to use it.
    vecExpr: indexed ? sql.unsafe(`c.embedding::vector(${LEXICAL_HASH_DIMENSION}) <=> `) : sql`c.embedding <=> `,
    qVec: indexed ? sql`${vec}::vector(${sql.unsafe(String(LEXICAL_HASH_DIMENSION))})` : sql`${vec}::vector`,
    modelIs: indexed ? sql.unsafe(`c.embedding_model = '${LEXICAL_HASH_MODEL}'`) : sql`c.embedding_model = ${model}`,
    // ef_search at least the candidates wanted; relaxed iterative scan keeps walking the graph
    // while the scope filter rejects rows. set_config(…, true) lasts for this statement's
    // transaction only; it sits in a constant sub-select, which Postgres evaluates once before the
    // scan's first row (a gating InitPlan), so the index scan reads the raised values.
    ef: String(Math.min(1000, Math.max(40, depth * 2))),
    // Admins are decided in SQL (below), so the grant fragment is the plain user's.
    user: { id: req.userId, role: 'user' } as UserRow, // readableKnowledgeIds reads id and role only
  };
}

/** `me` (is the caller an admin), `kbs` and `files`: the caller's scope. */
function scopeCtes({ sql, req, user }: StatementPlan): Fragment {
  return sql`
    with me as materialized (
      select coalesce((select role = 'admin' from "user" where id = ${req.userId}), false) as admin
    ),
    -- The caller's scope, kept small: the knowledge bases asked for that they may read, and the
    -- files asked for that they may read. A chunk is in scope when its file is one of those files
    -- or is linked to one of those knowledge bases (checked per candidate through knowledge_file's
    -- file index, so a big knowledge base is never listed file by file).
    -- A part of the scope nothing was asked for is left out of the text: the statement is planned
    -- on every execution (its parameters decide the plan), and planning costs per sub-query.
    kbs as materialized (
      ${
        req.knowledgeIds?.length
          ? sql`select k.id from knowledge k
      where k.id = any(${req.knowledgeIds}::text[])
        and ((select admin from me) or k.id in (${readableKnowledgeIds(sql, user)}))`
          : sql`select null::text as id where false`
      }
    ),
    files as materialized (
      select null::text as id where false
      ${
        req.fileIds?.length
          ? sql`union all
      select f.id from file f
      where f.id = any(${req.fileIds}::text[])
        and ((select admin from me) or f.user_id = ${req.userId}
             or exists (select 1 from knowledge_file kf2 where kf2.file_id = f.id and kf2.knowledge_id in (${readableKnowledgeIds(sql, user)})))`
          : sql``
      }
      ${
        req.collectionNames?.length
          ? sql`union all
      select f.id from file f
      where f.meta ->> 'collection_name' = any(${req.collectionNames}::text[])
        and ((select admin from me) or f.user_id = ${req.userId})`
          : sql``
      }
    ),
`;
}

/** `scope_files` and `scope_size`, when an arm ranks a small scope exactly (the indexed vector arm, full text). */
function scopeSizeCtes({ sql, int, exactMax, indexed, wText, wVec }: StatementPlan): Fragment {
  if (!((wVec > 0 && indexed) || wText > 0)) return sql``;
  return sql`-- How many chunks the scope holds, counted up to the bound: it decides, as the statement runs
    -- (a one-time filter on each arm below), whether the chunks are ranked exactly or through the
    -- indexes (the HNSW graph, the full-text GIN index). When it is small, scope_files lists every
    -- file in it (more than ${int(EXACT_SCOPE_FILES)} files count as large).
    scope_files as materialized (
      select id from files
      union
      (select kf.file_id from knowledge_file kf where kf.knowledge_id in (select id from kbs) limit ${int(EXACT_SCOPE_FILES + 1)})
    ),
    scope_size as materialized (
      select case when (select count(*) from scope_files) > ${int(EXACT_SCOPE_FILES)} then ${int(exactMax + 1)}
             else (select count(*) from (
                     select 1 from scope_files f
                     cross join lateral (select 1 from file_chunk c where c.file_id = f.id limit ${int(exactMax + 1)}) x
                     limit ${int(exactMax + 1)}) y)
             end as n
    ),`;
}

/** `vec` and `vec_ranked`: the nearest neighbours (exact in a small scope, the HNSW graph in a large one). */
function vectorCtes({ sql, int, cand, exactMax, indexed, wVec, vecExpr, qVec, modelIs, ef }: StatementPlan): Fragment {
  if (wVec > 0 && indexed) {
    return sql`vec as materialized (
      (select id, d from (
         select c.id, c.d
         from scope_files f
         -- Per file through the (file_id, chunk_index) index: the planner cannot know the scope is small.
         cross join lateral (select c.id, ${vecExpr}${qVec} as d from file_chunk c where c.file_id = f.id and ${modelIs}) c
         where (select n from scope_size) <= ${int(exactMax)}
         -- Every chunk in scope is scored here; the fence keeps the ORDER BY below from being
         -- answered by the HNSW index.
         offset 0
       ) exact
       order by d, id
       limit ${cand})
      union all
      (select c.id, ${vecExpr}${qVec} as d
      from file_chunk c
      where ${modelIs}
        -- A filter on the index scan: under an OR, neither test becomes a join (which would make
        -- the planner rank every chunk in scope exactly instead of walking the HNSW graph).
        and ${inScope(sql)}
        and (select n from scope_size) > ${int(exactMax)}
        and (select set_config('hnsw.ef_search', ${ef}, true) || set_config('hnsw.iterative_scan', 'relaxed_order', true)
                    || set_config('hnsw.max_scan_tuples', '200000', true)) is not null
      order by ${vecExpr}${qVec}
      limit ${cand})
    ),
    vec_ranked as (
      select id, row_number() over (order by d, id) as r from vec
    ),`;
  }
  if (wVec > 0) {
    return sql`vec as materialized (
      select c.id, ${vecExpr}${qVec} as d
      from file_chunk c
      where ${modelIs}
        and ${inScope(sql)}
      order by ${vecExpr}${qVec}
      limit ${cand}
    ),
    vec_ranked as (
      select id, row_number() over (order by d, id) as r from vec
    ),`;
  }
  return sql`vec_ranked as (select null::bigint as id, null::bigint as r where false),`;
}

/** `lex` … `fts_ranked`: the full-text matches, every word first, then the less common words' fallback. */
function fullTextCtes({ sql, req, int, cand, exactMax, wText, langs }: StatementPlan): Fragment {
  if (!(wText > 0)) return sql`fts_ranked as (select null::bigint as id, null::bigint as r where false),`;
  return sql`lex as (
      select distinct l, w from unnest(${langs}::regconfig[]) l, unnest(tsvector_to_array(to_tsvector(l, ${req.query}))) w
    ),
    -- Lexemes in more than ${sql.unsafe(String(COMMON_LEXEME * 100))} % of chunks, from the statistics ANALYZE keeps for tsv
    -- (most_common_elems): too common to pick chunks by in the two-word fallback.
    common as (
      select e.w from pg_stats s, unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) as e(w, f)
      where s.schemaname = current_schema() and s.tablename = 'file_chunk' and s.attname = 'tsv' and e.f > ${COMMON_LEXEME}
    ),
    rare as (select l, w from lex where w not in (select w from common)),
    tsq as materialized (
      select (select string_agg('(' || x::text || ')', ' | ')
              from unnest(${langs}::regconfig[]) l, lateral (select websearch_to_tsquery(l, ${req.query}) as x) p
              where numnode(p.x) > 0)::tsquery as all_q,
             (select string_agg('''' || ${sql.unsafe(LEXEME_ESCAPE('w'))} || '''', ' | ') from lex)::tsquery as any_q
    ),
    -- Apart from tsq, so that the statistics are read only when the fallback runs (a CTE is
    -- computed when first read, and the fallback's scan is skipped when every-word found enough).
    tsq_fallback as materialized (
      select (select string_agg('(''' || ${sql.unsafe(LEXEME_ESCAPE('a.w'))} || ''' & ''' || ${sql.unsafe(LEXEME_ESCAPE('b.w'))} || ''')', ' | ')
              from rare a join rare b on a.l = b.l and a.w < b.w)::tsquery as pair_q,
             (select string_agg('''' || ${sql.unsafe(LEXEME_ESCAPE('w'))} || '''', ' | ') from rare)::tsquery as rare_q
    ),
    -- Every word of the query (websearch syntax: "phrases", -not, or) first; only when that finds
    -- fewer than wanted, chunks with at least two of its less common words (the one, when only one
    -- is). In a large scope, chunks sharing only common words are never ranked: that would score
    -- tens of thousands.
    -- A small scope's chunks are read file by file (scope_chunks) and matched one by one; a large
    -- one is searched through the GIN index, then filtered by scope. The index would otherwise
    -- find every matching chunk of the whole store (hundreds for a common word) to keep the few of
    -- one attached file.
    scope_chunks as not materialized (
      select c.id, c.tsv
      from scope_files f
      -- Per file through the (file_id, chunk_index) index; the fence keeps the word test out of
      -- the scan, where the planner would answer it from the GIN index over every chunk.
      cross join lateral (select c.id, c.tsv from file_chunk c where c.file_id = f.id offset 0) c
      where (select n from scope_size) <= ${int(exactMax)}
    ),
    fts_all as materialized (
      (select c.id, ts_rank_cd(c.tsv, tsq.any_q, 1) + 1 as rank
       from scope_chunks c, tsq
       where c.tsv @@ tsq.all_q
       order by rank desc, c.id
       limit ${cand})
      union all
      (select c.id, ts_rank_cd(c.tsv, tsq.any_q, 1) + 1 as rank
       from file_chunk c, tsq
       where c.tsv @@ tsq.all_q
         and ${inScope(sql)}
         and (select n from scope_size) > ${int(exactMax)}
       order by rank desc, c.id
       limit ${cand})
    ),
    fts as materialized (
      select id, rank from fts_all
      union all
      -- A small scope ranks every chunk sharing a word with the query: there are few to rank, and
      -- the statistics the large scope's fallback reads cost more than the ranking (about 1 ms).
      (select c.id, ts_rank_cd(c.tsv, tsq.any_q, 1) as rank
       from scope_chunks c, tsq
       where c.tsv @@ tsq.any_q
         and not (c.tsv @@ coalesce(tsq.all_q, ''::tsquery))
         and (select count(*) from fts_all) < ${cand}
       order by rank desc, c.id
       limit ${cand})
      union all
      (select c.id, ts_rank_cd(c.tsv, tsq.any_q, 1) as rank
       from file_chunk c, tsq, tsq_fallback f
       where c.tsv @@ coalesce(f.pair_q, f.rare_q)
         and not (c.tsv @@ coalesce(tsq.all_q, ''::tsquery))
         and ${inScope(sql)}
         and (select n from scope_size) > ${int(exactMax)}
         and (select count(*) from fts_all) < ${cand}
       order by rank desc, c.id
       limit ${cand})
    ),
    fts_ranked as (
      select id, row_number() over (order by rank desc, id) as r from fts
    ),`;
}

/** `fused` (weighted reciprocal rank of both arms) and the chunks it ranks first, with their file and distance. */
function fusedSelect({ sql, int, wText, wVec, model, vec }: StatementPlan, limit: number): Fragment {
  return sql`    fused as (
      select id, sum(w) as rrf
      from (
        select id, ${wVec}::float8 / (${int(RRF_K)} + r) as w from vec_ranked
        union all
        select id, ${wText}::float8 / (${int(RRF_K)} + r) as w from fts_ranked
      ) x
      group by id
      order by rrf desc, id
      limit ${int(limit)}
    )
    select c.id::text as id, c.file_id, c.content, c.meta, c.chunk_index, f.filename,
           (select kf.knowledge_id from knowledge_file kf where kf.file_id = c.file_id and kf.knowledge_id in (select id from kbs)
            order by kf.knowledge_id limit 1) as knowledge_id,
           case when c.embedding_model = ${model} then c.embedding <=> ${vec}::vector end as distance
    from fused
    join file_chunk c on c.id = fused.id
    join file f on f.id = c.file_id
    order by fused.rrf desc, c.id`;
}
