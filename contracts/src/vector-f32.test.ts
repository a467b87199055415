import { describe, expect, it } from 'vitest';
import { MIN_F32, packF32Frame, unpackF32Frame, F32FrameError } from './vector-f32.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();
const json = (v: unknown) => enc.encode(JSON.stringify(v));
const parse = (b: Uint8Array) => JSON.parse(dec.decode(b)) as unknown;

const f32s = (n: number, k = 1) => Array.from({ length: n }, (_, i) => Math.fround(Math.sin(i * k) * 3));

describe('VECTOR_F32 frames', () => {
  it('moves float32 lists to bytes and restores the same body', () => {
    const body = {
      points: [
        { id: 1, vector: f32s(384), payload: { tags: [1, 2, 3], long: f32s(9, 2), s: 'x' } },
        { id: 'a7c3…', vector: { a: f32s(16, 3), sparse: { indices: [1, 5], values: [0.5, 0.25] }, m: [f32s(8, 4), f32s(8, 5)] } },
      ],
      wait: null,
    };
    const frame = packF32Frame({ op: 'points.upsert', collection: 'c', query: { wait: 'true' } }, body, json)!;
    expect(frame).toBeDefined();
    // 384 + 9 + 16 + 8 + 8 floats as bytes; the head holds nulls in their places.
    const head = unpackF32Frame(frame, parse);
    expect(head).toEqual({ op: 'points.upsert', collection: 'c', query: { wait: 'true' }, body });
    expect(frame.byteLength).toBeLessThan(JSON.stringify(body).length);
  });

  it('keeps -0 and exact float32 values bit for bit; a body that is itself a vector', () => {
    const v = [-0, 0, 1e-45, 3.4028234663852886e38, -1.5, 0.1, 2, 3].map(Math.fround);
    const head = unpackF32Frame(packF32Frame({ op: 'x', query: {} }, v, json)!, parse);
    (head.body as number[]).forEach((x, i) => expect(Object.is(x, v[i])).toBe(true));
  });

  it('leaves JSON alone when nothing is worth moving: short lists, doubles float32 cannot hold, non-numbers', () => {
    expect(packF32Frame({ op: 'x', query: {} }, { vector: f32s(MIN_F32 - 1) }, json)).toBeUndefined();
    expect(packF32Frame({ op: 'x', query: {} }, { vector: [0.1, ...f32s(10)] }, json)).toBeUndefined(); // 0.1 is not a float32
    expect(packF32Frame({ op: 'x', query: {} }, { ids: [1, 2, 3, 4, 5, 6, 7, 'x'] }, json)).toBeUndefined();
    expect(packF32Frame({ op: 'x', query: {} }, undefined, json)).toBeUndefined();
  });

  it('refuses frames that do not add up', () => {
    const frame = packF32Frame({ op: 'x', query: {} }, { v: f32s(8) }, json)!;
    expect(() => unpackF32Frame(frame.subarray(0, frame.byteLength - 4), parse)).toThrow(F32FrameError);
    expect(() => unpackF32Frame(new Uint8Array(3), parse)).toThrow(F32FrameError);
    // A path that does not lead to a null in the head.
    const h = json({ op: 'x', query: {}, body: { v: 1 } });
    const m = json([[['__proto__'], 0]]);
    const bad = new Uint8Array(8 + h.length + m.length);
    const view = new DataView(bad.buffer);
    view.setUint32(0, h.length);
    bad.set(h, 4);
    view.setUint32(4 + h.length, m.length);
    bad.set(m, 8 + h.length);
    expect(() => unpackF32Frame(bad, parse)).toThrow(F32FrameError);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
