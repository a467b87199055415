import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../../scripts/src/probe.ts';
import { enforcedState, flipGate } from '../../scripts/src/gate-ops.ts';
import { freePort, newKey, Stack, waitFor, type Edge } from '../support/local-stack.ts';

/**
 * Fail closed: an edge that cannot load or apply the desired gate state answers 503 on gated
 * routes and reports degraded health. It never falls back to open (the documented "auth setup raised,
 * runs open" failure mode).
 */
const stack = new Stack();
let edge: Edge;
const key = newKey();

beforeAll(async () => {
  await stack.startWorker();
  edge = await stack.startEdge();
  await flipGate(await stack.store(), 'speech', enforcedState([key], 'test'));
});
afterAll(() => stack.close());

const get = (path: string, k?: string) => rawRequest(edge.url, path, { headers: k ? { authorization: `Bearer ${k}` } : {} });

describe('fail closed', () => {
  it('an unreadable gate record → 503 on gated routes, with or without a key; health degraded', async () => {
    const bus = await stack.busHandle();
    const kv = await bus.js.views.kv(bus.bucket('gatehouse_gates'));
    await kv.put('gate.speech', new TextEncoder().encode('{"v":1,"state":"enforced","keyDigests":[]}'));
    await waitFor(async () => (await get('/v1/models', key)).status === 503, 5000, () => 'edge did not fail closed');
    const r = await get('/v1/models');
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body).error.code).toBe('gate_unavailable');
    expect((await get('/v1/models', key)).status).toBe(503);
    const health = await get('/health');
    expect(health.status).toBe(503);
    expect(JSON.parse(health.body).status).toBe('degraded');
    // Public paths stay public: an operator can still read the docs and the status.
    expect((await get('/openapi.json')).status).toBe(200);
  });

  it('recovers when a valid state is written', async () => {
    const r = await flipGate(await stack.store(), 'speech', enforcedState([key], 'test'));
    expect(r.lagging).toEqual([]);
    expect((await get('/v1/models', key)).status).toBe(200);
    expect((await get('/v1/models')).status).toBe(401);
    expect((await get('/health')).status).toBe(200);
  });

  it('a deleted gate record → 503, not open', async () => {
    const bus = await stack.busHandle();
    const kv = await bus.js.views.kv(bus.bucket('gatehouse_gates'));
    await kv.delete('gate.speech');
    await waitFor(async () => (await get('/v1/models')).status === 503, 5000, () => 'edge did not fail closed on delete');
    expect((await get('/v1/models', key)).status).toBe(503);
    await flipGate(await stack.store(), 'speech', enforcedState([key], 'test'));
    expect((await get('/v1/models', key)).status).toBe(200);
  });

  it('an edge that cannot reach NATS answers 503 and reports degraded, never open', async () => {
    const dead = `nats://127.0.0.1:${await freePort()}`;
    const lonely = await stack.startEdge({ NATS_URL: dead }, false);
    const r = await rawRequest(lonely.url, '/v1/models');
    expect(r.status).toBe(503);
    const health = await rawRequest(lonely.url, '/health');
    expect(health.status).toBe(503);
    expect(JSON.parse(health.body).degraded.join(' ')).toMatch(/not loaded|bus/);
    await lonely.proc.stop();
  });
});
