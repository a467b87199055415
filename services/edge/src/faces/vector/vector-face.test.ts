/**
 * The vector face without NATS or a worker (`app.inject()`): gating in every gate state, read-only
 * keys decided by the catalog, path tricks, and Qdrant's error envelopes. A request the gate lets
 * through reaches the handler, which answers 503 "not connected to its bus" (no bus) — or, with a
 * stand-in bus, refuses a bad body before any bus hop. The real stack: tests/integration/vector-*.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InjectOptions } from 'fastify';
import { VECTOR_CATALOG } from '@gatehouse/contracts';
import type { Bus } from '@gatehouse/common';
import { faceForTests, quietServer, type FaceUnderTest } from '../../gates/test-support.ts';
import { buildVectorFace } from './vector-face.ts';

const key = () => randomBytes(32).toString('base64url');
const NO_BUS = 'Service unavailable: the vector store is not connected to its bus';
const FAIL_CLOSED = 'Service unavailable: the vector store cannot confirm its access gate (fail closed)';
const FORBIDDEN = 'Forbidden: Write access is required';

/** The face without a bus; each describe sets the gate state it tests. */
const face = faceForTests('vector', 'open', (gates) => buildVectorFace(quietServer, { gates, bus: () => undefined }));

/** Qdrant's JSON error envelope: the message, and no `result`. */
async function qdrantErrorOf(f: FaceUnderTest, req: InjectOptions): Promise<{ status: number; error: string }> {
  const res = await f.app.inject(req);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.json() as { status: { error: string }; time: number; result?: unknown };
  expect(typeof body.time).toBe('number');
  expect(body).not.toHaveProperty('result');
  return { status: res.statusCode, error: body.status.error };
}

/** Every route of the catalog, with its path parameters filled in. */
const catalogRoutes = Object.entries(VECTOR_CATALOG).flatMap(([op, entry]) =>
  entry.routes.map((r) => ({
    op,
    writes: entry.writes,
    method: r.method,
    url: r.url.replace(':collection', 'c').replace(':id', '1').replace(':field', 'f'),
  })),
);

describe('open gate', () => {
  let f: FaceUnderTest;
  beforeAll(async () => {
    f = face();
    await f.set('vector', 'open');
  });

  it('lets every request through, with or without a key (503 here only because there is no bus)', async () => {
    expect(await qdrantErrorOf(f, { method: 'GET', url: '/collections' })).toEqual({ status: 503, error: NO_BUS });
    expect(await qdrantErrorOf(f, { method: 'PUT', url: '/collections/c', headers: { 'api-key': 'anything' }, payload: {} })).toEqual({
      status: 503,
      error: NO_BUS,
    });
  });

  it('serves Qdrant\'s public paths; readyz says not ready while the bus is away', async () => {
    expect((await f.app.inject({ url: '/' })).json()).toMatchObject({ title: 'qdrant - vector search engine' });
    expect((await f.app.inject({ url: '/healthz' })).body).toBe('healthz check passed');
    expect((await f.app.inject({ url: '/livez' })).body).toBe('healthz check passed');
    const ready = await f.app.inject({ url: '/readyz' });
    expect([ready.statusCode, ready.body]).toEqual([503, 'some shards are not ready']);
  });
});

describe('enforced gate', () => {
  const full = key();
  const readOnly = key();
  let f: FaceUnderTest;
  beforeAll(async () => {
    f = face();
    await f.set('vector', { keys: [full], readOnlyKeys: [readOnly] });
  });

  it('401 in plain text: no key, a wrong key, an empty api-key, a lower-case bearer scheme', async () => {
    const cases: [Record<string, string>, string][] = [
      [{}, 'Must provide an API key or an Authorization bearer token'],
      [{ 'api-key': key() }, 'Invalid API key or JWT'],
      [{ authorization: `Bearer ${key()}` }, 'Invalid API key or JWT'],
      // `api-key` present, even empty, decides before Authorization (Qdrant).
      [{ 'api-key': '', authorization: `Bearer ${full}` }, 'Invalid API key or JWT'],
      // Qdrant reads only `Bearer ` as written.
      [{ authorization: `bearer ${full}` }, 'Must provide an API key or an Authorization bearer token'],
    ];
    for (const [headers, message] of cases) {
      const res = await f.app.inject({ method: 'GET', url: '/collections', headers });
      expect([res.statusCode, res.headers['content-type'], res.body]).toEqual([401, 'text/plain; charset=utf-8', message]);
    }
  });

  it('the full key passes, as api-key or as a bearer token', async () => {
    for (const headers of [{ 'api-key': full }, { authorization: `Bearer ${full}` }]) {
      expect(await qdrantErrorOf(f, { method: 'DELETE', url: '/collections/c', headers })).toEqual({ status: 503, error: NO_BUS });
    }
  });

  it('the read-only key reads and gets 403 on every write, as the catalog says', async () => {
    for (const r of catalogRoutes) {
      const payload = r.method === 'GET' || r.method === 'DELETE' ? undefined : {};
      const res = await f.app.inject({ method: r.method, url: r.url, headers: { 'api-key': readOnly }, payload });
      const error = (res.json() as { status: { error: string } }).status.error;
      expect([r.op, res.statusCode, error]).toEqual([r.op, r.writes ? 403 : 503, r.writes ? FORBIDDEN : NO_BUS]);
    }
  });

  it('a path no route serves: read-only GET gets Qdrant\'s 404, any other method counts as a write', async () => {
    const headers = { 'api-key': readOnly };
    expect(await qdrantErrorOf(f, { method: 'GET', url: '/nope?x=1', headers })).toEqual({ status: 404, error: 'Not found: GET /nope' });
    expect(await qdrantErrorOf(f, { method: 'POST', url: '/collections/c/points/nope', headers, payload: {} })).toEqual({
      status: 403,
      error: FORBIDDEN,
    });
    expect(await qdrantErrorOf(f, { method: 'POST', url: '/collections/c/points/nope', headers: { 'api-key': full }, payload: {} })).toEqual({
      status: 404,
      error: 'Not found: POST /collections/c/points/nope',
    });
  });

  it('exempt paths need no key; an exempt prefix covers what is under it', async () => {
    for (const url of ['/', '/healthz', '/livez', '/livez/anything', '/readyz/anything']) {
      expect((await f.app.inject({ url })).statusCode, url).not.toBe(401);
    }
  });

  it('path tricks never get an exemption', async () => {
    // Encoded tricks go through inject; dot segments and backslashes need a socket (inject's URL
    // parsing would resolve them before the face sees them, as a client's own URL parser might not).
    // The worst kind names an exempt path once normalised while the router serves a gated route.
    const encoded = [
      '/collections/..%2f..%2freadyz',
      '/collections/c/points/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fhealthz',
      '/readyz/%2e%2e/collections',
      '/readyz/%252e%252e/collections',
      '/livez/..%2fcollections',
      '//healthz',
      '/%68ealthz',
      '/healthz/',
    ];
    for (const url of encoded) {
      const res = await f.app.inject({ method: 'GET', url });
      expect([url, res.statusCode, res.body]).toEqual([url, 401, 'Must provide an API key or an Authorization bearer token']);
    }
    const dotted = ['/collections/c/../../healthz', '/healthz/../collections', '/readyz/../collections', '/./healthz', '/livez/./', '/readyz\\..\\collections'];
    for (const path of dotted) {
      const res = await f.send({ method: 'GET', path });
      expect([path, res.status, res.body]).toEqual([path, 401, 'Must provide an API key or an Authorization bearer token']);
    }
  });
});

describe('unknown gate (fail closed)', () => {
  let f: FaceUnderTest;
  beforeAll(async () => {
    f = face();
    await f.set('vector', 'unknown');
  });
  afterAll(() => face().set('vector', 'open'));

  it('503 on every gated path, whatever the key; public paths still answer', async () => {
    for (const headers of [{}, { 'api-key': key() }]) {
      expect(await qdrantErrorOf(f, { method: 'GET', url: '/collections', headers })).toEqual({ status: 503, error: FAIL_CLOSED });
      expect(await qdrantErrorOf(f, { method: 'GET', url: '/nope', headers })).toEqual({ status: 503, error: FAIL_CLOSED });
    }
    expect(await qdrantErrorOf(f, { method: 'GET', url: '/healthz/../collections' })).toEqual({ status: 503, error: FAIL_CLOSED });
    expect((await f.app.inject({ url: '/healthz' })).statusCode).toBe(200);
    expect((await f.app.inject({ url: '/readyz' })).statusCode).toBe(503);
  });
});

describe('Qdrant error envelopes', () => {
  // Bodies the edge validates are refused before any bus hop: a stand-in bus that is never called
  // is enough. The point operations' bodies are validated by the worker, with the same schemas and
  // wording (tests/integration/vector-api.test.ts checks those answers through a real worker).
  const withBus = faceForTests('vector', 'open', (gates) => buildVectorFace(quietServer, { gates, bus: () => ({}) as Bus }));
  let f: FaceUnderTest;
  beforeAll(() => {
    f = withBus();
  });

  const json = { 'content-type': 'application/json' };

  it('400 for a body that is not JSON', async () => {
    const e = await qdrantErrorOf(f, { method: 'PUT', url: '/collections/c', headers: json, payload: '{"vectors":' });
    expect(e.status).toBe(400);
    expect(e.error).toMatch(/^Format error in JSON body: /);
    // A forwarded route's body that could poison a prototype is parsed (and refused) here too.
    const p = await qdrantErrorOf(f, { method: 'POST', url: '/collections/c/points/scroll', headers: json, payload: '{"__proto__":{"x":1}}' });
    expect(p.status).toBe(400);
    expect(p.error).toMatch(/^Format error in JSON body: /);
  });

  it('400 for a body that does not deserialize, 422 for one that breaks a validator rule', async () => {
    const bad = await qdrantErrorOf(f, { method: 'PUT', url: '/collections/c', payload: { vectors: { size: 'x', distance: 'Cosine' } } });
    expect(bad.status).toBe(400);
    expect(bad.error).toMatch(/^Format error in JSON body: vectors/);
    const zero = await qdrantErrorOf(f, { method: 'PUT', url: '/collections/c', payload: { vectors: { size: 0, distance: 'Cosine' } } });
    expect(zero.status).toBe(422);
    expect(zero.error).toMatch(/^Validation error in JSON body: /);
  });

  it('404 for a path no route serves', async () => {
    expect(await qdrantErrorOf(f, { method: 'GET', url: '/collections/c/nothing' })).toEqual({
      status: 404,
      error: 'Not found: GET /collections/c/nothing',
    });
  });
});
