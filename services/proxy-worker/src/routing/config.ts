import { z } from 'zod';
import { parseModelId } from '../upstream/config.ts';

/**
 * The routing table (claude-code-router's `Router`, built in): which `provider/model` serves a
 * bare model id such as Claude Code's `claude-sonnet-…` / `claude-haiku-…`, by the id itself
 * (`models`, glob patterns, first match wins) and by situation (`longContext`, `background`,
 * `webSearch`, `think`, then `default`). The `routing` section of LLMPROXY_CONFIG is the seed; a
 * value stored in the config bucket (group `llm.routing`) replaces it live. Without a matching
 * route a request goes where it went before routing existed (native pass-through for `claude…`).
 */

/** A route: where requests go, what to try next, and what to change on the way. */
export interface Route {
  /** The route's name in logs and metrics: `default`, `background`, …, or `model:<pattern>`. */
  readonly name: string;
  /** Tried in order: `to`, then each fallback. Each is a configured provider and its model. */
  readonly targets: readonly RouteTarget[];
  /** Cap on `max_tokens` (a request asking for less keeps its own). */
  readonly maxTokens?: number;
  /** false: thinking removed from the request; true: adaptive thinking added when absent. */
  readonly reasoning?: boolean;
  /** false: tools and tool_choice removed (models that cannot call tools). */
  readonly tools?: boolean;
}

export interface RouteTarget {
  readonly provider: string;
  readonly model: string;
}

export const SITUATIONS = ['longContext', 'background', 'webSearch', 'think', 'default'] as const;
export type Situation = (typeof SITUATIONS)[number];

export interface Routing {
  /** Exact ids and glob patterns (`*` = any run of characters), in the order written. */
  readonly models: readonly { readonly pattern: string; readonly test: RegExp; readonly route: Route }[];
  readonly situations: Readonly<Partial<Record<Situation, Route>>>;
  /** Estimated input tokens above which `longContext` applies. */
  readonly longContextThreshold: number;
  /** Ids of the small/fast model Claude Code uses for background work. */
  readonly backgroundModels: readonly RegExp[];
  readonly backgroundPatterns: readonly string[];
}

export const DEFAULT_LONG_CONTEXT_THRESHOLD = 60_000;
export const DEFAULT_BACKGROUND_MODELS = Object.freeze(['claude-haiku-*', 'claude-3-5-haiku*', 'claude-3-haiku*']);

const target = z.string({ error: 'must be a "<provider>/<model>" string' }).min(1, 'must not be empty');
const RouteSchema = z.union(
  [
    target,
    z.strictObject({
      to: target,
      fallbacks: z.array(target, { error: 'must be a list of "<provider>/<model>" strings' }).optional(),
      maxTokens: z.number({ error: 'must be a number' }).int('must be an integer').positive('must be at least 1').optional(),
      reasoning: z.boolean({ error: 'must be true or false' }).optional(),
      tools: z.boolean({ error: 'must be true or false' }).optional(),
    }),
  ],
  { error: 'must be "<provider>/<model>" or {to, fallbacks?, maxTokens?, reasoning?, tools?}' },
);
type RouteInput = z.infer<typeof RouteSchema>;

export const RoutingSchema = z.strictObject(
  {
    default: RouteSchema.optional(),
    background: RouteSchema.optional(),
    think: RouteSchema.optional(),
    longContext: RouteSchema.optional(),
    webSearch: RouteSchema.optional(),
    longContextThreshold: z.number({ error: 'must be a number' }).int('must be an integer').positive('must be at least 1').optional(),
    backgroundModels: z.array(z.string().min(1, 'must not be empty'), { error: 'must be a list of model ids or patterns' }).optional(),
    models: z.record(z.string(), RouteSchema, { error: 'must be an object mapping model ids or patterns to routes' }).optional(),
  },
  { error: 'must be an object' },
);
export type RoutingInput = z.infer<typeof RoutingSchema>;

export class RoutingConfigError extends Error {
  override name = 'RoutingConfigError';
}

/** `claude-haiku-*` → /^claude-haiku-.*$/ (only `*` is special). */
export function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

/**
 * Validates a routing section against the configured providers (every target must name one) and
 * builds the table. Throws RoutingConfigError naming every problem at once (`routing.background.to: …`).
 */
export function parseRouting(raw: unknown, providers: ReadonlySet<string>, where = 'routing'): Routing {
  const parsed = RoutingSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    throw new RoutingConfigError(
      parsed.error.issues
        .map((i) => (i.code === 'unrecognized_keys' ? i.keys.map((k) => `${[where, ...i.path.map(String), k].join('.')}: unknown field`).join('\n') : `${[where, ...i.path.map(String)].join('.')}: ${i.message}`))
        .join('\n'),
    );
  }
  const r = parsed.data;
  const problems: string[] = [];
  const route = (name: string, at: string, input: RouteInput): Route => {
    const spec = typeof input === 'string' ? { to: input } : input;
    const targets: RouteTarget[] = [];
    [spec.to, ...(spec.fallbacks ?? [])].forEach((t, i) => {
      const field = i === 0 ? `${at}.to` : `${at}.fallbacks.${i - 1}`;
      const id = parseModelId(t);
      if (id.kind !== 'provider') problems.push(`${field}: ${JSON.stringify(t)} is not "<provider>/<model>"`);
      else if (!providers.has(id.provider)) problems.push(`${field}: unknown provider "${id.provider}" (configured: ${[...providers].join(', ') || 'none'})`);
      else targets.push({ provider: id.provider, model: id.model });
    });
    return Object.freeze({
      name,
      targets: Object.freeze(targets),
      ...(typeof input === 'string' ? {} : { maxTokens: input.maxTokens, reasoning: input.reasoning, tools: input.tools }),
    });
  };
  const situations: Partial<Record<Situation, Route>> = {};
  for (const s of SITUATIONS) {
    const input = r[s];
    if (input !== undefined) situations[s] = route(s, `${where}.${s}`, input);
  }
  const models = Object.entries(r.models ?? {}).map(([pattern, input]) => {
    if (pattern.includes('/')) problems.push(`${where}.models.${JSON.stringify(pattern)}: a routed id has no "/" ("<provider>/<model>" ids always go straight to their provider)`);
    return Object.freeze({ pattern, test: globToRegExp(pattern), route: route(`model:${pattern}`, `${where}.models.${JSON.stringify(pattern)}`, input) });
  });
  if (problems.length) throw new RoutingConfigError(problems.join('\n'));
  const backgroundPatterns = r.backgroundModels ?? DEFAULT_BACKGROUND_MODELS;
  return Object.freeze({
    models: Object.freeze(models),
    situations: Object.freeze(situations),
    longContextThreshold: r.longContextThreshold ?? DEFAULT_LONG_CONTEXT_THRESHOLD,
    backgroundModels: Object.freeze(backgroundPatterns.map(globToRegExp)),
    backgroundPatterns: Object.freeze([...backgroundPatterns]),
  });
}

/** The ids a client can pick (Claude Code's `/model` lists those starting with `claude`): the exact ids of `models`. */
export function routedAliases(routing: Routing): { id: string; route: Route }[] {
  return routing.models.filter((m) => !m.pattern.includes('*')).map((m) => ({ id: m.pattern, route: m.route }));
}
