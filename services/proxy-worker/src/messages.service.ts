import { checkCountTokensBody, checkMessagesBody, SYSTEM_ROLE_UNSUPPORTED, type AnthropicMessagesRequest, type LlmMessagesRequest } from '@gatehouse/contracts';
import { BusError, type HandlerContext, type StreamWriter } from '@gatehouse/common';
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

/**
 * One `POST /v1/messages`, whatever its route: native pass-through, an Anthropic-speaking
 * provider (relayed), or an OpenAI-compatible provider (translated both ways). Every answer —
 * including upstream errors — leaves as status + headers + body frames in Anthropic's format;
 * only a failure of ours before anything was sent is a BusError.
 */
export async function handleMessages(cfg: ProxyConfig, req: LlmMessagesRequest, out: MessagesOut, ctx: HandlerContext): Promise<void> {
  // The one parse and validation of the body: the edge forwards it as sent.
  const check = checkMessagesBody(req.raw);
  if (!check.ok) throw new BusError(400, check.message);
  const { body, model } = check;
  const route = parseModelId(model);
  if (route.kind === 'invalid') throw new BusError(400, `${route.reason}. ${configured(cfg)}`);

  if (route.kind === 'native') {
    // Seed 000 / issue: the caller's own credential as sent; a server key only for callers who
    // presented the proxy key — never for anonymous ones.
    const cred: Credential =
      req.proxyKeyVerified && cfg.native.serverApiKey
        ? { kind: 'server', apiKey: cfg.native.serverApiKey }
        : { kind: 'client', xApiKey: req.headers['x-api-key'], authorization: req.headers.authorization };
    const headers = withCredential(nativeForwardHeaders(req.headers), cred);
    return relay(cfg, { baseUrl: cfg.native.baseUrl }, enc.encode(req.raw), headers, req, out, ctx);
  }

  const provider = getProvider(cfg, route.provider);
  if (!provider) throw new BusError(400, `model: unknown provider "${route.provider}". ${configured(cfg)}`);

  if (provider.type === 'anthropic') {
    // The provider's own key, never the caller's: the caller authenticated to us, not to it.
    const headers = withCredential(nativeForwardHeaders(req.headers), provider.apiKey ? { kind: 'server', apiKey: provider.apiKey } : { kind: 'none' });
    const rewritten = enc.encode(JSON.stringify({ ...body, model: route.model }));
    return relay(cfg, { baseUrl: provider.baseUrl }, rewritten, { ...headers, ...provider.headers }, req, out, ctx, provider.timeoutMs);
  }

  // A routed model is never native, so the check validated it against Anthropic's schema.
  return translated(cfg, provider, route.model, model, check.request!, req, out, ctx);
}

function configured(cfg: ProxyConfig): string {
  const names = Object.keys(cfg.providers);
  return names.length
    ? `Configured providers: ${names.join(', ')} (use "<provider>/<model>"), or a native "claude-…" model.`
    : 'No providers are configured (LLMPROXY_CONFIG); only native "claude-…" models are available.';
}

/** Raw relay to an Anthropic Messages API: status, headers and body bytes as they arrive. */
async function relay(
  cfg: ProxyConfig,
  target: { baseUrl: string },
  payload: Uint8Array,
  headers: Record<string, string>,
  req: LlmMessagesRequest,
  out: MessagesOut,
  ctx: HandlerContext,
  timeoutMs = cfg.timeoutMs,
): Promise<void> {
  let res;
  try {
    res = await forwardMessages(target, payload, headers, { signal: ctx.signal, timeoutMs, retries: cfg.retries });
  } catch (err) {
    return sendError(err, req, out, ctx);
  }
  const relayed = relayResponseHeaders(res.headers);
  out.meta({ status: res.status, headers: { 'request-id': req.requestId, ...relayed } });
  let bytes = 0;
  try {
    for await (const chunk of res.body) {
      out.chunk(chunk);
      bytes += chunk.byteLength;
    }
  } catch (err) {
    if (isAbortError(err) || ctx.signal.aborted) return;
    // Mid-body failure: the status is gone; an SSE error event is the only honest thing left.
    if ((relayed['content-type'] ?? '').includes('text/event-stream')) {
      out.chunk(enc.encode(formatSSE(anthropicError(502, `upstream connection failed: ${(err as Error).message}`, req.requestId) as never)));
    } else throw err;
  }
  out.end({ bytes, usage: null });
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
): Promise<void> {
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

  if (!areq.stream) {
    let json: unknown;
    try {
      ({ json } = await createChatCompletion(provider, oreq as unknown as Record<string, unknown>, opts));
    } catch (err) {
      return sendError(err, req, out, ctx);
    }
    const msg = openAIToAnthropic(json as OpenAIChatResponse, requestedModel, names, { inputTokens });
    const bytes = enc.encode(JSON.stringify(msg));
    out.meta({ status: 200, headers: { 'content-type': 'application/json', 'request-id': req.requestId } });
    out.chunk(bytes);
    out.end({ bytes: bytes.byteLength, usage: { input_tokens: msg.usage.input_tokens, output_tokens: msg.usage.output_tokens } });
    return;
  }

  let stream;
  try {
    stream = await streamChatCompletion(provider, oreq as unknown as Record<string, unknown>, opts);
  } catch (err) {
    return sendError(err, req, out, ctx);
  }
  out.meta({ status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': req.requestId } });
  const tr = new OpenAIToAnthropicStream({ requestedModel, inputTokens, toolNames: names });
  let bytes = 0;
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
        emit(tr.error(502, openAIErrorToAnthropic(502, chunk).error.message, req.requestId));
        break;
      }
      emit(tr.push(chunk as never));
    }
    if (!tr.done) emit(tr.end());
  } catch (err) {
    if (isAbortError(err) || ctx.signal.aborted) return;
    const status = err instanceof UpstreamTimeoutError ? 504 : 502;
    emit(tr.error(status, `upstream stream failed: ${(err as Error).message}`, req.requestId));
  } finally {
    await stream.chunks.return(undefined);
  }
  const u = tr.usage;
  out.end({ bytes, usage: u ? { input_tokens: u.input_tokens, output_tokens: u.output_tokens } : null });
}

/** An upstream failure before anything was sent: the matching Anthropic error, status and retry-after. */
function sendError(err: unknown, req: LlmMessagesRequest, out: MessagesOut, ctx: HandlerContext): void {
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
}

export function countTokens(raw: string): { input_tokens: number } {
  const check = checkCountTokensBody(raw);
  if (!check.ok) throw new BusError(400, check.message);
  return { input_tokens: estimateInputTokens(check.request) };
}

/** Anthropic's model list shape, from the providers' configured `models`. */
export function listModels(cfg: ProxyConfig) {
  const created = '2026-01-01T00:00:00Z';
  const data = Object.values(cfg.providers).flatMap((p) =>
    p.models.map((m) => ({ type: 'model' as const, id: `${p.name}/${m}`, display_name: `${m} (${p.name})`, created_at: created })),
  );
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
