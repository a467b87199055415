import { describe, expect, it } from 'vitest';
import { ChunkWriter, normalizeOwuiUsage as normalizeUsage, sseData } from './owui-sse.ts';

const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);

/** The chunk shape as the stream built it before ChunkWriter (an object, then sseData): the reference. */
function referenceSse(c: Record<string, unknown>, fallbackModel: string): string {
  const choices = Array.isArray(c.choices) ? c.choices : [];
  const out: Record<string, unknown> = {
    id: c.id,
    object: 'chat.completion.chunk',
    created: c.created,
    model: c.model ?? fallbackModel,
    choices: choices.map((raw: unknown) => {
      const ch = isObject(raw) ? raw : {};
      return { index: ch.index ?? 0, logprobs: ch.logprobs ?? null, finish_reason: ch.finish_reason ?? null, delta: isObject(ch.delta) ? ch.delta : {} };
    }),
  };
  const usage = normalizeUsage(c.usage);
  if (usage) out.usage = usage;
  return sseData(out);
}

/** A deterministic pseudo-random source (the same cases every run). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const ALPHABET = ['a', 'Z', ' ', '"', '\\', '\n', '\t', '\u0001', '\u001f', '\u007f', 'é', '中', '😀', '\ud800', ':', ',', '{', '}', '[', ']', '<think>'];

function randomString(r: () => number): string {
  let s = '';
  const n = Math.floor(r() * 12);
  for (let i = 0; i < n; i++) s += ALPHABET[Math.floor(r() * ALPHABET.length)];
  return s;
}

function randomDelta(r: () => number): unknown {
  const d: Record<string, unknown> = {};
  if (r() < 0.3) d.role = 'assistant';
  if (r() < 0.8) d.content = randomString(r);
  if (r() < 0.2) d.reasoning_content = randomString(r);
  if (r() < 0.15) d.tool_calls = [{ index: 0, id: randomString(r), type: 'function', function: { name: randomString(r), arguments: randomString(r) } }];
  if (r() < 0.05) return null;
  if (r() < 0.05) return [1, 2];
  return d;
}

function randomChunk(r: () => number, id: string, created: number): Record<string, unknown> {
  const choices: unknown[] = [];
  const n = r() < 0.1 ? 0 : r() < 0.9 ? 1 : 2;
  for (let i = 0; i < n; i++) {
    if (r() < 0.03) {
      choices.push('not a choice');
      continue;
    }
    const ch: Record<string, unknown> = { delta: randomDelta(r) };
    if (r() < 0.9) ch.index = i;
    if (r() < 0.5) ch.logprobs = r() < 0.8 ? null : { content: [{ token: randomString(r), logprob: -0.25 }] };
    if (r() < 0.7) ch.finish_reason = r() < 0.8 ? null : 'stop';
    choices.push(ch);
  }
  const c: Record<string, unknown> = { id, object: 'chat.completion.chunk', created, choices };
  if (r() < 0.7) c.model = randomString(r) || 'm';
  if (r() < 0.1) c.usage = r() < 0.5 ? null : { prompt_tokens: 3, completion_tokens: 1.5, extra: randomString(r) };
  if (r() < 0.05) c.choices = 'nope';
  return c;
}

describe('ChunkWriter', () => {
  it('writes the same bytes as sseData of the chunk object, for 5 000 random chunks across streams', () => {
    const r = rng(14);
    for (let stream = 0; stream < 250; stream++) {
      const writer = new ChunkWriter(`fallback-${stream}`);
      const id = `chatcmpl-${randomString(r)}`;
      const created = 1_700_000_000 + stream;
      for (let i = 0; i < 20; i++) {
        // Now and then a chunk whose id changes mid-stream: the head must follow it.
        const c = randomChunk(r, r() < 0.05 ? `other-${i}` : id, created);
        // A round trip through JSON, as the chunk arrives from the bus.
        const parsed = JSON.parse(JSON.stringify(c)) as Record<string, unknown>;
        expect(writer.sse(parsed)).toBe(referenceSse(parsed, `fallback-${stream}`));
      }
    }
  });

  it('gives a chunk without an id or created time its own, as Open WebUI does', () => {
    const text = new ChunkWriter('echo').sse({ choices: [{ index: 0, delta: { content: 'hi' } }] });
    const parsed = JSON.parse(text.slice('data: '.length)) as Record<string, unknown>;
    expect(parsed.id).toMatch(/^chatcmpl-[0-9a-f-]{36}$/);
    expect(typeof parsed.created).toBe('number');
    expect(parsed.model).toBe('echo');
    expect(text.endsWith('\n\n')).toBe(true);
  });
});
