/**
 * JSON that keeps integers exact. `JSON.parse` turns an integer above 2^53 into the nearest double
 * (a Qdrant point id 424242424242424242 would come back as …256) and `JSON.stringify` throws on a
 * BigInt (a 500). Here an integer literal beyond `Number.MAX_SAFE_INTEGER` parses as a `bigint`,
 * every other number stays a plain `number`, and a `bigint` is written as its exact digits.
 *
 * Both keep the native fast path. Parsing runs `JSON.parse` and re-parses with lossless-json only
 * when the result holds a number a long integer literal could have become (an integral double
 * beyond 2^53): checking the parsed numbers is far cheaper than scanning the text, whose float
 * vectors are full of long digit runs. Stringifying falls back only when `JSON.stringify` met a
 * BigInt.
 */
import { parse as losslessParse, stringify as losslessStringify } from 'lossless-json';

const INTEGER = /^-?\d+$/;

function parseNumber(text: string): number | bigint {
  if (INTEGER.test(text)) {
    const n = Number(text);
    return Number.isSafeInteger(n) ? n : BigInt(text);
  }
  return Number(text);
}

/**
 * Whether a `JSON.parse` result may have lost an integer: it holds an integral number beyond
 * 2^53 - 1 in magnitude (an exponent literal such as 1e300 also counts; re-parsing it is harmless).
 */
export function mayHaveLostInteger(v: unknown): boolean {
  if (typeof v === 'number') return Number.isInteger(v) && !Number.isSafeInteger(v);
  if (v === null || typeof v !== 'object') return false;
  if (Array.isArray(v)) {
    for (const x of v) if (mayHaveLostInteger(x)) return true;
    return false;
  }
  for (const k in v) if (mayHaveLostInteger((v as Record<string, unknown>)[k])) return true;
  return false;
}

/** lossless-json with integers exact; a duplicate key keeps the last value, as JSON.parse does. */
export function parseLossless(text: string): unknown {
  return losslessParse(text, null, { parseNumber, onDuplicateKey: ({ newValue }) => newValue });
}

/** `JSON.parse`, except that integers beyond 2^53-1 become exact `bigint`s. */
export function parseExactJson(text: string): unknown {
  const v: unknown = JSON.parse(text);
  return mayHaveLostInteger(v) ? parseLossless(text) : v;
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
