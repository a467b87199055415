import type { AnthropicContentBlockParam, AnthropicCountTokensRequest } from '@gatehouse/contracts';

/*
 * Token ESTIMATES, not tokenizer counts: the upstream models use many different tokenizers, and a
 * local estimate is what seeds `message_start.usage.input_tokens` (Claude Code's context meter
 * breaks on 0) and answers `count_tokens`. Heuristic: an ASCII character ≈ 1/4 token, any other
 * code point ≈ 2/3 token (CJK is about one token per character, accented Latin/Cyrillic less).
 */

/** Fixed cost per image or binary document (Anthropic's ~1.15-megapixel image ≈ 1600 tokens). */
export const IMAGE_TOKENS = 1600;
/** Per-message framing overhead (role markers, separators). */
export const MESSAGE_OVERHEAD_TOKENS = 3;

export function estimateTokens(text: string): number {
  if (!text) return 0;
  let ascii = 0;
  let other = 0;
  for (const ch of text) {
    if (ch.charCodeAt(0) < 128) ascii++;
    else other++;
  }
  return Math.ceil(ascii / 4 + (other * 2) / 3);
}

function blockTokens(block: AnthropicContentBlockParam): number {
  switch (block.type) {
    case 'text':
      return estimateTokens(String(block.text ?? ''));
    case 'thinking':
      return estimateTokens(String(block.thinking ?? ''));
    case 'redacted_thinking':
      return 0;
    case 'image':
      return IMAGE_TOKENS;
    case 'tool_use':
      return estimateTokens(String(block.name ?? '')) + estimateTokens(JSON.stringify(block.input ?? {}));
    case 'tool_result': {
      const content = block.content;
      if (typeof content === 'string') return estimateTokens(content) + 1;
      if (!Array.isArray(content)) return 1;
      let n = 1;
      for (const part of content as AnthropicContentBlockParam[]) n += blockTokens(part);
      return n;
    }
    case 'document': {
      const source = block.source as { type?: string; data?: unknown; content?: unknown } | undefined;
      if (source?.type === 'text' && typeof source.data === 'string') return estimateTokens(source.data);
      if (source?.type === 'content') {
        if (typeof source.content === 'string') return estimateTokens(source.content);
        if (Array.isArray(source.content)) {
          return (source.content as AnthropicContentBlockParam[]).reduce((n, b) => n + blockTokens(b), 0);
        }
      }
      return IMAGE_TOKENS;
    }
    default:
      return estimateTokens(JSON.stringify(block));
  }
}

/**
 * Estimated input tokens of a Messages (or count_tokens) request: system text, every message's
 * content, and the tool definitions (name, description, JSON schema) as JSON text. Always ≥ 1.
 */
export function estimateInputTokens(
  req: Pick<AnthropicCountTokensRequest, 'system' | 'messages' | 'tools'>,
): number {
  let n = 0;
  if (typeof req.system === 'string') n += estimateTokens(req.system);
  else if (Array.isArray(req.system)) for (const b of req.system) n += estimateTokens(b.text);
  for (const m of req.messages) {
    n += MESSAGE_OVERHEAD_TOKENS;
    if (typeof m.content === 'string') n += estimateTokens(m.content);
    else for (const b of m.content) n += blockTokens(b);
  }
  for (const t of req.tools ?? []) {
    n += estimateTokens(JSON.stringify({ name: t.name, description: t.description, input_schema: t.input_schema }));
  }
  return Math.max(1, n);
}
