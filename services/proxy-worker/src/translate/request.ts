import { createHash } from 'node:crypto';
import {
  isAnthropicBlock,
  type AnthropicContentBlockParam,
  type AnthropicDocumentBlockParam,
  type AnthropicImageBlockParam,
  type AnthropicMessagesRequest,
  type AnthropicToolResultBlockParam,
} from '@gatehouse/contracts';
import { openAIToolName } from './ids.ts';
import type {
  OpenAIChatRequest,
  OpenAIContentPart,
  OpenAIMessage,
  OpenAIReasoningEffort,
  OpenAITool,
  OpenAIToolCall,
  OpenAIToolChoice,
} from './openai-types.ts';

export interface AnthropicToOpenAIOptions {
  /** Overrides `req.stream`. */
  stream?: boolean;
  /** Send `top_k` (vLLM, Ollama, llama.cpp accept it; OpenAI rejects unknown parameters). Default false. */
  passTopK?: boolean;
  /** Map `thinking` to `reasoning_effort`. Default true. */
  reasoningEffort?: boolean;
  /** o-series/GPT-5 style upstreams want `max_completion_tokens`. Default `max_tokens`. */
  maxTokensParam?: 'max_tokens' | 'max_completion_tokens';
  /** What Anthropic's `output_config.effort: "max"` becomes: `high` (default) or the provider's `xhigh`. */
  maxEffort?: 'high' | 'xhigh';
  /**
   * `metadata.user_id` as OpenAI's `user`: `off` (default; Claude Code puts device and session ids
   * there), `hashed` (SHA-256 hex: stable per user, says nothing about them) or `raw`.
   */
  userId?: UserIdPolicy;
}

export type UserIdPolicy = 'off' | 'hashed' | 'raw';

/** Separator for system text blocks, user text blocks and assistant text blocks. */
export const TEXT_JOINER = '\n\n';
/** Prefix given to a `tool_result` with `is_error: true` (unless its text already says "error"). */
export const TOOL_ERROR_PREFIX = 'Error: ';

/**
 * With thinking on (enabled or adaptive), the effort the client asked for in
 * `output_config.effort` (low/medium/high as they are, max → `maxEffort`); without one, adaptive →
 * medium and budget_tokens ≤ 1024 → low, ≤ 8192 → medium, else high.
 */
export function reasoningEffortFor(
  thinking: AnthropicMessagesRequest['thinking'],
  outputConfig?: unknown,
  maxEffort: 'high' | 'xhigh' = 'high',
): OpenAIReasoningEffort | undefined {
  if (!thinking || (thinking.type !== 'adaptive' && thinking.type !== 'enabled')) return undefined;
  const asked = (outputConfig as { effort?: unknown } | null | undefined)?.effort;
  if (asked === 'low' || asked === 'medium' || asked === 'high') return asked;
  if (asked === 'max') return maxEffort;
  if (thinking.type === 'adaptive') return 'medium';
  const budget = thinking.budget_tokens;
  if (budget <= 1024) return 'low';
  if (budget <= 8192) return 'medium';
  return 'high';
}

function imageUrl(block: AnthropicImageBlockParam): string | undefined {
  const source = block.source;
  if (source.type === 'base64' && typeof source.media_type === 'string' && typeof source.data === 'string') {
    return `data:${source.media_type};base64,${source.data}`;
  }
  if (source.type === 'url' && typeof source.url === 'string') return source.url;
  return undefined; // `file` sources reference Anthropic's Files API: nothing to send upstream.
}

/**
 * Documents: plain-text and content sources become text (titled when a title is given); a base64
 * PDF becomes OpenAI's `file` part; a URL document becomes a text reference; others are dropped.
 */
function documentParts(block: AnthropicDocumentBlockParam): OpenAIContentPart[] {
  const source = block.source as { type: string; media_type?: unknown; data?: unknown; url?: unknown; content?: unknown };
  const title = typeof block.title === 'string' && block.title ? block.title : undefined;
  const titled = (text: string) => ({ type: 'text' as const, text: title ? `${title}\n\n${text}` : text });
  if (source.type === 'text' && typeof source.data === 'string') return [titled(source.data)];
  if (source.type === 'content') {
    if (typeof source.content === 'string') return [titled(source.content)];
    if (Array.isArray(source.content)) {
      const texts = (source.content as AnthropicContentBlockParam[])
        .filter((b) => isAnthropicBlock(b, 'text'))
        .map((b) => (b as { text: string }).text);
      return texts.length ? [titled(texts.join(TEXT_JOINER))] : [];
    }
    return [];
  }
  if (source.type === 'base64' && typeof source.data === 'string') {
    const mediaType = typeof source.media_type === 'string' ? source.media_type : 'application/pdf';
    return [{ type: 'file', file: { filename: title ?? 'document.pdf', file_data: `data:${mediaType};base64,${source.data}` } }];
  }
  if (source.type === 'url' && typeof source.url === 'string') {
    return [{ type: 'text', text: title ? `Document "${title}": ${source.url}` : `Document: ${source.url}` }];
  }
  return [];
}

/** text/image/document blocks → parts; other block types are skipped. */
function toParts(blocks: readonly AnthropicContentBlockParam[]): OpenAIContentPart[] {
  const parts: OpenAIContentPart[] = [];
  for (const block of blocks) {
    if (isAnthropicBlock(block, 'text')) {
      if (block.text) parts.push({ type: 'text', text: block.text });
    } else if (isAnthropicBlock(block, 'image')) {
      const url = imageUrl(block);
      if (url) parts.push({ type: 'image_url', image_url: { url } });
    } else if (isAnthropicBlock(block, 'document')) {
      parts.push(...documentParts(block));
    }
  }
  return parts;
}

/** Text-only parts collapse to one string (every OpenAI-compatible server accepts that form). */
function userContent(parts: OpenAIContentPart[]): string | OpenAIContentPart[] {
  if (parts.every((p) => p.type === 'text')) return parts.map((p) => (p as { text: string }).text).join(TEXT_JOINER);
  return parts;
}

/**
 * tool_result → tool message text. Arrays: text blocks joined with "\n"; images cannot ride in a
 * tool message, so they are returned separately and go into the following user message.
 */
function toolResult(block: AnthropicToolResultBlockParam): { text: string; images: OpenAIContentPart[] } {
  let text = '';
  const images: OpenAIContentPart[] = [];
  const content = block.content;
  if (typeof content === 'string') text = content;
  else if (Array.isArray(content)) {
    const texts: string[] = [];
    for (const part of content) {
      if (isAnthropicBlock(part, 'text')) texts.push(part.text);
      else if (isAnthropicBlock(part, 'image')) images.push(...toParts([part]));
      else if (isAnthropicBlock(part, 'document')) {
        for (const p of documentParts(part)) {
          if (p.type === 'text') texts.push(p.text);
          else images.push(p);
        }
      }
    }
    text = texts.join('\n');
  }
  if (block.is_error === true && !/^\s*(<[\w-]*error[\w-]*>|error\b)/i.test(text)) text = `${TOOL_ERROR_PREFIX}${text}`;
  return { text, images };
}

function convertUser(content: string | AnthropicContentBlockParam[]): OpenAIMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const out: OpenAIMessage[] = [];
  const parts: OpenAIContentPart[] = [];
  for (const block of content) {
    if (isAnthropicBlock(block, 'tool_result')) {
      const { text, images } = toolResult(block);
      out.push({ role: 'tool', tool_call_id: block.tool_use_id, content: text });
      parts.push(...images);
    } else {
      parts.push(...toParts([block]));
    }
  }
  // Tool messages first (they must directly follow the assistant's tool_calls), then the user's
  // own text/images of the same turn, in their original order.
  if (parts.length > 0) out.push({ role: 'user', content: userContent(parts) });
  else if (out.length === 0) out.push({ role: 'user', content: '' });
  return out;
}

function convertAssistant(content: string | AnthropicContentBlockParam[]): OpenAIMessage[] {
  if (typeof content === 'string') return [{ role: 'assistant', content }];
  const texts: string[] = [];
  const thinking: string[] = [];
  const toolCalls: OpenAIToolCall[] = [];
  for (const block of content) {
    if (isAnthropicBlock(block, 'text')) {
      if (block.text) texts.push(block.text);
    } else if (isAnthropicBlock(block, 'thinking')) {
      if (block.thinking) thinking.push(block.thinking);
    } else if (isAnthropicBlock(block, 'tool_use')) {
      toolCalls.push({
        id: block.id,
        type: 'function',
        function: { name: openAIToolName(block.name), arguments: JSON.stringify(block.input ?? {}) },
      });
    }
    // redacted_thinking (opaque, Anthropic-only) and other types: dropped.
  }
  const msg: Extract<OpenAIMessage, { role: 'assistant' }> = {
    role: 'assistant',
    content: texts.length ? texts.join(TEXT_JOINER) : null,
  };
  if (toolCalls.length) msg.tool_calls = toolCalls;
  if (thinking.length) msg.reasoning_content = thinking.join(TEXT_JOINER);
  if (msg.content === null && !msg.tool_calls) {
    if (!msg.reasoning_content) return []; // nothing left to say: drop the message
    msg.content = '';
  }
  return [msg];
}

/**
 * A mid-conversation system message → a `system` message at the same position (OpenAI-compatible
 * servers and Ollama take system messages anywhere). Only its text counts; empty → nothing.
 */
function convertSystem(content: string | AnthropicContentBlockParam[]): OpenAIMessage[] {
  const text = typeof content === 'string' ? content : content.filter((b) => isAnthropicBlock(b, 'text')).map((b) => (b as { text: string }).text).join(TEXT_JOINER);
  return text ? [{ role: 'system', content: text }] : [];
}

/** Whether the request carries a mid-conversation system message (a provider may refuse those). */
export function hasSystemMessages(req: Pick<AnthropicMessagesRequest, 'messages'>): boolean {
  return req.messages.some((m) => m.role === 'system');
}

/**
 * OpenAI rejects an assistant `tool_calls` message that is not followed by a `tool` message for
 * each id, and a `tool` message that answers no preceding call (BerriAI/litellm#28995). Fix both:
 * - tool calls without an answer in the run of tool messages right after them are removed (an
 *   assistant message left empty is dropped, one left with text keeps its text);
 * - tool messages that answer no call of the preceding assistant message (orphans, duplicates)
 *   are dropped.
 */
export function pairToolMessages(messages: OpenAIMessage[]): OpenAIMessage[] {
  const out: OpenAIMessage[] = [];
  let i = 0;
  while (i < messages.length) {
    const msg = messages[i]!;
    if (msg.role === 'tool') {
      i++; // orphan: no assistant tool_calls directly before this run
      continue;
    }
    if (msg.role !== 'assistant' || !msg.tool_calls?.length) {
      out.push(msg);
      i++;
      continue;
    }
    let j = i + 1;
    const run: Extract<OpenAIMessage, { role: 'tool' }>[] = [];
    while (j < messages.length && messages[j]!.role === 'tool') {
      run.push(messages[j] as Extract<OpenAIMessage, { role: 'tool' }>);
      j++;
    }
    const answered = new Set(run.map((t) => t.tool_call_id));
    const calls = msg.tool_calls.filter((c) => answered.has(c.id));
    const assistant = { ...msg };
    if (calls.length) assistant.tool_calls = calls;
    else delete assistant.tool_calls;
    if (assistant.tool_calls || assistant.content !== null || assistant.reasoning_content) {
      if (!assistant.tool_calls && assistant.content === null) assistant.content = '';
      out.push(assistant);
    }
    const ids = new Set(calls.map((c) => c.id));
    for (const t of run) {
      if (ids.delete(t.tool_call_id)) out.push(t); // first answer per call only
    }
    i = j;
  }
  return out;
}

function convertTools(tools: AnthropicMessagesRequest['tools']): OpenAITool[] {
  const out: OpenAITool[] = [];
  for (const tool of tools ?? []) {
    // Anthropic server tools (web_search_…, bash_…) carry no schema and cannot run upstream.
    if (!tool.input_schema) continue;
    const fn: OpenAITool['function'] = {
      name: openAIToolName(tool.name),
      parameters: tool.input_schema as Record<string, unknown>,
    };
    if (tool.description) fn.description = tool.description;
    out.push({ type: 'function', function: fn });
  }
  return out;
}

/** Anthropic Messages request → OpenAI Chat Completions request for `upstreamModel`. */
export function anthropicToOpenAI(
  req: AnthropicMessagesRequest,
  upstreamModel: string,
  opts: AnthropicToOpenAIOptions = {},
): OpenAIChatRequest {
  const messages: OpenAIMessage[] = [];

  const system = typeof req.system === 'string' ? req.system : (req.system ?? []).map((b) => b.text).join(TEXT_JOINER);
  if (system) messages.push({ role: 'system', content: system });

  const converted: OpenAIMessage[] = [];
  for (const m of req.messages) {
    converted.push(...(m.role === 'user' ? convertUser(m.content) : m.role === 'system' ? convertSystem(m.content) : convertAssistant(m.content)));
  }
  messages.push(...pairToolMessages(converted));

  const out: OpenAIChatRequest = { model: upstreamModel, messages };
  out[opts.maxTokensParam ?? 'max_tokens'] = req.max_tokens;
  if (req.temperature !== undefined) out.temperature = req.temperature;
  if (req.top_p !== undefined) out.top_p = req.top_p;
  if (opts.passTopK && req.top_k !== undefined) out.top_k = req.top_k;
  if (req.stop_sequences?.length) out.stop = req.stop_sequences;
  const userId = req.metadata?.user_id;
  if (typeof userId === 'string' && userId && opts.userId && opts.userId !== 'off') {
    out.user = opts.userId === 'raw' ? userId : createHash('sha256').update(userId).digest('hex');
  }

  const tools = convertTools(req.tools);
  if (tools.length) {
    out.tools = tools;
    // tool_choice without tools is a 400 on OpenAI, so it is only sent alongside tools.
    const choice = req.tool_choice;
    if (choice) {
      let mapped: OpenAIToolChoice;
      switch (choice.type) {
        case 'auto':
          mapped = 'auto';
          break;
        case 'any':
          mapped = 'required';
          break;
        case 'none':
          mapped = 'none';
          break;
        default:
          mapped = { type: 'function', function: { name: openAIToolName(choice.name) } };
      }
      out.tool_choice = mapped;
      if (choice.type !== 'none' && choice.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
    }
  }

  if (opts.reasoningEffort !== false) {
    const effort = reasoningEffortFor(req.thinking, (req as { output_config?: unknown }).output_config, opts.maxEffort);
    if (effort) out.reasoning_effort = effort;
  }

  if (opts.stream ?? req.stream) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return out;
}
