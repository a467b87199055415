import type { AnthropicMessagesRequest } from '@gatehouse/contracts';
import { estimateInputTokens } from '../translate/tokens.ts';
import type { Route, Routing } from './config.ts';

/** Whether any route could apply to a bare model id (no `/`): then the body is parsed to decide. */
export function mayRoute(routing: Routing, model: string): boolean {
  if (model.includes('/')) return false;
  return routing.models.some((m) => m.test.test(model)) || Object.keys(routing.situations).length > 0;
}

/** Anthropic's server-side web search tool (`web_search_20250305`, …), as claude-code-router detects it. */
export function hasWebSearch(req: Pick<AnthropicMessagesRequest, 'tools'>): boolean {
  return (req.tools ?? []).some((t) => typeof t.type === 'string' && t.type.startsWith('web_search'));
}

/**
 * The route for a bare model id, or undefined (the request goes on as without routing). Order:
 * the id's own entry in `models` (first matching pattern: the client picked it), then the
 * situations as claude-code-router weighs them — long context (estimated input tokens over the
 * threshold), background (the small/fast model's id), web search tool present, thinking on —
 * and last `default`. `req` is the parsed body; without one (it did not parse) the situations that
 * depend on the body are skipped, so a routed request with a bad body is still answered by its
 * route's rules (a 400), not sent somewhere else.
 */
export function selectRoute(routing: Routing, model: string, req: AnthropicMessagesRequest | undefined): Route | undefined {
  if (model.includes('/')) return undefined;
  const byModel = routing.models.find((m) => m.test.test(model));
  if (byModel) return byModel.route;
  const s = routing.situations;
  if (s.longContext && req && estimateInputTokens(req) > routing.longContextThreshold) return s.longContext;
  if (s.background && routing.backgroundModels.some((re) => re.test(model))) return s.background;
  if (s.webSearch && req && hasWebSearch(req)) return s.webSearch;
  if (s.think && req?.thinking && req.thinking.type !== 'disabled') return s.think;
  return s.default;
}

/**
 * The request as a route sends it: `max_tokens` capped, thinking removed or added, tools removed.
 * A new object; the parsed request stays as the client sent it.
 */
export function applyRoute<T extends Record<string, unknown>>(body: T, route: Route): T {
  const out: Record<string, unknown> = { ...body };
  if (route.maxTokens !== undefined && typeof out.max_tokens === 'number' && out.max_tokens > route.maxTokens) out.max_tokens = route.maxTokens;
  if (route.reasoning === false) {
    delete out.thinking;
    // The effort belongs to the thinking it tuned; a model without reasoning may reject it.
    if (out.output_config && typeof out.output_config === 'object') {
      const { effort: _, ...rest } = out.output_config as Record<string, unknown>;
      if (Object.keys(rest).length) out.output_config = rest;
      else delete out.output_config;
    }
  } else if (route.reasoning === true && (!out.thinking || (out.thinking as { type?: unknown }).type === 'disabled')) {
    out.thinking = { type: 'adaptive' };
  }
  if (route.tools === false) {
    delete out.tools;
    delete out.tool_choice;
  }
  return out as T;
}
