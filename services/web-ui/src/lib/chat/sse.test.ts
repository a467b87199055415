import { describe, expect, it } from 'vitest';
import { sseData } from './sse';

/** A body that delivers `text` in the given pieces (split anywhere, even inside a character). */
function body(pieces: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const p of pieces) c.enqueue(typeof p === 'string' ? enc.encode(p) : p);
      c.close();
    },
  });
}

async function all(pieces: (string | Uint8Array)[]): Promise<string[]> {
  const out: string[] = [];
  for await (const d of sseData(body(pieces))) out.push(d);
  return out;
}

describe('sseData', () => {
  it('gives each event’s data as it arrives, in order, ending at [DONE]', async () => {
    expect(await all(['data: {"a":1}\n\ndata: {"b":2}\n\n', 'data: [DONE]\n\n'])).toEqual(['{"a":1}', '{"b":2}', '[DONE]']);
  });

  it('joins events split across chunks anywhere, CRLF lines and multi-line data', async () => {
    const text = 'data: one\r\n\r\ndata: two\ndata: lines\n\n: a comment\nevent: x\nid: 3\nretry: 10\ndata:no-space\n\n';
    const expected = ['one', 'two\nlines', 'no-space'];
    for (let i = 1; i < text.length; i++) expect(await all([text.slice(0, i), text.slice(i)])).toEqual(expected);
    expect(await all(text.split(''))).toEqual(expected);
  });

  it('decodes a character split between chunks', async () => {
    const bytes = new TextEncoder().encode('data: café ☕\n\n');
    expect(await all([bytes.slice(0, 10), bytes.slice(10, 16), bytes.slice(16)])).toEqual(['café ☕']);
  });

  it('gives the last event even when the stream ends without its blank line', async () => {
    expect(await all(['data: {"x":1}\n\ndata: {"error":{"detail":"cut"}}'])).toEqual(['{"x":1}', '{"error":{"detail":"cut"}}']);
    expect(await all(['data: last\n'])).toEqual(['last']);
    expect(await all(['event: ping\n\n', ': only a comment\n'])).toEqual([]);
  });
});
