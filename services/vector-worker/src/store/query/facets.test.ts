import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { f32 } from './matrix.ts';
import { basicCollectionSetup, openTestStore, qdrantError, type TestStore } from '../test-support.ts';

let t: TestStore;
beforeAll(async () => {
  t = await openTestStore('facet');
  await basicCollectionSetup(t.store, 'f');
  const u1 = 'a64a8051-3ee7-4881-8bc6-691d25c70d54';
  const u2 = '7CB46FB3E348476293AD7FB983D2B85E'; // dashless upper case: counted in canonical form
  await t.store.upsertPoints(
    'f',
    {
      points: [
        { id: 100, vector: {}, payload: { integer: 3, uuid: u1, boolean: true } },
        { id: 101, vector: {}, payload: { integer: [3, 3, 1], uuid: u1, boolean: true } },
        { id: 102, vector: {}, payload: { integer: 2.5, uuid: u2, boolean: false } },
        { id: 103, vector: {}, payload: { integer: '3', uuid: 'not-a-uuid', boolean: 'true' } },
      ],
    },
    { wait: true },
  );
  for (const [field_name, field_schema] of [
    ['city', 'keyword'],
    ['integer', 'integer'],
    ['uuid', 'uuid'],
    ['boolean', 'bool'],
  ]) {
    await t.store.createFieldIndex('f', { field_name, field_schema }, { wait: true });
  }
});
afterAll(async () => {
  await t.close();
});

describe('facets (test_facets.py)', () => {
  it('counts each point once per value, by count then value', async () => {
    expect(await t.store.facet('f', { key: 'city' })).toEqual({
      hits: [
        { value: 'Berlin', count: 3 },
        { value: 'London', count: 2 },
        { value: 'Moscow', count: 2 },
      ],
    });
    expect(await t.store.facet('f', { key: 'city', limit: 1 })).toEqual({ hits: [{ value: 'Berlin', count: 3 }] });
  });

  it('keeps only values of the index type (integers, canonical uuids, booleans)', async () => {
    expect(await t.store.facet('f', { key: 'integer' })).toEqual({
      hits: [
        { value: 3, count: 2 },
        { value: 1, count: 1 },
      ],
    });
    expect(await t.store.facet('f', { key: 'uuid' })).toEqual({
      hits: [
        { value: 'a64a8051-3ee7-4881-8bc6-691d25c70d54', count: 2 },
        { value: '7cb46fb3-e348-4762-93ad-7fb983d2b85e', count: 1 },
      ],
    });
    expect(await t.store.facet('f', { key: 'boolean' })).toEqual({
      hits: [
        { value: true, count: 2 },
        { value: false, count: 1 },
      ],
    });
  });

  it('applies the filter', async () => {
    const r = await t.store.facet('f', { key: 'city', filter: { must: [{ key: 'price', range: { gte: 10 } }] } });
    expect(r).toEqual({
      hits: [
        { value: 'Berlin', count: 2 },
        { value: 'London', count: 1 },
      ],
    });
  });

  it('needs a facet-capable index on the key', async () => {
    const err = await qdrantError(t.store.facet('f', { key: 'price' }));
    expect(err.status).toBe(400);
    expect(err.message).toBe(
      'Bad request: Index required but not found for "price" of one of the following types: [keyword, integer, uuid, bool]. Help: Create an index for this key or use a different filter.',
    );
    const bad = await qdrantError(t.store.facet('f', { key: 'city', limit: 0 }));
    expect(bad.status).toBe(422);
  });
});

describe('distance matrix (test_distance_matrix.py)', () => {
  it('pairs: each sampled point with its nearest others, Qdrant\'s f32 scores', async () => {
    const r = await t.store.matrixPairs('f', { sample: 10, limit: 2 });
    expect(r.pairs.slice(0, 4)).toEqual([
      { a: 1, b: 3, score: 1.4063001 },
      { a: 1, b: 4, score: 1.2531 },
      { a: 2, b: 1, score: 1.1550001 },
      { a: 2, b: 8, score: 1.1359 },
    ]);
    expect(r.pairs).toHaveLength(16);
  });

  it('offsets: the same matrix as indices into ids', async () => {
    const r = await t.store.matrixOffsets('f', { sample: 10, limit: 2, filter: { must: [{ has_id: [1, 2, 3] }] } });
    expect(r).toEqual({
      ids: [1, 2, 3],
      offsets_row: [0, 0, 1, 1, 2, 2],
      offsets_col: [2, 1, 0, 2, 0, 1],
      scores: [1.4063001, 1.1550001, 1.1550001, 0.9698, 1.4063001, 0.9698],
    });
  });

  it('sparse vectors: dot product over shared indices', async () => {
    await t.store.upsertPoints('f', { points: [{ id: 200, vector: { 'sparse-text': { indices: [2, 66], values: [1, 2] } } }] }, { wait: true });
    // 9: {66: 0.5, 12: 0.5}; 10: {1: 0.1, 2: 0.2, 3: 0.3}; 200: {2: 1, 66: 2}
    expect(await t.store.matrixPairs('f', { using: 'sparse-text', limit: 1 })).toEqual({
      pairs: [
        { a: 9, b: 200, score: 1 },
        { a: 10, b: 200, score: 0.2 },
        { a: 200, b: 9, score: 1 },
      ],
    });
    await t.store.deletePoints('f', { points: [200] }, { wait: true });
  });

  it('refuses an unknown vector name and a sample below 2', async () => {
    const err = await qdrantError(t.store.matrixPairs('f', { using: 'nope' }));
    expect([err.status, err.message]).toEqual([400, 'Wrong input: Not existing vector name error: nope']);
    expect((await qdrantError(t.store.matrixPairs('f', { sample: 1 }))).status).toBe(422);

  });

  it('f32 prints the shortest decimal of the f32', () => {
    expect(f32(1.4063000679016113)).toBe(1.4063001);
    expect(f32(0.1 + 0.2)).toBe(0.3);
    expect(f32(0)).toBe(0);
  });
});
