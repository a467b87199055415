import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, createLogger, type Bus } from '@gatehouse/common';
import { unpackF32Frame } from '@gatehouse/contracts';
import { testGates, type TestGates } from '../../services/edge/src/gates/test-support.ts';
import { qdrantService } from '../../services/edge/src/faces/vector/grpc/qdrant-proto.ts';
import type { Msg } from '../../services/edge/src/faces/vector/grpc/to-rest.ts';
import { VectorGrpcServer } from '../../services/edge/src/faces/vector/grpc/vector-grpc.ts';

/**
 * The gRPC server's own behaviour around the bus, on real NATS with this test playing the
 * worker (so it decides when, and whether, an answer comes): a flip refusing a call in flight,
 * no worker, no bus, the client's deadline, a gate that cannot be confirmed, and a body refused
 * before the bus.
 */
const ns = `grpct${randomBytes(4).toString('hex')}`;
let bus: Bus;
let busAttached = true;
let g: TestGates;
let server: VectorGrpcServer;
let points: grpc.Client & Record<string, (req: Msg, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Msg) => void) => void>;
const key = randomBytes(32).toString('base64url');

beforeAll(async () => {
  bus = await connectBus({ url: process.env.NATS_URL ?? 'nats://127.0.0.1:4222', name: 'vector-grpc-test', log: createLogger('test', 'silent'), ns });
  g = await testGates({ vector: 'open' });
  server = new VectorGrpcServer({ gates: g.gates, bus: () => (busAttached ? bus : undefined), log: createLogger('test', 'silent') });
  const port = await server.listen('127.0.0.1', 0);
  const Points = grpc.makeGenericClientConstructor(qdrantService('qdrant.Points'), 'Points');
  points = new Points(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as typeof points;
});
afterAll(async () => {
  points?.close();
  await server?.close(1000);
  await g?.stop();
  await bus?.nc.drain();
});

/** One unary call: the response, or the status it failed with. */
function call(method: string, req: Msg, opts: { apiKey?: string; deadlineMs?: number } = {}): Promise<{ ok: true; res: Msg } | { ok: false; code: grpc.status; details: string }> {
  const md = new grpc.Metadata();
  if (opts.apiKey !== undefined) md.set('api-key', opts.apiKey);
  const callOpts: grpc.CallOptions = opts.deadlineMs ? { deadline: Date.now() + opts.deadlineMs } : {};
  return new Promise((resolve) => {
    points[method]!(req, md, callOpts, (err, res) => resolve(err ? { ok: false, code: err.code, details: err.details } : { ok: true, res: res! }));
  });
}

/** Play the worker for one subject: hand each request to the test, which answers when it wants. */
function worker(subject: string) {
  const received: { body: unknown; answer: (result: unknown) => void }[] = [];
  const sub = bus.nc.subscribe(bus.subject(subject), {
    callback: (_err, msg) => received.push({ body: msg.json(), answer: (result) => msg.respond(JSON.stringify({ result })) }),
  });
  return { received, stop: () => sub.unsubscribe() };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('vector gRPC server on the bus', () => {
  it('forwards a call as the REST request of its operation and answers from the worker’s result', async () => {
    const w = worker('vector.points.count');
    const pending = call('Count', { collection_name: 'c', exact: true, filter: { must: [{ field: { key: 'a', match: { keyword: 'x' } } }] } });
    await until(() => w.received.length === 1, 'the worker to get the request');
    expect(w.received[0]!.body).toEqual({ collection: 'c', query: {}, body: { exact: true, filter: { must: [{ key: 'a', match: { value: 'x' } }] } } });
    w.received[0]!.answer({ count: 3 });
    const r = await pending;
    // uint64 fields decode as decimal strings in this client (the server's proto-loader `longs: String`, exact for u64).
    expect(r.ok && r.res.result).toEqual({ count: '3' });
    expect(r.ok && typeof r.res.time).toBe('number');
    w.stop();
  });

  it('a flip refuses a call already in flight; the worker’s late answer is dropped', async () => {
    const w = worker('vector.points.count');
    const pending = call('Count', { collection_name: 'c' });
    await until(() => w.received.length === 1, 'the worker to get the request');
    await g.set('vector', { keys: [key] });
    const r = await pending;
    expect(r).toEqual({ ok: false, code: grpc.status.UNAUTHENTICATED, details: 'Must provide an API key or an Authorization bearer token' });
    w.received[0]!.answer({ count: 1 });

    // The same channel's next call is judged by the new state.
    const again = call('Count', { collection_name: 'c' }, { apiKey: key });
    await until(() => w.received.length === 2, 'the keyed call to reach the worker');
    w.received[1]!.answer({ count: 2 });
    expect(await again).toMatchObject({ ok: true, res: { result: { count: '2' } } });
    await g.set('vector', 'open');
    w.stop();
  });

  it('a read-only key is refused a write in flight when its key is demoted', async () => {
    await g.set('vector', { keys: [key] });
    const w = worker('vector.points.upsert');
    const pending = call('Upsert', { collection_name: 'c', points: [{ id: { num: 1 }, vectors: { vector: { dense: { data: [1] } } } }] }, { apiKey: key });
    await until(() => w.received.length === 1, 'the worker to get the upsert');
    await g.set('vector', { keys: [randomBytes(32).toString('base64url')], readOnlyKeys: [key] });
    expect(await pending).toEqual({ ok: false, code: grpc.status.PERMISSION_DENIED, details: 'Forbidden: Write access is required' });
    // …while it may still read.
    const wc = worker('vector.points.count');
    const read = call('Count', { collection_name: 'c' }, { apiKey: key });
    await until(() => wc.received.length === 1, 'the read to reach the worker');
    wc.received[0]!.answer({ count: 0 });
    expect(await read).toMatchObject({ ok: true });
    await g.set('vector', 'open');
    w.stop();
    wc.stop();
  });

  it('no worker: UNAVAILABLE; no bus: UNAVAILABLE; gate unknown: UNAVAILABLE', async () => {
    const none = await call('Scroll', { collection_name: 'c' });
    expect(none).toMatchObject({ ok: false, code: grpc.status.UNAVAILABLE });
    expect(!none.ok && none.details).toMatch(/no worker is serving .*vector\.points\.scroll/);

    busAttached = false;
    const noBus = await call('Scroll', { collection_name: 'c' });
    busAttached = true;
    expect(noBus).toMatchObject({ ok: false, code: grpc.status.UNAVAILABLE });
    expect(!noBus.ok && noBus.details).toMatch(/not connected to its bus/);

    await g.set('vector', 'unknown');
    const unknown = await call('Scroll', { collection_name: 'c' }, { apiKey: key });
    expect(unknown).toMatchObject({ ok: false, code: grpc.status.UNAVAILABLE });
    expect(!unknown.ok && unknown.details).toMatch(/cannot confirm its access gate/);
    await g.set('vector', 'open');
  });

  it('the client’s deadline bounds the wait for the worker', async () => {
    const w = worker('vector.points.scroll');
    const r = await call('Scroll', { collection_name: 'c' }, { deadlineMs: 300 });
    expect(r).toMatchObject({ ok: false, code: grpc.status.DEADLINE_EXCEEDED });
    expect(w.received).toHaveLength(1);
    w.stop();
  });

  it('vectors of 8 or more float32 numbers travel as Float32 bytes on vector.f32', async () => {
    const sub = bus.nc.subscribe(bus.subject('vector.f32'), { max: 1 });
    const data = Array.from({ length: 16 }, (_, i) => Math.fround(i / 3));
    const pending = call('Search', { collection_name: 'c', vector: data, limit: 2 });
    let frame: Uint8Array | undefined;
    for await (const m of sub) {
      frame = m.data;
      const head = unpackF32Frame(m.data, (b) => JSON.parse(new TextDecoder().decode(b)));
      expect(head).toMatchObject({ op: 'points.search', collection: 'c', query: {}, body: { vector: data, limit: 2 } });
      m.respond(JSON.stringify({ result: [{ id: 1, version: 0, score: 0.5 }] }));
    }
    expect(await pending).toMatchObject({ ok: true, res: { result: [{ id: { num: '1' }, score: 0.5 }] } });
    // The 16 numbers are 64 bytes at the end of the frame, not decimal text in its JSON.
    const tail = new Float32Array(Uint8Array.from(frame!.subarray(frame!.byteLength - 64)).buffer);
    expect([...tail]).toEqual(data);
    expect(new TextDecoder().decode(frame!)).not.toContain(String(data[1]));
  });

  it('a body REST would refuse is INVALID_ARGUMENT with Qdrant’s text, before the bus', async () => {
    const w = worker('vector.points.search');
    const r = await call('Search', { collection_name: 'c', vector: [1], limit: 0 });
    expect(r).toMatchObject({ ok: false, code: grpc.status.INVALID_ARGUMENT });
    expect(!r.ok && r.details).toMatch(/^Validation error in JSON body: \[limit: value 0 invalid, must be 1 or larger\]/);
    expect(w.received).toHaveLength(0);
    w.stop();
  });
});
