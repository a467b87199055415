import type { AnthropicErrorEnvelope, AnthropicErrorType } from '@gatehouse/contracts';

/**
 * HTTP status → Anthropic `error.type` (docs.claude.com/en/api/errors, @anthropic-ai/sdk `ErrorType`).
 * Choices beyond Anthropic's own table:
 * - 503 → `overloaded_error`: an OpenAI-compatible upstream (vLLM, Ollama, a gateway) answers 503
 *   when it is saturated or starting, which is what Anthropic signals with 529 `overloaded_error`.
 *   The SDK retries any ≥ 500 either way; only the type differs.
 * - 502 → `api_error` (bad gateway is an upstream fault, not load).
 * - 408 → `timeout_error` (like 504).
 * - other 4xx → `invalid_request_error` (Anthropic: "also used for other 4XX status codes"),
 *   other 5xx (and anything else) → `api_error`.
 */
export function anthropicErrorType(status: number): AnthropicErrorType {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 408:
      return 'timeout_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 500:
    case 502:
      return 'api_error';
    case 503:
      return 'overloaded_error';
    case 504:
      return 'timeout_error';
    case 529:
      return 'overloaded_error';
  }
  if (status >= 400 && status < 500) return 'invalid_request_error';
  return 'api_error';
}

/** `{type:"error", error:{type, message}, request_id?}`; `request_id` only when given. */
export function anthropicError(status: number, message: string, requestId?: string): AnthropicErrorEnvelope {
  const envelope: AnthropicErrorEnvelope = { type: 'error', error: { type: anthropicErrorType(status), message } };
  if (requestId) envelope.request_id = requestId;
  return envelope;
}

const MAX_MESSAGE_CHARS = 2000;

function pickMessage(body: unknown, depth = 0): string | undefined {
  if (depth > 3 || body == null) return undefined;
  if (typeof body === 'string') {
    const text = body.trim();
    if (!text) return undefined;
    if ((text.startsWith('{') || text.startsWith('[')) && depth === 0) {
      try {
        return pickMessage(JSON.parse(text), depth + 1) ?? text;
      } catch {
        return text;
      }
    }
    return text;
  }
  if (Array.isArray(body)) return pickMessage(body[0], depth + 1); // Google-style `[{error:{…}}]`
  if (typeof body !== 'object') return String(body);
  const obj = body as Record<string, unknown>;
  // OpenAI/vLLM/Ollama: {error:{message,type,param,code}}; Ollama native/llama.cpp: {error:"…"}
  if (obj.error !== undefined) {
    const inner = obj.error;
    if (typeof inner === 'string' && inner.trim()) return inner.trim();
    if (inner && typeof inner === 'object') {
      const m = (inner as Record<string, unknown>).message;
      if (typeof m === 'string' && m.trim()) return m.trim();
    }
  }
  // FastAPI `{detail:"…"}`, others `{message:"…"}`
  for (const key of ['message', 'detail'] as const) {
    const m = obj[key];
    if (typeof m === 'string' && m.trim()) return m.trim();
  }
  return undefined;
}

/**
 * An upstream (OpenAI-compatible) error response → Anthropic envelope. The type follows the HTTP
 * status; the message is taken from `{error:{message}}`, `{error:"…"}`, `{message}`/`{detail}`,
 * or the plain-text body (JSON text is parsed first), else `Upstream returned HTTP <status>`.
 */
export function openAIErrorToAnthropic(status: number, body: unknown, requestId?: string): AnthropicErrorEnvelope {
  let message = pickMessage(body) ?? `Upstream returned HTTP ${status}`;
  if (message.length > MAX_MESSAGE_CHARS) message = `${message.slice(0, MAX_MESSAGE_CHARS)}…`;
  return anthropicError(status, message, requestId);
}
