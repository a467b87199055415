import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_NATIVE_BASE_URL, getProvider, loadProxyConfig, loadProxyConfigFromEnv, parseModelId, ProxyConfigError } from './config.ts';

const dir = mkdtempSync(join(tmpdir(), 'llmproxy-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function file(content: unknown): string {
  const path = join(dir, `config-${++n}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}
const key = () => `test-${randomBytes(16).toString('hex')}`;

function loadError(content: unknown, env: NodeJS.ProcessEnv = {}): string {
  const path = file(content);
  try {
    loadProxyConfig(path, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ProxyConfigError);
    const message = (err as Error).message;
    expect(message.startsWith(`${path}:`)).toBe(true);
    return message;
  }
  throw new Error('expected the config to be rejected');
}

describe('loadProxyConfig', () => {
  it('no file → empty config with native pass-through to the default base URL', () => {
    for (const path of [undefined, '']) {
      const c = loadProxyConfig(path, {});
      expect(Object.keys(c.providers)).toEqual([]);
      expect(c.native.baseUrl).toBe(DEFAULT_NATIVE_BASE_URL);
      expect(c.native.serverApiKey).toBeUndefined();
      expect(c.proxyKey).toBeUndefined();
      expect(c.timeoutMs).toBe(600_000);
      expect(c.retries).toEqual({ max: 2, baseDelayMs: 500, maxDelayMs: 10_000 });
    }
  });

  it('reads a full file, keys from env vars and directly, defaults per provider', () => {
    const openaiKey = key();
    const vllmKey = key();
    const otherKey = key();
    const serverKey = key();
    const proxyKey = key();
    const path = file({
      proxyKey,
      providers: {
        openai: { type: 'openai', baseUrl: 'https://api.openai.com/v1/', apiKeyEnv: 'OPENAI_API_KEY', models: ['gpt-4o-mini'] },
        ollama: { type: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', passTopK: true, reasoningEffort: false, timeoutMs: 5000 },
        vllm: { type: 'openai', baseUrl: 'http://127.0.0.1:8000/v1', apiKey: vllmKey, headers: { 'X-Extra': 'yes' } },
        claude2: { type: 'anthropic', baseUrl: 'https://api.anthropic.com', apiKeyEnv: 'OTHER_ANTHROPIC_KEY' },
      },
      native: { baseUrl: 'https://example.test', serverApiKeyEnv: 'ANTHROPIC_API_KEY' },
      timeoutMs: 120_000,
      retries: { max: 3, baseDelayMs: 100, maxDelayMs: 2000 },
    });
    const c = loadProxyConfig(path, { OPENAI_API_KEY: openaiKey, OTHER_ANTHROPIC_KEY: otherKey, ANTHROPIC_API_KEY: serverKey });
    expect(c.source).toBe(path);
    expect(c.proxyKey).toBe(proxyKey);
    const openai = getProvider(c, 'openai');
    expect(openai).toMatchObject({ name: 'openai', type: 'openai', baseUrl: 'https://api.openai.com/v1', models: ['gpt-4o-mini'], passTopK: false, reasoningEffort: true, timeoutMs: 120_000, apiKeyEnv: 'OPENAI_API_KEY' });
    expect(openai?.apiKey).toBe(openaiKey);
    expect(getProvider(c, 'ollama')).toMatchObject({ passTopK: true, reasoningEffort: false, timeoutMs: 5000, models: [] });
    expect(getProvider(c, 'ollama')?.apiKey).toBeUndefined();
    expect(getProvider(c, 'vllm')?.apiKey).toBe(vllmKey);
    expect(getProvider(c, 'vllm')?.headers).toEqual({ 'x-extra': 'yes' });
    expect(getProvider(c, 'claude2')).toMatchObject({ type: 'anthropic', baseUrl: 'https://api.anthropic.com' });
    expect(getProvider(c, 'claude2')?.apiKey).toBe(otherKey);
    expect(c.native.baseUrl).toBe('https://example.test');
    expect(c.native.serverApiKey).toBe(serverKey);
    expect(c.retries).toEqual({ max: 3, baseDelayMs: 100, maxDelayMs: 2000 });

    // No secret in JSON, inspection or a spread copy.
    const dumps = [JSON.stringify(c), inspect(c, { depth: 10 }), JSON.stringify({ ...c, providers: { ...c.providers } })];
    for (const dump of dumps) {
      for (const secret of [openaiKey, vllmKey, otherKey, serverKey, proxyKey, 'x-extra']) expect(dump).not.toContain(secret);
    }
    expect(JSON.stringify(c)).toContain('OPENAI_API_KEY'); // the env var name is not secret
  });

  it('the example config in docs/ parses once its env vars exist', () => {
    const example = JSON.parse(readFileSync(new URL('../../../../docs/llm-proxy-config.example.json', import.meta.url), 'utf8')) as Record<string, unknown>;
    const env = { OPENAI_API_KEY: key(), OPENROUTER_API_KEY: key(), VLLM_API_KEY: key(), OTHER_ANTHROPIC_KEY: key(), ANTHROPIC_API_KEY: key() };
    const c = loadProxyConfig(file(example), env);
    expect(Object.keys(c.providers).length).toBeGreaterThanOrEqual(4);
    expect(JSON.stringify(example)).not.toMatch(/sk-[A-Za-z0-9]/);
  });

  it('LLMPROXY_NATIVE_BASE_URL overrides native.baseUrl; loadProxyConfigFromEnv reads LLMPROXY_CONFIG', () => {
    const path = file({ native: { baseUrl: 'https://a.test' } });
    expect(loadProxyConfig(path, { LLMPROXY_NATIVE_BASE_URL: 'http://127.0.0.1:9/' }).native.baseUrl).toBe('http://127.0.0.1:9');
    expect(loadProxyConfigFromEnv({ LLMPROXY_CONFIG: path }).native.baseUrl).toBe('https://a.test');
    expect(() => loadProxyConfig(path, { LLMPROXY_NATIVE_BASE_URL: 'not a url' })).toThrow(/LLMPROXY_NATIVE_BASE_URL/);
  });

  it('providers is a null-prototype record: "constructor" is not a provider', () => {
    const c = loadProxyConfig(undefined, {});
    expect(getProvider(c, 'constructor')).toBeUndefined();
    expect(getProvider(c, '__proto__')).toBeUndefined();
  });

  it('missing file and bad JSON name the file', () => {
    expect(() => loadProxyConfig(join(dir, 'absent.json'), {})).toThrow(/absent\.json: cannot read/);
    expect(loadError('{ "providers": ')).toMatch(/not valid JSON/);
    expect(loadError('[]')).toMatch(/\(top level\): .*expected object/);
  });

  const p = (provider: Record<string, unknown>) => ({ providers: { ollama: { type: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', ...provider } } });
  const cases: [string, unknown, RegExp][] = [
    ['baseUrl not a URL', p({ baseUrl: 'localhost:11434' }), /providers\.ollama\.baseUrl: must be an absolute http\(s\) URL/],
    ['baseUrl wrong type', p({ baseUrl: 5 }), /providers\.ollama\.baseUrl: /],
    ['baseUrl missing', { providers: { ollama: { type: 'openai' } } }, /providers\.ollama\.baseUrl: /],
    ['baseUrl ftp', p({ baseUrl: 'ftp://x/v1' }), /providers\.ollama\.baseUrl: /],
    ['type unknown', p({ type: 'gemini' }), /providers\.ollama\.type: type must be "openai" or "anthropic"/],
    ['type missing', { providers: { ollama: { baseUrl: 'http://x' } } }, /providers\.ollama\.type: /],
    ['passTopK not bool', p({ passTopK: 'yes' }), /providers\.ollama\.passTopK: must be true or false/],
    ['reasoningEffort not bool', p({ reasoningEffort: 1 }), /providers\.ollama\.reasoningEffort: must be true or false/],
    ['passTopK on anthropic type', { providers: { c: { type: 'anthropic', baseUrl: 'http://x', passTopK: true } } }, /providers\.c\.passTopK: unknown field/],
    ['unknown provider field', p({ apikey: 'x' }), /providers\.ollama\.apikey: unknown field/],
    ['apiKey empty', p({ apiKey: '' }), /providers\.ollama\.apiKey: must not be empty/],
    ['apiKeyEnv not a name', p({ apiKeyEnv: 'MY KEY' }), /providers\.ollama\.apiKeyEnv: must be an environment variable name/],
    ['apiKey and apiKeyEnv', p({ apiKey: 'a', apiKeyEnv: 'SOME_KEY' }), /providers\.ollama: give either apiKey or apiKeyEnv, not both/],
    ['models not strings', p({ models: [1] }), /providers\.ollama\.models\.0: /],
    ['headers bad name', p({ headers: { 'bad header': 'x' } }), /providers\.ollama\.headers\.bad header: header names must be HTTP tokens/],
    ['headers reserved', p({ headers: { Host: 'x' } }), /providers\.ollama\.headers\.Host: this header is set by the proxy itself/],
    ['headers CRLF', p({ headers: { 'x-a': 'a\r\nb: c' } }), /providers\.ollama\.headers\.x-a: header values must not contain CR, LF or NUL/],
    ['provider timeoutMs', p({ timeoutMs: 0 }), /providers\.ollama\.timeoutMs: must be at least 1/],
    ['bad provider name', { providers: { 'Ollama Local': { type: 'openai', baseUrl: 'http://x' } } }, /providers\."Ollama Local": provider names must match/],
    ['provider name with leading dash', { providers: { '-x': { type: 'openai', baseUrl: 'http://x' } } }, /providers\."-x": provider names must match/],
    ['providers is an array', { providers: [] }, /providers: must be an object mapping provider names/],
    ['timeoutMs not a number', { timeoutMs: '600000' }, /timeoutMs: must be a number of milliseconds/],
    ['timeoutMs too large', { timeoutMs: 2 ** 31 }, /timeoutMs: must be at most 2147483647/],
    ['retries.max negative', { retries: { max: -1 } }, /retries\.max: must not be negative/],
    ['retries.max fractional', { retries: { max: 1.5 } }, /retries\.max: must be an integer/],
    ['retries.baseDelayMs', { retries: { baseDelayMs: 'x' } }, /retries\.baseDelayMs: /],
    ['retries unknown field', { retries: { tries: 1 } }, /retries\.tries: unknown field/],
    ['native.baseUrl', { native: { baseUrl: 'nope' } }, /native\.baseUrl: must be an absolute/],
    ['native unknown field', { native: { apiKey: 'x' } }, /native\.apiKey: unknown field/],
    ['native both keys', { native: { serverApiKey: 'a', serverApiKeyEnv: 'B' } }, /native: give either serverApiKey or serverApiKeyEnv, not both/],
    ['proxyKey type', { proxyKey: 1 }, /proxyKey: must be a string/],
    ['unknown top-level field', { provider: {} }, /provider: unknown field/],
  ];
  it.each(cases)('rejects %s, naming the field', (_name, content, pattern) => {
    expect(loadError(content)).toMatch(pattern);
  });

  it('reports every problem at once', () => {
    const message = loadError({ timeoutMs: -1, retries: { max: 'x' }, providers: { a: { type: 'openai', baseUrl: 'x' } } });
    expect(message).toMatch(/timeoutMs: /);
    expect(message).toMatch(/retries\.max: /);
    expect(message).toMatch(/providers\.a\.baseUrl: /);
  });

  it('a missing or empty env var is an error naming the variable', () => {
    const content = { providers: { openai: { type: 'openai', baseUrl: 'https://api.openai.com/v1', apiKeyEnv: 'TEST_OPENAI_KEY_UNSET' } } };
    expect(loadError(content)).toMatch(/providers\.openai\.apiKeyEnv: environment variable TEST_OPENAI_KEY_UNSET is not set/);
    expect(loadError(content, { TEST_OPENAI_KEY_UNSET: '' })).toMatch(/TEST_OPENAI_KEY_UNSET is empty/);
    expect(loadError({ native: { serverApiKeyEnv: 'TEST_SERVER_KEY_UNSET' } })).toMatch(/native\.serverApiKeyEnv: environment variable TEST_SERVER_KEY_UNSET is not set/);
  });

  it('error messages never contain a key given directly', () => {
    const secret = key();
    const message = loadError({ providers: { a: { type: 'openai', baseUrl: 'nope', apiKey: secret } }, proxyKey: 5 });
    expect(message).not.toContain(secret);
  });

  it('the empty proxyKey means no proxy key', () => {
    expect(loadProxyConfig(file({ proxyKey: '' }), {}).proxyKey).toBeUndefined();
  });
});

describe('parseModelId', () => {
  it.each([
    ['claude-sonnet-4-5', { kind: 'native' }],
    ['claude-3-5-haiku-20241022', { kind: 'native' }],
    ['claude', { kind: 'native' }],
    ['openai/gpt-4o-mini', { kind: 'provider', provider: 'openai', model: 'gpt-4o-mini' }],
    ['openrouter/google/gemini-2.5-pro', { kind: 'provider', provider: 'openrouter', model: 'google/gemini-2.5-pro' }],
    ['ollama/qwen3:8b', { kind: 'provider', provider: 'ollama', model: 'qwen3:8b' }],
    ['claude2/claude-sonnet-4-5', { kind: 'provider', provider: 'claude2', model: 'claude-sonnet-4-5' }],
    ['my_local-1/m', { kind: 'provider', provider: 'my_local-1', model: 'm' }],
  ])('%s', (model, expected) => {
    expect(parseModelId(model)).toEqual(expected);
  });

  it.each([
    ['', /model is empty/],
    ['gpt-4o', /"gpt-4o": expected '<provider>\/<model>'/],
    ['Claude-3', /expected '<provider>\/<model>'/],
    ['/gpt-4o', /provider part before '\/' is empty/],
    ['openai/', /model part after '\/' is empty/],
    ['/', /provider part before '\/' is empty/],
    ['OpenAI/gpt-4o', /provider names match/],
  ])('%j is invalid', (model, reason) => {
    const r = parseModelId(model);
    expect(r.kind).toBe('invalid');
    if (r.kind === 'invalid') expect(r.reason).toMatch(reason);
  });
});
