import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_TOOL_FIND_DESCRIPTION, DEFAULT_TOOL_STORE_DESCRIPTION } from './config.ts';
import { embedLexical, LEXICAL_HASH_DIMENSION, LEXICAL_HASH_MODEL } from '@gatehouse/common';
import { FAKE_EMBEDDING_DIMENSION, letterBuckets, startFakeEmbeddings } from './testing/fake-embeddings.ts';
import { startFakeQdrant, type FakeQdrant, type RecordedRequest } from './testing/fake-qdrant.ts';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = 'services/vector-mcp/src/main.ts';
const UUID4_HEX = /^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$/;

let fake: FakeQdrant;
let apiKey: string;
const clients: Client[] = [];

beforeEach(async () => {
  apiKey = randomBytes(24).toString('hex');
  fake = await startFakeQdrant(apiKey);
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
  await fake.close();
});

/** Starts `node --import tsx src/main.ts` as a real child process and connects the official MCP client. */
async function connect(env: Record<string, string>): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', MAIN],
    cwd: REPO_ROOT,
    env: { VECTORDB_URL: fake.url, VECTORDB_API_KEY: apiKey, ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const client = new Client({ name: 'vector-mcp-test', version: '0.0.0' });
  clients.push(client);
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

const call = async (client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;

const textOf = (r: CallToolResult): string =>
  r.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n');

const summary = (r: RecordedRequest): string => `${r.method} ${r.url}`;

describe('tool listing', () => {
  it('offers qdrant-store and qdrant-find, both taking collection_name when no default collection is set', async () => {
    const { client } = await connect({});
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['qdrant-find', 'qdrant-store']);

    const store = tools.find((t) => t.name === 'qdrant-store')!;
    expect(store.description).toBe(DEFAULT_TOOL_STORE_DESCRIPTION);
    expect(Object.keys(store.inputSchema.properties ?? {}).sort()).toEqual(['collection_name', 'information', 'metadata']);
    expect([...(store.inputSchema.required ?? [])].sort()).toEqual(['collection_name', 'information']);

    const find = tools.find((t) => t.name === 'qdrant-find')!;
    expect(find.description).toBe(DEFAULT_TOOL_FIND_DESCRIPTION);
    expect(Object.keys(find.inputSchema.properties ?? {}).sort()).toEqual(['collection_name', 'query']);
    expect([...(find.inputSchema.required ?? [])].sort()).toEqual(['collection_name', 'query']);
    // Listing tools touches no vector store.
    expect(fake.requests).toEqual([]);
  });

  it('drops the collection_name argument when VECTORDB_COLLECTION is set', async () => {
    const { client } = await connect({ VECTORDB_COLLECTION: 'memories' });
    const { tools } = await client.listTools();
    const props = Object.fromEntries(tools.map((t) => [t.name, Object.keys(t.inputSchema.properties ?? {}).sort()]));
    expect(props).toEqual({ 'qdrant-find': ['query'], 'qdrant-store': ['information', 'metadata'] });
  });

  it('offers only qdrant-find when VECTORDB_READ_ONLY=true', async () => {
    const { client } = await connect({ VECTORDB_READ_ONLY: 'true' });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['qdrant-find']);
    const refused = await call(client, 'qdrant-store', { information: 'x', collection_name: 'c' });
    expect(refused.isError).toBe(true);
  });

  it('uses TOOL_STORE_DESCRIPTION and TOOL_FIND_DESCRIPTION', async () => {
    const { client } = await connect({ TOOL_STORE_DESCRIPTION: 'Save a note.', TOOL_FIND_DESCRIPTION: 'Search notes.' });
    const { tools } = await client.listTools();
    expect(Object.fromEntries(tools.map((t) => [t.name, t.description]))).toEqual({
      'qdrant-find': 'Search notes.',
      'qdrant-store': 'Save a note.',
    });
  });
});

describe('store and find against a Qdrant-compatible server', () => {
  it('creates the collection once, upserts mcp-server-qdrant-shaped points and finds them again', async () => {
    const { client, stderr } = await connect({});
    const c = 'team-notes';

    const first = await call(client, 'qdrant-store', {
      information: 'The staging database hostname is db-staging.internal.',
      metadata: { topic: 'infra', tags: ['db', 'staging'] },
      collection_name: c,
    });
    expect(first.isError).toBeFalsy();
    expect(textOf(first)).toBe(`Remembered: The staging database hostname is db-staging.internal. in collection ${c}`);

    const second = await call(client, 'qdrant-store', {
      information: 'Maria has her birthday on the 14th of March.',
      collection_name: c,
    });
    expect(second.isError).toBeFalsy();

    const found = await call(client, 'qdrant-find', { query: 'What is the staging database hostname?', collection_name: c });
    expect(found.isError).toBeFalsy();
    const lines = textOf(found).split('\n');
    expect(lines[0]).toBe("Results for the query 'What is the staging database hostname?'");
    // Best match first; metadata in Python json.dumps form; an entry without metadata has an empty tag.
    expect(lines[1]).toBe(
      '<entry><content>The staging database hostname is db-staging.internal.</content>' +
        '<metadata>{"topic": "infra", "tags": ["db", "staging"]}</metadata></entry>',
    );
    expect(lines[2]).toBe('<entry><content>Maria has her birthday on the 14th of March.</content><metadata></metadata></entry>');
    expect(lines).toHaveLength(3);

    // The exact calls, in order.
    expect(fake.requests.map(summary)).toEqual([
      `GET /collections/${c}/exists`,
      `PUT /collections/${c}`,
      `PUT /collections/${c}/points?wait=true`,
      `GET /collections/${c}/exists`,
      `PUT /collections/${c}/points?wait=true`,
      `GET /collections/${c}/exists`,
      `POST /collections/${c}/points/query`,
    ]);
    const [exists, create, upsert1, , upsert2, , query] = fake.requests;
    expect(exists!.body).toBeUndefined();
    expect(create!.body).toEqual({ vectors: { [LEXICAL_HASH_MODEL]: { size: LEXICAL_HASH_DIMENSION, distance: 'Cosine' } } });

    const point1 = (upsert1!.body as { points: unknown[] }).points;
    expect(point1).toHaveLength(1);
    expect(point1[0]).toEqual({
      id: expect.stringMatching(UUID4_HEX),
      vector: { [LEXICAL_HASH_MODEL]: embedLexical('The staging database hostname is db-staging.internal.') },
      payload: {
        document: 'The staging database hostname is db-staging.internal.',
        metadata: { topic: 'infra', tags: ['db', 'staging'] },
      },
    });
    const point2 = (upsert2!.body as { points: { id: string; payload: unknown }[] }).points[0]!;
    expect(point2.id).toMatch(UUID4_HEX);
    expect(point2.id).not.toBe((point1[0] as { id: string }).id);
    expect(point2.payload).toEqual({ document: 'Maria has her birthday on the 14th of March.', metadata: null });

    expect(query!.body).toEqual({
      query: embedLexical('What is the staging database hostname?'),
      using: LEXICAL_HASH_MODEL,
      limit: 10,
      with_payload: true,
    });

    // Every single request carried the key, and JSON bodies were labelled as such.
    for (const r of fake.requests) {
      expect(r.headers['api-key'], summary(r)).toBe(apiKey);
      if (r.body !== undefined) expect(r.headers['content-type'], summary(r)).toBe('application/json');
    }
    // The key is never logged.
    expect(stderr()).not.toContain(apiKey);
  });

  it('uses VECTORDB_COLLECTION as the collection and VECTORDB_SEARCH_LIMIT as the limit', async () => {
    const { client } = await connect({ VECTORDB_COLLECTION: 'memories', VECTORDB_SEARCH_LIMIT: '3' });
    for (let i = 0; i < 5; i++) {
      const r = await call(client, 'qdrant-store', { information: `note number ${i} about ports` });
      expect(textOf(r)).toBe(`Remembered: note number ${i} about ports in collection memories`);
    }
    const found = await call(client, 'qdrant-find', { query: 'ports' });
    expect(textOf(found).split('\n')).toHaveLength(1 + 3);
    const query = fake.requests.at(-1)!;
    expect(summary(query)).toBe('POST /collections/memories/points/query');
    expect((query.body as { limit: number }).limit).toBe(3);
    expect(fake.requests.filter((r) => r.method === 'PUT' && r.url === '/collections/memories')).toHaveLength(1);
  });

  it('answers "no information" for a missing collection without querying it', async () => {
    const { client } = await connect({});
    const found = await call(client, 'qdrant-find', { query: 'anything', collection_name: 'nothing-here' });
    expect(found.isError).toBeFalsy();
    expect(textOf(found)).toBe("No information found for the query 'anything'");
    expect(fake.requests.map(summary)).toEqual(['GET /collections/nothing-here/exists']);
  });

  it('answers "no information" for an empty collection', async () => {
    const { client } = await connect({});
    fake.collections.set('empty', { vectors: { [LEXICAL_HASH_MODEL]: { size: 384, distance: 'Cosine' } }, points: new Map() });
    const found = await call(client, 'qdrant-find', { query: 'anything', collection_name: 'empty' });
    expect(textOf(found)).toBe("No information found for the query 'anything'");
  });

  it('percent-encodes collection names in paths', async () => {
    const { client } = await connect({});
    await call(client, 'qdrant-store', { information: 'x', collection_name: 'my notes#1' });
    expect(fake.requests.map(summary)[0]).toBe('GET /collections/my%20notes%231/exists');
    expect(fake.collections.has('my notes#1')).toBe(true);
  });
});

describe('failures become MCP error results', () => {
  it('reports a refused key (401) as a tool error naming VECTORDB_API_KEY, and keeps serving', async () => {
    const { client } = await connect({ VECTORDB_API_KEY: randomBytes(24).toString('hex') });
    for (const [tool, args] of [
      ['qdrant-store', { information: 'secret plans', collection_name: 'c' }],
      ['qdrant-find', { query: 'plans', collection_name: 'c' }],
    ] as const) {
      const r = await call(client, tool, args);
      expect(r.isError, tool).toBe(true);
      expect(textOf(r)).toMatch(/refused the API key \(HTTP 401: Invalid API key or JWT\)/);
      expect(textOf(r)).toContain('VECTORDB_API_KEY');
    }
    expect(fake.requests.every((r) => r.headers['api-key'] !== apiKey)).toBe(true);
    // Still alive after the errors.
    expect((await client.listTools()).tools).toHaveLength(2);
  });

  it('reports an unreachable vector store as a tool error', async () => {
    const url = fake.url;
    await fake.close();
    const { client } = await connect({ VECTORDB_URL: url });
    const r = await call(client, 'qdrant-find', { query: 'x', collection_name: 'c' });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain(`could not reach the vector store at ${url}`);
    fake = await startFakeQdrant(apiKey); // for afterEach
  });

  it('reports a vector-name mismatch from the store as a tool error', async () => {
    const { client } = await connect({});
    fake.collections.set('other', { vectors: { 'fast-all-minilm-l6-v2': { size: 384, distance: 'Cosine' } }, points: new Map() });
    const r = await call(client, 'qdrant-store', { information: 'x', collection_name: 'other' });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain(`HTTP 400: Wrong input: Not existing vector name error: ${LEXICAL_HASH_MODEL}`);
  });

  it('rejects an invalid collection name before calling the store', async () => {
    const { client } = await connect({});
    const r = await call(client, 'qdrant-store', { information: 'x', collection_name: 'a/b' });
    expect(r.isError).toBe(true);
    expect(fake.requests).toEqual([]);
  });
});

describe('EMBEDDING_PROVIDER=openai', () => {
  it('embeds through the OpenAI-compatible endpoint and names the vector like mcp-server-qdrant', async () => {
    const embeddings = await startFakeEmbeddings();
    try {
      const embeddingKey = randomBytes(16).toString('hex');
      const { client } = await connect({
        EMBEDDING_PROVIDER: 'openai',
        EMBEDDING_BASE_URL: embeddings.url,
        EMBEDDING_MODEL: 'sentence-transformers/All-MiniLM-L6-v2',
        EMBEDDING_API_KEY: embeddingKey,
      });
      await call(client, 'qdrant-store', { information: 'zebra', collection_name: 'c' });
      await call(client, 'qdrant-store', { information: 'apple', collection_name: 'c' });
      const found = await call(client, 'qdrant-find', { query: 'zebras', collection_name: 'c' });
      expect(textOf(found).split('\n')[1]).toBe('<entry><content>zebra</content><metadata></metadata></entry>');

      expect(embeddings.requests).toHaveLength(3);
      for (const r of embeddings.requests) {
        expect(r.url).toBe('/v1/embeddings');
        expect(r.headers.authorization).toBe(`Bearer ${embeddingKey}`);
        expect(r.headers['api-key']).toBeUndefined();
      }
      expect(embeddings.requests[0]!.body).toEqual({ model: 'sentence-transformers/All-MiniLM-L6-v2', input: ['zebra'] });

      const create = fake.requests.find((r) => r.method === 'PUT' && r.url === '/collections/c')!;
      expect(create.body).toEqual({ vectors: { 'fast-all-minilm-l6-v2': { size: FAKE_EMBEDDING_DIMENSION, distance: 'Cosine' } } });
      const query = fake.requests.at(-1)!;
      expect(query.body).toEqual({ query: letterBuckets('zebras'), using: 'fast-all-minilm-l6-v2', limit: 10, with_payload: true });
      // The vector-store key never goes to the embeddings endpoint, and vice versa.
      expect(JSON.stringify(embeddings.requests)).not.toContain(apiKey);
      expect(JSON.stringify(fake.requests)).not.toContain(embeddingKey);
    } finally {
      await embeddings.close();
    }
  });
});
