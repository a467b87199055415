import { ReasoningTagSplitter, type ReasoningTagRules, type Segment } from '../connections/reasoning-tags.ts';

/**
 * The Anthropic face's rule for reasoning inside the content (llama.cpp without a reasoning parser,
 * vLLM without `--reasoning-parser`, raw Qwen3/DeepSeek-R1 templates): `<think>…</think>` only at the
 * very start of the content, becoming thinking blocks; a `<think>` later in the text is ordinary text.
 * The splitter and the rules both faces share are in connections/reasoning-tags.ts.
 */
export const THINK_AT_START: ReasoningTagRules<'thinking'> = { tags: [['<think>', '</think>']], onlyAtStart: true, kind: 'thinking' };

export type ThinkSegment = Segment<'thinking'>;

/** Whole-content helper for non-streaming responses. Adjacent segments of one kind are merged. */
export function splitThinkTags(content: string): ThinkSegment[] {
  const p = new ReasoningTagSplitter(THINK_AT_START);
  const merged: ThinkSegment[] = [];
  for (const s of [...p.push(content), ...p.flush()]) {
    const last = merged[merged.length - 1];
    if (last && last.kind === s.kind) last.text += s.text;
    else merged.push({ ...s });
  }
  return merged;
}
