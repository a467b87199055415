import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../../scripts/src/probe.ts';
import { verifyVector } from '../../scripts/src/verify.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';

/**
 * The vector store's gate (Qdrant's auth rules) and the safe rollout: sightings,
 * preflight, enforce refusing while a client lacks the key, rotation with a grace period.
 */
const stack = new Stack();
let edge: Edge;
const dir = mkdtempSync(join(tmpdir(), 'vector-gate-'));

beforeAll(async () => {
  await stack.startVectorWorker();
  edge = await stack.startEdge();
});
afterAll(() => stack.close());

const gate = (args: string[]) => stack.gateCli(args, edge);

const keyFile = (name: string, key: string) => {
  const f = join(dir, name);
  writeFileSync(f, key);
  return f;
};

const get = (path: string, headers: Record<string, string> = {}, method = 'GET', body?: string) =>
  rawRequest(edge.vectorUrl, path, { method, headers: body ? { 'content-type': 'application/json', ...headers } : headers, body });

/** A client as a machine runs it: a user agent of its own, the key it holds. */
const client = (ua: string, key?: string) => get('/collections', { 'user-agent': ua, ...(key ? { 'api-key': key } : {}) });

describe('vector gate and safe rollout', () => {
  const key = newKey();
  const keyPath = () => keyFile('vector.key', key);

  it('open: 200 with or without a key, and the clients are seen', async () => {
    expect((await client('machine-a/1', key)).status).toBe(200);
    expect((await client('machine-b/1')).status).toBe(200);
    expect((await get('/')).status).toBe(200);
  });

  it('preflight lists who lacks the planned key; enforce refuses, then --force enforces', async () => {
    await new Promise((r) => setTimeout(r, 200)); // sightings are written asynchronously
    const pre = await gate(['preflight', 'vector', '--key-file', keyPath()]);
    expect(pre.code).toBe(1);
    expect(pre.stdout).toMatch(/ready\s+.*machine-a\/1.*sends the planned key/);
    expect(pre.stdout).toMatch(/LACKING .*machine-b\/1.*sends no key/);
    expect(pre.stdout).not.toContain(key);

    const refused = await gate(['enforce', 'vector', '--key-file', keyPath()]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/refused.*1 client/);
    expect((await client('machine-b/1')).status).toBe(200); // still open

    // machine-b gets the key: preflight is clean and enforce goes through.
    expect((await client('machine-b/1', key)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 200));
    expect((await gate(['preflight', 'vector', '--key-file', keyPath()])).code).toBe(0);
    const ok = await gate(['enforce', 'vector', '--key-file', keyPath()]);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('enforced: Qdrant’s matrix — api-key or Bearer, 401 plain text, health paths exempt', async () => {
    const none = await get('/collections');
    expect(none.status).toBe(401);
    expect(none.headers['content-type']).toMatch(/text\/plain/);
    expect(none.body).toBe('Must provide an API key or an Authorization bearer token');
    const wrong = await get('/collections', { 'api-key': newKey() });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toBe('Invalid API key or JWT');
    // An empty api-key header is presented-and-wrong; it also hides a right Bearer (Qdrant reads api-key first).
    expect((await get('/collections', { 'api-key': '', authorization: `Bearer ${key}` })).status).toBe(401);
    expect((await get('/collections', { 'api-key': key })).status).toBe(200);
    expect((await get('/collections', { authorization: `Bearer ${key}` })).status).toBe(200);
    expect((await get('/collections', { authorization: `bearer ${key}` })).status).toBe(401);
    for (const p of ['/', '/healthz', '/livez', '/readyz']) expect((await get(p)).status, p).toBe(200);
    for (const p of ['/healthz/../collections', '//collections', '/readyz/%2e%2e/collections', '/metrics']) expect((await get(p)).status, p).toBe(401);
    expect((await verifyVector(edge.vectorUrl, 'enforced', key)).filter((r) => !r.ok)).toEqual([]);
  });

  it('rotation: old and new keys together during the grace period, then only the new', async () => {
    const next = newKey();
    // A grace long enough for the checks below on a busy machine; the wait after it is read
    // from the CLI's own "until" time, so the test never races the expiry.
    const r = await gate(['rotate', 'vector', '--key-file', keyFile('next.key', next), '--grace', '8s']);
    expect(r.code, r.stderr).toBe(0);
    const until = /stay accepted until (\S+),/.exec(r.stderr)?.[1];
    expect(until, r.stderr).toBeDefined();
    expect((await get('/collections', { 'api-key': key })).status).toBe(200);
    expect((await get('/collections', { 'api-key': next })).status).toBe(200);
    const status = await gate(['status']);
    expect(status.stdout).toMatch(/vector: enforced .*also accepting/);
    await new Promise((res) => setTimeout(res, Math.max(0, Date.parse(until!) - Date.now()) + 500));
    expect((await get('/collections', { 'api-key': key })).status).toBe(401);
    expect((await get('/collections', { 'api-key': next })).status).toBe(200);
  });

  it('a read-only key reads and gets 403 on writes; data survives flips', async () => {
    const full = newKey();
    const ro = newKey();
    edge = await stack.restartEdge(edge, { VECTORDB__SERVICE__API_KEY: full, VECTORDB__SERVICE__READ_ONLY_API_KEY: ro });
    const create = await get('/collections/keep', { 'api-key': full }, 'PUT', JSON.stringify({ vectors: { size: 2, distance: 'Dot' } }));
    expect(create.status, create.body + stack.workers.map((w) => w.log()).join('\n').slice(-3000)).toBe(200);
    const upsert = await get('/collections/keep/points?wait=true', { 'api-key': full }, 'PUT', JSON.stringify({ points: [{ id: 1, vector: [1, 2] }] }));
    expect(upsert.status, upsert.body).toBe(200);
    expect((await get('/collections/keep', { 'api-key': ro })).status).toBe(200);
    expect((await get('/collections/keep/points/scroll', { 'api-key': ro }, 'POST', '{}')).status).toBe(200);
    expect((await get('/collections/keep/points/query', { 'api-key': ro }, 'POST', JSON.stringify({ query: [1, 0] }))).status).toBe(200);
    const denied = await get('/collections/keep/points?wait=true', { 'api-key': ro }, 'PUT', JSON.stringify({ points: [{ id: 2, vector: [1, 2] }] }));
    expect(denied.status).toBe(403);
    expect(JSON.parse(denied.body).status.error).toMatch(/^Forbidden/);
    expect((await get('/collections/other', { 'api-key': ro }, 'PUT', JSON.stringify({ vectors: { size: 2, distance: 'Dot' } }))).status).toBe(403);
    expect((await get('/collections/keep', { 'api-key': ro }, 'DELETE')).status).toBe(403);

    // Clearing the variables opens the gate; every point is still there.
    edge = await stack.restartEdge(edge, { VECTORDB__SERVICE__API_KEY: '', VECTORDB__SERVICE__READ_ONLY_API_KEY: '' });
    const count = await get('/collections/keep/points/count', {}, 'POST', '{}');
    expect(count.status).toBe(200);
    expect(JSON.parse(count.body).result.count).toBe(1);
  });
});
