/** Qdrant 1.19 REST bodies of point writes: vectors of every kind, points, batches, selectors, payload and vector updates, batch operations. */
import { z } from 'zod';
import { FORMAT, MISSING, QdrantPointIdSchema, externallyTagged, f64, formatIssue, forwardIssues, ids, json, list, map, obj, opt, payloadObject, str, uint, untagged, validationIssue, variants } from './qdrant-kit.ts';

// ------------------------------------------------------------------------------------------------
// Vectors

export const QdrantSparseVector = obj({ indices: list(uint('u32')), values: list(f64()) }).superRefine((v, ctx) => {
  // Qdrant words the nested sparse checks this way (validator's nested error display).
  if (v.indices.length !== v.values.length) validationIssue(ctx, 'Validation error: must be the same length as indices [{}]', ['values']);
  else if (new Set(v.indices).size !== v.indices.length) validationIssue(ctx, 'Validation error: must be unique [{}]', ['indices']);
});
export type QdrantSparseVector = z.output<typeof QdrantSparseVector>;

/**
 * `list(f64())`, with the common case — an array of finite numbers, a vector of hundreds — checked
 * by one plain loop (zod's per-element parse cost ~0.2 µs a number: 100–200 µs a 384-dim query);
 * anything else takes the full schema, so every error is worded and placed as before.
 */
export const numberList = () => {
  const full = list(f64());
  return z.unknown().transform((v, ctx): number[] => {
    if (Array.isArray(v)) {
      let i = 0;
      while (i < v.length && typeof v[i] === 'number' && Number.isFinite(v[i])) i++;
      if (i === v.length) return v as number[];
    }
    const parsed = full.safeParse(v);
    if (parsed.success) return parsed.data;
    forwardIssues(ctx, parsed.error);
    return z.NEVER;
  });
};
export const denseVector = () => numberList();
export const multiDenseVector = () => list(numberList());

/** A stored dense vector: Qdrant's validator refuses an empty one. */
export const storedDense = () =>
  denseVector().superRefine((v, ctx) => {
    if (v.length === 0) validationIssue(ctx, 'dense vector must not be empty');
  });

/** A stored multivector: rows non-empty and of one size (Qdrant's `MultiDenseVector` validator). */
export const storedMulti = () =>
  multiDenseVector().superRefine((v, ctx) => {
    if (v.length === 0) return validationIssue(ctx, 'multi vector must not be empty', ['data']);
    if (v.some((r) => r.length === 0)) return validationIssue(ctx, 'all vectors must be non-empty', ['data']);
    const bad = v.find((r) => r.length !== v[0]!.length);
    if (bad) validationIssue(ctx, `all vectors must have the same dimension, found vector with dimension ${bad.length}`, ['data']);
  });

/** A vector of a named-vector map: dense, sparse or multi-dense. */
/** Qdrant's inference input: a text for a built-in model (`qdrant/bm25` → a sparse vector). */
export const QdrantDocument = obj({ text: str(), model: str(), options: opt(json()) });

export const QdrantVector = untagged('Vector', [storedDense(), QdrantSparseVector, storedMulti(), QdrantDocument]);
export type QdrantVector = z.output<typeof QdrantVector>;

/** `PointStruct.vector`: the unnamed vector (dense or multi), or named vectors of any kind. */
export const QdrantVectorStruct = untagged('VectorStruct', [storedDense(), storedMulti(), map(QdrantVector)]);
export type QdrantVectorStruct = z.output<typeof QdrantVectorStruct>;

export const QdrantPointStruct = obj({
  id: QdrantPointIdSchema,
  vector: QdrantVectorStruct,
  payload: opt(payloadObject()),
});
export type QdrantPointStruct = z.output<typeof QdrantPointStruct>;

export const QdrantBatchVectorStruct = untagged('BatchVectorStruct', [
  list(denseVector()),
  map(list(QdrantVector)),
]);

export const QdrantBatch = obj({
  ids: ids(),
  vectors: QdrantBatchVectorStruct,
  payloads: opt(list(opt(payloadObject()))),
});
export type QdrantBatch = z.output<typeof QdrantBatch>;

export const shardKey = () => opt(json());

/** Upsert mode: `upsert` (default), `insert_only` (existing ids untouched), `update_only` (new ids skipped). */
export const QdrantUpdateMode = variants(['upsert', 'insert_only', 'update_only']);

export const QdrantPointInsertOperations = untagged('PointInsertOperations', [
  obj({ points: list(QdrantPointStruct), shard_key: shardKey(), update_filter: opt(json()), update_mode: opt(QdrantUpdateMode) }),
  obj({ batch: QdrantBatch, shard_key: shardKey(), update_filter: opt(json()), update_mode: opt(QdrantUpdateMode) }),
]);
export type QdrantPointInsertOperations = z.output<typeof QdrantPointInsertOperations>;

export const QdrantPointsSelector = untagged('PointsSelector', [
  obj({ points: ids(), shard_key: shardKey() }),
  obj({ filter: json().refine((v) => v !== undefined, { message: MISSING, params: FORMAT }), shard_key: shardKey() }),
]);
export type QdrantPointsSelector = z.output<typeof QdrantPointsSelector>;

/** `points` or `filter` must be given (serde-level check in Qdrant, hence 400). */
export function requireSelector(v: { points?: unknown; filter?: unknown }, ctx: z.RefinementCtx): void {
  if (v.points === undefined && v.filter === undefined) formatIssue(ctx, 'Either list of point ids or filter must be provided');
}

export const QdrantSetPayload = obj({
  payload: payloadObject(),
  points: opt(ids()),
  filter: opt(json()),
  key: opt(str()),
  shard_key: shardKey(),
}).superRefine(requireSelector);
export type QdrantSetPayload = z.output<typeof QdrantSetPayload>;

export const QdrantDeletePayload = obj({
  keys: list(str()),
  points: opt(ids()),
  filter: opt(json()),
  shard_key: shardKey(),
}).superRefine(requireSelector);
export type QdrantDeletePayload = z.output<typeof QdrantDeletePayload>;

export const QdrantPointVectors = obj({ id: QdrantPointIdSchema, vector: QdrantVectorStruct });

export const QdrantUpdateVectors = obj({
  points: list(QdrantPointVectors).superRefine((v, ctx) => {
    if (v.length === 0) validationIssue(ctx, 'must not be empty');
  }),
  update_filter: opt(json()),
  shard_key: shardKey(),
});
export type QdrantUpdateVectors = z.output<typeof QdrantUpdateVectors>;

export const QdrantDeleteVectors = obj({
  points: opt(ids()),
  filter: opt(json()),
  vector: list(str()).superRefine((v, ctx) => {
    if (v.length === 0) validationIssue(ctx, 'must specify vector names to delete');
  }),
  shard_key: shardKey(),
}).superRefine(requireSelector);
export type QdrantDeleteVectors = z.output<typeof QdrantDeleteVectors>;

export const QdrantUpdateOperation = externallyTagged('UpdateOperation', {
  upsert: QdrantPointInsertOperations,
  delete: QdrantPointsSelector,
  set_payload: QdrantSetPayload,
  overwrite_payload: QdrantSetPayload,
  delete_payload: QdrantDeletePayload,
  clear_payload: QdrantPointsSelector,
  update_vectors: QdrantUpdateVectors,
  delete_vectors: QdrantDeleteVectors,
});
export type QdrantUpdateOperation = z.output<typeof QdrantUpdateOperation>;

export const QdrantUpdateOperations = obj({ operations: list(QdrantUpdateOperation) });
export type QdrantUpdateOperations = z.output<typeof QdrantUpdateOperations>;
