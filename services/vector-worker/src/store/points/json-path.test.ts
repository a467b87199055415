import { describe, expect, it } from 'vitest';
import { excludePaths, includePaths, mergeAtPath, parseKeyPath, toJsonPathText } from './json-path.ts';

describe('key paths', () => {
  it('parses keys, [] and [n], quoted keys', () => {
    expect(parseKeyPath('a.b[].c[2]')).toEqual([{ key: 'a' }, { key: 'b' }, { all: true }, { key: 'c' }, { index: 2 }]);
    expect(parseKeyPath('a."b.c"')).toEqual([{ key: 'a' }, { key: 'b.c' }]);
    expect(() => parseKeyPath('a..b')).toThrow(/Invalid JSON path/);
    expect(() => parseKeyPath('a[x]')).toThrow(/Invalid JSON path/);
  });

  it('SQL/JSON path text quotes every key', () => {
    expect(toJsonPathText('metadata.user')).toBe('$."metadata"."user"');
    expect(toJsonPathText('a[].b')).toBe('$."a"[*]."b"');
    expect(toJsonPathText('a"')).toBe('$."a\\""');
  });
});

describe('payload selectors', () => {
  const payload = {
    country: {
      name: 'Germany',
      cities: [
        { name: 'Berlin', population: 3.7 },
        { name: 'Munich', population: 1.5 },
      ],
    },
    tags: ['a', 'b'],
  };

  it('include keeps the structure around the selected values', () => {
    expect(includePaths(payload, ['country.name', 'tags'])).toEqual({ country: { name: 'Germany' }, tags: ['a', 'b'] });
    expect(includePaths(payload, ['country.cities[].name'])).toEqual({ country: { cities: [{ name: 'Berlin' }, { name: 'Munich' }] } });
    expect(includePaths(payload, ['country.cities[1].name'])).toEqual({ country: { cities: [{ name: 'Munich' }] } });
    expect(includePaths(payload, ['missing', 'country.cities.name'])).toEqual({});
  });

  it('exclude removes paths and leaves the input untouched', () => {
    expect(excludePaths(payload, ['country.cities[].population', 'tags'])).toEqual({
      country: { name: 'Germany', cities: [{ name: 'Berlin' }, { name: 'Munich' }] },
    });
    expect(payload.tags).toEqual(['a', 'b']);
    expect(excludePaths(payload, ['tags[0]']).tags).toEqual(['b']);
  });
});

describe('set payload with key', () => {
  it('merges into the object at the path, creating it when missing', () => {
    expect(mergeAtPath({}, 'a.b', { x: 1 })).toEqual({ a: { b: { x: 1 } } });
    expect(mergeAtPath({ a: { b: { x: 1, y: 2 } } }, 'a.b', { x: 3 })).toEqual({ a: { b: { x: 3, y: 2 } } });
    expect(mergeAtPath({ a: 5 }, 'a', { x: 1 })).toEqual({ a: { x: 1 } });
    expect(mergeAtPath({ l: [{ p: 1 }, { q: 2 }] }, 'l[]', { z: 0 })).toEqual({ l: [{ p: 1, z: 0 }, { q: 2, z: 0 }] });
    expect(mergeAtPath({ l: [{ p: 1 }] }, 'l[3].x', { z: 0 })).toEqual({ l: [{ p: 1 }] });
  });

  it('replace mode (overwrite payload with key) sets the value', () => {
    expect(mergeAtPath({ a: { b: { x: 1, y: 2 } } }, 'a.b', { x: 3 }, true)).toEqual({ a: { b: { x: 3 } } });
  });
});
