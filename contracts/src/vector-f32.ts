/**
 * VECTOR_F32 frames (vector.ts): a vector operation whose body holds float32 numbers — what the
 * gRPC port decodes from protobuf's `repeated float` — with those numbers as Float32 bytes
 * instead of decimal JSON. Writing a float32-valued double as JSON takes up to 17 digits a number
 * (~70 µs for 384 of them) and parsing it back more; the bytes cost neither.
 *
 * `[u32 BE h][h bytes: JSON head {op, collection?, id?, field?, query, body}]
 *  [u32 BE m][m bytes: JSON [[path, count], …]][0–3 zero bytes to a multiple of 4][f32 LE …]`
 *
 * In the head's body every moved array is `null`; the map lists, in data order, each array's
 * path (keys and indices from the body's root) and length. Only arrays of at least MIN_F32
 * finite numbers that float32 holds exactly are moved, so decoding gives back the same numbers.
 * The JSON encoder and parser are the caller's (the services' exact-integer JSON).
 */

/** Shorter lists (ids, small vectors) stay JSON: no gain. */
export const MIN_F32 = 8;

type Path = (string | number)[];

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function movable(v: readonly unknown[]): boolean {
  if (v.length < MIN_F32) return false;
  for (const x of v) if (typeof x !== 'number' || !Number.isFinite(x) || Math.fround(x) !== x) return false;
  return true;
}

/** A copy of `value` with the movable arrays replaced by null, recorded in `out`. */
function strip(value: unknown, path: Path, out: { path: Path; values: readonly number[] }[]): unknown {
  if (Array.isArray(value)) {
    if (movable(value)) {
      out.push({ path: [...path], values: value as number[] });
      return null;
    }
    return value.map((v, i) => strip(v, [...path, i], out));
  }
  if (value === null || typeof value !== 'object') return value;
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) copy[k] = strip(v, [...path, k], out);
  return copy;
}

/**
 * The frame for `head` (without its body) and `body`, or undefined when the body has no array
 * worth moving (send it as JSON then).
 */
export function packF32Frame(head: Record<string, unknown>, body: unknown, json: (v: unknown) => Uint8Array): Uint8Array | undefined {
  const moved: { path: Path; values: readonly number[] }[] = [];
  const rest = strip(body, [], moved);
  if (moved.length === 0) return undefined;
  const h = json({ ...head, body: rest });
  const m = json(moved.map((x) => [x.path, x.values.length]));
  const count = moved.reduce((n, x) => n + x.values.length, 0);
  const dataAt = Math.ceil((8 + h.byteLength + m.byteLength) / 4) * 4;
  const frame = new Uint8Array(dataAt + 4 * count);
  const view = new DataView(frame.buffer);
  view.setUint32(0, h.byteLength);
  frame.set(h, 4);
  view.setUint32(4 + h.byteLength, m.byteLength);
  frame.set(m, 8 + h.byteLength);
  if (LITTLE_ENDIAN) {
    const f = new Float32Array(frame.buffer, dataAt, count);
    let o = 0;
    for (const x of moved) {
      f.set(x.values, o);
      o += x.values.length;
    }
  } else {
    let o = dataAt;
    for (const x of moved) for (const v of x.values) (view.setFloat32(o, v, true), (o += 4));
  }
  return frame;
}

/** Error for a frame that is not one (the worker answers 400). */
export class F32FrameError extends Error {}

/** The head (with its body restored: each moved array back as plain numbers) of a frame. */
export function unpackF32Frame(frame: Uint8Array, parse: (bytes: Uint8Array) => unknown): Record<string, unknown> & { body: unknown } {
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  if (frame.byteLength < 8) throw new F32FrameError('short frame');
  const h = view.getUint32(0);
  if (8 + h > frame.byteLength) throw new F32FrameError('bad head length');
  const head = parse(frame.subarray(4, 4 + h)) as Record<string, unknown> & { body: unknown };
  const m = view.getUint32(4 + h);
  if (8 + h + m > frame.byteLength) throw new F32FrameError('bad map length');
  const map = parse(frame.subarray(8 + h, 8 + h + m)) as [Path, number][];
  if (head === null || typeof head !== 'object' || !Array.isArray(map)) throw new F32FrameError('bad head');
  let at = Math.ceil((8 + h + m) / 4) * 4;
  for (const [path, count] of map) {
    if (!Array.isArray(path) || !Number.isInteger(count) || count < 0 || at + 4 * count > frame.byteLength) throw new F32FrameError('bad map entry');
    const values = new Array<number>(count);
    for (let i = 0; i < count; i++) values[i] = view.getFloat32(at + 4 * i, true);
    at += 4 * count;
    if (path.length === 0) {
      head.body = values;
      continue;
    }
    let parent: unknown = head.body;
    for (const k of path.slice(0, -1)) parent = (parent as Record<string | number, unknown> | null)?.[k];
    const last = path[path.length - 1]!;
    if (parent === null || typeof parent !== 'object' || (parent as Record<string | number, unknown>)[last] !== null) throw new F32FrameError('bad path');
    (parent as Record<string | number, unknown>)[last] = values;
  }
  return head;
}
