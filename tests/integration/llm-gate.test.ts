import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../../scripts/src/probe.ts';
import { verifyLlm } from '../../scripts/src/verify.ts';
import { enforcedState, flipGate } from '../../scripts/src/gate-ops.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';

/**
 * The LLM proxy's key sources across restarts: LLMPROXY_PROXY_KEY, else the config
 * file's proxyKey — the environment wins; empty both → open. Plus `verify`'s LLM matrix.
 */
const stack = new Stack();
let edge: Edge;
let openai: Awaited<ReturnType<typeof startFakeOpenAI>>;
const dir = mkdtempSync(join(tmpdir(), 'llm-gate-'));
const config = join(dir, 'config.json');
const writeConfig = (proxyKey: string) =>
  writeFileSync(config, JSON.stringify({ proxyKey, providers: { fake: { type: 'openai', baseUrl: openai.url } } }));
const k1 = newKey();
const k2 = newKey();

beforeAll(async () => {
  openai = await startFakeOpenAI();
  writeConfig(k1);
  await stack.startProxyWorker({ LLMPROXY_CONFIG: config });
});
afterAll(async () => {
  await stack.close();
  await openai?.close();
});

const ask = async (key?: string) =>
  (
    await rawRequest(edge.proxyUrl, '/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'x-proxy-key': key } : {}) },
      body: JSON.stringify({ model: 'fake/echo', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
    })
  ).status;

describe('LLM proxy key sources across restarts', () => {
  it('the config file proxyKey enforces when the environment has none', async () => {
    edge = await stack.startEdge({ LLMPROXY_CONFIG: config });
    expect(await ask()).toBe(401);
    expect(await ask(k1)).toBe(200);
    expect(edge.proc.log()).not.toContain(k1);
  });

  it('LLMPROXY_PROXY_KEY wins over the config file', async () => {
    edge = await stack.restartEdge(edge, { LLMPROXY_CONFIG: config, LLMPROXY_PROXY_KEY: k2 });
    expect(await ask(k2)).toBe(200);
    expect(await ask(k1)).toBe(401);
  });

  it('both empty → open after a restart', async () => {
    writeConfig('');
    edge = await stack.restartEdge(edge, { LLMPROXY_CONFIG: config, LLMPROXY_PROXY_KEY: '' });
    expect(await ask()).toBe(200);
  });

  it('an unreadable config file stops the edge instead of opening the gate', async () => {
    writeFileSync(config, '{ not json');
    const bad = await stack.startEdge({ LLMPROXY_CONFIG: config }, false).catch((err: Error) => err);
    expect(bad).toBeInstanceOf(Error);
    expect(String((bad as Error).message)).toMatch(/LLMPROXY_CONFIG/);
    writeConfig('');
  });

  it('verify sees the matrix in both states', async () => {
    const open = await verifyLlm(edge.proxyUrl, 'open');
    expect(open.filter((r) => !r.ok)).toEqual([]);
    const key = newKey();
    await flipGate(await stack.store(), 'llm', enforcedState([key], 'test'));
    const enforced = await verifyLlm(edge.proxyUrl, 'enforced', key);
    expect(enforced.filter((r) => !r.ok)).toEqual([]);
    expect(enforced.length).toBeGreaterThan(8);
    // And it notices a face that does not behave as desired.
    const lying = await verifyLlm(edge.proxyUrl, 'open');
    expect(lying.some((r) => !r.ok)).toBe(true);
  });
});
