/*
 * OpenAI Chat Completions wire shapes, as far as the translator reads or writes them.
 * Fields that OpenAI-compatible servers add (`reasoning_content` – DeepSeek/vLLM, `reasoning` –
 * Ollama/OpenRouter, cache counters) are included as optional.
 */

export type OpenAITextPart = { type: 'text'; text: string };
export type OpenAIImagePart = { type: 'image_url'; image_url: { url: string } };
/** OpenAI's file part (PDF input); servers without file support reject it. */
export type OpenAIFilePart = { type: 'file'; file: { filename: string; file_data: string } };
export type OpenAIContentPart = OpenAITextPart | OpenAIImagePart | OpenAIFilePart;

export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type OpenAIMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | OpenAIContentPart[] }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: OpenAIToolCall[];
      /** Replayed reasoning (DeepSeek requires it on later turns; other servers ignore it). */
      reasoning_content?: string;
    }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface OpenAITool {
  type: 'function';
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

export type OpenAIToolChoice = 'auto' | 'required' | 'none' | { type: 'function'; function: { name: string } };

/** `xhigh`: the top level of the newest OpenAI reasoning models, sent only where a provider says it has it. */
export type OpenAIReasoningEffort = 'low' | 'medium' | 'high' | 'xhigh';

export interface OpenAIChatRequest {
  model: string;
  messages: OpenAIMessage[];
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  top_p?: number;
  /** Not an OpenAI parameter; vLLM/Ollama/llama.cpp accept it. Only sent with `passTopK`. */
  top_k?: number;
  stop?: string[];
  user?: string;
  tools?: OpenAITool[];
  tool_choice?: OpenAIToolChoice;
  parallel_tool_calls?: boolean;
  reasoning_effort?: OpenAIReasoningEffort;
  stream?: true;
  stream_options?: { include_usage: true };
}

export interface OpenAIUsage {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  total_tokens?: number | null;
  prompt_tokens_details?: { cached_tokens?: number | null; cache_creation_tokens?: number | null } | null;
  /** Some OpenAI-compatible gateways (LiteLLM, OpenRouter for Claude) report these directly. */
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

export interface OpenAIResponseToolCall {
  id?: string | null;
  type?: string | null;
  function?: { name?: string | null; arguments?: string | null } | null;
}

export interface OpenAIChatResponse {
  id?: string | null;
  object?: string;
  created?: number;
  model?: string;
  choices?: Array<{
    index?: number;
    message?: {
      role?: string;
      content?: string | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
      refusal?: string | null;
      tool_calls?: OpenAIResponseToolCall[] | null;
      /** Deprecated single-function form. */
      function_call?: { name?: string | null; arguments?: string | null } | null;
    } | null;
    finish_reason?: string | null;
  }> | null;
  usage?: OpenAIUsage | null;
}

export interface OpenAIChunkToolCall {
  /** Old Ollama versions omitted it (ollama/ollama#7881). */
  index?: number | null;
  id?: string | null;
  type?: string | null;
  function?: { name?: string | null; arguments?: string | null } | null;
}

export interface OpenAIChatChunk {
  id?: string | null;
  object?: string;
  created?: number;
  model?: string;
  choices?: Array<{
    index?: number;
    delta?: {
      role?: string | null;
      content?: string | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
      refusal?: string | null;
      tool_calls?: OpenAIChunkToolCall[] | null;
    } | null;
    finish_reason?: string | null;
  }> | null;
  usage?: OpenAIUsage | null;
}
