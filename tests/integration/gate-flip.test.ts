import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../../scripts/src/probe.ts';
import { enforcedState, flipGate, openState } from '../../scripts/src/gate-ops.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';

/**
 * Live flips with no restart, on two edge instances at once, while requests are in flight: once
 * flipGate (what `scripts/gate enforce|open` runs) returns, no instance answers under the old state.
 */
const stack = new Stack();
let edges: Edge[];

beforeAll(async () => {
  await stack.startWorker();
  edges = [await stack.startEdge(), await stack.startEdge()];
});
afterAll(() => stack.close());

const status = async (e: Edge, headers: Record<string, string> = {}) => (await rawRequest(e.url, '/v1/models', { headers })).status;

/** Fire requests without a key at every edge until `stop` (bounded in count and time). */
function hammer(stop: { done: boolean }): Promise<{ startedAt: number; status: number }[]> {
  const out: { startedAt: number; status: number }[] = [];
  const deadline = Date.now() + 20_000;
  const loop = async (e: Edge) => {
    for (let i = 0; i < 2000 && !stop.done && Date.now() < deadline; i++) {
      const startedAt = performance.now();
      out.push({ startedAt, status: await status(e) });
    }
  };
  return Promise.all(edges.flatMap((e) => [loop(e), loop(e)])).then(() => out);
}

describe('live flip open → enforced → open under concurrent requests', () => {
  it('applies on every instance before returning, and nothing started afterwards sees the old state', async () => {
    const store = await stack.store();
    const key = newKey();
    const stop = { done: false };
    const running = hammer(stop);
    await new Promise((r) => setTimeout(r, 300));

    const enforced = await flipGate(store, 'speech', enforcedState([key], 'test'));
    const enforcedAt = performance.now();
    expect(enforced.lagging).toEqual([]);
    expect(enforced.applied.sort()).toEqual((await store.listPresence()).map((p) => p.instance).sort());
    for (const e of edges) {
      expect(await status(e)).toBe(401);
      expect(await status(e, { authorization: `Bearer ${key}` })).toBe(200);
    }
    await new Promise((r) => setTimeout(r, 300));

    const opened = await flipGate(store, 'speech', openState('test'));
    const openedAt = performance.now();
    expect(opened.lagging).toEqual([]);
    expect(opened.revision).toBeGreaterThan(enforced.revision);
    await new Promise((r) => setTimeout(r, 300));
    stop.done = true;
    const results = await running;

    const during = results.filter((r) => r.startedAt > enforcedAt && r.startedAt < openedAt - 50);
    const after = results.filter((r) => r.startedAt > openedAt);
    const before = results.filter((r) => r.startedAt < enforcedAt - 200);
    expect(before.length).toBeGreaterThan(0);
    expect(during.length).toBeGreaterThan(0);
    expect(after.length).toBeGreaterThan(0);
    expect(new Set(before.map((r) => r.status))).toEqual(new Set([200]));
    expect(new Set(during.map((r) => r.status))).toEqual(new Set([401]));
    expect(new Set(after.map((r) => r.status))).toEqual(new Set([200]));
  });

  it('cuts off a request admitted under the old state that is still running when the flip lands', async () => {
    const store = await stack.store();
    // 4096 characters of wav: the worker answers with headers early, the whole body takes a while.
    const input = 'The quick brown fox jumps over the lazy dog. '.repeat(91);
    const res = await fetch(`${edges[0]!.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input, response_format: 'wav', speed: 0.25 }),
    });
    const body = res.arrayBuffer().then(
      (b) => ({ ok: true as const, bytes: b.byteLength }),
      (err: Error) => ({ ok: false as const, err: err.message }),
    );
    const flip = await flipGate(store, 'speech', enforcedState([newKey()], 'test'));
    expect(flip.lagging).toEqual([]);
    const outcome = await body;
    // Either the refusal replaced it (401) or the stream was cut: never a complete 200 answer.
    if (res.status === 200) expect(outcome.ok).toBe(false);
    else expect(res.status).toBe(401);
    await flipGate(store, 'speech', openState('test'));
  });

  it('names the instances that did not apply a flip in time', async () => {
    const store = await stack.store();
    const stuck = await stack.startEdge();
    // SIGSTOP: the process is alive (its heartbeat is fresh) but cannot apply anything.
    stuck.proc.child.kill('SIGSTOP');
    try {
      const live = await store.listPresence();
      const stuckId = live.map((p) => p.instance).find((id) => !edges.some((e) => e.proc.log().includes(id)));
      const r = await flipGate(store, 'speech', openState('test'), 1000);
      expect(r.lagging).toHaveLength(1);
      expect(r.lagging[0]).toBe(stuckId);
      expect(r.applied).toHaveLength(2);
    } finally {
      stuck.proc.child.kill('SIGCONT');
    }
  });
});
