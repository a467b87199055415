/**
 * JSON that keeps integers exact. `JSON.parse` turns an integer above 2^53 into the nearest double
 * (a Qdrant point id 424242424242424242 would come back as …256) and `JSON.stringify` throws on a
 * BigInt (a 500). Here an integer literal beyond `Number.MAX_SAFE_INTEGER` parses as a `bigint`,
 * every other number stays a plain `number`, and a `bigint` is written as its exact digits.
 *
 * Both keep the native fast path: parsing goes through lossless-json only when the text has an
 * integer literal of 16+ digits (the pre-scan ignores fraction and exponent digits, so a vector of
 * floats stays on `JSON.parse`); stringifying falls back only when `JSON.stringify` met a BigInt.
 */
import { parse as losslessParse, stringify as losslessStringify } from 'lossless-json';

/**
 * 16+ digits right where a JSON number starts (text start, after `:`, `,`, `[`, whitespace or a
 * minus sign). A fraction's digits follow `.`, so a float vector fails at its second character and
 * the scan stays cheap. False positives (an exponent, a string) only cost the lossless parse.
 */
const LONG_INTEGER = /(?:^|[:,[\s-])\d{16}/;
const INTEGER = /^-?\d+$/;

function parseNumber(text: string): number | bigint {
  if (INTEGER.test(text)) {
    const n = Number(text);
    return Number.isSafeInteger(n) ? n : BigInt(text);
  }
  return Number(text);
}

/** Whether `text` may hold an integer literal beyond 2^53-1 (false: `JSON.parse` is exact for it). */
export function hasLongInteger(text: string): boolean {
  return LONG_INTEGER.test(text);
}

/** `JSON.parse`, except that integers beyond 2^53-1 become exact `bigint`s. */
export function parseExactJson(text: string): unknown {
  if (!LONG_INTEGER.test(text)) return JSON.parse(text);
  // A duplicate key keeps the last value, as JSON.parse does (lossless-json would throw).
  return losslessParse(text, null, { parseNumber, onDuplicateKey: ({ newValue }) => newValue });
}

/** `JSON.stringify`, except that a `bigint` is written as its exact digits instead of throwing. */
export function stringifyExactJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof TypeError) || !/BigInt/i.test(err.message)) throw err;
    return losslessStringify(value) as string;
  }
}
