import { describe, expect, it } from 'vitest';
import { AnthropicMessagesRequest } from '@gatehouse/contracts';
import { parseRouting } from './config.ts';
import { applyRoute, hasWebSearch, mayRoute, selectRoute } from './router.ts';

const providers = new Set(['big', 'small', 'think', 'long', 'web', 'alias']);
const full = parseRouting(
  {
    default: 'big/m',
    background: 'small/m',
    think: 'think/m',
    longContext: 'long/m',
    webSearch: 'web/m',
    longContextThreshold: 1000,
    models: { 'claude-alias': 'alias/m' },
  },
  providers,
);
const req = (extra: Record<string, unknown> = {}) =>
  AnthropicMessagesRequest.parse({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...extra });
const long = 'x'.repeat(4 * 1200);
const webTool = { type: 'web_search_20250305', name: 'web_search', max_uses: 5 };
const route = (model: string, r = req()) => selectRoute(full, model, r)?.name;

describe('selectRoute', () => {
  it('picks by situation as claude-code-router does: long context, background, web search, thinking, default', () => {
    expect(route('claude-sonnet-4-5')).toBe('default');
    expect(route('claude-haiku-4-5-20251001')).toBe('background');
    expect(route('claude-3-5-haiku-latest')).toBe('background');
    expect(route('claude-sonnet-4-5', req({ thinking: { type: 'enabled', budget_tokens: 2048 } }))).toBe('think');
    expect(route('claude-sonnet-4-5', req({ thinking: { type: 'adaptive' } }))).toBe('think');
    expect(route('claude-sonnet-4-5', req({ thinking: { type: 'disabled' } }))).toBe('default');
    expect(route('claude-sonnet-4-5', req({ tools: [webTool], thinking: { type: 'adaptive' } }))).toBe('webSearch');
    // A custom tool named WebSearch (Claude Code's own) is not the server tool.
    expect(route('claude-sonnet-4-5', req({ tools: [{ name: 'WebSearch', input_schema: { type: 'object' } }] }))).toBe('default');
    expect(route('claude-haiku-4-5', req({ tools: [webTool] }))).toBe('background');
    expect(route('claude-haiku-4-5', req({ messages: [{ role: 'user', content: long }] }))).toBe('longContext');
  });

  it('the id\'s own entry in models wins over situations; provider/model ids are never routed', () => {
    expect(route('claude-alias', req({ messages: [{ role: 'user', content: long }] }))).toBe('model:claude-alias');
    expect(route('big/m')).toBeUndefined();
    expect(mayRoute(full, 'big/m')).toBe(false);
  });

  it('no matching route → undefined (the request goes on as without routing)', () => {
    const onlyBackground = parseRouting({ background: 'small/m' }, providers);
    expect(selectRoute(onlyBackground, 'claude-sonnet-4-5', req())).toBeUndefined();
    expect(selectRoute(onlyBackground, 'claude-haiku-4-5', req())?.name).toBe('background');
    const none = parseRouting({}, providers);
    expect(mayRoute(none, 'claude-sonnet-4-5')).toBe(false);
    expect(selectRoute(none, 'claude-sonnet-4-5', req())).toBeUndefined();
    // Without a parsed body the situations that depend on it are skipped.
    expect(selectRoute(full, 'claude-sonnet-4-5', undefined)?.name).toBe('default');
    expect(selectRoute(full, 'claude-haiku-4-5', undefined)?.name).toBe('background');
    expect(selectRoute(full, 'claude-alias', undefined)?.name).toBe('model:claude-alias');
    expect(selectRoute(onlyBackground, 'claude-sonnet-4-5', undefined)).toBeUndefined();
  });

  it('hasWebSearch', () => {
    expect(hasWebSearch(req({ tools: [webTool] }))).toBe(true);
    expect(hasWebSearch(req())).toBe(false);
  });
});

describe('applyRoute', () => {
  const base = { name: 'r', targets: [] };
  it('caps max_tokens, never raises it', () => {
    expect(applyRoute({ max_tokens: 32000 }, { ...base, maxTokens: 4096 }).max_tokens).toBe(4096);
    expect(applyRoute({ max_tokens: 100 }, { ...base, maxTokens: 4096 }).max_tokens).toBe(100);
  });
  it('reasoning off removes thinking and its effort; on adds adaptive thinking', () => {
    const body = { max_tokens: 1, thinking: { type: 'adaptive' }, output_config: { effort: 'high', format: { type: 'json_schema' } } };
    expect(applyRoute(body, { ...base, reasoning: false })).toEqual({ max_tokens: 1, output_config: { format: { type: 'json_schema' } } });
    expect(applyRoute({ max_tokens: 1, thinking: { type: 'enabled', budget_tokens: 9 }, output_config: { effort: 'low' } }, { ...base, reasoning: false })).toEqual({ max_tokens: 1 });
    expect(applyRoute({ max_tokens: 1 }, { ...base, reasoning: true })).toEqual({ max_tokens: 1, thinking: { type: 'adaptive' } });
    expect(applyRoute({ max_tokens: 1, thinking: { type: 'enabled', budget_tokens: 9 } }, { ...base, reasoning: true }).thinking).toEqual({ type: 'enabled', budget_tokens: 9 });
    // The client's body is left as it was.
    expect(body.thinking).toEqual({ type: 'adaptive' });
  });
  it('tools off removes tools and tool_choice', () => {
    expect(applyRoute({ max_tokens: 1, tools: [{}], tool_choice: { type: 'auto' } }, { ...base, tools: false })).toEqual({ max_tokens: 1 });
    expect(applyRoute({ max_tokens: 1, tools: [{}] }, base)).toEqual({ max_tokens: 1, tools: [{}] });
  });
});
