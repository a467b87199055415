/**
 * Server-side BM25 documents (`{"text": …, "model": "qdrant/bm25"}` in place of a sparse vector,
 * Qdrant's built-in inference): text → sparse vector. Tokens: lowercase, split on anything but
 * letters and digits, English stop words dropped (no stemming: Qdrant stems with Snowball, so
 * inflected words get different ids here). Token id: murmur3 32-bit (seed 0) of the UTF-8 bytes,
 * as a positive i32 (Qdrant's and fastembed's `abs(mmh3(token))`). A stored document gets BM25's
 * term-frequency part tf·(k+1) / (tf + k·(1 − b + b·len/avg_len)), k = 1.2, b = 0.75,
 * avg_len = 256; a query gets 1 per distinct token — the IDF part is the collection's `idf`
 * modifier, as in Qdrant.
 */
import { wrongInput } from '../errors.ts';
import { ENGLISH_STOPWORDS } from '../filter/text-index.ts';
import type { SparseValue } from './vectors.ts';

const K = 1.2;
const B = 0.75;
const AVG_LEN = 256;
const STOP = new Set(ENGLISH_STOPWORDS);

export type Document = { text: string; model: string; options?: unknown };

export const isDocument = (v: unknown): v is Document =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as { text?: unknown }).text === 'string';

function murmur3(bytes: Uint8Array): number {
  let h = 0;
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  const n = bytes.length & ~3;
  for (let i = 0; i < n; i += 4) {
    let k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  let k = 0;
  const rest = bytes.length & 3;
  if (rest === 3) k ^= bytes[n + 2]! << 16;
  if (rest >= 2) k ^= bytes[n + 1]! << 8;
  if (rest >= 1) {
    k ^= bytes[n]!;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= bytes.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0; // signed, as mmh3.hash
}

const encoder = new TextEncoder();

function tokens(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t !== '' && !STOP.has(t));
}

/** A BM25 document or query as a sparse vector (indices sorted). */
export function bm25(doc: Document, query: boolean): SparseValue {
  if (doc.model.toLowerCase() !== 'qdrant/bm25') throw wrongInput(`Unsupported inference model \`${doc.model}\`: only qdrant/bm25 is built in`);
  const toks = tokens(doc.text);
  const tf = new Map<number, number>();
  for (const t of toks) {
    const id = Math.abs(murmur3(encoder.encode(t)));
    tf.set(id, (tf.get(id) ?? 0) + 1);
  }
  const indices = [...tf.keys()].sort((a, b) => a - b);
  const values = indices.map((i) => {
    if (query) return 1;
    const f = tf.get(i)!;
    return Math.fround((f * (K + 1)) / (f + K * (1 - B + (B * toks.length) / AVG_LEN)));
  });
  return { indices, values };
}
