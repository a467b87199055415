import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { embedLexical } from '@gatehouse/common';
import { vectorLiteral } from '../db.ts';
import { memoryVectorText, type MemoryRow } from './rules.ts';

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

/** A new memory of `userId`, embedded in the same statement; answers the stored row. */
export async function insertMemory(
  sql: Sql,
  userId: string,
  m: { type: string; path: string | null; content: string; meta: Record<string, unknown> | undefined },
  t: number,
): Promise<MemoryRow> {
  const [row] = await sql<MemoryRow[]>`insert into memory (id, user_id, type, path, content, meta, embedding, created_at, updated_at)
    values (${randomUUID()}, ${userId}, ${m.type}, ${m.path}, ${m.content}, ${sql.json(m.meta as never)},
      ${memoryEmbedding(m.content, m.path)}::vector, ${t}, ${t})
    returning ${sql(COLUMNS)}`;
  return row!;
}

/** The user's oldest memory with exactly this content, type and path (batch adds skip it). */
export async function duplicateMemory(sql: Sql, userId: string, m: { type: string; path: string | null; content: string }): Promise<MemoryRow | undefined> {
  const [row] = await sql<MemoryRow[]>`select ${sql(COLUMNS)} from memory
    where user_id = ${userId} and content = ${m.content} and type = ${m.type} and path is not distinct from ${m.path}
    order by created_at, id limit 1`;
  return row;
}

/**
 * Rewrite one of the user's memories (re-embedded); `metaPatch` is merged key by key over the
 * stored meta, none leaves it. Undefined when the user has no such memory.
 */
export async function updateMemory(
  sql: Sql,
  userId: string,
  id: string,
  next: { type: string; path: string | null; content: string },
  metaPatch: Record<string, unknown> | undefined,
  t: number,
): Promise<MemoryRow | undefined> {
  const meta = metaPatch ? sql`coalesce(meta, '{}'::jsonb) || ${sql.json(metaPatch as never)}::jsonb` : sql`meta`;
  const [row] = await sql<MemoryRow[]>`update memory set content = ${next.content}, type = ${next.type}, path = ${next.path},
      meta = ${meta}, embedding = ${memoryEmbedding(next.content, next.path)}::vector, updated_at = ${t}
    where id = ${id} and user_id = ${userId} returning ${sql(COLUMNS)}`;
  return row;
}

/** Delete one of the user's memories; false when they have no such memory (a stranger's included). */
export async function deleteMemory(sql: Sql, userId: string, id: string): Promise<boolean> {
  return (await sql`delete from memory where id = ${id} and user_id = ${userId} returning id`).length > 0;
}

export async function deleteUserMemories(sql: Sql, userId: string): Promise<void> {
  await sql`delete from memory where user_id = ${userId}`;
}

export async function hasMemories(sql: Sql, userId: string): Promise<boolean> {
  return (await sql`select 1 from memory where user_id = ${userId} limit 1`).length > 0;
}

/** Recompute every embedding of the user's memories (rows locked meanwhile); answers how many. */
export async function reembedMemories(sql: Sql, userId: string): Promise<number> {
  const rows = await sql<MemoryRow[]>`select ${sql(COLUMNS)} from memory where user_id = ${userId} order by created_at, id for update`;
  for (const m of rows) {
    await sql`update memory set embedding = ${memoryEmbedding(m.content, m.path)}::vector where id = ${m.id} and user_id = ${userId}`;
  }
  return rows.length;
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
