import type { Sql } from 'postgres';
import { embedLexical } from '@gatehouse/common';
import { vectorLiteral } from './db.ts';
import { memoryVectorText, type MemoryRow } from './memory-rules.ts';

/**
 * The `memory` table. Every query here is scoped by `user_id`: a memory is only ever visible to
 * the user who owns it, so other users' ids behave exactly like ids that do not exist.
 */

/** Columns of MemoryRow, in Open WebUI's field order (the embedding never leaves the database). */
export const MEMORY_COLUMNS = ['id', 'user_id', 'type', 'path', 'content', 'meta', 'updated_at', 'created_at'] as const;
const COLUMNS = MEMORY_COLUMNS as unknown as string[];

/** The pgvector literal of a memory's embedding (lexical-hash-v1 of "{path}\n{content}"). */
export const memoryEmbedding = (content: string, path: string | null): string => vectorLiteral(embedLexical(memoryVectorText(content, path)));

/** A user's memories, oldest first (Open WebUI's order is the table's; creation order is the closest stable one). */
export function userMemories(sql: Sql, userId: string): Promise<MemoryRow[]> {
  return sql<MemoryRow[]>`select ${sql(COLUMNS)} from memory where user_id = ${userId} order by created_at, id`;
}

export async function userMemory(sql: Sql, userId: string, id: string, forUpdate = false): Promise<MemoryRow | undefined> {
  const [row] = forUpdate
    ? await sql<MemoryRow[]>`select ${sql(COLUMNS)} from memory where id = ${id} and user_id = ${userId} for update`
    : await sql<MemoryRow[]>`select ${sql(COLUMNS)} from memory where id = ${id} and user_id = ${userId}`;
  return row;
}

export interface ScoredMemory extends MemoryRow {
  /**
   * Open WebUI's pgvector score: cosine distance d ∈ [0, 2] mapped to (2 − d) / 2 ∈ [0, 1], higher
   * is closer. `/memories/query` returns it in `distances` (Open WebUI's naming, not ours).
   */
  score: number;
}

/** The user's k memories closest in meaning to `text`, closest first. */
export async function nearestMemories(sql: Sql, userId: string, text: string, k: number): Promise<ScoredMemory[]> {
  const q = vectorLiteral(embedLexical(text));
  // Exact scan over one user's rows (the user_id index narrows it): per-user sets are small, and
  // an approximate index would rank across everyone's rows before the user filter applied.
  const rows = await sql<(MemoryRow & { distance: number })[]>`
    select ${sql(COLUMNS)}, embedding <=> ${q}::vector as distance
    from memory where user_id = ${userId}
    order by distance, id limit ${k}`;
  return rows.map(({ distance, ...m }) => ({ ...m, score: (2 - Number(distance)) / 2 }));
}

/**
 * Memories to inject into a prompt for `text` (the chat completion path, part 2): the user's `k`
 * most relevant memories, closest first, with their score. Empty when the user has none. The
 * caller decides on ENABLE_MEMORIES / ENABLE_MEMORY_SYSTEM_CONTEXT and the character budgets.
 */
export function relevantMemories(sql: Sql, userId: string, text: string, k = 8): Promise<ScoredMemory[]> {
  return nearestMemories(sql, userId, text, k);
}
