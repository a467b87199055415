import { describe, expect, it } from 'vitest';
import { STREAM_CHUNK_BYTES } from '@gatehouse/contracts';
import { decodeFrames, FrameBatcher } from './frames.ts';

/** The stream reply's wire form: frames written in one turn share a message; none waits for a timer. */
describe('stream frames', () => {
  const collect = () => {
    const sent: Uint8Array[] = [];
    return { sent, batch: new FrameBatcher((d) => sent.push(d)) };
  };
  const enc = (s: string) => new TextEncoder().encode(s);
  const dec = (d: Uint8Array) => new TextDecoder().decode(d);

  it('sends the frames of one turn as one message, in order, and numbers the messages', async () => {
    const { sent, batch } = collect();
    batch.add('meta', enc('{"status":200}'));
    batch.add('chunk', enc('hello'));
    batch.add('chunk', new Uint8Array(0));
    expect(sent).toHaveLength(0);
    await Promise.resolve(); // the microtask flush
    batch.add('end', enc('{}'));
    batch.flush();
    expect(sent).toHaveLength(2);
    const first = decodeFrames(sent[0]!);
    expect(first.seq).toBe(0);
    expect(first.frames.map((f) => [f.kind, dec(f.data)])).toEqual([['meta', '{"status":200}'], ['chunk', 'hello'], ['chunk', '']]);
    expect(decodeFrames(sent[1]!)).toMatchObject({ seq: 1, frames: [{ kind: 'end' }] });
  });

  it('starts a new message before one would outgrow a chunk, and keeps every byte', () => {
    const { sent, batch } = collect();
    const big = new Uint8Array(STREAM_CHUNK_BYTES).fill(7);
    batch.add('chunk', enc('a'));
    batch.add('chunk', big);
    batch.add('chunk', enc('b'));
    batch.flush();
    const frames = sent.flatMap((m) => decodeFrames(m).frames);
    expect(sent.length).toBe(3); // [a] [big] [b]: a big chunk travels alone
    expect(sent.every((m) => m.byteLength <= STREAM_CHUNK_BYTES + 64)).toBe(true);
    expect(frames.map((f) => f.data.byteLength)).toEqual([1, STREAM_CHUNK_BYTES, 1]);
    expect(frames[1]!.data.every((b) => b === 7)).toBe(true);
  });

  it('refuses a message that is not frames or is cut short', () => {
    expect(() => decodeFrames(enc('{"not":"frames"}'))).toThrow();
    const { sent, batch } = collect();
    batch.add('chunk', enc('hello'));
    batch.flush();
    expect(() => decodeFrames(sent[0]!.subarray(0, sent[0]!.byteLength - 1))).toThrow();
  });
});
