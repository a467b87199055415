import { anthropicError, type AnthropicErrorEnvelope } from '@gatehouse/contracts';

// The status → type table and the envelope are wire facts shared with the edge: see contracts.
export { anthropicError, anthropicErrorType } from '@gatehouse/contracts';

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
