import { z } from 'zod';
import { AnthropicCountTokensRequest, AnthropicMessagesRequest, anthropicIssueMessage } from './anthropic.ts';
import { requestContract, streamContract, type CatalogEntry } from './catalog.ts';

/**
 * `POST /v1/messages` crosses the bus as the exact body text plus the headers the edge decided to
 * forward: native pass-through must reach the first-party API untouched, and the worker parses
 * the same text for translated providers.
 */
export const LlmMessagesRequest = z.object({
  /** The request body exactly as the client sent it (UTF-8 JSON). */
  raw: z.string(),
  /** Anthropic-facing headers the edge lets through (anthropic-*, user-agent, x-app, and the
   * caller's own credential unless it was the proxy key). */
  headers: z.record(z.string(), z.string()),
  /** True only when the caller presented the valid proxy key of an enforced gate: the one case
   * where a server-side key may replace the caller's credential for a native model. */
  proxyKeyVerified: z.boolean(),
  /** Caller's request id, echoed in `request-id` when the upstream gives none. */
  requestId: z.string(),
  /**
   * The proxy gate's state at the edge. A bare `claude…` id is not gated there (native
   * pass-through spends the caller's own credential), but the worker's routing table may send it
   * to a provider on the server's key: the worker then refuses it unless the key was verified
   * (`enforced`) or the gate is open, as the edge would have. Absent: a trusted bus caller.
   */
  gate: z.enum(['open', 'enforced', 'unknown']).optional(),
  /** Who is asking, for usage per client: the verified proxy key's fingerprint (`sha256:…`), never the key. */
  client: z.string().optional(),
});
export type LlmMessagesRequest = z.infer<typeof LlmMessagesRequest>;

/** First frame: the HTTP status and headers the edge answers with. The body follows as chunks. */
export const LlmResponseMeta = z.object({
  status: z.number().int().min(100).max(599),
  headers: z.record(z.string(), z.string()),
});

export const LlmResponseEnd = z.object({
  bytes: z.number().int().nonnegative(),
  /** For logs and metering; null when unknown (native responses are relayed unparsed). */
  usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }).nullable(),
});

export const LlmModel = z.object({
  type: z.literal('model'),
  id: z.string(),
  display_name: z.string(),
  created_at: z.string(),
});

export const LlmModelList = z.object({
  data: z.array(LlmModel),
  has_more: z.boolean(),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
});

export const LlmCountTokensRequest = z.object({ raw: z.string() });
export const LlmCountTokensReply = z.object({ input_tokens: z.number().int().nonnegative() });

/**
 * The LLM face's catalog: operation → bus contract (subject written out in full), its HTTP routes
 * and the Anthropic body the edge validates (for `messages`, only when the model is not native:
 * native requests go out untouched and the first-party API judges them). The bus carries the
 * body's exact text (`raw`), not the parsed body.
 */
export const LLM_CATALOG = {
  messages: {
    ...streamContract('llm.messages.create', 1, LlmMessagesRequest, LlmResponseMeta, LlmResponseEnd),
    routes: [{ method: 'POST', url: '/v1/messages' }],
    body: AnthropicMessagesRequest,
  },
  countTokens: {
    ...requestContract('llm.tokens.count', 1, LlmCountTokensRequest, LlmCountTokensReply),
    routes: [{ method: 'POST', url: '/v1/messages/count_tokens' }],
    body: AnthropicCountTokensRequest,
  },
  listModels: { ...requestContract('llm.models.list', 1, z.object({}).strict(), LlmModelList), routes: [{ method: 'GET', url: '/v1/models' }] },
} as const satisfies Record<string, Omit<CatalogEntry, 'reply'>>;

/**
 * A bare model id of the first-party family (`claude-…`, no provider prefix) is native: it goes
 * to the first-party API untouched, and the proxy gate does not apply to it.
 */
export function isNativeModel(model: string): boolean {
  return !model.includes('/') && model.startsWith('claude');
}

export type MessagesBodyCheck =
  | { ok: true; model: string; native: boolean; body: Record<string, unknown>; request?: AnthropicMessagesRequest }
  | { ok: false; message: string };

/**
 * The one check of a `POST /v1/messages` body (the worker runs it on every request; the edge only
 * when its worker is away, so a client mistake still reads as one): a JSON object with a model;
 * for a non-native model, Anthropic's request schema too (a native body goes out untouched and the
 * first-party API judges it). `raw` is the body text; empty means no body.
 */
export function checkMessagesBody(raw: string): MessagesBodyCheck {
  let body: unknown;
  try {
    body = raw.length ? JSON.parse(raw) : undefined;
  } catch {
    return { ok: false, message: 'The request body is not valid JSON.' };
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) return { ok: false, message: 'The request body must be a JSON object.' };
  const model = (body as { model?: unknown }).model;
  if (typeof model !== 'string') return { ok: false, message: 'model: Field required' };
  if (isNativeModel(model)) return { ok: true, model, native: true, body: body as Record<string, unknown> };
  const parsed = AnthropicMessagesRequest.safeParse(body);
  if (!parsed.success) return { ok: false, message: anthropicIssueMessage(parsed.error) };
  return { ok: true, model, native: false, body: body as Record<string, unknown>, request: parsed.data };
}

/** The same for `POST /v1/messages/count_tokens`. */
export function checkCountTokensBody(raw: string): { ok: true; request: AnthropicCountTokensRequest } | { ok: false; message: string } {
  let body: unknown;
  try {
    body = raw.length ? JSON.parse(raw) : undefined;
  } catch {
    return { ok: false, message: 'The request body is not valid JSON.' };
  }
  const parsed = AnthropicCountTokensRequest.safeParse(body);
  return parsed.success ? { ok: true, request: parsed.data } : { ok: false, message: anthropicIssueMessage(parsed.error) };
}
