import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../../scripts/src/probe.ts';
import { enforcedState, flipGate, openState } from '../../scripts/src/gate-ops.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';

/**
 * The gates' environment rules across restarts (docs/gates.md): a changed API_KEY + restart flips
 * the gate, a cleared one + restart opens it, a plain restart keeps the current state — including
 * a flip made at runtime with the operator CLI.
 */
const stack = new Stack();
let edge: Edge;
const k1 = newKey();
const k2 = newKey();

beforeAll(async () => {
  await stack.startWorker();
});
afterAll(() => stack.close());

const models = async (key?: string) =>
  (await rawRequest(edge.url, '/v1/models', { headers: key ? { authorization: `Bearer ${key}` } : {} })).status;

describe('gate state across restarts', () => {
  it('a first start with API_KEY set enforces that key', async () => {
    edge = await stack.startEdge({ API_KEY: k1 });
    expect(await models()).toBe(401);
    expect(await models(k1)).toBe(200);
    expect(edge.proc.log()).toContain('bearer token authentication is enabled');
    expect(edge.proc.log()).not.toContain(k1);
  });

  it('a plain restart (same API_KEY) keeps a runtime flip to open', async () => {
    const r = await flipGate(await stack.store(), 'speech', openState('test'));
    expect(r.lagging).toEqual([]);
    expect(await models()).toBe(200);
    edge = await stack.restartEdge(edge, { API_KEY: k1 });
    expect(await models()).toBe(200);
  });

  it('a plain restart keeps a runtime enforce with another key', async () => {
    const runtimeKey = newKey();
    await flipGate(await stack.store(), 'speech', enforcedState([runtimeKey], 'test'));
    edge = await stack.restartEdge(edge, { API_KEY: k1 });
    expect(await models(runtimeKey)).toBe(200);
    expect(await models(k1)).toBe(401);
  });

  it('a changed API_KEY + restart enforces the new key', async () => {
    edge = await stack.restartEdge(edge, { API_KEY: k2 });
    expect(await models(k2)).toBe(200);
    expect(await models(k1)).toBe(401);
    expect(await models()).toBe(401);
  });

  it('a cleared API_KEY + restart opens the gate', async () => {
    edge = await stack.restartEdge(edge, { API_KEY: '' });
    expect(await models()).toBe(200);
    expect(edge.proc.log()).toContain('auth middleware is not installed and the API is open');
  });

  it('a plain restart with API_KEY still empty keeps a runtime enforce', async () => {
    const runtimeKey = newKey();
    await flipGate(await stack.store(), 'speech', enforcedState([runtimeKey], 'test'));
    edge = await stack.restartEdge(edge, {});
    expect(await models()).toBe(401);
    expect(await models(runtimeKey)).toBe(200);
  });

  it('stores only digests: neither key appears in the gate bucket', async () => {
    const bus = await stack.busHandle();
    const kv = await bus.js.views.kv(bus.bucket('gatehouse_gates'));
    const seen: string[] = [];
    const history = await kv.history();
    for await (const e of history) seen.push(new TextDecoder().decode(e.value));
    expect(seen.length).toBeGreaterThan(3);
    for (const k of [k1, k2]) expect(seen.join('\n')).not.toContain(k);
  });
});
