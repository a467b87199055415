import { describe, expect, it } from 'vitest';
import { jsonDepthExceeds } from './json-depth.ts';

describe('jsonDepthExceeds', () => {
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
  it('counts arrays and objects, not brackets inside strings', () => {
    expect(jsonDepthExceeds(deep(300), 256)).toBe(true);
    expect(jsonDepthExceeds(deep(256), 256)).toBe(false);
    expect(jsonDepthExceeds(`{"a":${deep(200)},"b":{"c":${deep(60)}}}`, 256)).toBe(false);
    expect(jsonDepthExceeds(`{"a":[1],"b":{"c":${deep(255)}}}`, 256)).toBe(true);
    expect(jsonDepthExceeds(`{"s":"${'['.repeat(1000)}","t":"\\"${'{'.repeat(1000)}"}`, 256)).toBe(false);
    expect(jsonDepthExceeds(`[${Array(2000).fill('[1]').join(',')}]`, 256)).toBe(false);
  });
});
