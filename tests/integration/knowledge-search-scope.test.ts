import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, testDatabaseUrl } from '../support/local-stack.ts';
import { openSearchDb, vectorLiteral } from '../../services/chat-worker/src/db.ts';
import { lexicalEmbedder } from '../../services/chat-worker/src/retrieval/embedder.ts';
import { EXACT_SCOPE_MAX, hybridStatement, searchChunks, type SearchRequest } from '../../services/chat-worker/src/retrieval/search.ts';

/**
 * The knowledge search statement (services/chat-worker/src/retrieval/search.ts) decides per query,
 * as it runs, how to rank: a small scope (a chat's attached file) is scored chunk by chunk,
 * exactly, by vector and by words; a large one walks the HNSW graph and reads the full-text GIN
 * index. Real Postgres + pgvector, the chat schema
 * migrated by the one runner, the worker's search pool (generic plans). Chunks are written
 * straight to the tables so that a scope above the bound costs no ingestion.
 */
const stack = new Stack();
const schema = `chat_${stack.ns}`;
let sql: ReturnType<typeof openSearchDb>;
const userId = randomUUID();
const small = { id: randomUUID(), chunks: 40 };
const large = { id: randomUUID(), chunks: EXACT_SCOPE_MAX + 50 };
const WORDS = ['kernel', 'scheduler', 'garden', 'tomato', 'bread', 'crust', 'socket', 'packet', 'river', 'mountain', 'violin', 'engine', 'cloud', 'harbour'];
const text = (i: number) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + 3) % WORDS.length]} note ${i} ${WORDS[(i * 5 + 1) % WORDS.length]}`;

async function addFile(file: { id: string; chunks: number }): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  await sql`insert into file (id, user_id, hash, filename, path, data, meta, created_at, updated_at)
    values (${file.id}, ${userId}, null, ${file.id + '.txt'}, null, '{"status":"completed"}'::jsonb, '{}'::jsonb, ${now}, ${now})`;
  const contents = Array.from({ length: file.chunks }, (_, i) => text(i));
  const vectors = await lexicalEmbedder.embed(contents);
  await sql`insert into file_chunk (file_id, chunk_index, content, meta, embedding_model, embedding)
    select ${file.id}, r.i, r.content, '{}'::jsonb, ${lexicalEmbedder.model}, r.v::vector
    from unnest(${contents.map((_, i) => i)}::int[], ${contents}::text[], ${vectors.map((v) => vectorLiteral(v))}::text[]) as r(i, content, v)`;
}

const request = (fileId: string, query: string, k = 5): SearchRequest => ({ query, userId, fileIds: [fileId], k, hybrid: false, bm25Weight: 0.5, threshold: 0 });
/** Full text only: hybrid with the BM25 weight at 1. */
const wordsRequest = (fileId: string, query: string, k = 5): SearchRequest => ({ ...request(fileId, query, k), hybrid: true, bm25Weight: 1 });

/** The executed plan of the search statement, as text. */
async function plan(fileId: string, query: string, mode: 'vector' | 'fulltext' = 'vector'): Promise<string> {
  const [q] = await lexicalEmbedder.embed([query]);
  const req = mode === 'vector' ? request(fileId, query) : wordsRequest(fileId, query);
  const rows = await sql<{ 'QUERY PLAN': string }[]>`explain (analyze, costs off, timing off, summary off) ${hybridStatement(sql, lexicalEmbedder.model, vectorLiteral(q!), req, mode, 5)}`;
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

/** The index scan line of the HNSW arm. */
const hnswScan = (p: string): string => p.split('\n').find((l) => l.includes('file_chunk_lexical_hnsw')) ?? '';
/** The full-text GIN index's scan lines (the every-word arm and the fallback). */
const ginScans = (p: string): string[] => p.split('\n').filter((l) => l.includes('file_chunk_tsv'));

beforeAll(async () => {
  await stack.migrate('chat', stack.chatEnv());
  sql = openSearchDb(testDatabaseUrl(), schema, 2);
  const now = Math.floor(Date.now() / 1000);
  await sql`insert into "user" (id, email, name, role, password_hash, last_active_at, created_at, updated_at)
    values (${userId}, ${userId + '@scope.test'}, 'Scope', 'user', 'none', ${now}, ${now}, ${now})`;
  await addFile(small);
  await addFile(large);
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await stack.close();
});

describe('knowledge search: exact for a small scope, the graph for a large one', () => {
  it('a small scope is ranked exactly: the same chunks, in the same order, as scoring every chunk of the file', async () => {
    for (const query of ['kernel scheduler', 'tomato garden bread', 'violin harbour engine']) {
      const hits = await searchChunks(sql, lexicalEmbedder, request(small.id, query));
      const [q] = await lexicalEmbedder.embed([query]);
      const expected = await sql<{ id: string }[]>`
        select id::text as id from file_chunk where file_id = ${small.id}
        order by embedding::vector(384) <=> ${vectorLiteral(q!)}::vector(384), id limit 5`;
      expect(hits.map((h) => h.chunkId)).toEqual(expected.map((r) => r.id));
    }
    // The graph was not walked at all.
    expect(hnswScan(await plan(small.id, 'kernel scheduler'))).toMatch(/never executed/);
  });

  it('a small scope is matched by words chunk by chunk: every-word matches first, then any word, and the GIN index is not read', async () => {
    for (const query of ['kernel scheduler', 'tomato garden', 'violin note']) {
      const hits = await searchChunks(sql, lexicalEmbedder, wordsRequest(small.id, query));
      // The same ranking computed straight from the file's chunks: ts_rank_cd over any word of the
      // query, plus 1 for a chunk holding every word; ties by id.
      const expected = await sql<{ id: string }[]>`
        with q as (
          select websearch_to_tsquery('english', ${query}) as all_q,
                 (select string_agg(quote_literal(w), ' | ') from unnest(tsvector_to_array(to_tsvector('english', ${query}))) w)::tsquery as any_q
        )
        select c.id::text as id from file_chunk c, q
        where c.file_id = ${small.id} and c.tsv @@ q.any_q
        order by ts_rank_cd(c.tsv, q.any_q, 1) + case when c.tsv @@ q.all_q then 1 else 0 end desc, c.id
        limit 5`;
      expect(expected.length).toBeGreaterThan(0);
      expect(hits.map((h) => h.chunkId)).toEqual(expected.map((r) => r.id));
    }
    const scans = ginScans(await plan(small.id, 'kernel scheduler', 'fulltext'));
    expect(scans.length).toBeGreaterThan(0);
    for (const line of scans) expect(line).toMatch(/never executed/);
  });

  it(`a scope of more than ${EXACT_SCOPE_MAX} chunks is matched by words through the GIN index`, async () => {
    expect(ginScans(await plan(large.id, 'kernel scheduler', 'fulltext')).some((l) => /actual rows=[1-9]/.test(l))).toBe(true);
    const hits = await searchChunks(sql, lexicalEmbedder, wordsRequest(large.id, 'kernel scheduler'));
    expect(hits).toHaveLength(5);
    for (const h of hits) {
      expect(h.fileId).toBe(large.id);
      expect(h.content).toMatch(/kernel|scheduler/);
    }
  });

  it(`a scope of more than ${EXACT_SCOPE_MAX} chunks walks the HNSW graph and still finds its chunks`, async () => {
    const p = await plan(large.id, 'kernel scheduler');
    expect(hnswScan(p)).toMatch(/actual rows=[1-9]/);
    const hits = await searchChunks(sql, lexicalEmbedder, request(large.id, 'kernel scheduler'));
    expect(hits).toHaveLength(5);
    for (const h of hits) expect(h.fileId).toBe(large.id);
  });

  it('a scope the caller may not read finds nothing on either path, by vector or by words', async () => {
    for (const f of [small, large]) {
      for (const req of [request(f.id, 'kernel scheduler'), wordsRequest(f.id, 'kernel scheduler'), { ...request(f.id, 'kernel scheduler'), hybrid: true }]) {
        const hits = await searchChunks(sql, lexicalEmbedder, { ...req, userId: randomUUID() });
        expect(hits).toEqual([]);
      }
    }
  });
});
