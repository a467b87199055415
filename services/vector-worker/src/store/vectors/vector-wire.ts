/**
 * Dense vectors on their way into Postgres without decimal text (docs/benchmarks.md, "binary
 * vectors"). Formatting 384 doubles as shortest decimals (`Array.join`) cost ~50–175 µs a vector
 * and Postgres then parsed them back with `strtof`; both forms here carry the float32 bits as they
 * are:
 *
 * - `vectorLiteral`: pgvector's text input with every element as a C99 hexadecimal float
 *   (`0x1.99999ap-4`), which pgvector's `strtof` reads exactly. Written byte by byte into a
 *   scratch buffer: ~5× cheaper than `join`, and cheaper for Postgres to parse. Used wherever a
 *   vector is a query parameter (postgres.js sends parameters as text).
 * - `CopyBinary`: the rows of `COPY … FROM STDIN (FORMAT binary)`, with vectors in pgvector's
 *   binary receive form (`vector_recv`: int16 dim, int16 0, float4[dim] big-endian), used by
 *   bulk writes (points.ts).
 *
 * Both store `Math.fround(x)`: the nearest float32 to the double, ties to even — what Qdrant does
 * (serde reads an f64 and casts). The decimal path rounded the shortest decimal of the double
 * instead, which differs only when the double lies exactly halfway between two float32s; and it
 * lost the sign of -0 (`String(-0)` is `0`), which these keep.
 */
import { wrongInput } from '../errors.ts';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Largest float32 that halfvec keeps finite: 65520 and above round to infinity (IEEE half). */
const HALF_OVERFLOW = 65520;

/** The error Postgres gave for an element it cannot store (so the wording is unchanged). */
function badElement(x: number, half: boolean): Error {
  if (Number.isNaN(x)) return wrongInput(`NaN not allowed in ${half ? 'halfvec' : 'vector'}`);
  return wrongInput(`"${String(x)}" is out of range for type ${half ? 'halfvec' : 'vector'}`);
}

/** `x` as float32 bits; throws (as Postgres would) for NaN and for what float32 (or half) cannot hold. */
function bitsOf(x: number, half: boolean): number {
  f32[0] = x;
  const b = u32[0]!;
  if ((b & 0x7f800000) === 0x7f800000) throw badElement(x, half);
  if (half && Math.abs(f32[0]!) >= HALF_OVERFLOW) throw badElement(x, half);
  return b;
}

const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** `p<e>` for every normal exponent (and `p-126` for subnormals), as bytes. */
const EXPONENT: Buffer[] = Array.from({ length: 254 }, (_, i) => Buffer.from(`p${i - 126}`, 'latin1'));
/** The longest element: `-0x1.xxxxxxp-126,` = 17 bytes. */
const MAX_ELEMENT = 17;
let scratch = Buffer.allocUnsafe(MAX_ELEMENT * 1024);

function room(n: number): Buffer {
  if (scratch.length < n) scratch = Buffer.allocUnsafe(Math.max(n, scratch.length * 2));
  return scratch;
}

/** One vector `[…]` into `out` at `o`; returns the end. */
function writeRow(out: Buffer, o: number, v: readonly number[], half: boolean): number {
  out[o++] = 0x5b; // [
  for (let i = 0; i < v.length; i++) {
    if (i) out[o++] = 0x2c; // ,
    const b = bitsOf(v[i]!, half);
    if (b & 0x80000000) out[o++] = 0x2d; // -
    const e = (b >>> 23) & 255;
    const m = (b & 0x7fffff) << 1; // 24 bits: six hex digits after the point
    if (e === 0 && m === 0) {
      out[o++] = 0x30; // 0
      continue;
    }
    out[o++] = 0x30; // 0
    out[o++] = 0x78; // x
    out[o++] = e === 0 ? 0x30 : 0x31; // subnormal 0.… or normal 1.…
    out[o++] = 0x2e; // .
    out[o++] = HEX[m >>> 20]!;
    out[o++] = HEX[(m >>> 16) & 15]!;
    out[o++] = HEX[(m >>> 12) & 15]!;
    out[o++] = HEX[(m >>> 8) & 15]!;
    out[o++] = HEX[(m >>> 4) & 15]!;
    out[o++] = HEX[m & 15]!;
    const p = EXPONENT[e === 0 ? 0 : e - 1]!;
    for (let j = 0; j < p.length; j++) out[o++] = p[j]!;
  }
  out[o++] = 0x5d; // ]
  return o;
}

/**
 * pgvector's text input (`[…]`) for a vector, or a Postgres array literal of them (`{"[…]",…}`)
 * for a multivector, with exact hexadecimal elements. `half`: the target is `halfvec` (refuse
 * what it cannot hold with its own wording).
 */
export function vectorLiteral(v: readonly number[] | readonly number[][], half = false): string {
  if (Array.isArray(v[0])) {
    const rows = v as readonly number[][];
    let n = 2;
    for (const r of rows) n += r.length * MAX_ELEMENT + 5;
    const out = room(n);
    let o = 0;
    out[o++] = 0x7b; // {
    rows.forEach((r, i) => {
      if (i) out[o++] = 0x2c;
      out[o++] = 0x22; // "
      o = writeRow(out, o, r, half);
      out[o++] = 0x22;
    });
    out[o++] = 0x7d; // }
    return out.toString('latin1', 0, o);
  }
  const row = v as readonly number[];
  const out = room(row.length * MAX_ELEMENT + 2);
  return out.toString('latin1', 0, writeRow(out, 0, row, half));
}

// ------------------------------------------------------------------------------------------------
// COPY … FROM STDIN (FORMAT binary)

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** pgvector's binary receive form of one vector: int16 dim, int16 0, then float4 big-endian. */
export const vectorRecvBytes = (dim: number) => 4 + 4 * dim;

/** A field of a binary COPY row. */
export type CopyField =
  | null
  | { bytes: Buffer } // already in the column type's binary form (e.g. int4 big-endian)
  | { text: string } // text: the UTF-8 bytes
  | { jsonb: string } // jsonb: version byte 1, then the JSON text
  | { vector: readonly number[]; half: boolean }; // vector: float32 bits (`half`: bound for a halfvec column)

/**
 * Builds the whole binary COPY stream (header; per row int16 field count, then per field int32
 * length, -1 for null, and the bytes; trailer int16 -1) as one buffer.
 */
export class CopyBinary {
  private parts: Buffer[] = [];
  private size = 0;

  constructor() {
    const head = Buffer.alloc(SIGNATURE.length + 8); // flags 0, header extension 0
    SIGNATURE.copy(head, 0);
    this.push(head);
  }

  private push(b: Buffer): void {
    this.parts.push(b);
    this.size += b.length;
  }

  row(fields: readonly CopyField[]): void {
    const raw: (Buffer | null)[] = fields.map((f) =>
      f === null || 'vector' in f ? null : 'bytes' in f ? f.bytes : 'text' in f ? Buffer.from(f.text, 'utf8') : Buffer.from(`\x01${f.jsonb}`, 'utf8'),
    );
    let n = 2;
    fields.forEach((f, i) => {
      n += 4;
      if (f !== null) n += 'vector' in f ? vectorRecvBytes(f.vector.length) : raw[i]!.length;
    });
    const out = Buffer.allocUnsafe(n);
    let o = out.writeInt16BE(fields.length, 0);
    fields.forEach((f, i) => {
      if (f === null) {
        o = out.writeInt32BE(-1, o);
      } else if ('vector' in f) {
        o = out.writeInt32BE(vectorRecvBytes(f.vector.length), o);
        o = writeVector(out, o, f.vector, f.half);
      } else {
        const b = raw[i]!;
        o = out.writeInt32BE(b.length, o);
        o += b.copy(out, o);
      }
    });
    this.push(out);
  }

  /** The stream, with its trailer. */
  end(): Buffer {
    const trailer = Buffer.allocUnsafe(2);
    trailer.writeInt16BE(-1, 0);
    this.push(trailer);
    return Buffer.concat(this.parts, this.size);
  }
}

/** `vector_recv`'s form of `v` into `out` at `o`; returns the end. */
export function writeVector(out: Buffer, o: number, v: readonly number[], half = false): number {
  if (v.length > 0x7fff) throw wrongInput(`vector cannot have more than 16000 dimensions`);
  const dv = new DataView(out.buffer, out.byteOffset, out.length);
  dv.setInt16(o, v.length);
  dv.setInt16(o + 2, 0);
  o += 4;
  for (let i = 0; i < v.length; i++, o += 4) dv.setUint32(o, bitsOf(v[i]!, half));
  return o;
}
