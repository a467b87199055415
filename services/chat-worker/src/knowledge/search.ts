import type { Sql } from 'postgres';
import type { Embedder } from './embedder.ts';

/** One chunk a search found, with the file it came from. */
export interface ChunkHit {
  chunkId: string;
  fileId: string;
  /** The knowledge base the chunk was reached through, when the search was over knowledge bases. */
  knowledgeId: string | null;
  filename: string;
  content: string;
  meta: Record<string, unknown>;
  /** Higher is better; cosine similarity for vector search, the fused score for hybrid. */
  score: number;
}

export interface SearchRequest {
  query: string;
  /** Whose access limits the search (knowledge bases they may read, files they own). */
  userId: string;
  knowledgeIds?: string[];
  fileIds?: string[];
  k: number;
  hybrid: boolean;
  /** RAG_HYBRID_BM25_WEIGHT: the full-text ranking's share in the fusion (0..1). */
  bm25Weight: number;
  /** RAG_RELEVANCE_THRESHOLD: hits scoring below it are dropped. */
  threshold: number;
}

/**
 * Search chunks. Placeholder (vector only, exact, files of the caller or of the listed knowledge
 * bases without an access check) until the search work lands with the one-statement hybrid query.
 */
export async function searchChunks(sql: Sql, embedder: Embedder, req: SearchRequest): Promise<ChunkHit[]> {
  const [q] = await embedder.embed([req.query]);
  const vec = `[${q!.join(',')}]`;
  const rows = await sql<{ id: string; file_id: string; knowledge_id: string | null; filename: string; content: string; meta: Record<string, unknown>; score: number }[]>`
    select c.id::text, c.file_id, kf.knowledge_id, f.filename, c.content, c.meta, 1 - (c.embedding <=> ${vec}::vector) as score
    from file_chunk c
    join file f on f.id = c.file_id
    left join knowledge_file kf on kf.file_id = c.file_id and kf.knowledge_id = any(${req.knowledgeIds ?? []})
    where c.embedding_model = ${embedder.model}
      and (c.file_id = any(${req.fileIds ?? []}) or kf.knowledge_id is not null)
    order by c.embedding <=> ${vec}::vector
    limit ${req.k}`;
  return rows
    .map((r) => ({ chunkId: r.id, fileId: r.file_id, knowledgeId: r.knowledge_id, filename: r.filename, content: r.content, meta: r.meta, score: Number(r.score) }))
    .filter((h) => h.score >= req.threshold);
}
