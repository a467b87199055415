export { anthropicError, anthropicErrorType, openAIErrorToAnthropic } from './errors.ts';
export {
  messageId,
  openAIToolName,
  OPENAI_MAX_TOOL_NAME,
  restoreToolName,
  toolNameMap,
  toolUseId,
  type ToolNameMap,
} from './ids.ts';
export type * from './openai-types.ts';
export {
  anthropicToOpenAI,
  hasSystemMessages,
  pairToolMessages,
  reasoningEffortFor,
  TEXT_JOINER,
  TOOL_ERROR_PREFIX,
  type AnthropicToOpenAIOptions,
  type UserIdPolicy,
} from './request.ts';
export {
  mapFinishReason,
  mapUsage,
  openAIToAnthropic,
  parseToolArguments,
  type OpenAIToAnthropicOptions,
} from './response.ts';
export { formatSSE, OpenAIToAnthropicStream, type OpenAIToAnthropicStreamOptions } from './stream.ts';
export { splitThinkTags, THINK_AT_START, type ThinkSegment } from './think-tags.ts';
export { estimateInputTokens, estimateTokens, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS } from './tokens.ts';
