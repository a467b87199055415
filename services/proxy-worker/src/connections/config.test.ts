import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConnectionsConfigError, loadConnectionsConfig, updateOllama, updateOpenAI } from './config.ts';

describe('loadConnectionsConfig (Open WebUI env semantics)', () => {
  it('defaults: Ollama on localhost:11434, no OpenAI connection without any OPENAI_API_* variable', () => {
    const c = loadConnectionsConfig({});
    expect(c.ollama.enabled).toBe(true);
    expect(c.ollama.connections.map((x) => [x.idx, x.url, x.connectionType])).toEqual([[0, 'http://localhost:11434', 'local']]);
    expect(c.openai.enabled).toBe(true);
    expect(c.openai.connections).toEqual([]);
    expect(loadConnectionsConfig({ OLLAMA_API_BASE_URL: 'http://h:1/api' }).ollama.connections[0]?.url).toBe('http://h:1');
    expect(loadConnectionsConfig({ OLLAMA_BASE_URL: 'http://h:2/' }).ollama.connections[0]?.url).toBe('http://h:2');
  });

  it('lists split on ";", keys index-aligned (padded with none), configs keyed by index or URL', () => {
    const k0 = randomBytes(8).toString('hex');
    const c = loadConnectionsConfig({
      OLLAMA_BASE_URLS: 'http://a:1; http://b:2/',
      OLLAMA_API_CONFIGS: JSON.stringify({ '1': { prefix_id: 'b', tags: ['x', { name: 'y' }], model_ids: ['m:latest'] }, 'http://a:1': { enable: false } }),
      OPENAI_API_BASE_URLS: 'http://o:1/v1;;http://o:3/v1',
      OPENAI_API_KEYS: `${k0}`,
      OPENAI_API_CONFIGS: JSON.stringify({ '2': { connection_type: 'local', auth_type: 'none', headers: { 'X-Org': 'o' } } }),
      ENABLE_OPENAI_API: 'TRUE',
      ENABLE_OLLAMA_API: 'yes',
    });
    expect(c.ollama.enabled).toBe(false); // only "true" is true
    expect(c.ollama.connections.map((x) => ({ url: x.url, enabled: x.enabled, prefixId: x.prefixId, tags: x.tags, modelIds: x.modelIds }))).toEqual([
      { url: 'http://a:1', enabled: false, prefixId: undefined, tags: [], modelIds: [] },
      { url: 'http://b:2', enabled: true, prefixId: 'b', tags: [{ name: 'x' }, { name: 'y' }], modelIds: ['m:latest'] },
    ]);
    const o = c.openai.connections;
    expect(o.map((x) => x.url)).toEqual(['http://o:1/v1', 'https://api.openai.com/v1', 'http://o:3/v1']);
    expect(o.map((x) => x.key)).toEqual([k0, undefined, undefined]);
    expect(o[2]).toMatchObject({ connectionType: 'local', authType: 'none' });
    expect(o[2]?.headers).toEqual({ 'x-org': 'o' });
  });

  it('keeps keys and headers out of JSON, spreads and inspect', () => {
    const key = randomBytes(12).toString('hex');
    const secretHeader = randomBytes(12).toString('hex');
    const c = loadConnectionsConfig({
      OPENAI_API_BASE_URL: 'http://o/v1',
      OPENAI_API_KEY: key,
      OLLAMA_API_CONFIGS: JSON.stringify({ '0': { key, headers: { 'x-secret': secretHeader } } }),
    });
    expect(c.openai.connections[0]?.key).toBe(key);
    expect(c.ollama.connections[0]?.key).toBe(key);
    for (const text of [JSON.stringify(c), inspect(c, { depth: 10 }), JSON.stringify({ ...c.ollama.connections[0] })]) {
      expect(text).not.toContain(key);
      expect(text).not.toContain(secretHeader);
    }
  });

  it('names every bad variable and field at once', () => {
    let err: unknown;
    try {
      loadConnectionsConfig({ OLLAMA_API_CONFIGS: '{nope', OPENAI_API_BASE_URL: 'http://o', OPENAI_API_CONFIGS: JSON.stringify({ '0': { enable: 'yes', tags: 'x', headers: { Host: 'h' } } }), MODELS_CACHE_TTL: 'soon' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConnectionsConfigError);
    const msg = (err as Error).message;
    for (const part of ['OLLAMA_API_CONFIGS: not valid JSON', 'OPENAI_API_CONFIGS["0"].enable', 'OPENAI_API_CONFIGS["0"].tags', 'OPENAI_API_CONFIGS["0"].headers.Host', 'MODELS_CACHE_TTL']) {
      expect(msg).toContain(part);
    }
  });

  it('an entry that is not an http(s) URL stays in place (indexes align) and lists nothing', () => {
    const c = loadConnectionsConfig({ OLLAMA_BASE_URLS: 'not a url;http://b:2' });
    expect(c.ollama.connections.map((x) => x.url)).toEqual(['', 'http://b:2']);
  });
});

describe('admin updates (Open WebUI update_config rules, secrets kept)', () => {
  const k0 = randomBytes(8).toString('hex');
  const ok = randomBytes(8).toString('hex');
  const running = loadConnectionsConfig({
    OPENAI_API_BASE_URLS: 'http://o:1/v1;http://o:2/v1',
    OPENAI_API_KEYS: `${k0};`,
    OPENAI_API_CONFIGS: JSON.stringify({ '0': { headers: { 'x-team': 'secret-team' } } }),
    OLLAMA_BASE_URLS: 'http://l:1',
    OLLAMA_API_CONFIGS: JSON.stringify({ '0': { key: ok } }),
  });

  it('OpenAI: keys padded or cut to the URLs, an empty key keeps the running key of the same URL (even moved), configs outside the list dropped', () => {
    const next = updateOpenAI(running, {
      OPENAI_API_BASE_URLS: ['http://new:1/v1', 'http://o:1/v1/'],
      OPENAI_API_KEYS: [''],
      OPENAI_API_CONFIGS: { '1': { prefix_id: 'p' }, '5': { enable: false }, 'http://o:1/v1': { enable: false } },
    });
    expect(next.enabled).toBe(true); // not sent: stays as it runs
    expect(next.urls).toEqual(['http://new:1/v1', 'http://o:1/v1/']);
    expect(next.keys).toEqual(['', k0]);
    expect(next.configs).toEqual({ '1': { prefix_id: 'p', headers: { 'x-team': 'secret-team' } } });
    const loaded = loadConnectionsConfig({}, { openai: next });
    expect(loaded.openai.connections.map((c) => [c.url, c.key ?? null, c.prefixId ?? null])).toEqual([
      ['http://new:1/v1', null, null],
      ['http://o:1/v1', k0, 'p'],
    ]);
    // A key sent replaces; extra keys are dropped; headers sent (even empty) replace the running ones.
    const replaced = updateOpenAI(running, { ENABLE_OPENAI_API: false, OPENAI_API_BASE_URLS: ['http://o:1/v1'], OPENAI_API_KEYS: ['k-new', 'extra'], OPENAI_API_CONFIGS: { '0': { headers: {} } } });
    expect(replaced).toEqual({ enabled: false, urls: ['http://o:1/v1'], keys: ['k-new'], configs: { '0': { headers: {} } } });
  });

  it('Ollama: a config entry without `key` keeps the running key; a connection without an entry keeps it too', () => {
    expect(updateOllama(running, { OLLAMA_BASE_URLS: ['http://l:1'], OLLAMA_API_CONFIGS: { '0': { tags: [{ name: 't' }] } } }).configs).toEqual({ '0': { tags: [{ name: 't' }], key: ok } });
    expect(updateOllama(running, { OLLAMA_BASE_URLS: ['http://x:9', 'http://l:1'], OLLAMA_API_CONFIGS: {} }).configs).toEqual({ '1': { key: ok } });
    expect(updateOllama(running, { OLLAMA_BASE_URLS: ['http://l:1'], OLLAMA_API_CONFIGS: { '0': { key: '' } } }).configs).toEqual({ '0': { key: '' } });
  });

  it('a stored API replaces the environment’s for that API only', () => {
    const c = loadConnectionsConfig({ OLLAMA_BASE_URLS: 'http://l:1', OPENAI_API_BASE_URLS: 'http://o:1/v1' }, { ollama: { enabled: false, urls: [], configs: {} } });
    expect(c.ollama).toMatchObject({ enabled: false, connections: [] });
    expect(c.openai.connections.map((x) => x.url)).toEqual(['http://o:1/v1']);
  });
});
