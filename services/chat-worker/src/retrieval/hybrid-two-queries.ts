import type { Sql } from 'postgres';
import { vectorLiteral } from '../db.ts';
import type { Embedder } from './embedder.ts';
import { candidatesFor, hybridStatement, RRF_K, type SearchRequest } from './search.ts';

/**
 * The baseline the benchmark compares the one-statement hybrid with: Open WebUI's former way
 * (its pgvector client's hybrid_search before 0.10's native path) — a vector query and a
 * full-text query sent one after the other, each returning its candidates with their text, then
 * fused by weighted reciprocal rank in the worker. Same scope filter, same rankings, same
 * candidate depth as searchChunks, so only the shape differs. Not used by any route.
 */
export async function searchChunksTwoQueries(sql: Sql, embedder: Embedder, req: SearchRequest): Promise<{ id: string; content: string; score: number }[]> {
  const k = Math.max(1, Math.floor(req.k));
  const [q] = await embedder.embed([req.query]);
  const vec = vectorLiteral(q!);
  const cand = candidatesFor(k);
  type Row = { id: string; content: string; distance: number | null };
  const vecRows = await sql<Row[]>`${hybridStatement(sql, embedder.model, vec, req, 'vector', cand, cand)}`;
  const ftsRows = await sql<Row[]>`${hybridStatement(sql, embedder.model, vec, req, 'fulltext', cand, cand)}`;
  const fused = new Map<string, { row: Row; rrf: number }>();
  const add = (rows: Row[], w: number) =>
    rows.forEach((row, i) => {
      const e = fused.get(row.id) ?? { row, rrf: 0 };
      e.rrf += w / (RRF_K + i + 1);
      fused.set(row.id, e);
    });
  add(vecRows, 1 - req.bm25Weight);
  add(ftsRows, req.bm25Weight);
  return [...fused.values()]
    .sort((a, b) => b.rrf - a.rrf || Number(a.row.id) - Number(b.row.id))
    .slice(0, k)
    .map(({ row }) => ({ id: row.id, content: row.content, score: 1 - (row.distance === null ? 2 : Number(row.distance)) }))
    .filter((h) => h.score >= req.threshold);
}
