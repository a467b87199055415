import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enforcedState, flipGate } from '../../scripts/src/gate-ops.ts';
import { freePort, newKey, Stack, waitFor, type Edge } from '../support/local-stack.ts';

/**
 * Prometheus metrics: every process serves GET /metrics on METRICS_PORT, with the
 * process's own metrics under its `service` label and what it records (services/common/src/metrics.ts).
 */
const stack = new Stack();
let edge: Edge;
const ports = { edge: 0, speech: 0 };

beforeAll(async () => {
  ports.edge = await freePort();
  ports.speech = await freePort();
  await stack.startWorker({ METRICS_PORT: String(ports.speech) });
  edge = await stack.startEdge({ METRICS_PORT: String(ports.edge) });
});
afterAll(() => stack.close());

const scrape = async (port: number) => {
  const r = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.text();
};
/** One sample's value: `name{labels…} value`, labels given as a substring that must be present. */
const sample = (text: string, name: string, labels = ''): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

describe('metrics', () => {
  it('each process serves its own, under its service label', async () => {
    const e = await scrape(ports.edge);
    const w = await scrape(ports.speech);
    expect(sample(e, 'process_cpu_seconds_total', 'service="edge"')).toBeGreaterThan(0);
    expect(sample(w, 'process_cpu_seconds_total', 'service="speech-worker"')).toBeGreaterThan(0);
    expect(sample(e, 'process_open_fds', 'service="edge"')).toBeGreaterThan(0);
    expect((await fetch(`http://127.0.0.1:${ports.edge}/other`)).status).toBe(404);
  });

  it('the edge reports each gate’s state and revision as it applies them', async () => {
    const before = await scrape(ports.edge);
    expect(sample(before, 'gatehouse_gate_state', 'face="speech"')).toBe(0);
    const rev = sample(before, 'gatehouse_gate_revision', 'face="speech"')!;
    await flipGate(await stack.store(), 'speech', enforcedState([newKey()], 'metrics-test'));
    await waitFor(async () => sample(await scrape(ports.edge), 'gatehouse_gate_state', 'face="speech"') === 1, 5000, () => 'gate state not reported');
    expect(sample(await scrape(ports.edge), 'gatehouse_gate_revision', 'face="speech"')).toBeGreaterThan(rev);
  });
});
