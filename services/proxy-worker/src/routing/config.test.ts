import { describe, expect, it } from 'vitest';
import { parseProxyConfig } from '../upstream/config.ts';
import { DEFAULT_LONG_CONTEXT_THRESHOLD, globToRegExp, parseRouting, routedAliases, RoutingConfigError } from './config.ts';

const providers = new Set(['ollama', 'openai', 'claude2']);

describe('parseRouting', () => {
  it('takes claude-code-router\'s situations, as strings or route objects, and model patterns in order', () => {
    const r = parseRouting(
      {
        default: 'openai/gpt-4.1',
        background: { to: 'ollama/qwen3:8b', fallbacks: ['openai/gpt-4o-mini'], maxTokens: 4096, reasoning: false, tools: false },
        think: 'openai/o3',
        longContextThreshold: 100_000,
        models: { 'claude-opus-*': 'claude2/claude-opus-4-1', 'claude-qwen': 'ollama/qwen3:8b' },
      },
      providers,
    );
    expect(r.situations.default).toEqual({ name: 'default', targets: [{ provider: 'openai', model: 'gpt-4.1' }] });
    expect(r.situations.background).toEqual({
      name: 'background',
      targets: [
        { provider: 'ollama', model: 'qwen3:8b' },
        { provider: 'openai', model: 'gpt-4o-mini' },
      ],
      maxTokens: 4096,
      reasoning: false,
      tools: false,
    });
    expect(r.longContextThreshold).toBe(100_000);
    expect(r.models.map((m) => [m.pattern, m.route.name])).toEqual([
      ['claude-opus-*', 'model:claude-opus-*'],
      ['claude-qwen', 'model:claude-qwen'],
    ]);
    expect(routedAliases(r).map((a) => a.id)).toEqual(['claude-qwen']);
  });

  it('empty or absent: no routes, the defaults', () => {
    const r = parseRouting(undefined, providers);
    expect(r.models).toEqual([]);
    expect(r.situations).toEqual({});
    expect(r.longContextThreshold).toBe(DEFAULT_LONG_CONTEXT_THRESHOLD);
    expect(r.backgroundPatterns).toEqual(['claude-haiku-*', 'claude-3-5-haiku*', 'claude-3-haiku*']);
  });

  it('names every problem: unknown provider, not provider/model, unknown field, bad override, an id with a slash', () => {
    let message = '';
    try {
      parseRouting({ default: 'nope/m', background: { to: 'claude-x', fallbacks: ['openai/'] }, models: { 'a/b': 'openai/x' } }, providers);
    } catch (err) {
      expect(err).toBeInstanceOf(RoutingConfigError);
      message = (err as Error).message;
    }
    expect(message.split('\n')).toEqual([
      'routing.background.to: "claude-x" is not "<provider>/<model>"',
      'routing.background.fallbacks.0: "openai/" is not "<provider>/<model>"',
      'routing.default.to: unknown provider "nope" (configured: ollama, openai, claude2)',
      'routing.models."a/b": a routed id has no "/" ("<provider>/<model>" ids always go straight to their provider)',
    ]);
    expect(() => parseRouting({ defualt: 'openai/x' }, providers)).toThrow('routing.defualt: unknown field');
    expect(() => parseRouting({ think: { to: 'openai/x', maxTokens: 0 } }, providers)).toThrow('routing.think.maxTokens: must be at least 1');
  });

  it('is part of LLMPROXY_CONFIG, checked with the rest of the file', () => {
    const cfg = parseProxyConfig({ providers: { ollama: { type: 'openai', baseUrl: 'http://127.0.0.1:11434/v1' } }, routing: { background: 'ollama/qwen3:8b' } }, {});
    expect(cfg.routing.situations.background?.targets).toEqual([{ provider: 'ollama', model: 'qwen3:8b' }]);
    expect(() => parseProxyConfig({ routing: { default: 'ollama/x' } }, {}, 'proxy.json')).toThrow('proxy.json: routing.default.to: unknown provider "ollama" (configured: none)');
    expect(parseProxyConfig({}, {}).routing.situations).toEqual({});
  });
});

describe('globToRegExp', () => {
  it('only * is special', () => {
    expect(globToRegExp('claude-haiku-*').test('claude-haiku-4-5-20251001')).toBe(true);
    expect(globToRegExp('claude-haiku-*').test('xclaude-haiku-4')).toBe(false);
    expect(globToRegExp('claude-3.5').test('claude-3x5')).toBe(false);
    expect(globToRegExp('claude-qwen').test('claude-qwen')).toBe(true);
    expect(globToRegExp('claude-qwen').test('claude-qwen-2')).toBe(false);
  });
});
