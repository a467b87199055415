import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embedLexical } from '@gatehouse/common';
import { enforcedState, flipGate } from '../../scripts/src/gate-ops.ts';
import { freePort, newKey, Stack, waitFor, type Edge } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream, Recorded } from '../../scripts/src/fake-upstreams/common.ts';
import { chatClient, chatDb, type Account } from './chat-fixture.ts';

/**
 * Retrieval in `POST /api/chat/completions` on the real stack: chat and ingest workers, proxy
 * worker with a fake OpenAI upstream (it records what it was sent, so the injected context can be
 * read), and an edge serving the chat face and the project's own vector face (the
 * Qdrant-compatible external source, behind its api-key). Files are uploaded and processed through
 * the files API into a knowledge base made with the knowledge API, as a client does; chunks are
 * small (CHUNK_SIZE 100) so a file's paragraphs are chunks of their own.
 */
const stack = new Stack();
const db = chatDb(stack);
const openaiKey = newKey();
const vectorKey = newKey();
let edge: Edge;
let oa: FakeUpstream;
let admin: Account;
let alice: Account;
let bob: Account;

const { call, signup, addUser } = chatClient(() => edge.chatUrl, { json: false });

/**
 * Upload a text file as `owner` (into `knowledgeId` when given) and wait, bounded, until the ingest
 * worker has processed it — and linked it to the knowledge base, when one was named.
 */
async function uploadFile(owner: Account, filename: string, text: string, knowledgeId?: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/plain' }), filename);
  if (knowledgeId) form.append('metadata', JSON.stringify({ knowledge_id: knowledgeId }));
  const r = await fetch(`${edge.chatUrl}/api/v1/files/`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` }, body: form });
  const body = await r.json();
  expect(r.status, JSON.stringify(body)).toBe(200);
  const id: string = body.id;
  await waitFor(
    async () => {
      const status = (await call(`/api/v1/files/${id}/process/status`, owner)).body?.status;
      if (status === 'failed') throw new Error(`${filename} failed to process`);
      if (status !== 'completed') return false;
      return !knowledgeId || (await db`select 1 from knowledge_file where knowledge_id = ${knowledgeId} and file_id = ${id}`).length === 1;
    },
    60_000,
    () => `${filename} was not processed in time:\n${stack.ingest?.log().slice(-3000)}`,
  );
  return id;
}

function complete(who: Account, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${edge.chatUrl}/api/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${who.token}` },
    body: JSON.stringify(body),
  });
}

/** A streamed completion: raw text and the JSON of each data event but [DONE]. */
async function stream(who: Account, body: Record<string, unknown>): Promise<{ status: number; text: string; data: any[] }> {
  const r = await complete(who, { model: 'echo', stream: true, ...body });
  const text = await r.text();
  const data = text
    .split('\n\n')
    .filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]')
    .map((e) => JSON.parse(e.slice(6)));
  return { status: r.status, text, data };
}

/** The request the fake upstream got whose last message carries `mark`. */
function sentTo(mark: string): Recorded {
  const rec = [...oa.requests].reverse().find((r) => r.method === 'POST' && r.raw.toString('utf8').includes(mark));
  expect(rec, `the upstream got a request with ${mark}`).toBeDefined();
  return rec!;
}
const lastUserContent = (rec: Recorded): string => {
  const msgs = (rec.json as any).messages as any[];
  return msgs.filter((m) => m.role === 'user').at(-1).content;
};
const answerText = (data: any[]) => data.flatMap((d) => (d.choices ?? []).map((c: any) => c.delta?.content ?? '')).join('');

// Corpus: two files in Alice's knowledge base, one loose file of hers.
const ORBIT = 'The Zephyr probe orbits the moon Titan every sixteen days, measuring methane rain.';
const BAKING = 'Sourdough bread needs a starter of flour and water fed daily for a week.';
const LOOSE = 'The lighthouse keeper logbook records fog on forty nights in November.';
const LAKES = 'Titan has lakes of liquid ethane and methane near its poles.';
let kb: string;
let orbitFile: string;
let looseFile: string;

// Outside retrieval services.
let httpSource: Server;
let httpUrl: string;
const httpSeen: { body: any; auth: string | undefined }[] = [];
let hanging: Server;
let hangingUrl: string;

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let s = '';
    req.on('data', (d) => (s += d));
    req.on('end', () => resolve(s));
  });

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  oa = await startFakeOpenAI({ apiKey: openaiKey });
  await stack.startProxyWorker({ OPENAI_API_BASE_URLS: oa.url, OPENAI_API_KEYS: openaiKey });
  await stack.startChatWorker({
    CHUNK_SIZE: '100',
    CHUNK_OVERLAP: '0',
    EVALUATION_ARENA_MODELS: JSON.stringify([{ id: 'solo-arena', name: 'Solo arena', meta: { model_ids: ['echo'] } }]),
  });
  await stack.startVectorWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat,vector' });
  // The vector face as deployed: only callers with its api-key get in.
  const flip = await flipGate(await stack.store(), 'vector', enforcedState([vectorKey], 'chat-rag test'));
  expect(flip.lagging).toEqual([]);
  admin = await signup();
  alice = await addUser(admin, 'Alice');
  bob = await addUser(admin, 'Bob');

  const made = await call('/api/v1/knowledge/create', alice, 'POST', { name: 'Alice notes', description: 'Space and baking' });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  kb = made.body.id;
  orbitFile = await uploadFile(alice, 'space.txt', `${ORBIT}\n\n${LAKES}`, kb);
  await uploadFile(alice, 'kitchen.md', BAKING, kb);
  looseFile = await uploadFile(alice, 'log.txt', LOOSE);

  httpSource = createServer(async (req, res) => {
    if (req.url === '/huge') {
      // An endpoint that answers far more than any search result: 9 MB of one string.
      res.setHeader('content-type', 'application/json');
      res.write('{"results": [{"content": "');
      for (let i = 0; i < 9; i++) res.write('x'.repeat(1024 * 1024));
      res.end('"}]}');
      return;
    }
    const body = JSON.parse(await readBody(req));
    httpSeen.push({ body, auth: req.headers.authorization });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ results: [{ content: 'Ravens in the tower are fed raw meat at dawn.', title: 'Tower guide', url: 'https://example.com/tower', score: 0.91, metadata: { page: 3 } }] }));
  });
  httpUrl = await listen(httpSource);
  // Accepts the connection, never answers: only the source's deadline ends the wait.
  hanging = createServer(() => undefined);
  hangingUrl = await listen(hanging);
});

afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
  await oa?.close();
  httpSource?.closeAllConnections();
  hanging?.closeAllConnections();
  await Promise.all([httpSource, hanging].map((s) => new Promise((r) => (s ? s.close(() => r(undefined)) : r(undefined)))));
});

describe('a knowledge base in the chat', () => {
  it('streams the sources first and sends the chunks upstream in Open WebUI’s RAG template', async () => {
    const q = `How often does the Zephyr probe orbit Titan? ${randomUUID().slice(0, 6)}`;
    const r = await stream(alice, { messages: [{ role: 'user', content: q }], files: [{ type: 'collection', id: kb }] });
    expect(r.status).toBe(200);
    // Open WebUI's event line, Python json.dumps spacing, before any chunk.
    expect(r.text.startsWith('data: {"sources": [{"source": {"type": "collection", "id": ')).toBe(true);
    const [first, ...rest] = r.data;
    expect(Object.keys(first)).toEqual(['sources']);
    expect(rest.every((d) => d.object === 'chat.completion.chunk')).toBe(true);
    const [src] = first.sources;
    expect(first.sources).toHaveLength(1);
    expect(src.source).toEqual({ type: 'collection', id: kb, name: 'Alice notes' });
    expect(src.document[0]).toBe(ORBIT);
    expect(src.document.length).toBeLessThanOrEqual(3); // RAG_TOP_K
    expect(src.metadata[0]).toMatchObject({ file_id: orbitFile, name: 'space.txt', source: 'space.txt', knowledge_id: kb });
    expect(src.distances).toHaveLength(src.document.length);
    expect(src.distances[0]).toBeGreaterThan(0);

    const sent = lastUserContent(sentTo(q));
    // The template, the numbered sources (one number per file), then the question itself.
    expect(sent.startsWith('### Task:\nRespond to the user query using the provided context, incorporating inline citations in the format [id]')).toBe(true);
    const ids = new Map<string, number>();
    const lines = src.document.map((doc: string, i: number) => {
      const file = src.metadata[i].source;
      if (!ids.has(file)) ids.set(file, ids.size + 1);
      return `<source id="${ids.get(file)}" name="Alice notes">${doc}</source>`;
    });
    expect(sent).toContain(`<context>\n${lines.join('\n')}\n</context>\n\n${q}`);
    expect(sent.endsWith(`</context>\n\n${q}`)).toBe(true);
    expect(answerText(rest)).toBe(`echo: ${sent}`);
  });

  it('an arena model announces its pick first, then the sources, as Open WebUI’s wrappers nest', async () => {
    const q = `Zephyr orbit ${randomUUID().slice(0, 6)}`;
    const r = await stream(alice, { model: 'solo-arena', messages: [{ role: 'user', content: q }], files: [{ type: 'collection', id: kb }] });
    expect(r.status).toBe(200);
    expect(r.data[0]).toEqual({ selected_model_id: 'echo' });
    expect(Object.keys(r.data[1])).toEqual(['sources']);
    expect(r.data[1].sources[0].document[0]).toBe(ORBIT);
    expect(r.data.slice(2).every((d) => d.object === 'chat.completion.chunk')).toBe(true);
  });

  it('answers non-streamed with `sources` as the first key; metadata.files works as files does', async () => {
    const q = `Tell me about sourdough starter ${randomUUID().slice(0, 6)}`;
    const r = await complete(alice, { model: 'echo', stream: false, messages: [{ role: 'user', content: q }], metadata: { files: [{ type: 'collection', id: kb }] } });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(Object.keys(body)[0]).toBe('sources');
    expect(body.sources[0].document[0]).toBe(BAKING);
    expect(body.choices[0].message.content).toContain(`name="Alice notes">${BAKING}</source>`);
  });

  it('keeps the sources on the stored reply: chat JSON and chat_message row', async () => {
    const created = await call('/api/v1/chats/new', alice, 'POST', { chat: { title: 'RAG', models: ['echo'], history: { messages: {}, currentId: null } } });
    expect(created.status).toBe(200);
    const chatId = created.body.id;
    const userId = randomUUID();
    const assistantId = randomUUID();
    const q = `Where does the Zephyr probe measure methane rain? ${randomUUID().slice(0, 6)}`;
    const r = await stream(alice, {
      chat_id: chatId,
      id: assistantId,
      parent_id: userId,
      user_message: { id: userId, parentId: null, role: 'user', content: q },
      messages: [{ role: 'user', content: q }],
      files: [{ type: 'collection', id: kb, name: 'My notes' }],
    });
    expect(r.status).toBe(200);
    const streamed = r.data[0].sources;
    // The client's name for the item wins, as Open WebUI keeps the item it was given.
    expect(streamed[0].source.name).toBe('My notes');
    expect(lastUserContent(sentTo(q))).toContain('name="My notes">');

    const chat = await call(`/api/v1/chats/${chatId}`, alice);
    expect(chat.status).toBe(200);
    const stored = chat.body.chat.history.messages[assistantId];
    expect(stored.sources).toEqual(streamed);
    expect(stored.done).toBe(true);
    // The user message is stored as sent: the context went upstream only.
    expect(chat.body.chat.history.messages[userId].content).toBe(q);
    const [row] = await db<{ sources: any }[]>`select sources from chat_message where chat_id = ${chatId} and id = ${assistantId}`;
    expect(row!.sources).toEqual(streamed);
  });
});

describe('the admin’s retrieval settings', () => {
  const config = async (patch: Record<string, unknown>) => {
    const r = await call('/api/v1/retrieval/config/update', admin, 'POST', patch);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };

  it('apply to the next message: TOP_K, hybrid search (scores in the metadata), RAG_TEMPLATE', async () => {
    try {
      await config({ TOP_K: 1, ENABLE_RAG_HYBRID_SEARCH: true, RAG_TEMPLATE: 'Use this:\n[context]\nTo answer: [query]' });
      const q = `Zephyr probe orbit Titan ${randomUUID().slice(0, 6)}`;
      const r = await stream(alice, { messages: [{ role: 'user', content: q }], files: [{ type: 'collection', id: kb }] });
      const [src] = r.data[0].sources;
      expect(src.document).toEqual([ORBIT]);
      expect(src.metadata[0].score).toBe(src.distances[0]);
      expect(lastUserContent(sentTo(q))).toBe(`Use this:\n<source id="1" name="Alice notes">${ORBIT}</source>\nTo answer: ${q}\n${q}`);
    } finally {
      await config({ TOP_K: 3, ENABLE_RAG_HYBRID_SEARCH: false, RAG_TEMPLATE: '' });
    }
  });
});

describe('files and access', () => {
  it('searches a single file (type file), and gives the whole document with context "full"', async () => {
    const q = `What did the lighthouse keeper record? ${randomUUID().slice(0, 6)}`;
    const r = await stream(alice, { messages: [{ role: 'user', content: q }], files: [{ type: 'file', id: looseFile }] });
    const [src] = r.data[0].sources;
    expect(src.source).toEqual({ type: 'file', id: looseFile, name: 'log.txt' });
    expect(src.document).toEqual([LOOSE]);
    expect(src.metadata[0]).toMatchObject({ file_id: looseFile, name: 'log.txt', source: 'log.txt' });
    expect(lastUserContent(sentTo(q))).toContain(`<source id="1" name="log.txt">${LOOSE}</source>`);

    const q2 = `Summarise space.txt ${randomUUID().slice(0, 6)}`;
    const full = await stream(alice, { messages: [{ role: 'user', content: q2 }], files: [{ type: 'file', id: orbitFile, context: 'full' }] });
    const [whole] = full.data[0].sources;
    // The extracted text, both chunks' worth, as one document.
    expect(whole.document).toEqual([`${ORBIT}\n\n${LAKES}`]);
    expect(whole.source.context).toBe('full');
  });

  it('skips a knowledge base or file the caller may not read, without a word (as Open WebUI)', async () => {
    const q = `Titan orbit please ${randomUUID().slice(0, 6)}`;
    const r = await stream(bob, { messages: [{ role: 'user', content: q }], files: [{ type: 'collection', id: kb }, { type: 'file', id: looseFile }, { type: 'collection', id: randomUUID() }] });
    expect(r.status).toBe(200);
    expect(r.data.some((d) => 'sources' in d)).toBe(false);
    expect(lastUserContent(sentTo(q))).toBe(q);
    expect(answerText(r.data)).toBe(`echo: ${q}`);
  });

  it('refuses a malformed files list with a 400 detail, storing nothing', async () => {
    const r = await complete(alice, { model: 'echo', messages: [{ role: 'user', content: 'hi' }], files: 'everything' });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ detail: 'files must be a list of objects like {"type": "collection", "id": "…"}' });
    const r2 = await complete(alice, { model: 'echo', messages: [{ role: 'user', content: 'hi' }], files: [{ type: 'file', id: 7 }] });
    expect(r2.status).toBe(400);
    expect((await r2.json()).detail).toBe('a files item of type file needs a string id');
  });
});

describe('external knowledge sources', () => {
  const headers = { 'content-type': 'application/json', 'api-key': vectorKey };
  const COLLECTION = `docs_${randomUUID().slice(0, 6)}`;
  const SPACE_FACT = 'Comet Halley returns to the inner solar system every seventy six years.';

  async function connection(body: Record<string, unknown>): Promise<string> {
    const r = await call('/api/v1/knowledge/external/connections', admin, 'POST', body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.id;
  }
  async function externalKb(connection_id: string, name: string, source: Record<string, unknown>): Promise<string> {
    const r = await call('/api/v1/knowledge/external/knowledge/create', admin, 'POST', { name, connection_id, source });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.meta).toEqual({
      source: 'external',
      read_only: true,
      external: { connection_id, source: { type: 'collection', ...source }, provider: expect.any(String), auth_mode: 'service_account', capabilities: { retrieve: true } },
    });
    return r.body.id;
  }

  it('a Qdrant collection (the project’s vector face, with its api-key) answers in the chat', async () => {
    // The collection, filled by another application that uses the same offline embedding.
    const put = await fetch(`${edge.vectorUrl}/collections/${COLLECTION}`, { method: 'PUT', headers, body: JSON.stringify({ vectors: { size: 384, distance: 'Cosine' } }) });
    expect(put.status).toBe(200);
    const texts = [SPACE_FACT, 'Tea ceremonies in Kyoto follow strict seasonal rules.'];
    const up = await fetch(`${edge.vectorUrl}/collections/${COLLECTION}/points?wait=true`, {
      method: 'PUT',
      headers,
      body: JSON.stringify({ points: texts.map((text, i) => ({ id: i + 1, vector: embedLexical(text), payload: { text, metadata: { origin: 'almanac' } } })) }),
    });
    expect(up.status).toBe(200);

    const id = await connection({ name: 'Vector face', provider: 'qdrant', endpoint: edge.vectorUrl, auth_config: { api_key: vectorKey }, config: { timeout: 10 } });
    const listed = await call('/api/v1/knowledge/external/connections', admin);
    const mine = listed.body.items.find((c: any) => c.id === id);
    // Credentials go in, never out.
    expect(mine).toMatchObject({ name: 'Vector face', provider: 'qdrant', endpoint: edge.vectorUrl, enabled: true, auth_configured: true, config: { timeout: 10 } });
    expect(JSON.stringify(listed.body)).not.toContain(vectorKey);
    expect((await call('/api/v1/knowledge/external/connections', alice)).status).toBe(401);
    const health = await call(`/api/v1/knowledge/external/connections/${id}/test`, admin, 'POST');
    expect(health.body).toMatchObject({ ok: true, provider: 'qdrant' });

    const test = await call(`/api/v1/knowledge/external/connections/${id}/retrieve-test`, admin, 'POST', { query: 'When does Halley return?', source: { name: COLLECTION, config: { content_field: 'payload.text' } }, count: 1 });
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    expect(test.body.documents).toEqual([SPACE_FACT]);

    const ext = await externalKb(id, 'Almanac', { name: COLLECTION, config: { content_field: 'payload.text' } });
    const q = `When does comet Halley return? ${randomUUID().slice(0, 6)}`;
    const r = await stream(admin, { messages: [{ role: 'user', content: q }], files: [{ type: 'collection', id: ext }] });
    const [src] = r.data[0].sources;
    expect(src.source).toEqual({ type: 'collection', id: ext, name: 'Almanac' });
    expect(src.document[0]).toBe(SPACE_FACT);
    expect(src.metadata[0]).toMatchObject({ origin: 'almanac', knowledge_id: ext, knowledge_name: 'Almanac', external: true, file_id: '1' });
    expect(lastUserContent(sentTo(q))).toContain(`name="Almanac">${SPACE_FACT}</source>`);
    // A used connection cannot go.
    const del = await call(`/api/v1/knowledge/external/connections/${id}`, admin, 'DELETE');
    expect(del).toMatchObject({ status: 400, body: { detail: 'External connection is still used by knowledge bases.' } });
  });

  it('a generic HTTP retrieval endpoint answers in the chat, with its Bearer key', async () => {
    const key = newKey();
    const id = await connection({ name: 'Tower search', provider: 'http', endpoint: `${httpUrl}/search`, auth_config: { api_key: key } });
    const ext = await externalKb(id, 'Tower', { name: 'tower-docs', config: {} });
    const q = `What do the ravens eat? ${randomUUID().slice(0, 6)}`;
    const r = await stream(alice, { messages: [{ role: 'user', content: q }], files: [{ type: 'collection', id: ext }] });
    // Alice has no grant on the admin's external base: skipped.
    expect(r.data.some((d) => 'sources' in d)).toBe(false);

    const before = httpSeen.length;
    const ok = await stream(admin, { messages: [{ role: 'user', content: q }], files: [{ type: 'collection', id: ext }] });
    expect(httpSeen.length).toBe(before + 1);
    expect(httpSeen.at(-1)).toEqual({ body: { query: q, count: 3, collection: 'tower-docs' }, auth: `Bearer ${key}` });
    const [src] = ok.data[0].sources;
    expect(src.document).toEqual(['Ravens in the tower are fed raw meat at dawn.']);
    expect(src.metadata[0]).toMatchObject({ name: 'Tower guide', source: 'Tower guide', url: 'https://example.com/tower', page: 3, external: true });
    expect(src.distances).toEqual([0.91]);
  });

  it('source/create tests the source first; its grants reach the grantee; PATCH renames, re-tests and revokes', async () => {
    const closedPort = await freePort();
    const refused = await call('/api/v1/knowledge/external/source/create', admin, 'POST', {
      name: 'Nowhere',
      connection: { name: 'Nowhere', provider: 'http', endpoint: `http://127.0.0.1:${closedPort}/` },
      source: { name: 'n' },
      test_query: 'anything',
    });
    expect(refused).toMatchObject({ status: 400, body: { detail: 'External knowledge source test failed: unreachable (ECONNREFUSED).' } });

    const connection = { name: 'Tower 2', provider: 'http', endpoint: `${httpUrl}/search` };
    const made = await call('/api/v1/knowledge/external/source/create', admin, 'POST', {
      name: 'Tower shared',
      connection,
      source: { name: 'tower-docs' },
      access_grants: [{ principal_type: 'user', principal_id: alice.id, permission: 'read' }],
      test_query: 'ravens',
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect(made.body.access_grants).toMatchObject([{ principal_type: 'user', principal_id: alice.id, permission: 'read' }]);
    const id = made.body.id;
    // The knowledge bases API sees it as Open WebUI's clients do.
    const seen = await call(`/api/v1/knowledge/${id}`, alice);
    expect(seen.status).toBe(200);
    expect(seen.body.meta.source).toBe('external');

    const q = `Ravens? ${randomUUID().slice(0, 6)}`;
    const granted = await stream(alice, { messages: [{ role: 'user', content: q }], files: [{ type: 'collection', id }] });
    expect(granted.data[0].sources[0].source.name).toBe('Tower shared');

    const patched = await call(`/api/v1/knowledge/external/source/${id}`, admin, 'PATCH', { name: 'Tower renamed', connection, source: { name: 'tower-docs' }, access_grants: [], test_query: 'ravens' });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ name: 'Tower renamed', access_grants: [] });
    const revoked = await stream(alice, { messages: [{ role: 'user', content: q }], files: [{ type: 'collection', id }] });
    expect(revoked.data.some((d) => 'sources' in d)).toBe(false);
    const owner = await stream(admin, { messages: [{ role: 'user', content: q }], files: [{ type: 'collection', id }] });
    expect(owner.data[0].sources[0].source.name).toBe('Tower renamed');
    expect((await call(`/api/v1/knowledge/external/source/${orbitFile}`, admin, 'PATCH', { name: 'x', connection, source: { name: 'y' }, test_query: 'q' })).status).toBe(404);
  });

  it('an unreachable or silent source is reported in the sources and the prompt, and the chat still answers', async () => {
    const closedPort = await freePort();
    const dead = await connection({ name: 'Dead', provider: 'http', endpoint: `http://127.0.0.1:${closedPort}/search` });
    const silent = await connection({ name: 'Silent', provider: 'qdrant', endpoint: hangingUrl, config: { timeout: 1 } });
    const deadKb = await externalKb(dead, 'Dead archive', { name: 'x', config: {} });
    const silentKb = await externalKb(silent, 'Silent archive', { name: 'y', config: { content_field: 'payload.text' } });

    const q = `Anything about Titan? ${randomUUID().slice(0, 6)}`;
    const r = await stream(admin, {
      messages: [{ role: 'user', content: q }],
      files: [{ type: 'collection', id: deadKb }, { type: 'collection', id: silentKb }, { type: 'collection', id: kb }],
    });
    expect(r.status).toBe(200);
    expect(r.text.endsWith('data: [DONE]\n\n')).toBe(true);
    const sources = r.data[0].sources;
    expect(sources.map((s: any) => s.source.name)).toEqual(['Dead archive', 'Silent archive', 'Alice notes']);
    expect(sources[0].source.error).toMatch(/^The knowledge base "Dead archive" could not be searched: unreachable \(ECONNREFUSED\)\.$/);
    expect(sources[1].source.error).toBe('The knowledge base "Silent archive" could not be searched: no answer within 1 s.');
    expect(sources[2].document[0]).toBe(ORBIT);
    const sent = lastUserContent(sentTo(q));
    expect(sent).toContain(`<source id="1" name="Dead archive">${sources[0].source.error}</source>`);
    expect(sent).toContain(`<source id="2" name="Silent archive">${sources[1].source.error}</source>`);
    expect(answerText(r.data.slice(1))).toBe(`echo: ${sent}`);

    const health = await call(`/api/v1/knowledge/external/connections/${dead}/test`, admin, 'POST');
    expect(health.body).toMatchObject({ ok: false, provider: 'http', error: 'unreachable (ECONNREFUSED)' });
  });

  it('refuses an answer too big to be search results, without holding it', async () => {
    const id = await connection({ name: 'Huge', provider: 'http', endpoint: `${httpUrl}/huge` });
    const r = await call(`/api/v1/knowledge/external/connections/${id}/retrieve-test`, admin, 'POST', { query: 'q', source: { name: 'c' } });
    expect(r).toMatchObject({ status: 400, body: { detail: 'External knowledge source test failed: answered more than 8 MB.' } });
  });

  it('validates connections as Open WebUI does, in its {detail} form', async () => {
    const bad = await call('/api/v1/knowledge/external/connections', admin, 'POST', { name: 'X', provider: 'milvus', endpoint: 'http://127.0.0.1:1' });
    expect(bad).toMatchObject({ status: 400, body: { detail: 'Unsupported external knowledge provider.' } });
    const noUrl = await call('/api/v1/knowledge/external/connections', admin, 'POST', { name: 'X', provider: 'http', endpoint: 'not a url' });
    expect(noUrl.status).toBe(400);
    const missing = await call('/api/v1/knowledge/external/connections', admin, 'POST', { name: 'X' });
    expect(missing.status).toBe(422);
    expect((await call(`/api/v1/knowledge/external/connections/${randomUUID()}`, admin)).status).toBe(404);
  });
});
