/** The Qdrant body schemas of contracts/src/qdrant.ts: defaults, and 400 vs 422 error wording. */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  QdrantCreateCollection,
  QdrantPointInsertOperations,
  QdrantQueryRequest,
  QdrantScrollRequest,
  QdrantSearchRequest,
  QdrantUpdateOperations,
  qdrantBodyError,
  qdrantCollectionNameError,
} from '@gatehouse/contracts';

function errorOf(schema: z.ZodType, body: unknown) {
  const r = schema.safeParse(body);
  if (r.success) throw new Error('expected a parse error');
  return qdrantBodyError(r.error);
}

describe('Qdrant body schemas', () => {
  it('defaults: scroll payload on, query payload off, vectors off; with_vectors alias; null means absent', () => {
    expect(QdrantScrollRequest.parse({})).toMatchObject({ with_payload: true, with_vector: false });
    expect(QdrantQueryRequest.parse({ limit: null })).toMatchObject({ with_payload: false, with_vector: false });
    expect(QdrantScrollRequest.parse({ with_vectors: ['a'] })).toMatchObject({ with_vector: ['a'] });
    expect(QdrantScrollRequest.parse({ offset: null }).offset).toBeUndefined();
  });

  it('400 for shapes and types (serde), with the field path', () => {
    expect(errorOf(QdrantScrollRequest, { limit: -1 })).toEqual({
      status: 400,
      message: 'Format error in JSON body: limit: invalid value: integer `-1`, expected usize',
    });
    expect(errorOf(QdrantScrollRequest, { limit: 'x' })).toEqual({
      status: 400,
      message: 'Format error in JSON body: limit: invalid type: string "x", expected usize',
    });
    expect(errorOf(QdrantPointInsertOperations, { points: [{ id: 1 }] })).toEqual({
      status: 400,
      message: 'Format error in JSON body: points[0]: missing field `vector`',
    });
    expect(errorOf(QdrantCreateCollection, { vectors: { size: 4, distance: 'Dott' } }).status).toBe(400);
    expect(errorOf(QdrantSearchRequest, { limit: 3 })).toEqual({
      status: 400,
      message: 'Format error in JSON body: missing field `vector`',
    });
    expect(errorOf(QdrantUpdateOperations, { operations: [{ frob: {} }] }).message).toContain('unknown variant `frob`');
  });

  it('422 for validator rules, all issues listed', () => {
    expect(errorOf(QdrantScrollRequest, { limit: 0 })).toEqual({
      status: 422,
      message: 'Validation error in JSON body: [limit: value 0 invalid, must be 1 or larger]',
    });
    expect(
      errorOf(QdrantCreateCollection, { vectors: { a: { size: 0, distance: 'Dot' } }, hnsw_config: { ef_construct: 1 } }),
    ).toEqual({
      status: 422,
      message:
        'Validation error in JSON body: [vectors.a.size: value 0 invalid, must be from 1 to 65536; hnsw_config.ef_construct: value 1 invalid, must be 4 or larger]',
    });
    expect(errorOf(QdrantPointInsertOperations, { points: [{ id: 1, vector: { s: { indices: [1, 2], values: [1] } } }] })).toEqual({
      status: 422,
      message: 'Validation error in JSON body: [points[0].vector.?.values: Validation error: must be the same length as indices [{}]]',
    });
  });

  it('vectors: a list of finite numbers passes as it is (one loop); anything else gets the full schema\'s wording', () => {
    const v = [0.5, -0, 1e-40, 3];
    const parsed = QdrantPointInsertOperations.parse({ points: [{ id: 1, vector: v }] }) as { points: { vector: unknown }[] };
    expect(parsed.points[0]!.vector).toBe(v);
    expect(QdrantQueryRequest.parse({ query: [[1, 2], [3, 4]] }).query).toEqual([[1, 2], [3, 4]]);
    expect(errorOf(QdrantPointInsertOperations, { batch: { ids: [1], vectors: [[1, true]] } })).toEqual({
      status: 400,
      message: 'Format error in JSON body: batch.vectors[0][1]: invalid type: boolean `true`, expected f64',
    });
    expect(errorOf(QdrantQueryRequest, { query: [[1], [2, 'y']] })).toEqual({
      status: 400,
      message: 'Format error in JSON body: query[1][1]: invalid type: string "y", expected f64',
    });
    expect(errorOf(QdrantPointInsertOperations, { points: [{ id: 1, vector: [1, 'a'] }] }).message).toBe(
      'Format error in JSON body: points[0].vector: data did not match any variant of untagged enum VectorStruct',
    );
    expect(errorOf(QdrantPointInsertOperations, { points: [{ id: 1, vector: [] }] }).status).toBe(422);
    // Integers beyond 2^53 arrive as bigint from the exact parser: not an f64 here either.
    expect(errorOf(QdrantSearchRequest, { vector: [1, 2n ** 60n], limit: 1 }).status).toBe(400);
  });

  it('u64::MAX limits pass (the store clamps them)', () => {
    // biome-ignore lint/correctness/noPrecisionLoss: u64::MAX as a JSON client sends it.
    expect(QdrantQueryRequest.parse({ limit: 18446744073709551615 }).limit).toBeGreaterThan(1e19);
  });

  it('collection names', () => {
    expect(qdrantCollectionNameError('ok-name_1')).toBeNull();
    expect(qdrantCollectionNameError('a*b')).toBe('collection name cannot contain "*" char');
    expect(qdrantCollectionNameError('')).toMatch(/must be from 1 to 255 characters/);
  });
});
