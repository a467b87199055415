import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectError, ConnectErrorCode, Distance, FieldType, Fusion, Modifier, QdrantClient, RecommendStrategy, UpdateStatus, type Value } from '@qdrant/js-client-grpc';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';

/**
 * Qdrant's gRPC API on the vector face (port 6334), driven by Qdrant's official gRPC client
 * (@qdrant/js-client-grpc 1.18, the last that runs on Node 20) against a real worker: the data
 * path, the error statuses, the gate (same keys, same read-only rule, live flips), and REST and
 * gRPC seeing the same store.
 */
const stack = new Stack();
let edge: Edge;
const dir = mkdtempSync(join(tmpdir(), 'vector-grpc-'));

beforeAll(async () => {
  await stack.startVectorWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'vector' });
}, 60_000);
afterAll(() => stack.close());

/** A client as an application makes one (gzip on, the default); `apiKey` goes in the `api-key` metadata, `headers` as given. */
const client = (opts: { apiKey?: string; headers?: Record<string, string> } = {}) =>
  new QdrantClient({ url: `http://127.0.0.1:${edge.vectorGrpcPort}`, checkCompatibility: false, ...opts });

const num = (n: number) => ({ pointIdOptions: { case: 'num' as const, value: BigInt(n) } });
const dense = (data: number[]) => ({ vectorsOptions: { case: 'vector' as const, value: { vector: { case: 'dense' as const, value: { data } } } } });
const str = (s: string) => ({ kind: { case: 'stringValue' as const, value: s } });
const int = (n: number) => ({ kind: { case: 'integerValue' as const, value: BigInt(n) } });

/** The plain JSON a payload Value stands for, to compare with what was sent. */
function plain(v: Value | undefined): unknown {
  const k = v?.kind;
  switch (k?.case) {
    case 'integerValue':
      return Number(k.value);
    case 'structValue':
      return Object.fromEntries(Object.entries(k.value.fields).map(([key, x]) => [key, plain(x)]));
    case 'listValue':
      return k.value.values.map(plain);
    case 'nullValue':
    case undefined:
      return null;
    default:
      return k?.value;
  }
}
const payloadOf = (p: { payload: Record<string, Value> }) => Object.fromEntries(Object.entries(p.payload).map(([k, v]) => [k, plain(v)]));
const idOf = (p: { id?: { pointIdOptions: { case?: string; value?: unknown } } }) => {
  const v = p.id?.pointIdOptions.value;
  return typeof v === 'bigint' ? Number(v) : v;
};

/** The gRPC status and message a call fails with. */
async function failure(p: Promise<unknown>): Promise<{ code: ConnectErrorCode; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ConnectError) return { code: err.code, message: err.rawMessage };
    throw err;
  }
  throw new Error('the call succeeded');
}

const rest = (path: string, method = 'GET', body?: unknown, headers: Record<string, string> = {}) =>
  fetch(`${edge.vectorUrl}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe('vector face over gRPC (open gate)', () => {
  const name = 'grpc_books';
  let q: QdrantClient;
  beforeAll(() => {
    q = client();
  });

  it('answers the health check with the Qdrant version it speaks', async () => {
    const h = await q.api('service').healthCheck({});
    expect(h.version).toBe('1.19.0');
    expect(h.title).toMatch(/qdrant/);
  });

  it('creates a collection and reports it: list, exists, info', async () => {
    const created = await q.api('collections').create({
      collectionName: name,
      vectorsConfig: { config: { case: 'params', value: { size: 4n, distance: Distance.Dot } } },
    });
    expect(created.result).toBe(true);
    expect((await q.api('collections').list({})).collections.map((c) => c.name)).toContain(name);
    expect((await q.api('collections').collectionExists({ collectionName: name })).result?.exists).toBe(true);
    expect((await q.api('collections').collectionExists({ collectionName: 'grpc_nope' })).result?.exists).toBe(false);
    const info = (await q.api('collections').get({ collectionName: name })).result!;
    const params = info.config?.params?.vectorsConfig?.config;
    expect(params?.case).toBe('params');
    expect(params?.case === 'params' && Number(params.value.size)).toBe(4);
    expect(params?.case === 'params' && params.value.distance).toBe(Distance.Dot);
    expect(Number(info.pointsCount)).toBe(0);
  });

  it('upserts points with payloads of every JSON kind and gets them back', async () => {
    const r = await q.api('points').upsert({
      collectionName: name,
      wait: true,
      points: [
        { id: num(1), vectors: dense([1, 0, 0, 0]), payload: { city: str('Berlin'), year: int(2020), score: { kind: { case: 'doubleValue', value: 0.5 } } } },
        { id: num(2), vectors: dense([0, 1, 0, 0]), payload: { city: str('Paris'), year: int(2021), open: { kind: { case: 'boolValue', value: true } } } },
        {
          id: num(3),
          vectors: dense([0, 0, 1, 0]),
          payload: {
            city: str('Berlin'),
            year: int(2022),
            tags: { kind: { case: 'listValue', value: { values: [str('a'), int(7)] } } },
            meta: { kind: { case: 'structValue', value: { fields: { nested: str('x'), none: { kind: { case: 'nullValue', value: 0 } } } } } },
          },
        },
        { id: { pointIdOptions: { case: 'uuid', value: '5c56c793-69f3-4fbf-87e6-c4bf54c28c26' } }, vectors: dense([0, 0, 0, 1]), payload: { city: str('Rome') } },
      ],
    });
    expect(r.result?.status).toBe(UpdateStatus.Completed);

    const got = await q.api('points').get({
      collectionName: name,
      ids: [num(3), num(1)],
      withPayload: { selectorOptions: { case: 'enable', value: true } },
      withVectors: { selectorOptions: { case: 'enable', value: true } },
    });
    const byId = new Map(got.result.map((p) => [idOf(p), p]));
    expect(payloadOf(byId.get(1)!)).toEqual({ city: 'Berlin', year: 2020, score: 0.5 });
    expect(payloadOf(byId.get(3)!)).toEqual({ city: 'Berlin', year: 2022, tags: ['a', 7], meta: { nested: 'x', none: null } });
    const v = byId.get(1)!.vectors?.vectorsOptions;
    expect(v?.case === 'vector' && v.value.vector.case === 'dense' && v.value.vector.value.data).toEqual([1, 0, 0, 0]);
  });

  it('searches, queries, scrolls and counts with filters', async () => {
    const berlin = { must: [{ conditionOneOf: { case: 'field' as const, value: { key: 'city', match: { matchValue: { case: 'keyword' as const, value: 'Berlin' } } } } }] };
    const search = await q.api('points').search({ collectionName: name, vector: [0.1, 0, 0.9, 0], limit: 3n, filter: berlin });
    expect(search.result.map(idOf)).toEqual([3, 1]);
    expect(search.result[0]!.score).toBeCloseTo(0.9, 5);

    const query = await q.api('points').query({
      collectionName: name,
      query: { variant: { case: 'nearest', value: { variant: { case: 'dense', value: { data: [0, 1, 0, 0] } } } } },
      limit: 2n,
      withPayload: { selectorOptions: { case: 'include', value: { fields: ['city'] } } },
    });
    expect(query.result.map(idOf)[0]).toBe(2);
    expect(payloadOf(query.result[0]!)).toEqual({ city: 'Paris' });

    const byPoint = await q.api('points').query({
      collectionName: name,
      query: { variant: { case: 'nearest', value: { variant: { case: 'id', value: num(1) } } } },
      filter: { must: [{ conditionOneOf: { case: 'field', value: { key: 'year', range: { gte: 2021 } } } }] },
      limit: 5n,
    });
    expect(byPoint.result.map(idOf).sort()).toEqual([2, 3]);

    const page1 = await q.api('points').scroll({ collectionName: name, limit: 2 });
    expect(page1.result.map(idOf)).toEqual([1, 2]);
    expect(idOf({ id: page1.nextPageOffset })).toBe(3);
    const page2 = await q.api('points').scroll({ collectionName: name, limit: 5, offset: page1.nextPageOffset });
    expect(page2.result.map(idOf)).toEqual([3, '5c56c793-69f3-4fbf-87e6-c4bf54c28c26']);
    expect(page2.nextPageOffset).toBeUndefined();

    const count = await q.api('points').count({ collectionName: name, filter: berlin, exact: true });
    expect(Number(count.result?.count)).toBe(2);
    const hasId = await q.api('points').count({
      collectionName: name,
      filter: { must: [{ conditionOneOf: { case: 'hasId', value: { hasId: [num(1), num(2), num(99)] } } }] },
    });
    expect(Number(hasId.result?.count)).toBe(2);
  });

  it('sets, overwrites, deletes and clears payload', async () => {
    const ids = { pointsSelectorOneOf: { case: 'points' as const, value: { ids: [num(2)] } } };
    await q.api('points').setPayload({ collectionName: name, wait: true, payload: { rating: int(5) }, pointsSelector: ids });
    const after = async () => payloadOf((await q.api('points').get({ collectionName: name, ids: [num(2)], withPayload: { selectorOptions: { case: 'enable', value: true } } })).result[0]!);
    expect(await after()).toEqual({ city: 'Paris', year: 2021, open: true, rating: 5 });
    await q.api('points').deletePayload({ collectionName: name, wait: true, keys: ['open', 'year'], pointsSelector: ids });
    expect(await after()).toEqual({ city: 'Paris', rating: 5 });
    await q.api('points').overwritePayload({ collectionName: name, wait: true, payload: { only: str('this') }, pointsSelector: ids });
    expect(await after()).toEqual({ only: 'this' });
    await q.api('points').clearPayload({ collectionName: name, wait: true, points: ids });
    expect(await after()).toEqual({});
  });

  it('runs a batch of updates in one call', async () => {
    const r = await q.api('points').updateBatch({
      collectionName: name,
      wait: true,
      operations: [
        { operation: { case: 'upsert', value: { points: [{ id: num(10), vectors: dense([1, 1, 0, 0]), payload: { city: str('Oslo') } }] } } },
        { operation: { case: 'setPayload', value: { payload: { batch: int(1) }, pointsSelector: { pointsSelectorOneOf: { case: 'points', value: { ids: [num(10)] } } } } } },
      ],
    });
    expect(r.result.map((u) => u.status)).toEqual([UpdateStatus.Completed, UpdateStatus.Completed]);
    const got = await q.api('points').get({ collectionName: name, ids: [num(10)], withPayload: { selectorOptions: { case: 'enable', value: true } } });
    expect(payloadOf(got.result[0]!)).toEqual({ city: 'Oslo', batch: 1 });
  });

  it('a REST write is visible over gRPC, and a gRPC write over REST', async () => {
    const put = await rest(`/collections/${name}/points?wait=true`, 'PUT', { points: [{ id: 20, vector: [0, 0, 1, 1], payload: { via: 'rest' } }] });
    expect(put.status).toBe(200);
    const got = await q.api('points').get({ collectionName: name, ids: [num(20)], withPayload: { selectorOptions: { case: 'enable', value: true } } });
    expect(payloadOf(got.result[0]!)).toEqual({ via: 'rest' });

    await q.api('points').upsert({ collectionName: name, wait: true, points: [{ id: num(21), vectors: dense([1, 0, 1, 0]), payload: { via: str('grpc') } }] });
    const r = await rest(`/collections/${name}/points/21`);
    expect(r.status).toBe(200);
    const body = (await r.json()) as { result: { payload: unknown; vector: number[] } };
    expect(body.result.payload).toEqual({ via: 'grpc' });
    expect(body.result.vector).toEqual([1, 0, 1, 0]);
  });

  it('deletes points by filter, then the collection', async () => {
    await q.api('points').delete({
      collectionName: name,
      wait: true,
      points: { pointsSelectorOneOf: { case: 'filter', value: { must: [{ conditionOneOf: { case: 'field', value: { key: 'city', match: { matchValue: { case: 'keyword', value: 'Berlin' } } } } }] } } },
    });
    const left = await q.api('points').count({ collectionName: name, exact: true });
    expect(Number(left.result?.count)).toBe(5); // 1, 2, 3, the uuid, 10, 20, 21 less the two in Berlin
    expect((await q.api('collections').delete({ collectionName: name })).result).toBe(true);
    expect((await q.api('collections').collectionExists({ collectionName: name })).result?.exists).toBe(false);
  });

  it('answers Qdrant’s statuses and messages for errors', async () => {
    const missing = await failure(q.api('collections').get({ collectionName: 'grpc_missing' }));
    expect(missing.code).toBe(ConnectErrorCode.NotFound);
    expect(missing.message).toMatch(/grpc_missing/);

    await q.api('collections').create({ collectionName: 'grpc_err', vectorsConfig: { config: { case: 'params', value: { size: 2n, distance: Distance.Cosine } } } });
    const dup = await failure(q.api('collections').create({ collectionName: 'grpc_err', vectorsConfig: { config: { case: 'params', value: { size: 2n, distance: Distance.Cosine } } } }));
    expect(dup.code).toBe(ConnectErrorCode.AlreadyExists);
    expect(dup.message).toMatch(/already exists/);

    const dim = await failure(q.api('points').upsert({ collectionName: 'grpc_err', wait: true, points: [{ id: num(1), vectors: dense([1, 2, 3]) }] }));
    expect(dim.code).toBe(ConnectErrorCode.InvalidArgument);
    expect(dim.message).toMatch(/dimension/i);

    const noName = await failure(q.api('collections').get({ collectionName: '' }));
    expect(noName.code).toBe(ConnectErrorCode.InvalidArgument);

    const noId = await failure(q.api('points').get({ collectionName: 'grpc_err', ids: [{ pointIdOptions: { case: undefined } }] }));
    expect(noId.code).toBe(ConnectErrorCode.InvalidArgument);
    expect(noId.message).toMatch(/point id/);

    const shards = await failure(q.api('collections').listShardKeys({ collectionName: 'grpc_err' }));
    expect(shards.code).toBe(ConnectErrorCode.Unimplemented);
    expect(shards.message).toMatch(/ListShardKeys is not implemented/);
    await q.api('collections').delete({ collectionName: 'grpc_err' });
  });
});

describe('vector face over gRPC: 64-dim vectors (they cross the bus as Float32 bytes)', () => {
  const name = 'grpc_f32';
  const D = 64;
  let q: QdrantClient;
  /** Seeded float32 values, -0 among them. */
  const vec = (k: number) => Array.from({ length: D }, (_, i) => (i === 5 ? -0 : Math.fround(Math.sin(k * 7 + i) * 2)));

  beforeAll(async () => {
    q = client();
    await q.api('collections').create({ collectionName: name, vectorsConfig: { config: { case: 'params', value: { size: BigInt(D), distance: Distance.Euclid } } } });
  });
  afterAll(async () => {
    await q.api('collections').delete({ collectionName: name });
  });

  it('upserts, updates vectors, reads back exact float32 values, and searches like REST', async () => {
    const r = await q.api('points').upsert({
      collectionName: name,
      wait: true,
      points: Array.from({ length: 20 }, (_, k) => ({ id: num(k + 1), vectors: dense(vec(k)), payload: { k: int(k) } })),
    });
    expect(r.result?.status).toBe(UpdateStatus.Completed);
    await q.api('points').updateVectors({ collectionName: name, wait: true, points: [{ id: num(20), vectors: dense(vec(100)) }] });

    const got = await q.api('points').get({ collectionName: name, ids: [num(3), num(20)], withVectors: { selectorOptions: { case: 'enable', value: true } } });
    const data = (id: number) => {
      const v = got.result.find((p) => idOf(p) === id)?.vectors?.vectorsOptions;
      return v?.case === 'vector' && v.value.vector.case === 'dense' ? v.value.vector.value.data : undefined;
    };
    // Euclid vectors are stored as sent: every float32 exactly (JSON replies write -0 as 0).
    expect(data(3)).toEqual(vec(2).map((x) => (Object.is(x, -0) ? 0 : x)));
    expect(data(20)).toEqual(vec(100).map((x) => (Object.is(x, -0) ? 0 : x)));

    const query = vec(7).map((x, i) => Math.fround(x + (i % 3) * 0.01));
    const viaGrpc = await q.api('points').search({ collectionName: name, vector: query, limit: 5n });
    const viaRest = (await (await rest(`/collections/${name}/points/search`, 'POST', { vector: query, limit: 5 })).json()) as { result: { id: number; score: number }[] };
    expect(viaGrpc.result.map(idOf)).toEqual(viaRest.result.map((p) => p.id));
    expect(viaGrpc.result.map(idOf)[0]).toBe(8);
    viaGrpc.result.forEach((p, i) => expect(p.score).toBeCloseTo(viaRest.result[i]!.score, 4));

    const nearest = await q.api('points').query({ collectionName: name, query: { variant: { case: 'nearest', value: { variant: { case: 'dense', value: { data: vec(11) } } } } }, limit: 1n });
    expect(nearest.result.map(idOf)).toEqual([12]);

    // A wrong dimension is still Qdrant's error, from the worker.
    const bad = await failure(q.api('points').search({ collectionName: name, vector: vec(1).slice(0, 10), limit: 1n }));
    expect(bad.code).toBe(ConnectErrorCode.InvalidArgument);
    expect(bad.message).toMatch(/Vector dimension error: expected dim: 64, got 10/);
  });
});

describe('vector face over gRPC: sparse and hybrid, recommend, discover, groups, facets, matrix, aliases, snapshots', () => {
  const name = 'grpc_mixed';
  let q: QdrantClient;
  const sparse = (indices: number[], values: number[]) => ({ variant: { case: 'sparse' as const, value: { indices, values } } });
  const denseIn = (data: number[]) => ({ variant: { case: 'dense' as const, value: { data } } });
  const idIn = (n: number) => ({ variant: { case: 'id' as const, value: num(n) } });
  const named = (img: number[], text: [number[], number[]]) => ({
    vectorsOptions: {
      case: 'vectors' as const,
      value: {
        vectors: {
          img: { vector: { case: 'dense' as const, value: { data: img } } },
          text: { vector: { case: 'sparse' as const, value: { indices: text[0], values: text[1] } } },
        },
      },
    },
  });

  beforeAll(async () => {
    q = client();
    await q.api('collections').create({
      collectionName: name,
      vectorsConfig: { config: { case: 'paramsMap', value: { map: { img: { size: 2n, distance: Distance.Dot } } } } },
      sparseVectorsConfig: { map: { text: { modifier: Modifier.Idf } } },
    });
    await q.api('points').createFieldIndex({ collectionName: name, wait: true, fieldName: 'color', fieldType: FieldType.FieldTypeKeyword });
    await q.api('points').upsert({
      collectionName: name,
      wait: true,
      points: [
        { id: num(1), vectors: named([1, 0], [[1, 2], [1, 1]]), payload: { color: str('red') } },
        { id: num(2), vectors: named([0.9, 0.1], [[2], [1]]), payload: { color: str('red') } },
        { id: num(3), vectors: named([0, 1], [[3], [1]]), payload: { color: str('blue') } },
        { id: num(4), vectors: named([0.1, 0.9], [[1, 3], [0.5, 0.5]]), payload: { color: str('green') } },
      ],
    });
  });

  it('stores named dense and sparse vectors and reports both configs', async () => {
    const info = (await q.api('collections').get({ collectionName: name })).result!;
    expect(Object.keys(info.config?.params?.sparseVectorsConfig?.map ?? {})).toEqual(['text']);
    expect(info.config?.params?.sparseVectorsConfig?.map.text?.modifier).toBe(Modifier.Idf);
    const got = await q.api('points').get({ collectionName: name, ids: [num(4)], withVectors: { selectorOptions: { case: 'enable', value: true } } });
    const v = got.result[0]!.vectors?.vectorsOptions;
    const text = v?.case === 'vectors' ? v.value.vectors.text?.vector : undefined;
    expect(text?.case === 'sparse' && { indices: text.value.indices, values: text.value.values }).toEqual({ indices: [1, 3], values: [0.5, 0.5] });
  });

  it('sparse search and a dense + sparse hybrid with RRF', async () => {
    const s = await q.api('points').query({ collectionName: name, query: { variant: { case: 'nearest', value: sparse([3], [1]) } }, using: 'text', limit: 2n });
    expect(s.result.map(idOf)).toEqual([3, 4]);
    const hybrid = await q.api('points').query({
      collectionName: name,
      prefetch: [
        { query: { variant: { case: 'nearest', value: sparse([1], [1]) } }, using: 'text', limit: 3n }, // 1, 4
        { query: { variant: { case: 'nearest', value: denseIn([0, 1]) } }, using: 'img', limit: 3n }, // 3, 4, 2
      ],
      query: { variant: { case: 'fusion', value: Fusion.RRF } },
      limit: 3n,
    });
    // 4 is second in both lists, 1 and 3 first in one each: RRF puts 4 first.
    expect(hybrid.result.map(idOf)[0]).toBe(4);
    expect(hybrid.result.map(idOf).slice(1).sort()).toEqual([1, 3]);
  });

  it('recommend (RPC and query), discover, groups', async () => {
    const rec = await q.api('points').recommend({ collectionName: name, positive: [num(1)], using: 'img', limit: 1n });
    expect(rec.result.map(idOf)).toEqual([2]);
    const recQ = await q.api('points').query({
      collectionName: name,
      query: { variant: { case: 'recommend', value: { positive: [idIn(3)], negative: [idIn(1)], strategy: RecommendStrategy.BestScore } } },
      using: 'img',
      limit: 1n,
    });
    expect(recQ.result.map(idOf)).toEqual([4]);
    const disc = await q.api('points').discover({
      collectionName: name,
      target: { target: { case: 'single', value: { example: { case: 'id', value: num(1) } } } },
      context: [{ positive: { example: { case: 'id', value: num(2) } }, negative: { example: { case: 'id', value: num(3) } } }],
      using: 'img',
      limit: 2n,
    });
    expect(disc.result.map(idOf)).toEqual([4]); // the examples themselves are never results
    const groups = await q.api('points').queryGroups({
      collectionName: name,
      query: { variant: { case: 'nearest', value: denseIn([1, 0]) } },
      using: 'img',
      groupBy: 'color',
      groupSize: 1n,
      limit: 2n,
    });
    expect(groups.result?.groups.map((g) => (g.id?.kind.case === 'stringValue' ? g.id.kind.value : g.id?.kind.value))).toEqual(['red', 'green']);
    expect(groups.result?.groups[0]!.hits.map(idOf)).toEqual([1]);
  });

  it('facets and the distance matrix', async () => {
    const facet = await q.api('points').facet({ collectionName: name, key: 'color', exact: true });
    const counts = Object.fromEntries(facet.hits.map((h) => [h.value?.variant.value, Number(h.count)]));
    expect(counts).toEqual({ red: 2, blue: 1, green: 1 });
    const pairs = await q.api('points').searchMatrixPairs({ collectionName: name, using: 'img', sample: 4n, limit: 1n });
    expect(pairs.result?.pairs).toHaveLength(4);
    const offsets = await q.api('points').searchMatrixOffsets({ collectionName: name, using: 'img', sample: 4n, limit: 1n });
    expect(offsets.result?.ids).toHaveLength(4);
    expect(offsets.result?.scores).toHaveLength(4);
  });

  it('aliases, cluster info, named vector create / delete', async () => {
    await q.api('collections').updateAliases({ actions: [{ action: { case: 'createAlias', value: { collectionName: name, aliasName: 'grpc_alias' } } }] });
    expect((await q.api('collections').listAliases({})).aliases.map((a) => [a.aliasName, a.collectionName])).toContainEqual(['grpc_alias', name]);
    expect((await q.api('collections').listCollectionAliases({ collectionName: name })).aliases.map((a) => a.aliasName)).toEqual(['grpc_alias']);
    expect(Number((await q.api('points').count({ collectionName: 'grpc_alias', exact: true })).result?.count)).toBe(4);
    await q.api('collections').updateAliases({ actions: [{ action: { case: 'deleteAlias', value: { aliasName: 'grpc_alias' } } }] });
    expect((await q.api('collections').listCollectionAliases({ collectionName: name })).aliases).toEqual([]);

    const cluster = await q.api('collections').collectionClusterInfo({ collectionName: name });
    expect(cluster.localShards.map((s) => Number(s.pointsCount))).toEqual([4]);

    await q.api('points').createVectorName({
      collectionName: name,
      wait: true,
      vectorName: 'extra',
      vectorConfig: { case: 'denseConfig', value: { size: 3n, distance: Distance.Euclid } },
    });
    const withExtra = (await q.api('collections').get({ collectionName: name })).result?.config?.params?.vectorsConfig?.config;
    expect(withExtra?.case === 'paramsMap' && Object.keys(withExtra.value.map).sort()).toEqual(['extra', 'img']);
    await q.api('points').deleteVectorName({ collectionName: name, wait: true, vectorName: 'extra' });
    const without = (await q.api('collections').get({ collectionName: name })).result?.config?.params?.vectorsConfig?.config;
    expect(without?.case === 'paramsMap' && Object.keys(without.value.map)).toEqual(['img']);
  });

  it('snapshots: create, list, delete', async () => {
    const created = await q.api('snapshots').create({ collectionName: name });
    const snap = created.snapshotDescription!;
    expect(snap.name).toMatch(/snapshot/);
    expect(Number(snap.size)).toBeGreaterThan(0);
    expect((await q.api('snapshots').list({ collectionName: name })).snapshotDescriptions.map((d) => d.name)).toContain(snap.name);
    await q.api('snapshots').delete({ collectionName: name, snapshotName: snap.name });
    expect((await q.api('snapshots').list({ collectionName: name })).snapshotDescriptions.map((d) => d.name)).not.toContain(snap.name);
    const full = await failure(q.api('snapshots').listFull({}));
    expect(full.code).toBe(ConnectErrorCode.Unimplemented);
    await q.api('collections').delete({ collectionName: name });
  });
});

describe('vector face over gRPC: u64 ids beyond 2^53', () => {
  const name = 'grpc_bigids';
  const ids = [2n ** 53n + 1n, 424242424242424242n, 18446744073709551615n];
  const big = (n: bigint) => ({ pointIdOptions: { case: 'num' as const, value: n } });
  const exact = (p: { id?: { pointIdOptions: { case?: string; value?: unknown } } }) => p.id?.pointIdOptions.value;

  it('upserts, gets, searches, scrolls, filters and deletes them exactly', async () => {
    const q = client();
    await q.api('collections').create({ collectionName: name, vectorsConfig: { config: { case: 'params', value: { size: 2n, distance: Distance.Dot } } } });
    await q.api('points').upsert({
      collectionName: name,
      wait: true,
      points: ids.map((id, i) => ({ id: big(id), vectors: dense([i + 1, 0]), payload: { n: { kind: { case: 'integerValue' as const, value: id > 2n ** 63n ? 1n : id } } } })),
    });
    const got = await q.api('points').get({ collectionName: name, ids: ids.map(big), withPayload: { selectorOptions: { case: 'enable', value: true } } });
    expect(got.result.map(exact).sort()).toEqual([...ids].sort());
    const b = got.result.find((p) => exact(p) === ids[1])!;
    expect(b.payload.n?.kind).toEqual({ case: 'integerValue', value: ids[1] });

    const hits = await q.api('points').search({ collectionName: name, vector: [1, 0], limit: 1n });
    expect(hits.result.map(exact)).toEqual([ids[2]]);

    const page = await q.api('points').scroll({ collectionName: name, limit: 1, offset: big(ids[1]!) });
    expect(page.result.map(exact)).toEqual([ids[1]]);
    expect(page.nextPageOffset?.pointIdOptions.value).toBe(ids[2]);

    const filter = { must: [{ conditionOneOf: { case: 'hasId' as const, value: { hasId: [big(ids[1]!)] } } }] };
    expect((await q.api('points').scroll({ collectionName: name, filter })).result.map(exact)).toEqual([ids[1]]);

    await q.api('points').delete({ collectionName: name, wait: true, points: { pointsSelectorOneOf: { case: 'points', value: { ids: [big(ids[0]!)] } } } });
    expect((await q.api('points').scroll({ collectionName: name })).result.map(exact)).toEqual([ids[1], ids[2]]);
  });
});

describe('vector face over gRPC: the gate', () => {
  const key = newKey();
  const keyFile = join(dir, 'vector.key');
  const gate = (args: string[]) => stack.gateCli(args, edge);

  it('the gRPC client is among the sightings the rollout preflight lists', async () => {
    writeFileSync(keyFile, key);
    await client({ apiKey: key }).api('collections').list({});
    await new Promise((r) => setTimeout(r, 200)); // sightings are written asynchronously
    const pre = await gate(['preflight', 'vector', '--key-file', keyFile]);
    expect(pre.stdout).toMatch(/ready\s+.*qdrant-js.*sends the planned key/);
    expect(pre.stdout).not.toContain(key);
  });

  it('enforced: api-key or Bearer metadata; UNAUTHENTICATED with Qdrant’s texts; health stays open; flips apply to an open channel', async () => {
    const noKey = client();
    expect((await noKey.api('collections').list({})).collections).toBeDefined(); // channel open before the flip
    const r = await gate(['enforce', 'vector', '--key-file', keyFile, '--force']);
    expect(r.code, r.stderr).toBe(0);

    const none = await failure(noKey.api('collections').list({}));
    expect(none).toEqual({ code: ConnectErrorCode.Unauthenticated, message: 'Must provide an API key or an Authorization bearer token' });
    const wrong = await failure(client({ apiKey: newKey() }).api('collections').list({}));
    expect(wrong).toEqual({ code: ConnectErrorCode.Unauthenticated, message: 'Invalid API key or JWT' });
    expect((await client({ apiKey: key }).api('collections').list({})).collections).toBeDefined();
    expect((await client({ headers: { authorization: `Bearer ${key}` } }).api('collections').list({})).collections).toBeDefined();
    expect((await noKey.api('service').healthCheck({})).version).toBe('1.19.0');

    const opened = await gate(['open', 'vector']);
    expect(opened.code, opened.stderr).toBe(0);
    expect((await noKey.api('collections').list({})).collections).toBeDefined();
  });

  it('a read-only key reads and gets PERMISSION_DENIED on writes', async () => {
    const full = newKey();
    const ro = newKey();
    edge = await stack.restartEdge(edge, { EDGE_FACES: 'vector', VECTORDB__SERVICE__API_KEY: full, VECTORDB__SERVICE__READ_ONLY_API_KEY: ro });
    const create = { collectionName: 'grpc_ro', vectorsConfig: { config: { case: 'params' as const, value: { size: 2n, distance: Distance.Cosine } } } };
    await client({ apiKey: full }).api('collections').create(create);
    const reader = client({ apiKey: ro });
    expect((await reader.api('points').count({ collectionName: 'grpc_ro' })).result?.count).toBe(0n);
    const denied = await failure(reader.api('points').upsert({ collectionName: 'grpc_ro', points: [{ id: num(1), vectors: dense([1, 0]) }] }));
    expect(denied).toEqual({ code: ConnectErrorCode.PermissionDenied, message: 'Forbidden: Write access is required' });
    expect((await failure(reader.api('collections').delete({ collectionName: 'grpc_ro' }))).code).toBe(ConnectErrorCode.PermissionDenied);
    await client({ apiKey: full }).api('collections').delete({ collectionName: 'grpc_ro' });
    edge = await stack.restartEdge(edge, { EDGE_FACES: 'vector', VECTORDB__SERVICE__API_KEY: '', VECTORDB__SERVICE__READ_ONLY_API_KEY: '' });
  }, 60_000);
});
