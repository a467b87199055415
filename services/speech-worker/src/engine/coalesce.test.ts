import { describe, expect, it } from 'vitest';
import { coalesce } from './coalesce.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function* source(sizes: number[], gapMs = 0, log?: string[]): AsyncGenerator<Buffer> {
  try {
    for (const [i, size] of sizes.entries()) {
      if (gapMs) await sleep(gapMs);
      yield Buffer.alloc(size, i);
    }
  } finally {
    log?.push('source closed');
  }
}

async function sizes(stream: AsyncIterable<Buffer>): Promise<number[]> {
  const out: number[] = [];
  for await (const chunk of stream) out.push(chunk.length);
  return out;
}

describe('coalesce', () => {
  it('passes the first chunk at once, then batches up to minBytes, keeping every byte in order', async () => {
    const input = Array.from({ length: 50 }, () => 100);
    const chunks: Buffer[] = [];
    for await (const chunk of coalesce(source(input), { minBytes: 1000, maxWaitMs: 1000 })) chunks.push(chunk);
    expect(chunks.map((c) => c.length)).toEqual([100, 1000, 1000, 1000, 1000, 900]);
    const all = Buffer.concat(chunks);
    expect(all.length).toBe(5000);
    for (let i = 0; i < 50; i++) expect(all[i * 100]).toBe(i);
  });

  it('does not hold a small batch longer than maxWaitMs', async () => {
    // 30 ms between chunks, 10 ms wait: no batching can happen.
    expect(await sizes(coalesce(source([10, 10, 10, 10], 30), { minBytes: 1000, maxWaitMs: 10 }))).toEqual([10, 10, 10, 10]);
  });

  it('handles empty sources and a consumer that stops early', async () => {
    expect(await sizes(coalesce(source([]), { minBytes: 10, maxWaitMs: 10 }))).toEqual([]);
    const log: string[] = [];
    for await (const _ of coalesce(source([5, 5, 5, 5, 5, 5], 5, log), { minBytes: 10, maxWaitMs: 100 })) break;
    // The source's return() is queued behind an outstanding read; bounded wait for it to run.
    for (let i = 0; i < 50 && log.length === 0; i++) await sleep(10);
    expect(log).toEqual(['source closed']);
  });

  it('passes errors through', async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(1);
      yield Buffer.alloc(1);
      throw new Error('boom');
    }
    await expect(sizes(coalesce(failing(), { minBytes: 100, maxWaitMs: 10 }))).rejects.toThrow('boom');
  });
});
