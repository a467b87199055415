import type {
  AnthropicContentBlock,
  AnthropicMessage,
  AnthropicStopReason,
  AnthropicToolUseBlock,
  AnthropicUsage,
} from '@gatehouse/contracts';
import { messageId, restoreToolName, toolUseId, type ToolNameMap } from './ids.ts';
import type { OpenAIChatResponse, OpenAIUsage } from './openai-types.ts';
import { splitThinkTags } from './think-tags.ts';
import { estimateTokens } from './tokens.ts';

/**
 * finish_reason → stop_reason:
 * stop → end_turn; length → max_tokens; tool_calls / function_call → tool_use;
 * content_filter → refusal (Anthropic's "refusal" means a safety classifier stopped the output,
 * the closest match); anything else / missing → end_turn.
 * `stop_sequence` is never reported: OpenAI says `stop` for both a natural end and a stop
 * sequence and does not say which sequence matched, so the answer is `end_turn` with
 * `stop_sequence: null`.
 * A response that carries tool calls but says `stop` (older vLLM/Ollama) is reported as
 * `tool_use`, since Claude Code only runs the tools on that stop reason.
 */
export function mapFinishReason(finish: string | null | undefined, hasToolUse = false): AnthropicStopReason {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return hasToolUse ? 'tool_use' : 'end_turn';
  }
}

function count(n: number | null | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
}

/**
 * OpenAI usage → Anthropic usage (LiteLLM `_translate_openai_usage_to_anthropic_usage_delta`):
 * cache_read = cache_read_input_tokens || prompt_tokens_details.cached_tokens;
 * cache_creation = cache_creation_input_tokens || prompt_tokens_details.cache_creation_tokens;
 * input = max(prompt − cache_read − cache_creation, 0) — Anthropic's input_tokens excludes cache.
 */
export function mapUsage(usage: OpenAIUsage): Required<AnthropicUsage> {
  const prompt = count(usage.prompt_tokens);
  const cacheRead = count(usage.cache_read_input_tokens) || count(usage.prompt_tokens_details?.cached_tokens);
  const cacheCreation =
    count(usage.cache_creation_input_tokens) || count(usage.prompt_tokens_details?.cache_creation_tokens);
  return {
    input_tokens: Math.max(prompt - cacheRead - cacheCreation, 0),
    output_tokens: count(usage.completion_tokens),
    cache_creation_input_tokens: cacheCreation,
    cache_read_input_tokens: cacheRead,
  };
}

/**
 * Tool-call arguments → `input`. `""`/missing → `{}` (argument-less tools). Text that is not a
 * JSON object becomes `{"raw_arguments": "<text>"}` (the reference's choice, after
 * fuergaosi233/claude-code-proxy): the client's tool validation then reports the problem to the
 * model instead of the call silently running with no arguments.
 */
export function parseToolArguments(args: string | null | undefined): Record<string, unknown> {
  if (args == null || args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // fall through
  }
  return { raw_arguments: args };
}

export interface OpenAIToAnthropicOptions {
  /** Input-token estimate used when the upstream reports no usage. */
  inputTokens?: number;
}

/** OpenAI Chat Completions response → Anthropic Message. */
export function openAIToAnthropic(
  resp: OpenAIChatResponse,
  requestedModel: string,
  toolNames?: ToolNameMap,
  opts: OpenAIToAnthropicOptions = {},
): AnthropicMessage {
  const choice = resp.choices?.[0];
  const message = choice?.message ?? {};
  const content: AnthropicContentBlock[] = [];
  const pushText = (kind: 'thinking' | 'text', text: string) => {
    if (!text) return;
    const last = content[content.length - 1];
    if (kind === 'thinking') {
      if (last?.type === 'thinking') last.thinking += text;
      else content.push({ type: 'thinking', thinking: text, signature: '' });
    } else if (last?.type === 'text') last.text += text;
    else content.push({ type: 'text', text });
  };

  // Reasoning first (DeepSeek/vLLM `reasoning_content`, Ollama/OpenRouter `reasoning`).
  const reasoning = message.reasoning_content || message.reasoning;
  if (typeof reasoning === 'string') pushText('thinking', reasoning);

  if (typeof message.content === 'string') {
    for (const seg of splitThinkTags(message.content)) pushText(seg.kind, seg.text);
  }
  const refused = !message.content && typeof message.refusal === 'string' && message.refusal !== '';
  if (refused) pushText('text', message.refusal!);

  const calls = [...(message.tool_calls ?? [])];
  if (message.function_call && calls.length === 0) calls.push({ function: message.function_call });
  for (const call of calls) {
    const block: AnthropicToolUseBlock = {
      type: 'tool_use',
      id: toolUseId(call.id),
      name: restoreToolName(call.function?.name ?? '', toolNames),
      input: parseToolArguments(call.function?.arguments),
    };
    content.push(block);
  }

  const hasToolUse = calls.length > 0;
  if (content.length === 0) content.push({ type: 'text', text: '' });

  let stopReason = mapFinishReason(choice?.finish_reason, hasToolUse);
  if (refused && stopReason === 'end_turn') stopReason = 'refusal';

  let usage: Required<AnthropicUsage>;
  if (resp.usage) {
    usage = mapUsage(resp.usage);
  } else {
    usage = {
      input_tokens: opts.inputTokens ?? 0,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    };
  }
  if (usage.output_tokens === 0) usage.output_tokens = estimateOutput(content);

  return {
    id: messageId(resp.id),
    type: 'message',
    role: 'assistant',
    model: requestedModel,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage,
  };
}

/** Output estimate when the upstream reports none (or 0 despite producing content). */
function estimateOutput(content: AnthropicContentBlock[]): number {
  let n = 0;
  for (const b of content) {
    if (b.type === 'text') n += estimateTokens(b.text);
    else if (b.type === 'thinking') n += estimateTokens(b.thinking);
    else if (b.type === 'tool_use') n += estimateTokens(b.name) + estimateTokens(JSON.stringify(b.input));
  }
  return n;
}
