import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, chatDb, eventsNamed, NOT_FOUND, PROHIBITED, type Account } from './chat-fixture.ts';

/**
 * Retrieval on the chat face (Open WebUI 0.10.2 /api/v1/retrieval) over real HTTP on the real
 * stack: process/text makes collections (into a knowledge base or of its own), query/doc and
 * query/collection search them — vectors only, full text only, hybrid — filtered by what the
 * caller may read inside the one search statement; the relevance threshold; an external reranker
 * and an OpenAI-compatible embeddings endpoint, each a fake on loopback speaking the real wire
 * format; settings changed through /config/update and /embedding/update apply to the next query.
 */
const stack = new Stack();
let edge: Edge;
const db = chatDb(stack);
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
const R = '/api/v1/retrieval';

let admin: Account, owner: Account, reader: Account, stranger: Account;
let kb: { id: string };

const DOCS = {
  'garden.txt': 'Tomatoes need full sun and regular watering. Prune the suckers to grow bigger fruit.',
  'kernel.txt': 'The scheduler assigns processor time slices to runnable tasks using fair queuing.',
  'recipes.txt': 'Bake the bread at high heat until the crust turns golden brown.',
};

const processText = (who: Account, name: string, content: string, collection_name?: string) =>
  call(`${R}/process/text`, who, 'POST', { name, content, ...(collection_name ? { collection_name } : {}) });
const queryDoc = (who: Account, collection_name: string, query: string, extra: Record<string, unknown> = {}) =>
  call(`${R}/query/doc`, who, 'POST', { collection_name, query, ...extra });
const names = (body: any): string[] => body.metadatas[0].map((m: any) => m.name);
const config = async (patch: Record<string, unknown>) => {
  const r = await call(`${R}/config/update`, admin, 'POST', patch);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};

/** A fake HTTP endpoint on loopback: `answer` builds the JSON reply; every request is kept. */
async function fakeServer(answer: (body: any, url: string) => unknown): Promise<{ url: string; requests: { url: string; headers: IncomingHttpHeaders; body: any }[]; close(): Promise<void> }> {
  const requests: { url: string; headers: IncomingHttpHeaders; body: any }[] = [];
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(parts).toString('utf8') || 'null');
      requests.push({ url: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer(body, req.url ?? '')));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  owner = await addUser(admin, 'Owner');
  reader = await addUser(admin, 'Reader');
  stranger = await addUser(admin, 'Stranger');
  const created = await call('/api/v1/knowledge/create', owner, 'POST', { name: 'Notes', description: 'mixed notes' });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  kb = created.body;
  const shared = await call(`/api/v1/knowledge/${kb.id}/access/update`, owner, 'POST', { access_grants: [{ principal_type: 'user', principal_id: reader.id, permission: 'read' }] });
  expect(shared.status, JSON.stringify(shared.body)).toBe(200);
  for (const [name, content] of Object.entries(DOCS)) {
    const r = await processText(owner, name, content, kb.id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ status: true, collection_name: kb.id, content });
  }
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
});

describe('process/text', () => {
  it('chunks and embeds into file_chunk, links the knowledge base, and writes its events', async () => {
    const rows = await db<{ filename: string; n: number; model: string; kb: string }[]>`
      select f.filename, count(c.id)::int as n, min(c.embedding_model) as model, min(kf.knowledge_id) as kb
      from file f join file_chunk c on c.file_id = f.id join knowledge_file kf on kf.file_id = f.id
      where f.user_id = ${owner.id} group by f.filename order by f.filename`;
    expect(rows).toEqual(Object.keys(DOCS).sort().map((filename) => ({ filename, n: 1, model: 'lexical-hash-v1', kb: kb.id })));
    const added = (await eventsNamed(db, 'knowledge.file.added')).filter((e) => e.data.knowledge_id === kb.id);
    expect(added.map((e) => e.data.filename).sort()).toEqual(Object.keys(DOCS).sort());
  });

  it('names a collection by the content hash when none is asked for; the same text again adds nothing', async () => {
    const text = 'A standalone note about lighthouses and their lenses.';
    const first = await processText(owner, 'light.txt', text);
    expect(first.status).toBe(200);
    expect(first.body.collection_name).toMatch(/^[0-9a-f]{64}$/);
    const again = await processText(owner, 'light.txt', text);
    expect(again.body.collection_name).toBe(first.body.collection_name);
    const counted = await db<{ n: number }[]>`select count(*)::int as n from file where meta ->> 'collection_name' = ${first.body.collection_name}`;
    expect(counted[0]?.n).toBe(1);
    const found = await queryDoc(owner, first.body.collection_name, 'lighthouse lens');
    expect(found.body.documents).toEqual([[text]]);
    // The collection is its owner's: nobody else reaches it by its name.
    expect((await queryDoc(stranger, first.body.collection_name, 'lighthouse lens')).body.documents).toEqual([[]]);
  });

  it('refuses empty text, a knowledge base the caller may only read, and bad forms', async () => {
    expect(await processText(owner, 'e.txt', '   ')).toEqual({ status: 400, body: { detail: expect.stringContaining('The content provided is empty') } });
    expect(await processText(reader, 'r.txt', 'reader text', kb.id)).toEqual({ status: 403, body: { detail: PROHIBITED } });
    const bad = await call(`${R}/process/text`, owner, 'POST', { name: 'x' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'content'] });
  });
});

describe('query/doc and query/collection', () => {
  it('vector search (hybrid off, the default): Open WebUI SearchResult with ids, scores (2 − d) / 2 best first', async () => {
    // "schedular" is misspelt: no word of it matches, its character n-grams do.
    const r = await queryDoc(owner, kb.id, 'schedular', { k: 3 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['distances', 'documents', 'ids', 'metadatas']);
    expect(names(r.body)[0]).toBe('kernel.txt');
    expect(r.body.ids[0]).toHaveLength(3);
    const d: number[] = r.body.distances[0];
    for (const x of d) expect(x >= 0 && x <= 1).toBe(true);
    expect([...d].sort((a, b) => b - a)).toEqual(d);
    expect(r.body.metadatas[0][0]).toMatchObject({ name: 'kernel.txt', source: 'kernel.txt', knowledge_id: kb.id, start_index: 0 });
  });

  it('full text only (hybrid, BM25 weight 1): exact words find their chunk, a misspelling finds nothing', async () => {
    await config({ ENABLE_RAG_HYBRID_SEARCH: true });
    const hit = await queryDoc(owner, kb.id, 'golden crust', { hybrid_bm25_weight: 1, k: 3 });
    expect(names(hit.body)).toEqual(['recipes.txt']);
    expect(Object.keys(hit.body).sort()).toEqual(['distances', 'documents', 'metadatas']);
    expect((await queryDoc(owner, kb.id, 'schedular', { hybrid_bm25_weight: 1 })).body.documents).toEqual([[]]);
    // Stemmed as English: "queues" finds "queuing", "watered" finds "watering".
    expect(names((await queryDoc(owner, kb.id, 'watered tomato', { hybrid_bm25_weight: 1 })).body)).toEqual(['garden.txt']);
  });

  it('hybrid: both rankings fused; scores are query–chunk cosine similarities, also in each metadata', async () => {
    const r = await queryDoc(owner, kb.id, 'schedular fair queuing', { k: 2 });
    expect(names(r.body)[0]).toBe('kernel.txt');
    expect(r.body.documents[0]).toHaveLength(2);
    const top = r.body.metadatas[0][0];
    expect(top.score).toBe(r.body.distances[0][0]);
    expect(top.score).toBeGreaterThan(0);
    expect(top.score).toBeLessThanOrEqual(1);
    // hybrid: false in the form turns it off for one query (Open WebUI's form.hybrid).
    expect(Object.keys((await queryDoc(owner, kb.id, 'bread', { hybrid: false })).body)).toContain('ids');
    await config({ ENABLE_RAG_HYBRID_SEARCH: false });
  });

  it('the relevance threshold drops what scores below it', async () => {
    const all = await queryDoc(owner, kb.id, DOCS['garden.txt'], { k: 3 });
    expect(all.body.documents[0]).toHaveLength(3);
    expect(all.body.distances[0][0]).toBeCloseTo(1, 5);
    const strict = await queryDoc(owner, kb.id, DOCS['garden.txt'], { k: 3, r: 0.99 });
    // r applies to the scores the answer shows; only the identical chunk clears 0.99.
    expect(names(strict.body)).toEqual(['garden.txt']);
  });

  it('query/collection searches several collections at once and merges them, best first', async () => {
    const own = await processText(owner, 'solo.txt', 'Granite countertops resist heat and scratches.');
    const files = await db<{ id: string }[]>`select id from file where user_id = ${owner.id} and filename = 'solo.txt'`;
    const r = await call(`${R}/query/collection`, owner, 'POST', { collection_names: [kb.id, `file-${files[0]!.id}`], query: 'granite heat', k: 2 });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['distances', 'documents', 'metadatas']);
    expect(names(r.body)[0]).toBe('solo.txt');
    expect(r.body.metadatas[0][0].knowledge_id).toBeUndefined();
    expect(own.body.collection_name).toMatch(/^[0-9a-f]{64}$/);
  });

  it('access is filtered inside the search: a reader finds, a stranger gets nothing of the owner, an admin reaches all', async () => {
    const q = 'bread crust heat';
    expect(names((await queryDoc(reader, kb.id, q)).body)[0]).toBe('recipes.txt');
    const none = await queryDoc(stranger, kb.id, q, { k: 10 });
    expect(none).toEqual({ status: 200, body: { ids: [[]], distances: [[]], documents: [[]], metadatas: [[]] } });
    const [file] = await db<{ id: string }[]>`select id from file where user_id = ${owner.id} and filename = 'recipes.txt'`;
    expect((await queryDoc(stranger, `file-${file!.id}`, q)).body.documents).toEqual([[]]);
    const mixed = await call(`${R}/query/collection`, stranger, 'POST', { collection_names: [kb.id, `file-${file!.id}`], query: q, k: 10 });
    expect(mixed.body.documents).toEqual([[]]);
    // The reader reaches the file through the knowledge base it is in.
    expect((await queryDoc(reader, `file-${file!.id}`, q)).body.documents[0]).toHaveLength(1);
    expect(names((await queryDoc(admin, kb.id, q)).body)[0]).toBe('recipes.txt');
    // After the grant is gone, the reader is a stranger too.
    await call(`/api/v1/knowledge/${kb.id}/access/update`, owner, 'POST', { access_grants: [] });
    expect((await queryDoc(reader, kb.id, q)).body.documents).toEqual([[]]);
    await call(`/api/v1/knowledge/${kb.id}/access/update`, owner, 'POST', { access_grants: [{ principal_type: 'user', principal_id: reader.id, permission: 'read' }] });
  });

  it('answers a bad form with FastAPI 422 and nobody signed in with 401', async () => {
    const r = await call(`${R}/query/doc`, owner, 'POST', { collection_name: kb.id, query: 'x', k: 'many' });
    expect(r.status).toBe(422);
    expect(r.body.detail[0].loc).toEqual(['body', 'k']);
    expect((await call(`${R}/query/doc`, null, 'POST', { collection_name: kb.id, query: 'x' })).status).toBe(401);
  });
});

describe('process/file', () => {
  it('re-indexes a file with new content; someone else’s file is 404', async () => {
    const [file] = await db<{ id: string }[]>`select id from file where user_id = ${owner.id} and filename = 'garden.txt'`;
    const r = await call(`${R}/process/file`, owner, 'POST', { file_id: file!.id, content: 'Cucumbers climb trellises.<br/>They like warmth.' });
    expect(r).toEqual({ status: 200, body: { status: true, collection_name: `file-${file!.id}`, filename: 'garden.txt', content: 'Cucumbers climb trellises.\nThey like warmth.' } });
    expect((await queryDoc(owner, `file-${file!.id}`, 'cucumber trellis')).body.documents).toEqual([['Cucumbers climb trellises.\nThey like warmth.']]);
    expect(await call(`${R}/process/file`, stranger, 'POST', { file_id: file!.id })).toEqual({ status: 404, body: { detail: NOT_FOUND } });
    // Restore the garden text for the tests below.
    await call(`${R}/process/file`, owner, 'POST', { file_id: file!.id, content: DOCS['garden.txt'] });
  });
});

describe('settings', () => {
  it('GET /config (admin) in Open WebUI’s names; /config/update checks values and applies to the next query', async () => {
    expect((await call(`${R}/config`, owner)).status).toBe(401);
    const c = await call(`${R}/config`, admin);
    expect(c.body).toMatchObject({ status: true, TOP_K: 3, TOP_K_RERANKER: 3, ENABLE_RAG_HYBRID_SEARCH: false, RELEVANCE_THRESHOLD: 0, HYBRID_BM25_WEIGHT: 0.5, CHUNK_SIZE: 1000, CHUNK_OVERLAP: 100, TEXT_SPLITTER: '' });
    expect(await call(`${R}/config/update`, admin, 'POST', { CHUNK_SIZE: 100, CHUNK_OVERLAP: 100 })).toEqual({
      status: 400,
      body: { detail: '[ERROR: CHUNK_OVERLAP must be at least 0 and smaller than CHUNK_SIZE]' },
    });
    expect((await call(`${R}/config/update`, admin, 'POST', { TEXT_SPLITTER: 'words' })).status).toBe(400);
    expect((await call(`${R}/config/update`, admin, 'POST', { TOP_K: 'x' })).status).toBe(422);
    // TOP_K 1 → the very next query answers one chunk; hybrid on → no ids, cosine scores.
    const updated = await config({ TOP_K: 1, ENABLE_RAG_HYBRID_SEARCH: true });
    expect(updated).toMatchObject({ TOP_K: 1, ENABLE_RAG_HYBRID_SEARCH: true });
    const r = await queryDoc(owner, kb.id, 'bread');
    expect(r.body.documents[0]).toHaveLength(1);
    expect(r.body.ids).toBeUndefined();
    const ev = (await eventsNamed(db, 'config.updated')).at(-1);
    expect(ev.data.keys.sort()).toEqual(['ENABLE_RAG_HYBRID_SEARCH', 'RAG_TOP_K']);
    await config({ TOP_K: 3, ENABLE_RAG_HYBRID_SEARCH: false });
    expect((await queryDoc(owner, kb.id, 'bread')).body.ids[0]).toHaveLength(3);
  });

  it('an external reranker (Open WebUI’s wire format) orders hybrid results and supplies their scores', async () => {
    const key = randomBytes(16).toString('hex');
    const fake = await fakeServer((body: { documents: string[] }) => ({
      // Puts the bread chunk first whatever the query.
      results: body.documents.map((d, index) => ({ index, relevance_score: d.includes('bread') ? 0.9 : 0.2 })).reverse(),
    }));
    try {
      await config({ ENABLE_RAG_HYBRID_SEARCH: true, RAG_RERANKING_ENGINE: 'external', RAG_RERANKING_MODEL: 'fake-rerank', RAG_EXTERNAL_RERANKER_URL: `${fake.url}/v1/rerank`, RAG_EXTERNAL_RERANKER_API_KEY: key });
      const r = await queryDoc(owner, kb.id, 'scheduler processor', { k: 2, k_reranker: 2 });
      expect(names(r.body)).toEqual(['recipes.txt', expect.any(String)]);
      expect(r.body.distances[0]).toEqual([0.9, 0.2]);
      expect(fake.requests).toHaveLength(1);
      const sent = fake.requests[0]!;
      expect(sent.url).toBe('/v1/rerank');
      expect(sent.headers.authorization).toBe(`Bearer ${key}`);
      expect(sent.body).toMatchObject({ model: 'fake-rerank', query: 'scheduler processor' });
      expect(sent.body.top_n).toBe(sent.body.documents.length);
      expect(sent.body.documents.length).toBeGreaterThanOrEqual(2);
      // The reranker's score is what r compares: 0.5 keeps the bread chunk only.
      expect(names((await queryDoc(owner, kb.id, 'scheduler processor', { k: 2, r: 0.5 })).body)).toEqual(['recipes.txt']);
    } finally {
      await config({ ENABLE_RAG_HYBRID_SEARCH: false, RAG_RERANKING_ENGINE: '', RAG_RERANKING_MODEL: '', RAG_EXTERNAL_RERANKER_URL: '', RAG_EXTERNAL_RERANKER_API_KEY: '' });
      await fake.close();
    }
  });

  it('an OpenAI-compatible embeddings endpoint (/embedding/update): batched, keyed, and searched by meaning', async () => {
    const key = randomBytes(16).toString('hex');
    // Three topics as three dimensions; "cpu" and "processor" share one, so meaning beats spelling.
    const topics = [/tomato|garden|sun/g, /scheduler|processor|cpu|task/g, /bread|bake|crust/g];
    const embed = (t: string) => topics.map((re) => (t.toLowerCase().match(re)?.length ?? 0) + 0.01);
    const fake = await fakeServer((body: { input: string[]; model: string }) => ({
      object: 'list',
      // Reversed with `index` set: the client must put them back in order.
      data: body.input.map((t, index) => ({ object: 'embedding', index, embedding: embed(t) })).reverse(),
      model: body.model,
      usage: { prompt_tokens: 1, total_tokens: 1 },
    }));
    try {
      const u = await call(`${R}/embedding/update`, admin, 'POST', {
        RAG_EMBEDDING_ENGINE: 'openai',
        RAG_EMBEDDING_MODEL: 'fake-embed',
        RAG_EMBEDDING_BATCH_SIZE: 2,
        openai_config: { url: `${fake.url}/v1`, key },
      });
      expect(u.status, JSON.stringify(u.body)).toBe(200);
      expect(u.body).toMatchObject({ status: true, RAG_EMBEDDING_ENGINE: 'openai', RAG_EMBEDDING_MODEL: 'fake-embed', RAG_EMBEDDING_BATCH_SIZE: 2, openai_config: { url: `${fake.url}/v1` } });
      expect((await call(`${R}/embedding`, admin)).body.RAG_EMBEDDING_MODEL).toBe('fake-embed');
      // Small chunks so one text makes several, embedded two at a time.
      await config({ CHUNK_SIZE: 50, CHUNK_OVERLAP: 0 });
      const text = 'Tomatoes love the sun in a garden.\n\nThe scheduler picks a task for the processor.\n\nBake bread until the crust is dark.';
      const made = await processText(owner, 'topics.txt', text);
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      const batches = fake.requests.map((r) => r.body.input.length);
      expect(batches.reduce((a, b) => a + b, 0)).toBe(3);
      expect(Math.max(...batches)).toBeLessThanOrEqual(2);
      for (const r of fake.requests) {
        expect(r.url).toBe('/v1/embeddings');
        expect(r.headers.authorization).toBe(`Bearer ${key}`);
        expect(r.body.model).toBe('fake-embed');
      }
      const stored = await db<{ model: string; n: number }[]>`
        select min(c.embedding_model) as model, count(*)::int as n from file_chunk c join file f on f.id = c.file_id where f.filename = 'topics.txt'`;
      expect([...stored]).toEqual([{ model: 'fake-embed', n: 3 }]);
      // "cpu" is in no chunk: only the endpoint's meaning finds the scheduler chunk.
      const r = await queryDoc(owner, made.body.collection_name, 'cpu', { k: 1 });
      expect(r.body.documents).toEqual([['The scheduler picks a task for the processor.']]);
      expect(r.body.distances[0][0]).toBeGreaterThan(0.99);
    } finally {
      await call(`${R}/embedding/update`, admin, 'POST', { RAG_EMBEDDING_ENGINE: '', RAG_EMBEDDING_MODEL: '' });
      await config({ CHUNK_SIZE: 1000, CHUNK_OVERLAP: 100 });
      await fake.close();
    }
    // Back on the offline default: its chunks are searched again, the fake's are not compared.
    expect((await call(`${R}/embedding`, admin)).body).toMatchObject({ RAG_EMBEDDING_ENGINE: '', RAG_EMBEDDING_MODEL: 'lexical-hash-v1' });
    expect(names((await queryDoc(owner, kb.id, 'schedular')).body)[0]).toBe('kernel.txt');
  });

  it('an embeddings endpoint that is down is a clear 400, not a 500 or a hang', async () => {
    const u = await call(`${R}/embedding/update`, admin, 'POST', { RAG_EMBEDDING_ENGINE: 'openai', RAG_EMBEDDING_MODEL: 'm', openai_config: { url: 'http://127.0.0.1:9/v1', key: 'k' } });
    expect(u.status).toBe(200);
    try {
      const r = await queryDoc(owner, kb.id, 'bread');
      expect(r.status).toBe(400);
      expect(r.body.detail).toMatch(/^\[ERROR: could not reach the embeddings endpoint http:\/\/127\.0\.0\.1:9\/v1\/embeddings/);
    } finally {
      await call(`${R}/embedding/update`, admin, 'POST', { RAG_EMBEDDING_ENGINE: '', RAG_EMBEDDING_MODEL: '' });
    }
  });
});
