import { describe, expect, it } from 'vitest';
import { parseSSE, SSEParseError, type SSEEvent } from './sse.ts';

const enc = new TextEncoder();

async function* chunksOf(parts: (string | Uint8Array)[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield typeof p === 'string' ? enc.encode(p) : p;
}

async function parse(parts: (string | Uint8Array)[]): Promise<SSEEvent[]> {
  const out: SSEEvent[] = [];
  for await (const ev of parseSSE(chunksOf(parts))) out.push(ev);
  return out;
}

/** Every way of cutting `bytes` into two pieces, plus one byte at a time. */
function splits(bytes: Uint8Array): Uint8Array[][] {
  const out: Uint8Array[][] = [];
  for (let i = 0; i <= bytes.length; i++) out.push([bytes.subarray(0, i), bytes.subarray(i)]);
  out.push(Array.from(bytes, (_b, i) => bytes.subarray(i, i + 1)));
  return out;
}

describe('parseSSE', () => {
  it('parses named and unnamed events', async () => {
    expect(await parse(['event: message_start\ndata: {"a":1}\n\ndata: plain\n\n'])).toEqual([{ event: 'message_start', data: '{"a":1}' }, { data: 'plain' }]);
  });

  it('handles \\n, \\r\\n and \\r line endings, mixed', async () => {
    const expected = [{ event: 'x', data: 'one' }, { data: 'two' }, { data: 'three' }];
    expect(await parse(['event: x\r\ndata: one\r\n\r\ndata: two\r\rdata: three\n\n'])).toEqual(expected);
    expect(await parse(['event: x\rdata: one\r\rdata: two\n\ndata: three\r\n\r\n'])).toEqual(expected);
  });

  it('gives the same events however the bytes are split (inside lines, \\r\\n pairs and UTF-8 characters)', async () => {
    const text = 'event: a\r\ndata: héllo 😀 wörld\r\n\r\n: comment\r\ndata: line1\rdata: line2\r\r' + 'id: 7\ndata: 日本語\n\n';
    const bytes = enc.encode(text);
    const expected = [{ event: 'a', data: 'héllo 😀 wörld' }, { data: 'line1\nline2' }, { data: '日本語', id: '7' }];
    for (const parts of splits(bytes)) expect(await parse(parts)).toEqual(expected);
  });

  it('joins multi-line data with \\n and keeps empty data lines', async () => {
    expect(await parse(['data: a\ndata: b\ndata\ndata:\ndata: c\n\n'])).toEqual([{ data: 'a\nb\n\n\nc' }]);
  });

  it('strips exactly one space after the colon', async () => {
    expect(await parse(['data:no space\n\ndata:  two spaces\n\n'])).toEqual([{ data: 'no space' }, { data: ' two spaces' }]);
  });

  it('ignores comments, retry and unknown fields', async () => {
    expect(await parse([': keep-alive\n\n:\ndata: x\nretry: 1000\nfoo: bar\n\n: OPENROUTER PROCESSING\n\n'])).toEqual([{ data: 'x' }]);
  });

  it('does not dispatch events without data, and resets the event type', async () => {
    expect(await parse(['event: lonely\n\ndata: after\n\n'])).toEqual([{ data: 'after' }]);
  });

  it('keeps the last event id across events (spec), ignoring ids with NUL', async () => {
    expect(await parse(['id: 1\ndata: a\n\ndata: b\n\nid: 2\u0000\ndata: c\n\nid\ndata: d\n\n'])).toEqual([
      { data: 'a', id: '1' },
      { data: 'b', id: '1' },
      { data: 'c', id: '1' },
      { data: 'd' },
    ]);
  });

  it('discards an event not ended by a blank line at the end of the stream', async () => {
    expect(await parse(['data: complete\n\ndata: cut'])).toEqual([{ data: 'complete' }]);
    expect(await parse(['data: complete\n\ndata: no blank line\n'])).toEqual([{ data: 'complete' }]);
  });

  it('a blank line ended by the stream\'s last \\r still ends its event', async () => {
    expect(await parse(['data: x\r\r'])).toEqual([{ data: 'x' }]);
    expect(await parse(['data: x\r', '\r'])).toEqual([{ data: 'x' }]);
    expect(await parse(['data: x\r'])).toEqual([]);
  });

  it('drops a leading BOM, split or not', async () => {
    const bom = new Uint8Array([0xef, 0xbb, 0xbf]);
    expect(await parse([bom, 'data: x\n\n'])).toEqual([{ data: 'x' }]);
    expect(await parse([bom.subarray(0, 1), bom.subarray(1), 'data: x\n\n'])).toEqual([{ data: 'x' }]);
  });

  it('a field name without colon is a field with an empty value', async () => {
    expect(await parse(['event\ndata\n\n'])).toEqual([{ data: '' }]);
  });

  it('yields events as they complete, before the stream ends', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    async function* body() {
      yield enc.encode('data: first\n\ndata: sec');
      await gate;
      yield enc.encode('ond\n\n');
    }
    const it = parseSSE(body());
    expect(await it.next()).toEqual({ done: false, value: { data: 'first' } });
    release();
    expect(await it.next()).toEqual({ done: false, value: { data: 'second' } });
    expect((await it.next()).done).toBe(true);
  });

  it('rejects a line longer than the limit', async () => {
    const iter = parseSSE(chunksOf(['data: ', 'x'.repeat(100), 'y'.repeat(100)]), { maxLineChars: 150 });
    await expect(iter.next()).rejects.toBeInstanceOf(SSEParseError);
  });

  it('an empty body yields nothing', async () => {
    expect(await parse([])).toEqual([]);
    expect(await parse(['', new Uint8Array(0)])).toEqual([]);
  });
});
