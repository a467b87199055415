/**
 * An answer's streamed deltas painted into its message: they gather here and reach the message
 * once per animation frame (the first at once: it is what the reader waits for), or after 20 ms
 * when no frame came. Reasoning is timed from its first to its last delta.
 */
import type { HistoryMessage, ToolCall } from './types';
import { textOf } from './history';
import { mergeToolCalls, type StreamEvent } from './sse';

/** What the view shows of an answer while it streams. */
export interface LiveState {
  /** Reasoning tokens are still arriving. */
  reasoningStreaming: boolean;
  /** Seconds measured while it streamed (this session). */
  reasoningDuration: number | null;
}

type Delta = Extract<StreamEvent, { type: 'delta' }>;

/** Where an answer is painted. */
export interface PaintTarget {
  /** The answer's message (undefined once it is gone). */
  message(): HistoryMessage | undefined;
  /** After each painted batch (the list keeps the bottom in view). */
  painted(): void;
  /** The answer's live reasoning state, and its change. */
  live(): LiveState | undefined;
  setLive(state: LiveState): void;
}

export class Painter {
  private readonly pending = { content: '', reasoning: '', tools: false };
  private readonly toolCalls: ToolCall[] = [];
  private frame = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private painted = false;
  private firstReasoning: number | null = null;
  private lastReasoning = 0;

  constructor(private readonly target: PaintTarget) {}

  /** One streamed delta: reasoning, text, tool-call fragments. */
  delta(ev: Delta): void {
    if (ev.reasoning) {
      const t = performance.now();
      if (this.firstReasoning === null) {
        this.firstReasoning = t;
        this.target.setLive({ reasoningStreaming: true, reasoningDuration: null });
      }
      this.lastReasoning = t;
      this.pending.reasoning += ev.reasoning;
    }
    if (ev.content) {
      this.endReasoning();
      this.pending.content += ev.content;
    }
    if (ev.toolCalls.length) {
      this.endReasoning();
      mergeToolCalls(this.toolCalls, ev.toolCalls);
      this.pending.tools = true;
    }
    if (ev.reasoning || ev.content || ev.toolCalls.length) this.schedule();
  }

  /** A non-streamed answer, painted whole. */
  whole(ev: Delta): void {
    this.pending.content = ev.content;
    this.pending.reasoning = ev.reasoning;
    if (ev.toolCalls.length) {
      mergeToolCalls(this.toolCalls, ev.toolCalls);
      this.pending.tools = true;
    }
    this.flush();
  }

  /** Paint what is pending now. */
  flush(): void {
    if (this.frame) cancelAnimationFrame(this.frame);
    if (this.timer) clearTimeout(this.timer);
    this.frame = 0;
    this.timer = null;
    const m = this.target.message();
    if (!m) return;
    const p = this.pending;
    if (p.reasoning) m.reasoning_content = (m.reasoning_content ?? '') + p.reasoning;
    if (p.content) m.content = textOf(m.content) + p.content;
    if (p.tools) m.tool_calls = this.toolCalls.map((c) => ({ ...c, function: { ...c.function } }));
    p.content = '';
    p.reasoning = '';
    p.tools = false;
    this.target.painted();
  }

  /** Reasoning is over (text or a tool call came, or the answer ended): its duration is known. */
  endReasoning(): void {
    if (this.firstReasoning === null || !this.target.live()?.reasoningStreaming) return;
    this.flush();
    this.target.setLive({ reasoningStreaming: false, reasoningDuration: Math.max(1, Math.round((this.lastReasoning - this.firstReasoning) / 1000)) });
  }

  private schedule(): void {
    // The first text is not held for a frame: it is what the reader waits for.
    if (!this.painted) {
      this.painted = true;
      this.flush();
      return;
    }
    if (this.frame || this.timer) return;
    this.frame = requestAnimationFrame(() => this.flush());
    // Frames come late when the machine is busy (and never in a hidden tab): the text does not
    // wait more than a frame and a bit for one.
    this.timer = setTimeout(() => this.flush(), 20);
  }
}
