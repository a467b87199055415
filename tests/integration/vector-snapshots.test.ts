import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QdrantClient as QdrantGrpcClient } from '@qdrant/js-client-grpc';
import { QdrantClient } from '@qdrant/js-client-rest';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';

/**
 * The collection-level APIs through the real edge and worker: snapshot bytes both ways
 * through the bus's object store (download, multipart upload), aliases with the official client,
 * telemetry and /metrics in Qdrant's format (REST and gRPC calls counted), and what a read-only
 * key may do with them.
 */
const stack = new Stack();
let edge: Edge;
let qdrant: QdrantClient;
const dir = mkdtempSync(join(tmpdir(), 'vector-snapshots-it-'));
const full = newKey();
const ro = newKey();

beforeAll(async () => {
  await stack.startVectorWorker({ VECTOR_SNAPSHOT_DIR: dir });
  edge = await stack.startEdge({ VECTORDB__SERVICE__API_KEY: full, VECTORDB__SERVICE__READ_ONLY_API_KEY: ro });
  qdrant = new QdrantClient({ url: edge.vectorUrl, apiKey: full, checkCompatibility: false });
});
afterAll(async () => {
  await stack.close();
  rmSync(dir, { recursive: true, force: true });
});

const http = (path: string, init: RequestInit & { key?: string } = {}) =>
  fetch(`${edge.vectorUrl}${path}`, { ...init, headers: { 'api-key': init.key ?? full, ...(init.headers as Record<string, string>) } });

const POINTS = Array.from({ length: 1200 }, (_, i) => ({ id: i + 1, vector: [Math.cos(i), Math.sin(i), 1], payload: { n: i, tag: i % 3 === 0 ? 'a' : 'b' } }));

describe('snapshots through the edge', () => {
  it('create, list, download the bytes, upload them into a new collection', async () => {
    await qdrant.createCollection('src', { vectors: { size: 3, distance: 'Cosine' } });
    await qdrant.createPayloadIndex('src', { field_name: 'tag', field_schema: 'keyword', wait: true });
    await qdrant.upsert('src', { points: POINTS, wait: true });

    const snap = await qdrant.createSnapshot('src');
    expect(snap?.name).toMatch(/^src-1-.*\.snapshot$/);
    expect(await qdrant.listSnapshots('src')).toEqual([snap]);

    const res = await http(`/collections/src/snapshots/${encodeURIComponent(snap!.name)}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.length).toBe(snap!.size);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(snap!.checksum);

    const form = new FormData();
    form.append('snapshot', new Blob([bytes]), snap!.name);
    const up = await http(`/collections/copy/snapshots/upload?checksum=${snap!.checksum}`, { method: 'POST', body: form });
    expect(up.status, await up.clone().text()).toBe(200);
    expect((await up.json()).result).toBe(true);

    expect((await qdrant.count('copy', { exact: true })).count).toBe(1200);
    const info = await qdrant.getCollection('copy');
    expect(info.config.params.vectors).toEqual({ size: 3, distance: 'Cosine' });
    expect(info.payload_schema.tag?.data_type).toBe('keyword');
    const [a, b] = await Promise.all([
      qdrant.retrieve('src', { ids: [1, 600, 1200], with_vector: true }),
      qdrant.retrieve('copy', { ids: [1, 600, 1200], with_vector: true }),
    ]);
    expect(b).toEqual(a);
  });

  it('upload refuses a file that is not a snapshot and a form without a file, with Qdrant envelopes', async () => {
    const form = new FormData();
    form.append('snapshot', new Blob([Buffer.from('garbage')]), 'x.snapshot');
    const bad = await http('/collections/copy/snapshots/upload', { method: 'POST', body: form });
    expect(bad.status).toBe(400);
    expect((await bad.json()).status.error).toBe('Bad request: the file is not a snapshot of this store (not gzip-compressed NDJSON)');
    const empty = new FormData();
    empty.append('note', 'no file');
    const none = await http('/collections/copy/snapshots/upload', { method: 'POST', body: empty });
    expect(none.status).toBe(400);
    expect((await none.json()).status.error).toBe('Bad request: expected a multipart/form-data body with a `snapshot` file');
    // The collection is untouched by the failed recoveries.
    expect((await qdrant.count('copy', { exact: true })).count).toBe(1200);
  });

  it('download of an unknown snapshot is a JSON 404; delete removes it', async () => {
    const missing = await http('/collections/src/snapshots/nope.snapshot');
    expect(missing.status).toBe(404);
    expect((await missing.json()).status.error).toBe('Not found: Snapshot nope.snapshot not found');
    const [snap] = await qdrant.listSnapshots('src');
    expect(await qdrant.deleteSnapshot('src', snap!.name)).toBe(true);
    expect(await qdrant.listSnapshots('src')).toEqual([]);
  });

  it('wait=false answers Qdrant\'s 202 accepted', async () => {
    const res = await http('/collections/src/snapshots?wait=false', { method: 'POST' });
    expect(res.status).toBe(202);
    const body = await res.json();
    expect(body.status).toBe('accepted');
    expect(Object.keys(body).sort()).toEqual(['status', 'time']);
    const [snap] = await qdrant.listSnapshots('src');
    const del = await http(`/collections/src/snapshots/${snap!.name}?wait=false`, { method: 'DELETE' });
    expect(del.status).toBe(202);
    expect(await qdrant.listSnapshots('src')).toEqual([]);
  });

  it('a read-only key may list and download but not create, upload or recover', async () => {
    const snap = await qdrant.createSnapshot('src');
    expect((await http('/collections/src/snapshots', { key: ro })).status).toBe(200);
    expect((await http(`/collections/src/snapshots/${snap!.name}`, { key: ro })).status).toBe(200);
    expect((await http('/collections/src/snapshots', { key: ro, method: 'POST' })).status).toBe(403);
    const recover = await http('/collections/src/snapshots/recover', {
      key: ro,
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ location: 'file:///x.snapshot' }),
    });
    expect(recover.status).toBe(403);
  });
});

describe('aliases, telemetry and metrics through the edge', () => {
  it('the official client switches an alias and reads through it', async () => {
    await qdrant.updateCollectionAliases({ actions: [{ create_alias: { collection_name: 'src', alias_name: 'live' } }] });
    expect((await qdrant.count('live', { exact: true })).count).toBe(1200);
    await qdrant.updateCollectionAliases({
      actions: [{ delete_alias: { alias_name: 'live' } }, { create_alias: { collection_name: 'copy', alias_name: 'live' } }],
    });
    expect(await qdrant.getCollectionAliases('copy')).toEqual({ aliases: [{ alias_name: 'live', collection_name: 'copy' }] });
    expect(await qdrant.getAliases()).toEqual({ aliases: [{ alias_name: 'live', collection_name: 'copy' }] });
  });

  it('telemetry counts this edge\'s requests; /metrics renders them in Qdrant\'s names, per collection on request', async () => {
    await qdrant.scroll('src', { limit: 1 });
    const t = (await (await http('/telemetry?details_level=1', { key: ro })).json()).result;
    expect(t.collections.number_of_collections).toBe(2);
    expect(t.requests.rest.responses['PUT /collections/{collection_name}/points']['200'].count).toBe(1);
    expect(t.requests.rest.responses['POST /collections/{collection_name}/points/scroll']['200'].count).toBeGreaterThanOrEqual(1);
    const m = await http('/metrics', { key: ro });
    expect(m.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await m.text();
    expect(text).toContain('# TYPE app_info gauge\napp_info{name="qdrant",version="1.19.0"} 1');
    expect(text).toContain('collections_total 2');
    expect(text).toContain('collection_points{id="src"} 1200');
    expect(text).toMatch(/rest_responses_total\{method="POST",endpoint="\/collections\/\{collection_name\}\/points\/scroll",status="200"\} \d+/);
    expect(text.split('\n').filter((l) => l.startsWith('rest_responses') && l.includes('collection='))).toEqual([]);
    const per = await (await http('/metrics?per_collection=true', { key: ro })).text();
    expect(per).toMatch(/rest_responses_total\{method="POST",endpoint="\/collections\/\{collection_name\}\/points\/scroll",status="200",collection="src"\} \d+/);
    // Not exempt from the gate, as in Qdrant.
    expect((await fetch(`${edge.vectorUrl}/metrics`)).status).toBe(401);
  });

  it('calls on the gRPC port are counted too (requests.grpc, grpc_responses_*)', async () => {
    const g = new QdrantGrpcClient({ url: `http://127.0.0.1:${edge.vectorGrpcPort}`, apiKey: full, checkCompatibility: false, compression: false });
    await g.api('points').count({ collectionName: 'src', exact: true });
    await g.api('points').count({ collectionName: 'nope', exact: true }).catch(() => undefined);
    const t = (await (await http('/telemetry?per_collection=true')).json()).result;
    expect(t.requests.grpc.responses['/qdrant.Points/Count']).toMatchObject({ '0': { count: 1 }, '5': { count: 1 } });
    expect(t.requests.grpc.per_collection_responses.src['/qdrant.Points/Count']['0'].count).toBe(1);
    const text = await (await http('/metrics')).text();
    expect(text).toContain('grpc_responses_total{endpoint="/qdrant.Points/Count",status="0"} 1\n');
    expect(text).toContain('grpc_responses_total{endpoint="/qdrant.Points/Count",status="5"} 1\n');
  });
});
