import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { Stack, testDatabaseUrl, type Proc } from '../../tests/support/local-stack.ts';
import { cpuMs, ms, pct, waitQuiet } from './measure.ts';
import { startChatBefore } from './chat-before.ts';
import { keepAlive, send, type HttpTarget } from './load.ts';
import { manPages, type ManPage } from './knowledge-corpus.ts';
import { startFloor } from './floor.ts';
import { openSearchDb, vectorLiteral } from '../../services/chat-worker/src/db.ts';
import { chunkText, type TextChunk } from '../../services/chat-worker/src/retrieval/chunk.ts';
import { lexicalEmbedder } from '../../services/chat-worker/src/retrieval/embedder.ts';
import { hybridStatement, searchChunks, searchMode, type SearchRequest } from '../../services/chat-worker/src/retrieval/search.ts';
import { searchChunksTwoQueries } from '../../services/chat-worker/src/retrieval/hybrid-two-queries.ts';
import { mintToken } from '../../services/edge/src/faces/chat/jwt.ts';

/**
 * Knowledge search benchmark (scripts/bench/run knowledge): quality and speed of the chat
 * platform's native hybrid search (services/chat-worker/src/retrieval/search.ts) on the real stack.
 *
 * Corpus: the manual pages installed on this machine (knowledge-corpus.ts), chunked as Open WebUI
 * does (1000/100, recursive character splitter) and embedded with the offline lexical-hash-v1,
 * until BENCH_KNOWLEDGE_CHUNKS (100 000) chunks. Every tenth page goes to another user's private
 * knowledge base, so every search also filters out chunks the caller may not read.
 *
 * 1. Ingestion: chunk + embed + insert (the retrieval routes' SQL: one multi-row INSERT per batch,
 *    HNSW and GIN maintained as rows arrive), chunks/s.
 * 2. Quality: labels derived mechanically. A page's NAME line ("ls — list directory contents") is
 *    kept out of the corpus and its description is the query; the relevant document is that page.
 *    Queries come from pages with a description of 3+ words found on no other page (so the label is
 *    unambiguous), spread evenly over the eligible pages. Results (30 chunks) are reduced to distinct
 *    pages in rank order; nDCG@10 (one relevant page: 1/log2(1 + rank)) and recall@10 (is the page in
 *    the top 10) for full text only, vectors only, and hybrid at several BM25 weights.
 * 3. Speed (k = 10, hybrid, weight 0.5): the one statement timed alone in Postgres (query vector
 *    computed before the clock starts); over one attached file, the small scope ranked exactly vs
 *    through the indexes (the exact bound at 0); the one-statement search vs. two queries fused in the
 *    worker (Open WebUI's former way, hybrid-two-queries.ts), both in this process and paired; the
 *    stack (HTTP → edge → NATS → worker → Postgres, POST /api/v1/retrieval/query/doc) paired with the
 *    same search called in-process, whose difference is the stack's overhead.
 * Loopback only; loops bounded by count and time; a watchdog ends a run that hangs.
 * Env: BENCH_KNOWLEDGE_CHUNKS (100000), BENCH_KNOWLEDGE_QUERIES (200), BENCH_KNOWLEDGE_SPEED_QUERIES (300);
 * BENCH_KNOWLEDGE_KEEP=<file>: leave the corpus's schema in the database and describe it in <file>;
 * BENCH_KNOWLEDGE_REUSE=<file>: run on such a kept corpus instead of building one (no ingestion
 * figures then). Building 100 000 chunks takes 4–15 minutes; a kept corpus is dropped by hand
 * (`drop schema <schema> cascade`, the schema is in the file).
 * BENCH_KNOWLEDGE_STACK_ONLY=1: only the stack phase (no quality, statement or one-vs-two phases).
 * BENCH_KNOWLEDGE_BEFORE=<checkout>: an edge + chat worker of another checkout (chat-before.ts) on
 * the same schema and secret, a further arm of the stack phase, paired and alternating with the rest.
 * BENCH_KNOWLEDGE_SPLIT=0: leave out where the overhead goes (on by default): the machine's floor for
 * the two hops the stack adds (floor.ts: a plain HTTP and a plain NATS round trip to another
 * process), the edge alone, an operation through the bus answered from the worker's memory, a
 * folder list (one indexed read), a k = 1 search.
 */
const KEEP = process.env.BENCH_KNOWLEDGE_KEEP;
const kept = process.env.BENCH_KNOWLEDGE_REUSE
  ? (JSON.parse(readFileSync(process.env.BENCH_KNOWLEDGE_REUSE, 'utf8')) as KeptCorpus)
  : undefined;
interface KeptCorpus {
  schema: string;
  adminId: string;
  userId: string;
  otherId: string;
  kb: string;
  otherKb: string;
  pages: { name: string; description: string }[];
  total: number;
}
const CHUNKS = Number(process.env.BENCH_KNOWLEDGE_CHUNKS ?? 100_000);
const QUERIES = Number(process.env.BENCH_KNOWLEDGE_QUERIES ?? 200);
const SPEED_QUERIES = Number(process.env.BENCH_KNOWLEDGE_SPEED_QUERIES ?? 300);
const STACK_ONLY = process.env.BENCH_KNOWLEDGE_STACK_ONLY === '1';
const BEFORE = process.env.BENCH_KNOWLEDGE_BEFORE;
const K = 10;
const FETCH = 30; // chunks fetched per quality query, reduced to distinct pages
const BATCH = 1000; // chunks per INSERT
const INGEST_MS = 900_000;
const PHASE_MS = 120_000;
const watchdog = setTimeout(() => {
  console.error('[bench] watchdog: the run took longer than 40 minutes; stopping');
  process.exit(2);
}, 40 * 60_000);
watchdog.unref();
const say = (s: string) => console.error(`[bench] ${s}`);

interface Query {
  text: string;
  page: string;
}

async function main(): Promise<void> {
  const stack = new Stack();
  const beforeProcs: Proc[] = [];
  try {
    const schema = kept?.schema ?? `chat_${stack.ns}`;
    const worker = await stack.startChatWorker({ CHAT_SCHEMA: schema });
    // A kept corpus outlives the stack: its schema is taken off the list the stack drops at close.
    if (kept || KEEP) (stack as unknown as { schemas: string[] }).schemas.length = 0;
    const secret = randomBytes(32).toString('base64url');
    const edge = await stack.startEdge({ EDGE_FACES: 'chat', WEBUI_SECRET_KEY: secret });
    const call = async (path: string, token: string | undefined, body?: unknown): Promise<any> => {
      const r = await fetch(edge.chatUrl + path, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${text.slice(0, 300)}`);
      return JSON.parse(text);
    };
    const pw = () => randomBytes(12).toString('base64url');
    // On a kept corpus its accounts sign in with tokens minted by this edge's secret.
    const session = async (id: string) => ({ id, token: (await mintToken(secret, id, 3600)).token });
    const admin = kept ? await session(kept.adminId) : await call('/api/v1/auths/signup', undefined, { name: 'Bench Admin', email: `admin-${stack.ns}@bench.test`, password: pw() });
    const user = kept ? await session(kept.userId) : await call('/api/v1/auths/add', admin.token, { name: 'Reader', email: `reader-${stack.ns}@bench.test`, password: pw(), role: 'user' });
    const other = kept ? await session(kept.otherId) : await call('/api/v1/auths/add', admin.token, { name: 'Other', email: `other-${stack.ns}@bench.test`, password: pw(), role: 'user' });
    const kb = kept ? { id: kept.kb } : await call('/api/v1/knowledge/create', user.token, { name: 'Manual pages', description: 'Debian manual pages' });
    const otherKb = kept ? { id: kept.otherKb } : await call('/api/v1/knowledge/create', other.token, { name: 'Private pages', description: 'not shared' });

    // The worker's search pool (generic plans, db.ts openSearchDb): the in-process arms run the
    // statements as the worker does.
    const sql = openSearchDb(testDatabaseUrl(), schema, 4);

    // ---- 1. corpus and ingestion ----
    say(`reading manual pages until ${CHUNKS} chunks`);
    const pages: ManPage[] = [];
    const byPage = new Map<string, number>();
    let chunkMs = 0, embedMs = 0, insertMs = 0, total = 0;
    type Pending = { fileId: string; page: ManPage; chunks: TextChunk[]; vectors: number[][] };
    let pending: Pending[] = [];
    let pendingChunks = 0;
    const flush = async () => {
      if (!pending.length) return;
      const t = performance.now();
      const now = Math.floor(Date.now() / 1000);
      await sql.begin(async (tx) => {
        await tx`insert into file (id, user_id, hash, filename, path, data, meta, created_at, updated_at)
          select f.id, f.user_id, null, f.name, null, '{"status":"completed"}'::jsonb, jsonb_build_object('name', f.name), ${now}, ${now}
          from unnest(${pending.map((p) => p.fileId)}::text[], ${pending.map((p) => ownerOf(p.page).user)}::text[], ${pending.map((p) => p.page.name)}::text[]) as f(id, user_id, name)`;
        await tx`insert into knowledge_file (id, knowledge_id, file_id, directory_id, user_id, created_at, updated_at)
          select gen_random_uuid()::text, f.kb, f.id, null, f.user_id, ${now}, ${now}
          from unnest(${pending.map((p) => p.fileId)}::text[], ${pending.map((p) => ownerOf(p.page).kb)}::text[], ${pending.map((p) => ownerOf(p.page).user)}::text[]) as f(id, kb, user_id)`;
        const rows = pending.flatMap((p) => p.chunks.map((c, i) => ({ file: p.fileId, name: p.page.name, c, v: p.vectors[i]! })));
        await tx`
          insert into file_chunk (file_id, chunk_index, content, meta, embedding_model, embedding)
          select r.file_id, r.i, r.content, r.meta, ${lexicalEmbedder.model}, r.embedding::vector
          from unnest(${rows.map((r) => r.file)}::text[], ${rows.map((r) => r.c.index)}::int[], ${rows.map((r) => r.c.content)}::text[],
                      ${rows.map((r) => ({ name: r.name, source: r.name, file_id: r.file, start_index: r.c.start })) as never}::jsonb[],
                      ${rows.map((r) => vectorLiteral(r.v))}::text[]) as r(file_id, i, content, meta, embedding)`;
      });
      insertMs += performance.now() - t;
      pending = [];
      pendingChunks = 0;
    };
    const ownerOf = (p: ManPage) => ((byPage.get(p.name) ?? 0) % 10 === 9 ? { user: other.id, kb: otherKb.id } : { user: user.id, kb: kb.id });
    const ingest0 = performance.now();
    if (kept) {
      for (const p of kept.pages) {
        byPage.set(p.name, pages.length);
        pages.push({ ...p, text: '' } as ManPage);
      }
      total = kept.total;
    }
    for (const page of kept ? [] : manPages()) {
      if (total >= CHUNKS || performance.now() - ingest0 > INGEST_MS) break;
      byPage.set(page.name, pages.length);
      pages.push(page);
      let t = performance.now();
      const chunks = chunkText(page.text, { size: 1000, overlap: 100 }).slice(0, CHUNKS - total);
      chunkMs += performance.now() - t;
      t = performance.now();
      const vectors = await lexicalEmbedder.embed(chunks.map((c) => c.content));
      embedMs += performance.now() - t;
      pending.push({ fileId: randomUUID(), page, chunks, vectors });
      pendingChunks += chunks.length;
      total += chunks.length;
      if (pendingChunks >= BATCH) await flush();
      if (pages.length % 2000 === 0) say(`${pages.length} pages, ${total} chunks`);
    }
    await flush();
    const ingestWork = chunkMs + embedMs + insertMs;
    // VACUUM as well as ANALYZE: autovacuum is off on the test server, and without it the GIN
    // index's pending list (fastupdate: up to 4 MB of the last inserted entries, which every
    // full-text query reads through one by one) stays as the ingestion left it — ~2.5 ms per
    // full-text scan at load 12 for the 1 660 entries this corpus's build left. A deployment's
    // autovacuum empties it after a bulk load; the benchmark measures that state.
    if (!kept) await sql`vacuum (analyze) file_chunk, file, knowledge_file`;
    const [counts] = await sql<{ mine: number; others: number }[]>`
      select count(*) filter (where kf.knowledge_id = ${kb.id})::int as mine, count(*) filter (where kf.knowledge_id = ${otherKb.id})::int as others
      from file_chunk c join knowledge_file kf on kf.file_id = c.file_id`;
    say(`${kept ? 'kept corpus' : 'ingested'} ${pages.length} pages, ${total} chunks (${counts!.mine} readable, ${counts!.others} in the other user's base)`);
    if (KEEP) {
      const corpus: KeptCorpus = { schema, adminId: admin.id, userId: user.id, otherId: other.id, kb: kb.id, otherKb: otherKb.id, pages: pages.map((p) => ({ name: p.name, description: p.description })), total };
      writeFileSync(KEEP, JSON.stringify(corpus));
      say(`corpus kept in schema ${schema}, described in ${KEEP}`);
    }

    // ---- 2. quality ----
    const descCount = new Map<string, number>();
    for (const p of pages) descCount.set(p.description.toLowerCase(), (descCount.get(p.description.toLowerCase()) ?? 0) + 1);
    const eligible = pages.filter(
      (p) => ownerOf(p).user === user.id && !p.name.startsWith('gcloud') && descCount.get(p.description.toLowerCase()) === 1 && p.description.split(/\s+/).filter((w) => w.length > 2).length >= 3,
    );
    const step = Math.max(1, Math.floor(eligible.length / QUERIES));
    const queries: Query[] = eligible.filter((_, i) => i % step === 0).slice(0, QUERIES).map((p) => ({ text: p.description, page: p.name }));
    say(`${queries.length} labelled queries from ${eligible.length} eligible pages`);
    const base = { userId: user.id, knowledgeIds: [kb.id], threshold: 0 };
    const variants: { name: string; hybrid: boolean; w: number }[] = [
      { name: 'full text only', hybrid: true, w: 1 },
      { name: 'vectors only', hybrid: false, w: 0.5 },
      { name: 'hybrid, BM25 weight 0.3', hybrid: true, w: 0.3 },
      { name: 'hybrid, BM25 weight 0.5 (default)', hybrid: true, w: 0.5 },
      { name: 'hybrid, BM25 weight 0.7', hybrid: true, w: 0.7 },
    ];
    const quality: string[] = [];
    for (const v of STACK_ONLY ? [] : variants) {
      let ndcg = 0, recall = 0, mrr = 0;
      for (const q of queries) {
        const hits = await searchChunks(sql, lexicalEmbedder, { ...base, query: q.text, k: FETCH, hybrid: v.hybrid, bm25Weight: v.w });
        const distinct = [...new Set(hits.map((h) => h.filename))].slice(0, K);
        const rank = distinct.indexOf(q.page) + 1;
        if (rank > 0) {
          ndcg += 1 / Math.log2(rank + 1);
          recall += 1;
          mrr += 1 / rank;
        }
      }
      const n = queries.length;
      quality.push(`| ${v.name} | ${(ndcg / n).toFixed(3)} | ${(recall / n).toFixed(3)} | ${(mrr / n).toFixed(3)} |`);
      say(`${v.name}: nDCG@10 ${(ndcg / n).toFixed(3)}, recall@10 ${(recall / n).toFixed(3)}`);
    }

    // ---- 3. speed ----
    const speedQueries = Array.from({ length: SPEED_QUERIES }, (_, i) => queries[i % queries.length]!.text);
    const req = (query: string, mode: { hybrid: boolean; w: number } = { hybrid: true, w: 0.5 }): SearchRequest => ({ ...base, query, k: K, hybrid: mode.hybrid, bm25Weight: mode.w });
    const vecs = await lexicalEmbedder.embed(speedQueries);
    const bounded = async (label: string, fn: (i: number) => Promise<unknown>): Promise<number[]> => {
      if (STACK_ONLY) return [];
      for (let i = 0; i < 20; i++) await fn(i); // warm-up
      await waitQuiet(label, 10_000, say);
      const lat: number[] = [];
      const t0 = performance.now();
      for (let i = 0; i < SPEED_QUERIES && performance.now() - t0 < PHASE_MS; i++) {
        const s = performance.now();
        await fn(i);
        lat.push(performance.now() - s);
      }
      return lat;
    };
    const statement = (i: number, mode: { hybrid: boolean; w: number }) => {
      const r = req(speedQueries[i]!, mode);
      return sql`${hybridStatement(sql, lexicalEmbedder.model, vectorLiteral(vecs[i]!), r, searchMode(r), K)}`;
    };
    const sqlHybrid = await bounded('statement, hybrid', (i) => statement(i, { hybrid: true, w: 0.5 }));
    const sqlVector = await bounded('statement, vectors', (i) => statement(i, { hybrid: false, w: 0.5 }));
    const sqlText = await bounded('statement, full text', (i) => statement(i, { hybrid: true, w: 1 }));

    // One attached file (a chat's upload: a scope of a few chunks in the big store), hybrid: the
    // statement as the worker runs it (a small scope ranked exactly, by vector and by words) paired
    // with the same statement with the exact-ranking bound at 0 (through the HNSW and GIN indexes,
    // the worker's path until 2026-11-28), both timed in Postgres. The rows may differ: the graph is approximate,
    // and the exact word fallback takes any word where the index path takes the rarer ones.
    const fileScope = { exact: [] as number[], indexes: [] as number[], same: 0 };
    if (!STACK_ONLY) {
      const files = await sql<{ id: string }[]>`select kf.file_id as id from knowledge_file kf where kf.knowledge_id = ${kb.id} order by md5(kf.file_id) limit ${SPEED_QUERIES}`;
      const fileReq = (i: number): SearchRequest => ({ query: speedQueries[i]!, userId: user.id, fileIds: [files[i % files.length]!.id], k: K, hybrid: true, bm25Weight: 0.5, threshold: 0 });
      const fileStatement = (i: number, exactMax?: number) =>
        sql<{ id: string }[]>`${hybridStatement(sql, lexicalEmbedder.model, vectorLiteral(vecs[i]!), fileReq(i), 'hybrid', K, undefined, exactMax)}`;
      for (let i = 0; i < 20; i++) {
        await fileStatement(i);
        await fileStatement(i, 0);
      }
      await waitQuiet('one attached file', 10_000, say);
      const tFile = performance.now();
      for (let i = 0; i < SPEED_QUERIES && performance.now() - tFile < PHASE_MS; i++) {
        const ids: string[][] = [];
        const a = async () => { const s = performance.now(); ids[0] = (await fileStatement(i)).map((r) => r.id); fileScope.exact.push(performance.now() - s); };
        const b = async () => { const s = performance.now(); ids[1] = (await fileStatement(i, 0)).map((r) => r.id); fileScope.indexes.push(performance.now() - s); };
        if (i % 2) { await a(); await b(); } else { await b(); await a(); }
        if (ids[0]!.join() === ids[1]!.join()) fileScope.same++;
      }
    }

    // One statement vs two queries, paired and alternating, both in this process.
    const one: number[] = [], two: number[] = [];
    if (!STACK_ONLY) await waitQuiet('one vs two', 10_000, say);
    for (let i = 0; i < (STACK_ONLY ? 0 : 20); i++) {
      await searchChunks(sql, lexicalEmbedder, req(speedQueries[i]!));
      await searchChunksTwoQueries(sql, lexicalEmbedder, req(speedQueries[i]!));
    }
    const tPair = performance.now();
    for (let i = 0; i < (STACK_ONLY ? 0 : SPEED_QUERIES) && performance.now() - tPair < PHASE_MS; i++) {
      const a = async () => { const s = performance.now(); await searchChunks(sql, lexicalEmbedder, req(speedQueries[i]!)); one.push(performance.now() - s); };
      const b = async () => { const s = performance.now(); await searchChunksTwoQueries(sql, lexicalEmbedder, req(speedQueries[i]!)); two.push(performance.now() - s); };
      if (i % 2) { await a(); await b(); } else { await b(); await a(); }
    }

    // The stack vs the same search in-process, paired and alternating.
    await call('/api/v1/retrieval/config/update', admin.token, { ENABLE_RAG_HYBRID_SEARCH: true, HYBRID_BM25_WEIGHT: 0.5 });
    const viaApi: number[] = [], viaFetch: number[] = [], direct: number[] = [], directRoute: number[] = [];
    // The route scopes a collection name both as a knowledge base and as a process/text collection
    // (retrieval/retrieval.ops.ts scopeOf); `directRoute` searches with that same scope, `direct` with the
    // knowledge base alone (as runs before 2026-11-27 did).
    const routeReq = (q: string): SearchRequest => ({ ...req(q), collectionNames: [kb.id] });
    const api = (q: string) => call('/api/v1/retrieval/query/doc', user.token, { collection_name: kb.id, query: q, k: K });
    for (let i = 0; i < 20; i++) {
      await api(speedQueries[i]!);
      await searchChunks(sql, lexicalEmbedder, req(speedQueries[i]!));
    }
    const check = await api(speedQueries[0]!);
    if (check.documents[0].length !== K) throw new Error(`the API answered ${check.documents[0].length} chunks, not ${K}`);
    // The timed client: node:http on a keep-alive connection, the clock stopped at the reply's last
    // byte, the reply parsed and checked after (as load.ts does for every benchmark). fetch and
    // JSON.parse of the ~8 KB reply are the client's costs, not the stack's; the fetch arm below
    // shows how much of the earlier "overhead" they were.
    const chatUrl = new URL(edge.chatUrl);
    const apiAgent = keepAlive(1);
    const apiTarget: HttpTarget = {
      host: chatUrl.hostname,
      port: Number(chatUrl.port),
      method: 'POST',
      request: (i) => ({
        path: '/api/v1/retrieval/query/doc',
        headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ collection_name: kb.id, query: speedQueries[i]!, k: K }),
      }),
      check: (body) => {
        const n = (JSON.parse(body) as { documents: unknown[][] }).documents[0]!.length;
        if (n !== K) throw new Error(`the API answered ${n} chunks, not ${K}`);
      },
    };
    for (let i = 0; i < 20; i++) await send(apiTarget, i, apiAgent);
    // BENCH_KNOWLEDGE_BEFORE: started after the settings change, so its worker reads it at start.
    const before = BEFORE ? await startChatBefore(BEFORE, stack, beforeProcs, { CHAT_SCHEMA: schema, WEBUI_SECRET_KEY: secret }) : undefined;
    const beforeTarget: HttpTarget | undefined = before && { ...apiTarget, port: Number(new URL(before.url).port) };
    const viaBefore: number[] = [];
    if (beforeTarget) for (let i = 0; i < 20; i++) await send(beforeTarget, i, apiAgent);
    // CPU of the edge and the worker over each arm's requests (from /proc, 10 ms ticks: a sum over many requests).
    const cpu = { after: { edge: 0, worker: 0 }, before: { edge: 0, worker: 0 } };
    const timed = async (t: HttpTarget, i: number, into: number[], c: { edge: number; worker: number }, pids: { edge?: number; worker?: number }) => {
      const e0 = cpuMs(pids.edge), w0 = cpuMs(pids.worker);
      into.push(await send(t, i, apiAgent));
      c.edge += cpuMs(pids.edge) - e0;
      c.worker += cpuMs(pids.worker) - w0;
    };
    await waitQuiet('stack vs direct', 10_000, say);
    const tApi = performance.now();
    for (let i = 0; i < SPEED_QUERIES && performance.now() - tApi < PHASE_MS; i++) {
      const a = async () => timed(apiTarget, i, viaApi, cpu.after, { edge: edge.proc.child.pid, worker: worker.child.pid });
      const e = async () => (beforeTarget ? timed(beforeTarget, i, viaBefore, cpu.before, { edge: before!.edge.child.pid, worker: before!.worker.child.pid }) : undefined);
      const f = async () => { const s = performance.now(); await api(speedQueries[i]!); viaFetch.push(performance.now() - s); };
      const b = async () => { const s = performance.now(); await searchChunks(sql, lexicalEmbedder, req(speedQueries[i]!)); direct.push(performance.now() - s); };
      const c = async () => { const s = performance.now(); await searchChunks(sql, lexicalEmbedder, routeReq(speedQueries[i]!)); directRoute.push(performance.now() - s); };
      if (i % 2) { await a(); await e(); await b(); await c(); await f(); } else { await f(); await c(); await b(); await e(); await a(); }
    }

    // Where the overhead goes (sequential, interleaved, same keep-alive connection): the machine's
    // floor (floor.ts: a plain HTTP and a plain NATS round trip to another process, with a reply
    // the size of the k = 10 answer: the two hops the stack adds, with nothing of this project in
    // them), the edge alone (GET /api/version: HTTP and Fastify, no bus), the bus and the worker
    // answering from memory (the retrieval settings, as the admin), the caller's folders (one
    // indexed read), and the search with k = 1 (about a tenth of the k = 10 reply) against the
    // same k = 1 search in-process. Their differences split the overhead into the machine's hops,
    // HTTP + edge, bus + worker, Postgres, and the reply's size.
    const split = { http: [] as number[], nats: [] as number[], httpWait: [] as number[], natsWait: [] as number[], version: [] as number[], config: [] as number[], folders: [] as number[], api1: [] as number[], direct1: [] as number[] };
    const replyBytes = Buffer.byteLength(JSON.stringify(check));
    const getTarget = (path: string, check: (body: string) => void): HttpTarget => ({
      host: chatUrl.hostname,
      port: Number(chatUrl.port),
      method: 'GET',
      request: () => ({ path, headers: { authorization: `Bearer ${user.token}` } }),
      check,
    });
    const versionTarget = getTarget('/api/version', (b) => {
      if (typeof (JSON.parse(b) as { version?: unknown }).version !== 'string') throw new Error(`/api/version answered ${b.slice(0, 200)}`);
    });
    const foldersTarget = getTarget('/api/v1/folders/', (b) => {
      if (!Array.isArray(JSON.parse(b))) throw new Error(`/api/v1/folders/ answered ${b.slice(0, 200)}`);
    });
    const configTarget: HttpTarget = {
      ...getTarget('/api/v1/retrieval/config', (b) => {
        if ((JSON.parse(b) as { TOP_K?: unknown }).TOP_K === undefined) throw new Error(`/api/v1/retrieval/config answered ${b.slice(0, 200)}`);
      }),
      request: () => ({ path: '/api/v1/retrieval/config', headers: { authorization: `Bearer ${admin.token}` } }),
    };
    const k1Target: HttpTarget = {
      ...apiTarget,
      request: (i) => ({ ...apiTarget.request(i), body: JSON.stringify({ collection_name: kb.id, query: speedQueries[i]!, k: 1 }) }),
      check: (body) => {
        const n = (JSON.parse(body) as { documents: unknown[][] }).documents[0]!.length;
        if (n !== 1) throw new Error(`the API answered ${n} chunks, not 1`);
      },
    };
    const SPLIT = process.env.BENCH_KNOWLEDGE_SPLIT === '0' ? 0 : SPEED_QUERIES;
    const floor = SPLIT ? await startFloor(stack.natsUrl, replyBytes) : undefined;
    const floorAgent = keepAlive(1);
    for (let i = 0; i < Math.min(SPLIT, 20); i++) {
      for (const t of [versionTarget, configTarget, foldersTarget, k1Target]) await send(t, i, apiAgent);
      await floor!.http(floorAgent);
      await floor!.nats();
    }
    // The two hops after a wait as long as the k = 10 search (floor.ts): the stack's way back starts after one.
    const searchWait = Math.round(pct(directRoute, 50));
    const tSplit = performance.now();
    for (let i = 0; i < SPLIT && performance.now() - tSplit < PHASE_MS; i++) {
      const arms = [
        async () => split.http.push(await floor!.http(floorAgent)),
        async () => split.nats.push(await floor!.nats()),
        async () => split.httpWait.push(await floor!.http(floorAgent, searchWait)),
        async () => split.natsWait.push(await floor!.nats(searchWait)),
        async () => split.version.push(await send(versionTarget, i, apiAgent)),
        async () => split.config.push(await send(configTarget, i, apiAgent)),
        async () => split.folders.push(await send(foldersTarget, i, apiAgent)),
        async () => split.api1.push(await send(k1Target, i, apiAgent)),
        async () => { const s = performance.now(); await searchChunks(sql, lexicalEmbedder, { ...routeReq(speedQueries[i]!), k: 1 }); split.direct1.push(performance.now() - s); },
      ];
      for (let j = 0; j < arms.length; j++) await arms[(i + j) % arms.length]!();
    }
    floorAgent.destroy();
    await floor?.stop();

    // The plan of one hybrid statement, to show which indexes it uses.
    const r0 = req(speedQueries[0]!);
    const plan = await sql<{ 'QUERY PLAN': string }[]>`explain (analyze, costs off, timing off, summary off) ${hybridStatement(sql, lexicalEmbedder.model, vectorLiteral(vecs[0]!), r0, 'hybrid', K)}`;
    say(`plan (one hybrid statement):\n${plan.map((r) => r['QUERY PLAN']).filter((l) => /Scan|InitPlan|rows=/.test(l)).join('\n')}`);

    const p50 = (xs: number[]) => pct(xs, 50);
    console.log(`\nKnowledge search: ${pages.length} manual pages, ${total} chunks (${counts!.mine} readable by the caller), lexical-hash-v1, k = ${K}\n`);
    if (kept) console.log('Ingestion: not measured (a kept corpus, BENCH_KNOWLEDGE_REUSE)\n');
    else {
      console.log(`Ingestion (chunk 1000/100 + embed + INSERT with HNSW and GIN maintained): ${(total / (ingestWork / 1000)).toFixed(0)} chunks/s`);
      console.log(`  split: chunking ${(chunkMs / 1000).toFixed(1)} s, embedding ${(embedMs / 1000).toFixed(1)} s, inserting ${(insertMs / 1000).toFixed(1)} s\n`);
    }
    console.log(`Quality: ${queries.length} queries (a page's NAME description → that page), 30 chunks reduced to distinct pages\n`);
    console.log('| method | nDCG@10 | recall@10 | MRR |');
    console.log('|---|---|---|---|');
    for (const r of quality) console.log(r);
    console.log(`\nSpeed (${SPEED_QUERIES} queries per phase, sequential)\n`);
    console.log('| measure | p50 | p95 | target |');
    console.log('|---|---|---|---|');
    console.log(`| hybrid statement in Postgres | ${ms(p50(sqlHybrid))} | ${ms(pct(sqlHybrid, 95))} | < 20 ms |`);
    console.log(`| vectors-only statement | ${ms(p50(sqlVector))} | ${ms(pct(sqlVector, 95))} | |`);
    console.log(`| full-text-only statement | ${ms(p50(sqlText))} | ${ms(pct(sqlText, 95))} | |`);
    console.log(`| one attached file, hybrid statement: small scope ranked exactly (the worker's) | ${ms(p50(fileScope.exact))} | ${ms(pct(fileScope.exact, 95))} | |`);
    console.log(`| one attached file, same statement through the HNSW and GIN indexes (bound 0) | ${ms(p50(fileScope.indexes))} | ${ms(pct(fileScope.indexes, 95))} | same rows in ${fileScope.same} of ${fileScope.exact.length} |`);
    console.log(`| hybrid search in-process, one statement | ${ms(p50(one))} | ${ms(pct(one, 95))} | faster than two |`);
    console.log(`| hybrid search in-process, two queries fused in the worker | ${ms(p50(two))} | ${ms(pct(two, 95))} | |`);
    console.log(`| POST /api/v1/retrieval/query/doc through the stack (node:http, keep-alive, to the last byte) | ${ms(p50(viaApi))} | ${ms(pct(viaApi, 95))} | |`);
    console.log(`| … the same through fetch, reply parsed (the client of runs before 2026-11-27, evening) | ${ms(p50(viaFetch))} | ${ms(pct(viaFetch, 95))} | |`);
    console.log(`| same search in-process (paired), knowledge base scope | ${ms(p50(direct))} | ${ms(pct(direct, 95))} | |`);
    console.log(`| same search in-process (paired), the route's scope (+ collection name) | ${ms(p50(directRoute))} | ${ms(pct(directRoute, 95))} | |`);
    console.log(`| stack overhead (p50 difference), vs knowledge base scope | ${ms(p50(viaApi) - p50(direct))} | | < 3 ms |`);
    console.log(`| stack overhead (p50 difference), vs the route's scope | ${ms(p50(viaApi) - p50(directRoute))} | | < 3 ms |`);
    if (before) {
      console.log(`| before (${BEFORE}): POST /api/v1/retrieval/query/doc (paired) | ${ms(p50(viaBefore))} | ${ms(pct(viaBefore, 95))} | |`);
      console.log(`| before: stack overhead (p50 difference), vs the route's scope | ${ms(p50(viaBefore) - p50(directRoute))} | | |`);
    }
    if (split.version.length) {
      const d = (a: number[], b: number[]) => ms(p50(a) - p50(b));
      console.log(`\nWhere the overhead goes (${split.version.length} rounds, sequential, interleaved; p50)\n`);
      console.log('| measure | p50 | p95 | share of the overhead |');
      console.log('|---|---|---|---|');
      const hops = p50(split.http) + p50(split.nats);
      const hopsAfterWait = p50(split.httpWait) + p50(split.natsWait);
      console.log(`| machine: HTTP round trip to another process (node:http, ${(replyBytes / 1024).toFixed(1)} KB reply) | ${ms(p50(split.http))} | ${ms(pct(split.http, 95))} | |`);
      console.log(`| machine: NATS request/reply to another process (same reply) | ${ms(p50(split.nats))} | ${ms(pct(split.nats, 95))} | the two hops the stack adds: ${ms(hops)} |`);
      console.log(`| machine: the same HTTP round trip answered after a ${searchWait} ms wait (less the wait) | ${ms(p50(split.httpWait))} | ${ms(pct(split.httpWait, 95))} | |`);
      console.log(`| machine: the same NATS request/reply answered after a ${searchWait} ms wait (less the wait) | ${ms(p50(split.natsWait))} | ${ms(pct(split.natsWait, 95))} | the two hops after the search's wait: ${ms(hopsAfterWait)} |`);
      console.log(`| GET /api/version (HTTP + Fastify, no bus) | ${ms(p50(split.version))} | ${ms(pct(split.version, 95))} | HTTP + edge floor |`);
      console.log(`| GET /api/v1/retrieval/config (admin: + session check, bus, worker, answered from memory) | ${ms(p50(split.config))} | ${ms(pct(split.config, 95))} | + ${d(split.config, split.version)} over the version |`);
      console.log(`| GET /api/v1/folders/ (+ one indexed read) | ${ms(p50(split.folders))} | ${ms(pct(split.folders, 95))} | + ${d(split.folders, split.config)} over the settings |`);
      console.log(`| POST /api/v1/retrieval/query/doc, k = 1 | ${ms(p50(split.api1))} | ${ms(pct(split.api1, 95))} | |`);
      console.log(`| same k = 1 search in-process | ${ms(p50(split.direct1))} | ${ms(pct(split.direct1, 95))} | overhead with the k = 1 reply: ${d(split.api1, split.direct1)} |`);
      console.log(`| k = 10 (above): overhead with a ${(replyBytes / 1024).toFixed(1)} KB reply | | | ${ms(p50(viaApi) - p50(directRoute))} |`);
      console.log(`| k = 10 overhead less the machine's two hops after the search's wait (the edge's and the worker's own share) | | | ${ms(p50(viaApi) - p50(directRoute) - hopsAfterWait)} |`);
    }
    const per = (c: { edge: number; worker: number }, n: number) => `edge ${(c.edge / n).toFixed(2)} + worker ${(c.worker / n).toFixed(2)} ms`;
    console.log(`\nCPU per query through the stack: ${per(cpu.after, viaApi.length)}${before ? `; before: ${per(cpu.before, viaBefore.length)}` : ''}`);
    apiAgent.destroy();
    await sql.end({ timeout: 5 });
  } finally {
    await Promise.allSettled(beforeProcs.map((p) => p.stop()));
    await stack.close();
  }
}

await main();
