import { describe, expect, it } from 'vitest';
import { ChunkNormalizer } from './normalize.ts';

/**
 * `untouched` lets the proxy forward an upstream chunk's own JSON text instead of serialising the
 * normalised object again: it may say so only when that text parses to exactly what the
 * normaliser returned (key order included).
 */

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const PIECES = ['Hello', ' world', ' ', '\n', '<', '<th', 'ink>', '<think>', '</think>', '</th', 'inking>', '<reasoning>', '◁think▷', '◁/think▷', 'é', '😀', 'a<b', '<|begin_of_thought|>', ''];

function randomChunk(r: () => number): Record<string, unknown> {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const delta: Record<string, unknown> = {};
  if (r() < 0.2) delta.role = 'assistant';
  if (r() < 0.8) delta.content = r() < 0.1 ? null : pick(PIECES) + (r() < 0.5 ? pick(PIECES) : '');
  if (r() < 0.1) delta.reasoning_content = pick(PIECES);
  if (r() < 0.05) delta.reasoning = pick(PIECES);
  if (r() < 0.05) delta.thinking = r() < 0.5 ? null : pick(PIECES);
  if (r() < 0.1) delta.tool_calls = [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: r() < 0.5 ? '{"a":1}' : { a: 1 } } }];
  const choice: Record<string, unknown> = { index: 0, delta: r() < 0.03 ? 'odd' : r() < 0.03 ? undefined : delta, logprobs: null, finish_reason: r() < 0.1 ? 'stop' : null };
  const c: Record<string, unknown> = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: r() < 0.05 ? [] : [choice] };
  if (r() < 0.1) c.usage = r() < 0.5 ? null : { prompt_tokens: 1, completion_tokens: 2 };
  return c;
}

describe('ChunkNormalizer.untouched', () => {
  it('is true only when the upstream text parses to the forwarded chunk (3 000 random chunks in 300 streams)', () => {
    const r = rng(7);
    let untouched = 0;
    let touched = 0;
    for (let stream = 0; stream < 300; stream++) {
      const n = new ChunkNormalizer();
      for (let i = 0; i < 10; i++) {
        const data = JSON.stringify(randomChunk(r));
        const out = n.push(JSON.parse(data));
        if (out.length === 1 && n.untouched) {
          untouched++;
          expect(JSON.stringify(JSON.parse(data))).toBe(JSON.stringify(out[0]));
        } else touched++;
      }
    }
    // Both kinds occur, so both branches were checked.
    expect(untouched).toBeGreaterThan(300);
    expect(touched).toBeGreaterThan(300);
  });

  it('says so for a plain text chunk, and not for one whose reasoning was renamed or whose tag was split off', () => {
    const n = new ChunkNormalizer();
    const plain = { id: 'c', choices: [{ index: 0, delta: { content: 'Hi there' }, finish_reason: null }] };
    n.push(structuredClone(plain));
    expect(n.untouched).toBe(true);
    n.push({ id: 'c', choices: [{ index: 0, delta: { reasoning: 'hmm' }, finish_reason: null }] });
    expect(n.untouched).toBe(false);
    n.push({ id: 'c', choices: [{ index: 0, delta: { content: ' more<think>x' }, finish_reason: null }] });
    expect(n.untouched).toBe(false);
  });
});
