import { describe, expect, it } from 'vitest';
import { mayHaveLostInteger, parseExactJson, stringifyExactJson } from './exact-json.ts';

describe('exact JSON', () => {
  it('parses integers beyond 2^53 as exact BigInts and keeps everything else a number', () => {
    const v = parseExactJson('{"ids":[9007199254740993,424242424242424242,18446744073709551615,7,9007199254740991],"f":0.12345678901234567,"e":1e300,"neg":-9223372036854775808}') as Record<string, unknown>;
    expect(v.ids).toEqual([9007199254740993n, 424242424242424242n, 18446744073709551615n, 7, 9007199254740991]);
    // biome-ignore lint/correctness/noPrecisionLoss: the double nearest this literal is what the parser must give back.
    expect(v.f).toBe(0.12345678901234567);
    expect(v.e).toBe(1e300);
    expect(v.neg).toBe(-9223372036854775808n);
  });

  it('re-parses only when JSON.parse may have rounded an integer', () => {
    expect(mayHaveLostInteger(JSON.parse('{"v":[0.1234567890123456789,-0.9876543210987654321],"id":9007199254740991,"s":"424242424242424242"}'))).toBe(false);
    expect(mayHaveLostInteger(JSON.parse('{"p":[{"id":424242424242424242}]}'))).toBe(true);
    expect(mayHaveLostInteger(JSON.parse('[1,-9007199254740993]'))).toBe(true);
    expect(parseExactJson('"424242424242424242"')).toBe('424242424242424242');
    expect(parseExactJson('424242424242424242')).toBe(424242424242424242n);
  });

  it('keeps the last of duplicate keys and stores __proto__ as a plain key, as JSON.parse does', () => {
    const v = parseExactJson('{"a":1,"a":18446744073709551615,"__proto__":{"x":1}}') as Record<string, unknown>;
    expect(v.a).toBe(18446744073709551615n);
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['a', '__proto__']);
  });

  it('writes BigInts as exact digits (a JSON number), everything else as JSON.stringify does', () => {
    const value = { id: 424242424242424242n, list: [18446744073709551615n, 1.5, null, undefined], s: 'x', gone: undefined, d: new Date(0) };
    expect(stringifyExactJson(value)).toBe('{"id":424242424242424242,"list":[18446744073709551615,1.5,null,null],"s":"x","d":"1970-01-01T00:00:00.000Z"}');
    expect(stringifyExactJson({ a: 1 })).toBe(JSON.stringify({ a: 1 }));
    const text = '{"id":9007199254740993,"v":[0.25,-1]}';
    expect(stringifyExactJson(parseExactJson(text))).toBe(text);
  });
});
