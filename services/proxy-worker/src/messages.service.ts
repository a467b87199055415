import {
  AnthropicMessagesRequest,
  anthropicIssueMessage,
  checkCountTokensBody,
  checkMessagesBody,
  SYSTEM_ROLE_UNSUPPORTED,
  type LlmMessagesRequest,
} from '@gatehouse/contracts';
import { BusError, llmErrors, llmRequests, llmTokens, llmUpstreamAttempts, type HandlerContext, type StreamWriter } from '@gatehouse/common';
import { routedAliases, type Route, type RouteTarget, type Routing } from './routing/config.ts';
import { applyRoute, mayRoute, selectRoute } from './routing/router.ts';
import {
  anthropicError,
  anthropicToOpenAI,
  estimateInputTokens,
  formatSSE,
  hasSystemMessages,
  openAIErrorToAnthropic,
  openAIToAnthropic,
  OpenAIToAnthropicStream,
  toolNameMap,
  type OpenAIChatResponse,
} from './translate/index.ts';
import { getProvider, parseModelId, type OpenAIProviderConfig, type ProxyConfig } from './upstream/config.ts';
import { forwardMessages, nativeForwardHeaders, relayResponseHeaders, withCredential, type Credential } from './upstream/anthropic-client.ts';
import { createChatCompletion, streamChatCompletion } from './upstream/openai-client.ts';
import { isAbortError, UpstreamHttpError, UpstreamNetworkError, UpstreamTimeoutError } from './upstream/errors.ts';

type Meta = { status: number; headers: Record<string, string> };
type End = { bytes: number; usage: { input_tokens: number; output_tokens: number } | null };
export type MessagesOut = StreamWriter<Meta, End>;

const enc = new TextEncoder();

/** Where one request went and how it ended: the log line and the metrics. */
interface Served {
  status: number;
  usage: { input_tokens: number; output_tokens: number } | null;
  /** An error event was sent after the stream began. */
  streamError?: boolean;
}
interface Attempt {
  target: string;
  outcome: 'ok' | 'fallback' | 'error';
  status?: number;
  error?: string;
}
/** A failure before the first byte that the next target may answer instead (connection, timeout, 429, 5xx). */
class FallbackCandidate {
  constructor(
    readonly err: unknown,
    readonly status: number,
  ) {}
}

/**
 * One `POST /v1/messages`, whatever its route: native pass-through, an Anthropic-speaking
 * provider (relayed), or an OpenAI-compatible provider (translated both ways) — chosen by the
 * `<provider>/<model>` id, or for a bare id by the routing table (with its fallbacks). Every
 * answer — including upstream errors — leaves as status + headers + body frames in Anthropic's
 * format; only a failure of ours before anything was sent is a BusError.
 */
export async function handleMessages(
  cfg: ProxyConfig,
  req: LlmMessagesRequest,
  out: MessagesOut,
  ctx: HandlerContext,
  routing: Routing = cfg.routing,
): Promise<void> {
  const started = performance.now();
  // The one parse and validation of the body: the edge forwards it as sent.
  const check = checkMessagesBody(req.raw);
  if (!check.ok) throw new BusError(400, check.message);
  const { body, model } = check;
  const client = req.client ?? 'anonymous';
  const attempts: Attempt[] = [];
  let routeName = 'direct';
  let served: Served | undefined;
  try {
    let route: Route | undefined;
    let areq = check.request;
    if (check.native && mayRoute(routing, model)) {
      // A routed bare id is judged as any translated request is; an unrouted one stays untouched.
      const parsed = AnthropicMessagesRequest.safeParse(body);
      route = selectRoute(routing, model, parsed.success ? parsed.data : undefined);
      if (route && !parsed.success) throw new BusError(400, anthropicIssueMessage(parsed.error));
      if (route) areq = parsed.data;
    }
    if (route) {
      routeName = route.name;
      // The edge lets bare `claude…` ids through ungated (native spends the caller's own key);
      // routed, it spends ours, so the gate's rule applies here.
      if (req.gate === 'unknown') throw new BusError(503, 'The LLM proxy cannot confirm its access gate right now and refuses to serve (fail closed). Try again shortly.');
      if (req.gate === 'enforced' && !req.proxyKeyVerified) {
        throw new BusError(401, 'A proxy key is required for this model (it is routed to a provider): send it in the x-proxy-key header (or x-api-key, or Authorization: Bearer).');
      }
      served = await serveTargets(cfg, route, route.targets, body, areq!, model, req, out, ctx, attempts);
      return;
    }

    const id = parseModelId(model);
    if (id.kind === 'invalid') throw new BusError(400, `${id.reason}. ${configured(cfg)}`);
    if (id.kind === 'native') {
      routeName = 'native';
      // The caller's own credential as sent; a server key only for callers who presented the
      // proxy key — never for anonymous ones.
      const cred: Credential =
        req.proxyKeyVerified && cfg.native.serverApiKey
          ? { kind: 'server', apiKey: cfg.native.serverApiKey }
          : { kind: 'client', xApiKey: req.headers['x-api-key'], authorization: req.headers.authorization };
      const headers = withCredential(nativeForwardHeaders(req.headers), cred);
      // The only target (`last`): its answer is the answer, never handed back for another.
      served = (await relay(cfg, { baseUrl: cfg.native.baseUrl }, enc.encode(req.raw), headers, req, out, ctx, cfg.timeoutMs, true)) as Served;
      return;
    }
    if (!getProvider(cfg, id.provider)) throw new BusError(400, `model: unknown provider "${id.provider}". ${configured(cfg)}`);
    served = await serveTargets(cfg, undefined, [{ provider: id.provider, model: id.model }], body, areq!, model, req, out, ctx, attempts);
  } catch (err) {
    if (err instanceof BusError) served = { status: err.status, usage: null };
    throw err;
  } finally {
    account(ctx, { route: routeName, client, model, attempts, served, ms: performance.now() - started, aborted: ctx.signal.aborted });
  }
}

/** The log line and the metrics of one request (never a key: `client` is a fingerprint). */
function account(
  ctx: HandlerContext,
  r: { route: string; client: string; model: string; attempts: Attempt[]; served: Served | undefined; ms: number; aborted: boolean },
): void {
  const status = r.served?.status ?? (r.aborted ? 499 : 500);
  const usage = r.served?.usage ?? null;
  llmRequests.inc({ route: r.route, client: r.client });
  if (status >= 400 || r.served?.streamError) llmErrors.inc({ route: r.route, client: r.client });
  if (usage) {
    llmTokens.inc({ route: r.route, client: r.client, direction: 'in' }, usage.input_tokens);
    llmTokens.inc({ route: r.route, client: r.client, direction: 'out' }, usage.output_tokens);
  }
  ctx.log.info(
    {
      route: r.route,
      model: r.model,
      client: r.client,
      status,
      ...(r.served?.streamError ? { streamError: true } : {}),
      ...(r.attempts.length ? { target: r.attempts.at(-1)!.target, attempts: r.attempts } : {}),
      input_tokens: usage?.input_tokens,
      output_tokens: usage?.output_tokens,
      ms: Math.round(r.ms),
    },
    'llm request',
  );
}

/**
 * The targets of a route in order: each one's failure before the first byte (connection error,
 * timeout, 429, 5xx) moves on to the next, as long as there is one; the last one's answer — or
 * any answer once a byte went to the client — is the answer. `route` undefined: a direct
 * `<provider>/<model>` id (one target, no overrides).
 */
async function serveTargets(
  cfg: ProxyConfig,
  route: Route | undefined,
  targets: readonly RouteTarget[],
  body: Record<string, unknown>,
  areq: AnthropicMessagesRequest,
  requestedModel: string,
  req: LlmMessagesRequest,
  out: MessagesOut,
  ctx: HandlerContext,
  attempts: Attempt[],
): Promise<Served> {
  const routeName = route?.name ?? 'direct';
  for (let i = 0; i < targets.length; i++) {
    const t = targets[i]!;
    const name = `${t.provider}/${t.model}`;
    const provider = getProvider(cfg, t.provider);
    if (!provider) throw new BusError(500, `route ${routeName}: provider "${t.provider}" is not configured`);
    const last = i === targets.length - 1;
    let result: Served | FallbackCandidate;
    if (provider.type === 'anthropic') {
      // The provider's own key, never the caller's: the caller authenticated to us, not to it.
      const headers = withCredential(nativeForwardHeaders(req.headers), provider.apiKey ? { kind: 'server', apiKey: provider.apiKey } : { kind: 'none' });
      const sent = route ? applyRoute(body, route) : body;
      const rewritten = enc.encode(JSON.stringify({ ...sent, model: t.model }));
      result = await relay(cfg, { baseUrl: provider.baseUrl }, rewritten, { ...headers, ...provider.headers }, req, out, ctx, provider.timeoutMs, last);
    } else {
      result = await translated(cfg, provider, t.model, requestedModel, route ? applyRoute(areq, route) : areq, req, out, ctx, last);
    }
    if (result instanceof FallbackCandidate) {
      const error = result.err instanceof Error ? result.err.message : `status ${result.status}`;
      attempts.push({ target: name, outcome: 'fallback', status: result.status, error });
      llmUpstreamAttempts.inc({ route: routeName, target: name, outcome: 'fallback' });
      ctx.log.warn({ route: routeName, target: name, status: result.status, next: `${targets[i + 1]!.provider}/${targets[i + 1]!.model}` }, `llm route ${routeName}: ${name} failed before the first byte (${error}); trying the next target`);
      continue;
    }
    const outcome = result.status >= 400 || result.streamError ? 'error' : 'ok';
    attempts.push({ target: name, outcome, status: result.status });
    llmUpstreamAttempts.inc({ route: routeName, target: name, outcome });
    return result;
  }
  throw new BusError(500, `route ${routeName} has no targets`);
}

function configured(cfg: ProxyConfig): string {
  const names = Object.keys(cfg.providers);
  return names.length
    ? `Configured providers: ${names.join(', ')} (use "<provider>/<model>"), or a native "claude-…" model.`
    : 'No providers are configured (LLMPROXY_CONFIG); only native "claude-…" models are available.';
}

/** Whether an upstream failure before the first byte may go to the next target instead. */
function fallbackStatus(err: unknown): number | undefined {
  if (err instanceof UpstreamNetworkError) return 502;
  if (err instanceof UpstreamTimeoutError) return 504;
  if (err instanceof UpstreamHttpError && (err.status === 429 || err.status >= 500)) return err.status;
  return undefined;
}

/**
 * Raw relay to an Anthropic Messages API: status, headers and body bytes as they arrive. With
 * `last` false, a 429/5xx answer or a failed connection is handed back for the next target.
 */
async function relay(
  cfg: ProxyConfig,
  target: { baseUrl: string },
  payload: Uint8Array,
  headers: Record<string, string>,
  req: LlmMessagesRequest,
  out: MessagesOut,
  ctx: HandlerContext,
  timeoutMs: number,
  last: boolean,
): Promise<Served | FallbackCandidate> {
  let res;
  try {
    res = await forwardMessages(target, payload, headers, { signal: ctx.signal, timeoutMs, retries: cfg.retries });
  } catch (err) {
    const status = fallbackStatus(err);
    if (!last && status !== undefined && !ctx.signal.aborted) return new FallbackCandidate(err, status);
    return sendError(err, req, out, ctx);
  }
  if (!last && (res.status === 429 || res.status >= 500)) {
    res.release();
    return new FallbackCandidate(undefined, res.status);
  }
  const relayed = relayResponseHeaders(res.headers);
  out.meta({ status: res.status, headers: { 'request-id': req.requestId, ...relayed } });
  let bytes = 0;
  let streamError = false;
  try {
    for await (const chunk of res.body) {
      out.chunk(chunk);
      bytes += chunk.byteLength;
    }
  } catch (err) {
    if (isAbortError(err) || ctx.signal.aborted) return { status: res.status, usage: null };
    // Mid-body failure: the status is gone; an SSE error event is the only honest thing left.
    if ((relayed['content-type'] ?? '').includes('text/event-stream')) {
      out.chunk(enc.encode(formatSSE(anthropicError(502, `upstream connection failed: ${(err as Error).message}`, req.requestId) as never)));
      streamError = true;
    } else throw err;
  }
  out.end({ bytes, usage: null });
  return { status: res.status, usage: null, streamError };
}

/** OpenAI-compatible provider: Anthropic request → chat completions → Anthropic response. */
async function translated(
  cfg: ProxyConfig,
  provider: OpenAIProviderConfig,
  upstreamModel: string,
  requestedModel: string,
  areq: AnthropicMessagesRequest,
  req: LlmMessagesRequest,
  out: MessagesOut,
  ctx: HandlerContext,
  last: boolean,
): Promise<Served | FallbackCandidate> {
  if (!provider.midConversationSystem && hasSystemMessages(areq)) throw new BusError(400, SYSTEM_ROLE_UNSUPPORTED);
  const oreq = anthropicToOpenAI(areq, upstreamModel, {
    passTopK: provider.passTopK,
    reasoningEffort: provider.reasoningEffort,
    maxEffort: provider.maxEffort,
    userId: cfg.forwardUserId,
  });
  const names = toolNameMap(areq.tools);
  const inputTokens = estimateInputTokens(areq);
  const opts = { signal: ctx.signal, timeoutMs: provider.timeoutMs, retries: cfg.retries };
  const failed = (err: unknown): Served | FallbackCandidate => {
    const status = fallbackStatus(err);
    if (!last && status !== undefined && !ctx.signal.aborted) return new FallbackCandidate(err, status);
    return sendError(err, req, out, ctx);
  };

  if (!areq.stream) {
    let json: unknown;
    try {
      ({ json } = await createChatCompletion(provider, oreq as unknown as Record<string, unknown>, opts));
    } catch (err) {
      return failed(err);
    }
    const msg = openAIToAnthropic(json as OpenAIChatResponse, requestedModel, names, { inputTokens });
    const bytes = enc.encode(JSON.stringify(msg));
    const usage = { input_tokens: msg.usage.input_tokens, output_tokens: msg.usage.output_tokens };
    out.meta({ status: 200, headers: { 'content-type': 'application/json', 'request-id': req.requestId } });
    out.chunk(bytes);
    out.end({ bytes: bytes.byteLength, usage });
    return { status: 200, usage };
  }

  let stream;
  try {
    stream = await streamChatCompletion(provider, oreq as unknown as Record<string, unknown>, opts);
  } catch (err) {
    return failed(err);
  }
  // From here the client has its 200: whatever happens next is told in the stream, never retried elsewhere.
  out.meta({ status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': req.requestId } });
  const tr = new OpenAIToAnthropicStream({ requestedModel, inputTokens, toolNames: names });
  let bytes = 0;
  let streamError = false;
  const emit = (events: ReturnType<OpenAIToAnthropicStream['push']>) => {
    for (const ev of events) {
      const b = enc.encode(formatSSE(ev));
      out.chunk(b);
      bytes += b.byteLength;
    }
  };
  try {
    for await (const chunk of stream.chunks) {
      // Some servers report a failure as a JSON error object inside the stream.
      const maybeError = (chunk as { error?: unknown }).error;
      if (maybeError) {
        streamError = true;
        emit(tr.error(502, openAIErrorToAnthropic(502, chunk).error.message, req.requestId));
        break;
      }
      emit(tr.push(chunk as never));
    }
    if (!tr.done) emit(tr.end());
  } catch (err) {
    if (isAbortError(err) || ctx.signal.aborted) return { status: 200, usage: null };
    const status = err instanceof UpstreamTimeoutError ? 504 : 502;
    streamError = true;
    emit(tr.error(status, `upstream stream failed: ${(err as Error).message}`, req.requestId));
  } finally {
    await stream.chunks.return(undefined);
  }
  const u = tr.usage;
  const usage = u ? { input_tokens: u.input_tokens, output_tokens: u.output_tokens } : null;
  out.end({ bytes, usage });
  return { status: 200, usage, streamError };
}

/** An upstream failure before anything was sent: the matching Anthropic error, status and retry-after. */
function sendError(err: unknown, req: LlmMessagesRequest, out: MessagesOut, ctx: HandlerContext): Served {
  if (isAbortError(err) || ctx.signal.aborted) throw err;
  let status: number;
  let envelope;
  const headers: Record<string, string> = { 'content-type': 'application/json', 'request-id': req.requestId };
  if (err instanceof UpstreamHttpError) {
    status = err.status;
    envelope = openAIErrorToAnthropic(err.status, err.body, req.requestId);
    if (err.retryAfter) headers['retry-after'] = err.retryAfter;
  } else if (err instanceof UpstreamTimeoutError) {
    status = 504;
    envelope = anthropicError(504, err.message, req.requestId);
  } else if (err instanceof UpstreamNetworkError) {
    status = 502;
    envelope = anthropicError(502, `upstream unreachable: ${err.message}`, req.requestId);
  } else throw err;
  const bytes = enc.encode(JSON.stringify(envelope));
  out.meta({ status, headers });
  out.chunk(bytes);
  out.end({ bytes: bytes.byteLength, usage: null });
  return { status, usage: null };
}

export function countTokens(raw: string): { input_tokens: number } {
  const check = checkCountTokensBody(raw);
  if (!check.ok) throw new BusError(400, check.message);
  return { input_tokens: estimateInputTokens(check.request) };
}

/**
 * Anthropic's model list shape: the routing table's exact ids first (Claude Code's `/model` picker
 * lists ids starting with `claude`, so aliases named that way show there), then each provider's
 * configured `models` as `<provider>/<model>`.
 */
export function listModels(cfg: ProxyConfig, routing: Routing = cfg.routing) {
  const created = '2026-01-01T00:00:00Z';
  const aliases = routedAliases(routing).map(({ id, route }) => {
    const t = route.targets[0];
    return { type: 'model' as const, id, display_name: t ? `${t.model} (${t.provider})` : id, created_at: created };
  });
  const data = [
    ...aliases,
    ...Object.values(cfg.providers).flatMap((p) =>
      p.models.map((m) => ({ type: 'model' as const, id: `${p.name}/${m}`, display_name: `${m} (${p.name})`, created_at: created })),
    ),
  ];
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
