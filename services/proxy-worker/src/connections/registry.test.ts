import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseProxyConfig } from '../upstream/config.ts';
import { loadConnectionsConfig } from './config.ts';
import { ConnectionRegistry, type ListFetcher } from './registry.ts';

/** A registry whose upstream listings come from `answers` (URL → JSON, or an Error to throw). */
function setup(env: NodeJS.ProcessEnv, answers: Record<string, unknown>, providers: Record<string, unknown> = {}) {
  const calls: string[] = [];
  const lines: string[] = [];
  const fetcher: ListFetcher = async (url) => {
    calls.push(url);
    await new Promise((r) => setTimeout(r, 5));
    const a = answers[url];
    if (a instanceof Error || a === undefined) throw a ?? new Error('connect ECONNREFUSED');
    return structuredClone(a);
  };
  const log = pino({ level: 'info' }, { write: (s: string) => lines.push(s) });
  const proxy = parseProxyConfig({ providers }, {});
  const registry = new ConnectionRegistry(loadConnectionsConfig(env), proxy, log, fetcher);
  return { registry, calls, lines, answers };
}

const tags = (...models: string[]) => ({ models: models.map((m) => ({ name: m, model: m, details: {} })) });
const list = (...ids: string[]) => ({ object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 5, owned_by: 'x' })) });

describe('ConnectionRegistry', () => {
  it('an id listed by OpenAI and Ollama keeps the first position and routes to the last entry (Open WebUI dict semantics)', async () => {
    const { registry } = setup(
      { OPENAI_API_BASE_URLS: 'http://o1/v1;http://o2/v1', OLLAMA_BASE_URLS: 'http://l1' },
      { 'http://o1/v1/models': list('shared', 'gpt'), 'http://o2/v1/models': list('gpt'), 'http://l1/api/tags': tags('shared', 'llama') },
    );
    const models = await registry.models();
    expect(models.map((m) => [m.id, m.owned_by, m.urlIdx])).toEqual([
      ['shared', 'ollama', undefined],
      ['gpt', 'openai', 1],
      ['llama', 'ollama', undefined],
    ]);
    expect(await registry.resolve('shared')).toMatchObject({ kind: 'ollama', upstreamModel: 'shared' });
    expect(await registry.resolve('gpt')).toMatchObject({ kind: 'openai', upstreamModel: 'gpt', upstream: { baseUrl: 'http://o2/v1' } });
    expect(await registry.resolve('nope')).toBeUndefined();
  });

  it('providers sit between OpenAI and Ollama; anthropic providers are not listed', async () => {
    const { registry } = setup(
      { OPENAI_API_BASE_URL: 'http://o/v1', OLLAMA_BASE_URL: 'http://l' },
      { 'http://o/v1/models': list('a'), 'http://l/api/tags': tags('b') },
      { fake: { type: 'openai', baseUrl: 'http://p/v1', models: ['m1'] }, an: { type: 'anthropic', baseUrl: 'http://q', models: ['c'] } },
    );
    expect((await registry.models()).map((m) => m.id)).toEqual(['a', 'fake/m1', 'b']);
    expect(await registry.resolve('fake/m1')).toMatchObject({ kind: 'openai', upstreamModel: 'm1', upstream: { baseUrl: 'http://p/v1' } });
  });

  it('shares one request between concurrent listings, reuses it for the TTL, refresh asks again', async () => {
    const { registry, calls } = setup({ OLLAMA_BASE_URL: 'http://l', MODELS_CACHE_TTL: '0.2' }, { 'http://l/api/tags': tags('x') });
    await Promise.all([registry.models(), registry.models(), registry.resolve('x')]);
    expect(calls).toHaveLength(1);
    await registry.models();
    expect(calls).toHaveLength(1);
    await registry.models(true);
    expect(calls).toHaveLength(2);
    await new Promise((r) => setTimeout(r, 250));
    await registry.models();
    expect(calls).toHaveLength(3);
  });

  it('a failing connection lists nothing, is logged once while it fails and once when it recovers', async () => {
    const { registry, lines, answers } = setup({ OLLAMA_BASE_URLS: 'http://down;http://up' }, { 'http://up/api/tags': tags('ok') });
    for (let i = 0; i < 3; i++) expect((await registry.models(true)).map((m) => m.id)).toEqual(['ok']);
    expect(lines.filter((l) => l.includes('connection unavailable'))).toHaveLength(1);
    expect(lines[0]).toContain('"connection":"ollama[0]"');
    answers['http://down/api/tags'] = tags('back');
    expect((await registry.models(true)).map((m) => m.id)).toEqual(['back', 'ok']);
    expect(lines.filter((l) => l.includes('lists models again'))).toHaveLength(1);
  });

  it('model_ids: OpenAI lists them without asking, Ollama filters; prefixes are removed when routing', async () => {
    const { registry, calls } = setup(
      {
        OPENAI_API_BASE_URL: 'http://o/v1',
        OPENAI_API_CONFIGS: JSON.stringify({ '0': { model_ids: ['x'], prefix_id: 'oa' } }),
        OLLAMA_BASE_URL: 'http://l',
        OLLAMA_API_CONFIGS: JSON.stringify({ 'http://l': { model_ids: ['keep:latest'], prefix_id: 'ol' } }),
      },
      { 'http://l/api/tags': tags('keep:latest', 'drop:latest') },
    );
    expect((await registry.models()).map((m) => m.id)).toEqual(['oa.x', 'ol.keep:latest']);
    expect(calls).toEqual(['http://l/api/tags']);
    expect(await registry.resolve('ol.keep:latest')).toMatchObject({ kind: 'ollama', upstreamModel: 'keep:latest' });
    expect(await registry.resolve('oa.x')).toMatchObject({ kind: 'openai', upstreamModel: 'x' });
  });

  it('hides non-chat models of api.openai.com, drops entries without an id, and sends the key only where configured', async () => {
    const seen: Array<[string, Record<string, string>]> = [];
    const cfg = loadConnectionsConfig({ OPENAI_API_BASE_URLS: 'https://api.openai.com/v1;http://o/v1', OPENAI_API_KEYS: 'k1;k2', OPENAI_API_CONFIGS: JSON.stringify({ '1': { auth_type: 'none' } }) });
    const registry = new ConnectionRegistry(cfg, parseProxyConfig({}, {}), pino({ level: 'silent' }), async (url, headers) => {
      seen.push([url, headers]);
      return url.startsWith('https') ? list('gpt-4o', 'whisper-1', 'text-embedding-3-small') : { data: [{ name: 'no id' }, { id: 'ok' }] };
    });
    expect((await registry.models()).map((m) => m.id)).toEqual(['gpt-4o', 'ok']);
    expect(seen.find(([u]) => u.startsWith('https'))?.[1].authorization).toBe('Bearer k1');
    expect(seen.find(([u]) => u.startsWith('http://'))?.[1].authorization).toBeUndefined();
    const route = await registry.resolve('ok');
    expect(route).toMatchObject({ kind: 'openai' });
    expect(JSON.stringify(route)).not.toContain('k2');
  });
});
