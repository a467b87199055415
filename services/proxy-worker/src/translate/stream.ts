import type {
  AnthropicMessageDeltaUsage,
  AnthropicSSEEvent,
  AnthropicUsage,
} from '@gatehouse/contracts';
import { anthropicError } from './errors.ts';
import { messageId, restoreToolName, toolUseId, type ToolNameMap } from './ids.ts';
import type { OpenAIChatChunk, OpenAIChunkToolCall, OpenAIUsage } from './openai-types.ts';
import { mapFinishReason, mapUsage } from './response.ts';
import { ReasoningTagSplitter } from '../connections/reasoning-tags.ts';
import { THINK_AT_START } from './think-tags.ts';
import { estimateTokens } from './tokens.ts';

/** `event: <type>\ndata: <json>\n\n` — the event name always equals the JSON's `type`. */
export function formatSSE(event: AnthropicSSEEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

export interface OpenAIToAnthropicStreamOptions {
  /** Echoed as `message.model` (the client's `<provider>/<model>` string). */
  requestedModel: string;
  /** Input-token estimate for `message_start.usage.input_tokens` (see `estimateInputTokens`). */
  inputTokens?: number;
  /** Reverse map of truncated tool names (`toolNameMap(req.tools)`). */
  toolNames?: ToolNameMap;
  /** Message id; default `msg_<first chunk id>` or `msg_<random>`. */
  messageId?: string;
  /** Emit a `ping` right after `message_start` (as Anthropic does). Default true. */
  ping?: boolean;
}

interface ToolState {
  upstreamIndex: number | null;
  upstreamId: string | null;
  /** The tool_use id sent to the client (upstream id, or generated when it had none). */
  anthropicId: string | null;
  name: string;
  /** Arguments received before the name (not yet emitted). */
  pending: string;
  /** Anthropic block index once `content_block_start` was sent. */
  blockIndex: number | null;
  sentArgs: boolean;
}

type OpenBlock = { kind: 'thinking' | 'text'; index: number } | { kind: 'tool'; index: number; tool: ToolState };

/**
 * OpenAI `chat.completion.chunk` objects → Anthropic SSE events (reference §3.3 and §2.3).
 *
 * - `message_start` (+ `ping`) before anything else. Its usage is `{input_tokens: <estimate>,
 *   output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0}`: Anthropic
 *   itself starts with output_tokens 1, and Claude Code's context meter reads input_tokens here,
 *   so it is the local estimate (or the upstream's prompt count if the first chunk carries usage).
 * - Blocks are strictly sequential (one open at a time): thinking (`reasoning_content` /
 *   `reasoning` / leading `<think>…</think>` in content) → `thinking` block started as
 *   `{thinking:"", signature:""}` and closed without a `signature_delta` (no invented
 *   signatures); content → `text` block; each tool call → `tool_use` block `{id,name,input:{}}`
 *   whose arguments are sent only as `input_json_delta` fragments, as they arrive (the SDK and
 *   Claude Code build the input from those deltas and ignore `content_block_start.input`).
 *   A tool block that received no arguments at all gets one `input_json_delta` of `{}`.
 *   Within one chunk the order is thinking → text → tool_use.
 * - `finish_reason` closes the open block; `message_delta` is HELD until usage arrives (with
 *   `include_usage` it comes in a later chunk with `choices: []`) and sent at `end()` at the latest,
 *   followed by `message_stop`.
 * - `message_delta.usage` carries the upstream's real `input_tokens` and cache counters (when the
 *   upstream reported a prompt count) next to `output_tokens`: `message_start` cannot be corrected
 *   afterwards, and the SDK's MessageStream overwrites the snapshot's usage with every non-null
 *   field of `message_delta.usage` (lib/MessageStream.ts `#accumulateMessage`).
 * - Without upstream usage, `output_tokens` is estimated from the produced thinking/text/tool
 *   arguments; it is never 0 when something was produced.
 * - Only choice index 0 is translated. Argument fragments for a tool whose block was already
 *   closed (servers that interleave parallel tool calls — none of OpenAI, vLLM, Ollama,
 *   llama.cpp, DeepSeek do) are dropped; tool calls that never receive a name are dropped.
 */
export class OpenAIToAnthropicStream {
  private readonly opts: OpenAIToAnthropicStreamOptions;
  private started = false;
  private finished = false;
  private sawFinish = false;
  private finishReason: string | null = null;
  private refused = false;
  private upstreamUsage: OpenAIUsage | null = null;
  private nextIndex = 0;
  private open: OpenBlock | null = null;
  private readonly tools: ToolState[] = [];
  private hadToolUse = false;
  private readonly think = new ReasoningTagSplitter(THINK_AT_START);
  private output = '';
  private startInputTokens = 0;
  private finalUsage: AnthropicUsage | null = null;

  constructor(opts: OpenAIToAnthropicStreamOptions) {
    this.opts = opts;
  }

  /** Usage as finally reported to the client (input from upstream or the estimate); null until done. */
  get usage(): AnthropicUsage | null {
    return this.finalUsage;
  }

  /** True once `message_stop` or an `error` event was produced; later calls return []. */
  get done(): boolean {
    return this.finished;
  }

  push(chunk: OpenAIChatChunk): AnthropicSSEEvent[] {
    if (this.finished) return [];
    const out: AnthropicSSEEvent[] = [];
    this.start(out, chunk);
    if (chunk.usage && typeof chunk.usage === 'object') this.upstreamUsage = chunk.usage;

    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (choice && !this.sawFinish) {
      const delta = choice.delta ?? {};
      const reasoning = delta.reasoning_content || delta.reasoning;
      if (typeof reasoning === 'string') this.emit(out, 'thinking', reasoning);
      if (typeof delta.content === 'string') {
        for (const seg of this.think.push(delta.content)) this.emit(out, seg.kind, seg.text);
      }
      if (typeof delta.refusal === 'string' && delta.refusal) {
        this.refused = true;
        this.emit(out, 'text', delta.refusal);
      }
      if (delta.tool_calls?.length) {
        // Content is over once tool calls start: release text the <think> detector still holds
        // (e.g. a lone "<"), so it is not emitted after the tool blocks.
        for (const seg of this.think.flush()) this.emit(out, seg.kind, seg.text);
        for (const tc of delta.tool_calls) this.toolDelta(out, tc);
      }
      if (choice.finish_reason) this.finish(out, choice.finish_reason);
    }
    if (this.sawFinish && this.upstreamUsage) this.complete(out);
    return out;
  }

  /** Upstream ended (`[DONE]` or EOF): close everything and send the held `message_delta`. */
  end(): AnthropicSSEEvent[] {
    if (this.finished) return [];
    const out: AnthropicSSEEvent[] = [];
    this.start(out);
    if (!this.sawFinish) this.finish(out, null); // EOF without finish_reason → end_turn
    this.complete(out);
    return out;
  }

  /**
   * Mid-stream failure: one `error` event with the Anthropic envelope (the SDK throws an
   * APIError on it), nothing after. Open blocks are not closed — Anthropic's own mid-stream
   * errors do not close them either.
   */
  error(status: number, message: string, requestId?: string): AnthropicSSEEvent[] {
    if (this.finished) return [];
    this.finished = true;
    return [anthropicError(status, message, requestId)];
  }

  // ---------------------------------------------------------------------------------------------

  private start(out: AnthropicSSEEvent[], chunk?: OpenAIChatChunk): void {
    if (this.started) return;
    this.started = true;
    let usage: AnthropicUsage = {
      input_tokens: this.opts.inputTokens ?? 0,
      output_tokens: 1,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    };
    if (chunk?.usage && (chunk.usage.prompt_tokens ?? 0) > 0) {
      const mapped = mapUsage(chunk.usage);
      usage = { ...mapped, output_tokens: Math.max(1, mapped.output_tokens) };
    }
    this.startInputTokens = usage.input_tokens;
    out.push({
      type: 'message_start',
      message: {
        id: this.opts.messageId ?? messageId(chunk?.id),
        type: 'message',
        role: 'assistant',
        model: this.opts.requestedModel,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage,
      },
    });
    if (this.opts.ping !== false) out.push({ type: 'ping' });
  }

  private emit(out: AnthropicSSEEvent[], kind: 'thinking' | 'text', text: string): void {
    if (!text) return;
    if (this.open?.kind !== kind) {
      this.closeOpen(out);
      const index = this.nextIndex++;
      this.open = { kind, index };
      out.push({
        type: 'content_block_start',
        index,
        content_block: kind === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : { type: 'text', text: '' },
      });
    }
    const index = this.open.index;
    out.push({
      type: 'content_block_delta',
      index,
      delta: kind === 'thinking' ? { type: 'thinking_delta', thinking: text } : { type: 'text_delta', text },
    });
    this.output += text;
  }

  private findTool(tc: OpenAIChunkToolCall): ToolState {
    const id = tc.id || null;
    let tool: ToolState | undefined;
    if (typeof tc.index === 'number') {
      for (let i = this.tools.length - 1; i >= 0 && !tool; i--) {
        if (this.tools[i]!.upstreamIndex === tc.index) tool = this.tools[i];
      }
      // Some servers send each whole call with index 0: a different id means a new call.
      if (tool && id && tool.upstreamId && tool.upstreamId !== id) tool = undefined;
    } else if (id) {
      tool = this.tools.find((t) => t.upstreamId === id);
      // A fragment with an id but no index: continue the last call if it has no id yet.
      if (!tool) {
        const last = this.tools[this.tools.length - 1];
        if (last && !last.upstreamId && last.upstreamIndex === null) tool = last;
      }
    } else {
      tool = this.tools[this.tools.length - 1];
    }
    if (!tool) {
      tool = {
        upstreamIndex: typeof tc.index === 'number' ? tc.index : null,
        upstreamId: id,
        anthropicId: null,
        name: '',
        pending: '',
        blockIndex: null,
        sentArgs: false,
      };
      this.tools.push(tool);
    }
    return tool;
  }

  private toolDelta(out: AnthropicSSEEvent[], tc: OpenAIChunkToolCall): void {
    const tool = this.findTool(tc);
    if (tc.id && !tool.upstreamId) tool.upstreamId = tc.id;
    const name = tc.function?.name;
    if (name && !tool.name) tool.name = name;
    const args = tc.function?.arguments ?? '';

    if (tool.blockIndex === null) {
      tool.pending += args;
      if (tool.name) this.startTool(out, tool);
      return;
    }
    if (!args) return;
    if (this.open?.kind === 'tool' && this.open.tool === tool) this.sendArgs(out, tool, args);
    // else: fragment for an already-closed tool block (interleaved calls) — dropped, see class doc.
  }

  private startTool(out: AnthropicSSEEvent[], tool: ToolState): void {
    this.closeOpen(out);
    const index = this.nextIndex++;
    tool.blockIndex = index;
    this.open = { kind: 'tool', index, tool };
    this.hadToolUse = true;
    const name = restoreToolName(tool.name, this.opts.toolNames);
    tool.anthropicId = toolUseId(tool.upstreamId);
    out.push({
      type: 'content_block_start',
      index,
      content_block: { type: 'tool_use', id: tool.anthropicId, name, input: {} },
    });
    this.output += name;
    if (tool.pending) {
      const pending = tool.pending;
      tool.pending = '';
      this.sendArgs(out, tool, pending);
    }
  }

  private sendArgs(out: AnthropicSSEEvent[], tool: ToolState, args: string): void {
    out.push({
      type: 'content_block_delta',
      index: tool.blockIndex!,
      delta: { type: 'input_json_delta', partial_json: args },
    });
    tool.sentArgs = true;
    this.output += args;
  }

  private closeOpen(out: AnthropicSSEEvent[]): void {
    const open = this.open;
    if (!open) return;
    if (open.kind === 'tool' && !open.tool.sentArgs) this.sendArgs(out, open.tool, '{}');
    out.push({ type: 'content_block_stop', index: open.index });
    this.open = null;
  }

  private finish(out: AnthropicSSEEvent[], reason: string | null): void {
    for (const seg of this.think.flush()) this.emit(out, seg.kind, seg.text);
    this.closeOpen(out);
    this.sawFinish = true;
    this.finishReason = reason;
  }

  private complete(out: AnthropicSSEEvent[]): void {
    let stopReason = mapFinishReason(this.finishReason, this.hadToolUse);
    if (this.refused && stopReason === 'end_turn') stopReason = 'refusal';
    const estimate = estimateTokens(this.output);
    const usage: AnthropicMessageDeltaUsage = { output_tokens: estimate };
    const final: AnthropicUsage = { input_tokens: this.startInputTokens, output_tokens: estimate };
    if (this.upstreamUsage) {
      const mapped = mapUsage(this.upstreamUsage);
      // Never report 0 output tokens when something was produced.
      usage.output_tokens = mapped.output_tokens || estimate;
      final.output_tokens = usage.output_tokens;
      // Only a reported prompt count replaces the message_start estimate (0 would overwrite it).
      if (count(this.upstreamUsage.prompt_tokens) > 0) {
        usage.input_tokens = mapped.input_tokens;
        usage.cache_creation_input_tokens = mapped.cache_creation_input_tokens;
        usage.cache_read_input_tokens = mapped.cache_read_input_tokens;
        final.input_tokens = mapped.input_tokens;
        final.cache_creation_input_tokens = mapped.cache_creation_input_tokens;
        final.cache_read_input_tokens = mapped.cache_read_input_tokens;
      }
    }
    out.push({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage });
    out.push({ type: 'message_stop' });
    this.finalUsage = final;
    this.finished = true;
  }
}

function count(n: number | null | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0;
}
