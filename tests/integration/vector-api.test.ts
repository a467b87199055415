import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QdrantClient } from '@qdrant/js-client-rest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { rawRequest } from '../../scripts/src/probe.ts';
import { enforcedState, flipGate } from '../../scripts/src/gate-ops.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';

/**
 * The vector face with the official Qdrant JS client (1.18, the last that runs on Node 20) and
 * raw HTTP, then the client tool: the MCP server as a real process driven by the MCP client.
 */
const stack = new Stack();
let edge: Edge;
let qdrant: QdrantClient;

beforeAll(async () => {
  await stack.startVectorWorker();
  edge = await stack.startEdge();
  qdrant = new QdrantClient({ url: edge.vectorUrl, checkCompatibility: false });
});
afterAll(() => stack.close());

const raw = (path: string, method = 'GET', body?: unknown) =>
  rawRequest(edge.vectorUrl, path, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });

describe('service endpoints', () => {
  it('GET / answers like Qdrant 1.19, health paths in plain text', async () => {
    const root = JSON.parse((await raw('/')).body);
    expect(Object.keys(root).sort()).toEqual(['commit', 'title', 'version']);
    expect(root.title).toBe('qdrant - vector search engine');
    expect(root.version).toMatch(/^1\.19\./);
    expect(root.commit).toHaveLength(40);
    const h = await raw('/healthz');
    expect(h.body).toBe('healthz check passed');
    expect(h.headers['content-type']).toMatch(/text\/plain/);
    expect((await raw('/readyz')).body).toBe('all shards are ready');
  });
});

describe('u64 point ids beyond 2^53 over raw HTTP', () => {
  const C = 'bigids';
  const ids = ['9007199254740993', '424242424242424242', '18446744073709551615'];
  // Raw text both ways: JSON.stringify/JSON.parse in the test would round the ids themselves.
  const send = (path: string, method: string, body: string) => raw(path, method, body);

  it('stores, returns, searches, scrolls, filters and deletes them exactly', async () => {
    expect((await raw(`/collections/${C}`, 'PUT', { vectors: { size: 2, distance: 'Dot' } })).status).toBe(200);
    const points = ids.map((id, i) => `{"id":${id},"vector":[${i + 1},0],"payload":{"n":${id}}}`).join(',');
    const up = await send(`/collections/${C}/points?wait=true`, 'PUT', `{"points":[${points}]}`);
    expect(up.status).toBe(200);

    const got = await send(`/collections/${C}/points`, 'POST', `{"ids":[${ids.join(',')}]}`);
    for (const id of ids) {
      expect(got.body).toContain(`"id":${id},`);
      expect(got.body).toContain(`"n":${id}}`);
    }
    expect((await raw(`/collections/${C}/points/${ids[1]}`)).body).toContain(`"id":${ids[1]},`);

    const hits = await send(`/collections/${C}/points/search`, 'POST', `{"vector":[1,0],"limit":1}`);
    expect(hits.body).toContain(`"id":${ids[2]},`);

    const page = await send(`/collections/${C}/points/scroll`, 'POST', `{"limit":1,"offset":${ids[1]}}`);
    expect(page.body).toContain(`"id":${ids[1]},`);
    expect(page.body).toContain(`"next_page_offset":${ids[2]}`);

    const filtered = await send(`/collections/${C}/points/scroll`, 'POST', `{"filter":{"must":[{"has_id":[${ids[1]}]}]}}`);
    expect(filtered.body.match(/"id":(\d+)/g)).toEqual([`"id":${ids[1]}`]);

    const missing = await send(`/collections/${C}/points/vectors?wait=true`, 'PUT', `{"points":[{"id":424242424242424243,"vector":[1,1]}]}`);
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body).status.error).toBe('Not found: No point with id 424242424242424243 found');

    const over = await send(`/collections/${C}/points`, 'POST', `{"ids":[18446744073709551616]}`);
    expect(over.status).toBe(400);
    expect(over.body).toContain('value 18446744073709551616 is not a valid point ID');

    expect((await send(`/collections/${C}/points/delete?wait=true`, 'POST', `{"points":[${ids[0]}]}`)).status).toBe(200);
    const left = await send(`/collections/${C}/points/scroll`, 'POST', `{}`);
    expect(left.body.match(/"id":(\d+)/g)).toEqual([`"id":${ids[1]}`, `"id":${ids[2]}`]);
  });
});

describe('collections and points through the Qdrant client', () => {
  const C = 'books';
  it('creates, describes, lists, checks and refuses duplicates', async () => {
    expect(await qdrant.createCollection(C, { vectors: { text: { size: 4, distance: 'Cosine' }, tags: { size: 2, distance: 'Euclid' } } })).toBe(true);
    const info = await qdrant.getCollection(C);
    expect(info.status).toBe('green');
    expect(info.points_count).toBe(0);
    expect(info.config.params.vectors).toEqual({ text: { size: 4, distance: 'Cosine' }, tags: { size: 2, distance: 'Euclid' } });
    expect(info.config.hnsw_config.m).toBe(16);
    expect((await qdrant.getCollections()).collections.map((c) => c.name)).toContain(C);
    expect(await qdrant.collectionExists(C)).toEqual({ exists: true });
    expect(await qdrant.collectionExists('nope')).toEqual({ exists: false });
    const dup = await raw(`/collections/${C}`, 'PUT', { vectors: { size: 4, distance: 'Cosine' } });
    expect(dup.status).toBe(409);
    expect(JSON.parse(dup.body).status.error).toBe(`Wrong input: Collection \`${C}\` already exists!`);
  });

  it('upserts (dashless UUIDs accepted, dashed returned), retrieves, queries with filters, scrolls and counts', async () => {
    const u1 = '5c56c79369f34fbf87e6c4bf54c28c26';
    const r = await qdrant.upsert(C, {
      wait: true,
      points: [
        { id: 1, vector: { text: [1, 0, 0, 0], tags: [0, 0] }, payload: { city: 'Berlin', year: 2001 } },
        { id: 2, vector: { text: [0.9, 0.1, 0, 0], tags: [1, 1] }, payload: { city: ['London', 'Berlin'], year: 2010 } },
        { id: 3, vector: { text: [0, 1, 0, 0] }, payload: { city: 'Moscow', year: 2020 } },
        { id: u1, vector: { text: [0, 0, 1, 0] }, payload: { city: 'Paris', meta: { lang: 'fr' } } },
      ],
    });
    expect(r.status).toBe('completed');
    const got = await qdrant.retrieve(C, { ids: [u1, 1, 999], with_payload: true });
    expect(got.map((p) => p.id).sort()).toEqual([1, '5c56c793-69f3-4fbf-87e6-c4bf54c28c26']);

    const near = await qdrant.query(C, { query: [1, 0, 0, 0], using: 'text', limit: 2, with_payload: true });
    expect(near.points.map((p) => p.id)).toEqual([1, 2]);
    expect(near.points[0]!.score).toBeCloseTo(1, 5);
    expect(near.points[0]!.version).toBeTypeOf('number');

    const filtered = await qdrant.query(C, {
      query: [1, 0, 0, 0],
      using: 'text',
      filter: { must: [{ key: 'city', match: { value: 'Berlin' } }], must_not: [{ key: 'year', range: { lt: 2005 } }] },
      limit: 10,
    });
    expect(filtered.points.map((p) => p.id)).toEqual([2]);
    expect((await qdrant.query(C, { query: [1, 0, 0, 0], using: 'text', filter: { must: [{ key: 'meta.lang', match: { value: 'fr' } }] } })).points.map((p) => p.id)).toEqual(['5c56c793-69f3-4fbf-87e6-c4bf54c28c26']);

    const page1 = await qdrant.scroll(C, { limit: 3 });
    expect(page1.points.map((p) => p.id)).toEqual([1, 2, 3]);
    expect(page1.next_page_offset).toBe('5c56c793-69f3-4fbf-87e6-c4bf54c28c26');
    const page2 = await qdrant.scroll(C, { limit: 3, offset: page1.next_page_offset as string });
    expect(page2.points).toHaveLength(1);
    expect(page2.next_page_offset ?? null).toBeNull();

    expect(await qdrant.count(C, { filter: { should: [{ key: 'city', match: { value: 'London' } }, { key: 'city', match: { value: 'Berlin' } }] }, exact: true })).toEqual({ count: 2 });
    expect((await qdrant.getCollection(C)).points_count).toBe(4);
  });

  it('payload and delete operations', async () => {
    await qdrant.setPayload(C, { points: [3], payload: { rating: 5 }, wait: true });
    expect((await qdrant.retrieve(C, { ids: [3], with_payload: true }))[0]!.payload).toEqual({ city: 'Moscow', year: 2020, rating: 5 });
    await qdrant.overwritePayload(C, { points: [3], payload: { only: true }, wait: true });
    expect((await qdrant.retrieve(C, { ids: [3], with_payload: true }))[0]!.payload).toEqual({ only: true });
    await qdrant.clearPayload(C, { points: [3], wait: true });
    expect((await qdrant.retrieve(C, { ids: [3], with_payload: true }))[0]!.payload).toEqual({});
    await qdrant.delete(C, { filter: { must: [{ has_id: [3] }] }, wait: true });
    expect((await qdrant.count(C, {})).count).toBe(3);
  });

  it('errors are Qdrant’s: 404 missing collection/point, 400 wrong dimension and bad JSON, 422 validation', async () => {
    const missing = await raw('/collections/nope/points/scroll', 'POST', {});
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body).status.error).toBe('Not found: Collection `nope` doesn\'t exist!');
    expect((await raw(`/collections/${C}/points/424242`)).status).toBe(404);
    const dim = await raw(`/collections/${C}/points?wait=true`, 'PUT', { points: [{ id: 9, vector: { text: [1, 2] } }] });
    expect(dim.status).toBe(400);
    expect(JSON.parse(dim.body).status.error).toMatch(/Vector dimension error: expected dim: 4, got 2/);
    expect((await raw(`/collections/${C}/points/scroll`, 'POST', '{"limit": ')).status).toBe(400);
    const zero = await raw(`/collections/${C}/points/scroll`, 'POST', { limit: 0 });
    expect(zero.status).toBe(422);
    expect(JSON.parse(zero.body).status.error).toMatch(/^Validation error in JSON body/);
    expect((await raw(`/collections/${C}/points/scroll`, 'POST', { limit: -1 })).status).toBe(400);
    // The worker validates the point operations' bodies (the edge forwards their text): Qdrant's wording.
    const err = async (path: string, method: string, body: unknown) => {
      const r = await raw(path, method, body);
      return { status: r.status, error: JSON.parse(r.body).status.error as string };
    };
    expect(await err(`/collections/${C}/points/scroll`, 'POST', '{"limit":')).toEqual({
      status: 400,
      error: "Format error in JSON body: Body is not valid JSON but content-type is set to 'application/json'",
    });
    expect(await err(`/collections/${C}/points`, 'PUT', { points: [{ id: 1 }] })).toEqual({ status: 400, error: 'Format error in JSON body: points[0]: missing field `vector`' });
    expect(await err(`/collections/${C}/points/scroll`, 'POST', { limit: 'x' })).toEqual({ status: 400, error: 'Format error in JSON body: limit: invalid type: string "x", expected usize' });
    expect(await err(`/collections/${C}/points/scroll`, 'POST', { limit: 0 })).toEqual({ status: 422, error: 'Validation error in JSON body: [limit: value 0 invalid, must be 1 or larger]' });
    expect(await qdrant.deleteCollection('never-existed')).toBe(false);
  });
});

describe('bodies above the bus message size', () => {
  it('a 2 MB upsert is stored whole (deflated on the bus), and its errors are still Qdrant’s', async () => {
    const C = 'big-upsert';
    expect((await raw(`/collections/${C}`, 'PUT', { vectors: { size: 384, distance: 'Dot' } })).status).toBe(200);
    const v = (i: number) => Array.from({ length: 384 }, (_, j) => Number((((i * 7919 + j * 104729) % 1000003) / 1000003).toFixed(12)));
    const points = Array.from({ length: 400 }, (_, i) => ({ id: i, vector: v(i), payload: { i } }));
    const body = JSON.stringify({ points });
    expect(body.length).toBeGreaterThan(2 * 1024 * 1024);
    const up = await raw(`/collections/${C}/points?wait=true`, 'PUT', body);
    expect(up.status).toBe(200);
    expect(JSON.parse(up.body).result.status).toBe('completed');
    expect((await qdrant.count(C, {})).count).toBe(400);
    const [p] = await qdrant.retrieve(C, { ids: [399], with_vector: true, with_payload: true });
    expect(p!.payload).toEqual({ i: 399 });
    (p!.vector as number[]).forEach((x, j) => expect(x).toBeCloseTo(v(399)[j]!, 6));
    const broken = JSON.stringify({ points: [...points.slice(0, 399), { id: 399 }] });
    const bad = await raw(`/collections/${C}/points?wait=true`, 'PUT', broken);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).status.error).toBe('Format error in JSON body: points[399]: missing field `vector`');
    const missing = await raw(`/collections/nope-${C}/points?wait=true`, 'PUT', body);
    expect(missing.status).toBe(404);
  });
});

describe('vector kinds through the Qdrant client: sparse, multivector, hybrid RRF', () => {
  const C = 'kinds';
  it('stores mixed named vectors, searches each kind and fuses dense + sparse with RRF', async () => {
    await qdrant.createCollection(C, {
      vectors: { d: { size: 2, distance: 'Dot' }, m: { size: 2, distance: 'Dot', multivector_config: { comparator: 'max_sim' } } },
      sparse_vectors: { s: { modifier: 'none' } },
    });
    await qdrant.upsert(C, {
      wait: true,
      points: [
        { id: 1, vector: { d: [1, 0], s: { indices: [5, 2], values: [1, 3] }, m: [[1, 0], [0, 1]] } },
        { id: 2, vector: { d: [0, 1], s: { indices: [2], values: [1] } } },
        { id: 3, vector: { m: [[2, 2]] } },
      ],
    });
    const sparse = await qdrant.query(C, { query: { indices: [2, 9], values: [2, 1] }, using: 's' });
    // 1: 3·2 = 6; 2: 1·2 = 2; 3 has no sparse vector.
    expect(sparse.points.map((p) => [p.id, p.score])).toEqual([
      [1, 6],
      [2, 2],
    ]);
    const multi = await qdrant.query(C, { query: [[1, 1], [0, 1]], using: 'm' });
    // 3: (4) + (2) = 6; 1: max(1, 1) + max(0, 1) = 2.
    expect(multi.points.map((p) => [p.id, p.score])).toEqual([
      [3, 6],
      [1, 2],
    ]);
    const fused = await qdrant.query(C, {
      prefetch: [
        { query: [0, 1], using: 'd' },
        { query: { indices: [2], values: [1] }, using: 's' },
      ],
      query: { fusion: 'rrf' },
    });
    // Dense ranks 2, 1; sparse ranks 1, 2: each point 1/(0+2) + 1/(1+2) = 5/6 (Qdrant: 1/(rank + k), k = 2).
    expect(fused.points.map((p) => p.id).sort()).toEqual([1, 2]);
    for (const p of fused.points) expect(p.score).toBeCloseTo(5 / 6, 5);
    const [rec] = await qdrant.retrieve(C, { ids: [1], with_vector: true });
    expect(rec!.vector).toEqual({ d: [1, 0], m: [[1, 0], [0, 1]], s: { indices: [2, 5], values: [3, 1] } });
    const bad = await raw(`/collections/${C}/points`, 'PUT', { points: [{ id: 4, vector: { s: { indices: [1, 1], values: [1, 2] } } }] });
    expect(bad.status).toBe(422);
    expect(JSON.parse(bad.body).status.error).toBe('Validation error in JSON body: [points[0].vector.?.indices: Validation error: must be unique [{}]]');
  });
});

describe('strict mode over HTTP', () => {
  it('a spent read rate limit is a 429 with Retry-After; bad timeout and collection names are refused first', async () => {
    const C = 'limited';
    expect((await raw(`/collections/${C}`, 'PUT', { vectors: { size: 2, distance: 'Dot' }, strict_mode_config: { enabled: true, read_rate_limit: 1 } })).status).toBe(200);
    const q = () => raw(`/collections/${C}/points/query`, 'POST', { query: [1, 0], limit: 1 });
    expect((await q()).status).toBe(200);
    const limited = await q();
    expect(limited.status).toBe(429);
    expect(JSON.parse(limited.body).status.error).toMatch(/^Rate limiting exceeded: Read rate limit exceeded: Operation requires 1 tokens but only 0\.0 were available\. Retry after \d+s$/);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    const zero = await raw(`/collections/${C}/points/query?timeout=0`, 'POST', { query: [1, 0] });
    expect(zero.status).toBe(422);
    expect(JSON.parse(zero.body).status.error).toBe('Validation error in query parameters: [timeout: value 0 invalid, must be 1 or larger]');
    const long = await raw(`/collections/${'x'.repeat(300)}/points/1`);
    expect(long.status).toBe(422);
    expect(JSON.parse(long.body).status.error).toMatch(/^Validation error in path parameters: \[name: value x+ invalid, must be from 1 to 255 characters\]$/);
  });
});

describe('the client tool: MCP server against the enforced vector store', () => {
  it('stores and finds a text with the key; refuses to start without one', async () => {
    const key = newKey();
    await flipGate(await stack.store(), 'vector', enforcedState([key], 'test'));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', join(import.meta.dirname, '..', '..', 'services', 'vector-mcp', 'src', 'main.ts')],
      env: { PATH: process.env.PATH ?? '', VECTORDB_URL: edge.vectorUrl, VECTORDB_API_KEY: key, VECTORDB_COLLECTION: 'memories' },
      cwd: join(import.meta.dirname, '..', '..'),
      stderr: 'pipe',
    });
    const mcp = new Client({ name: 'gatehouse-test', version: '1.0.0' });
    await mcp.connect(transport);
    try {
      const tools = (await mcp.listTools()).tools.map((t) => t.name).sort();
      expect(tools).toEqual(['qdrant-find', 'qdrant-store']);
      const stored = await mcp.callTool({ name: 'qdrant-store', arguments: { information: 'The gatehouse keeps its keys as SHA-256 digests', metadata: { topic: 'security' } } });
      expect(stored.isError ?? false).toBe(false);
      await mcp.callTool({ name: 'qdrant-store', arguments: { information: 'Bananas are yellow and rich in potassium' } });
      const found = await mcp.callTool({ name: 'qdrant-find', arguments: { query: 'how are keys stored' } });
      const text = (found.content as { type: string; text: string }[]).map((c) => c.text).join('\n');
      expect(text.split('<entry>')[1]).toMatch(/SHA-256 digests/);
      expect(text).toMatch(/"topic": "security"/);
      const info = await qdrant.getCollection('memories').catch(() => undefined);
      expect(info).toBeUndefined(); // the gate is enforced: the key-less client above is refused
      const keyed = new QdrantClient({ url: edge.vectorUrl, apiKey: key, checkCompatibility: false });
      expect((await keyed.count('memories', {})).count).toBe(2);
    } finally {
      await mcp.close();
    }
  });
});
