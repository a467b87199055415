/** Qdrant 1.19 REST bodies of reads: retrieve, scroll, count, search, the query API, groups and the legacy recommend / discover endpoints. */
import { z } from 'zod';
import { FORMAT, MISSING, QdrantPointIdSchema, VALIDATION, bool, f64, ids, isValidationIssue, json, list, obj, opt, range, serdeType, str, uint, untagged, validationIssue, variants, withDefault } from './qdrant-kit.ts';
import { QdrantDocument, QdrantSparseVector, denseVector, multiDenseVector, shardKey } from './qdrant-points.ts';

// ------------------------------------------------------------------------------------------------
// Reads

/** `true`/`false`, a list of keys to include, `{include}` or `{exclude}` (dot paths). */
export const QdrantWithPayload = untagged('WithPayloadInterface', [
  bool(),
  list(str()),
  z.strictObject({ include: list(str()) }, { error: serdeType('a map') }),
  z.strictObject({ exclude: list(str()) }, { error: serdeType('a map') }),
]);
export type QdrantWithPayload = z.output<typeof QdrantWithPayload>;

/** `true`/`false` or a list of vector names. */
export const QdrantWithVector = untagged('WithVector', [bool(), list(str())]);
export type QdrantWithVector = z.output<typeof QdrantWithVector>;

/** `with_vector` with its alias `with_vectors` folded in. */
export function foldWithVector<T extends { with_vector?: QdrantWithVector; with_vectors?: QdrantWithVector }>(
  v: T,
): T & { with_vector: QdrantWithVector } {
  const { with_vectors, with_vector, ...rest } = v;
  return { ...rest, with_vector: with_vector ?? with_vectors ?? false } as T & { with_vector: QdrantWithVector };
}

export const limitField = () => opt(range(uint('usize'), 1));

export const QdrantSearchParams = obj({
  hnsw_ef: opt(range(uint('usize'), 1)),
  exact: opt(bool()),
  quantization: opt(json()),
  indexed_only: opt(bool()),
  acorn: opt(json()),
});
export type QdrantSearchParams = z.output<typeof QdrantSearchParams>;

export const QdrantOrderBy = untagged('OrderByInterface', [
  str(),
  obj({ key: str(), direction: opt(variants(['asc', 'desc'])), start_from: opt(json()) }),
]);

export const QdrantScrollRequest = obj({
  offset: opt(QdrantPointIdSchema),
  limit: limitField(),
  filter: opt(json()),
  with_payload: withDefault(QdrantWithPayload, true),
  with_vector: opt(QdrantWithVector),
  with_vectors: opt(QdrantWithVector),
  order_by: opt(QdrantOrderBy),
  shard_key: shardKey(),
}).transform(foldWithVector);
export type QdrantScrollRequest = z.output<typeof QdrantScrollRequest>;

export const QdrantCountRequest = obj({
  filter: opt(json()),
  exact: withDefault(bool(), true),
  shard_key: shardKey(),
});
export type QdrantCountRequest = z.output<typeof QdrantCountRequest>;

export const QdrantPointRequest = obj({
  ids: ids(),
  with_payload: withDefault(QdrantWithPayload, true),
  with_vector: opt(QdrantWithVector),
  with_vectors: opt(QdrantWithVector),
  shard_key: shardKey(),
}).transform(foldWithVector);
export type QdrantPointRequest = z.output<typeof QdrantPointRequest>;

/** Deprecated search: `vector` is the unnamed vector or `{name, vector}`. */
export const QdrantNamedVectorStruct = untagged('NamedVectorStruct', [
  denseVector(),
  obj({ name: str(), vector: denseVector() }),
  obj({ name: str(), vector: QdrantSparseVector }),
]);
export type QdrantNamedVectorStruct = z.output<typeof QdrantNamedVectorStruct>;

export const QdrantSearchRequest = obj({
  vector: QdrantNamedVectorStruct,
  filter: opt(json()),
  params: opt(QdrantSearchParams),
  limit: range(uint('usize'), 1),
  offset: opt(uint('usize')),
  with_payload: withDefault(QdrantWithPayload, false),
  with_vector: opt(QdrantWithVector),
  with_vectors: opt(QdrantWithVector),
  score_threshold: opt(f64()),
  shard_key: shardKey(),
}).transform(foldWithVector);
export type QdrantSearchRequest = z.output<typeof QdrantSearchRequest>;

export const QdrantSearchRequestBatch = obj({ searches: list(QdrantSearchRequest) });
export type QdrantSearchRequestBatch = z.output<typeof QdrantSearchRequestBatch>;

/**
 * `VectorInput`: a dense vector, a sparse vector, a multi-vector, or a point id (nearest to that
 * point's vector). Inference inputs (Document, Image, object) are not accepted.
 */
export const QdrantVectorInput = untagged('VectorInput', [
  denseVector(),
  QdrantSparseVector,
  multiDenseVector(),
  QdrantPointIdSchema,
  QdrantDocument,
]);
export type QdrantVectorInput = z.output<typeof QdrantVectorInput>;

export const QUERY_KINDS = [
  'recommend',
  'discover',
  'context',
  'order_by',
  'fusion',
  'rrf',
  'formula',
  'sample',
  'relevance_feedback',
] as const;

/** Rust's `{}` of an f32 (`-1.0`, `0.5`). */
export const rustFloat = (v: number) => (Number.isInteger(v) ? v.toFixed(1) : String(v));

/** `RecommendInput`: at least one example (a validator rule in Qdrant, hence 422). */
export const QdrantRecommendInput = obj({
  positive: opt(list(QdrantVectorInput)),
  negative: opt(list(QdrantVectorInput)),
  strategy: opt(variants(['average_vector', 'best_score', 'sum_scores'])),
}).superRefine((v, ctx) => {
  if (!v.positive?.length && !v.negative?.length) {
    validationIssue(ctx, 'At least one positive or negative vector/id must be provided', ['positives, negatives']);
  }
});

export const QdrantContextPair = obj({ positive: QdrantVectorInput, negative: QdrantVectorInput });
export const QdrantContextInput = opt(untagged('ContextInput', [QdrantContextPair, list(QdrantContextPair)]));

/** `DiscoverInput`: `context` must be present (null means none). */
/** A field that must be present (null allowed, meaning none). */
export const present = <T extends z.ZodType>(schema: T) => json().refine((v) => v !== undefined, { message: MISSING, params: FORMAT }).pipe(schema);

export const QdrantDiscoverInput = obj({ target: QdrantVectorInput, context: present(QdrantContextInput) });

export const QdrantRelevanceFeedbackInput = obj({
  target: QdrantVectorInput,
  feedback: list(obj({ example: QdrantVectorInput, score: f64() })).superRefine((v, ctx) => {
    if (v.length === 0) validationIssue(ctx, 'feedback elements must be non-empty');
  }),
  strategy: obj({
    naive: obj({ a: f64(), b: f64(), c: f64() }).superRefine((v, ctx) => {
      if (v.b < 0) validationIssue(ctx, `value ${rustFloat(v.b)} invalid, must be 0.0 or larger`, ['b']);
    }),
  }),
});

export const QdrantMmr = obj({
  diversity: opt(f64()).superRefine((v, ctx) => {
    if (v !== undefined && (v < 0 || v > 1)) validationIssue(ctx, `value ${rustFloat(v)} invalid, must be from 0.0 to 1.0`);
  }),
  candidates_limit: opt(range(uint('usize'), 0, 16384)),
});

/** Query kinds whose body the contract checks (Qdrant's validators); the others stay loose. */
export const CHECKED_KINDS: Partial<Record<(typeof QUERY_KINDS)[number], z.ZodType>> = {
  recommend: QdrantRecommendInput,
  discover: QdrantDiscoverInput,
  context: present(QdrantContextInput),
  relevance_feedback: QdrantRelevanceFeedbackInput,
};

/**
 * `QueryInterface`: a bare `VectorInput` or `{nearest: VectorInput, mmr?}`. recommend, discover,
 * context and relevance_feedback are checked as Qdrant validates them; the other kinds (order_by,
 * fusion, rrf, formula, sample) deserialize as loose objects and the store checks them.
 */
export const QdrantQueryInterface = untagged('QueryInterface', [
  QdrantVectorInput,
  obj({ nearest: QdrantVectorInput, mmr: opt(QdrantMmr) }),
  ...QUERY_KINDS.map((k) => obj({ [k]: CHECKED_KINDS[k] ?? json().refine((v) => v !== undefined, { message: MISSING, params: FORMAT }) })),
]);
export type QdrantQueryInterface = QdrantVectorInput | { nearest: QdrantVectorInput; mmr?: unknown } | Record<string, unknown>;

export const QdrantPrefetch: z.ZodType<unknown, unknown> = z.lazy(() =>
  obj({
    prefetch: opt(untagged('Prefetch', [QdrantPrefetch, list(QdrantPrefetch)])),
    query: opt(QdrantQueryInterface),
    using: opt(str()),
    filter: opt(json()),
    params: opt(QdrantSearchParams),
    score_threshold: opt(f64()),
    limit: limitField(),
    lookup_from: opt(json()),
  }),
);

/**
 * Qdrant's query bodies flatten their fields into `internal` (`QueryRequestInternal`), so its
 * validator errors name `internal.<field>`; deserialization errors do not.
 */
export function flattenedAs<T extends z.ZodType>(name: string, schema: T): z.ZodType<z.output<T>, unknown> {
  return z.unknown().transform((value, ctx): z.output<T> => {
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data as z.output<T>;
    for (const issue of parsed.error.issues) {
      const validation = isValidationIssue(issue);
      ctx.addIssue({
        code: 'custom',
        message: issue.message,
        path: validation ? [name, ...(issue.path as PropertyKey[])] : (issue.path as PropertyKey[]),
        params: validation ? VALIDATION : FORMAT,
      });
    }
    return z.NEVER;
  }) as unknown as z.ZodType<z.output<T>, unknown>;
}

export const QdrantQueryRequestFields = obj({
  prefetch: opt(untagged('Prefetch', [QdrantPrefetch, list(QdrantPrefetch)])),
  query: opt(QdrantQueryInterface),
  using: opt(str()),
  filter: opt(json()),
  params: opt(QdrantSearchParams),
  score_threshold: opt(f64()),
  limit: limitField(),
  offset: opt(uint('usize')),
  with_payload: withDefault(QdrantWithPayload, false),
  with_vector: opt(QdrantWithVector),
  with_vectors: opt(QdrantWithVector),
  lookup_from: opt(json()),
  shard_key: shardKey(),
}).transform(foldWithVector);
export const QdrantQueryRequest = flattenedAs('internal', QdrantQueryRequestFields);
export type QdrantQueryRequest = {
  prefetch?: unknown;
  query?: QdrantQueryInterface;
  using?: string;
  filter?: unknown;
  params?: QdrantSearchParams;
  score_threshold?: number;
  limit?: number;
  offset?: number;
  with_payload: QdrantWithPayload;
  with_vector: QdrantWithVector;
  lookup_from?: unknown;
  shard_key?: unknown;
};

export const QdrantQueryRequestBatch = obj({ searches: list(QdrantQueryRequest) });
export type QdrantQueryRequestBatch = { searches: QdrantQueryRequest[] };

// Groups and the legacy recommend / discover endpoints (gone from Qdrant 1.19's REST document,
// still served by its gRPC API; these are the REST shapes Qdrant had for them).

/** `with_lookup`: a collection name or `{collection, with_payload (true), with_vectors (false)}`. */
export const QdrantWithLookup = untagged('WithLookupInterface', [
  str(),
  obj({
    collection: str(),
    with_payload: opt(QdrantWithPayload),
    with_vectors: opt(QdrantWithVector),
    with_vector: opt(QdrantWithVector),
  }),
]);
export type QdrantWithLookup = z.output<typeof QdrantWithLookup>;

export const groupFields = {
  group_by: str(),
  group_size: opt(range(uint('usize'), 1)),
  limit: limitField(),
  with_lookup: opt(QdrantWithLookup),
};

export const QdrantQueryGroupsRequest = flattenedAs(
  'search_group_request',
  obj({
    prefetch: opt(untagged('Prefetch', [QdrantPrefetch, list(QdrantPrefetch)])),
    query: opt(QdrantQueryInterface),
    using: opt(str()),
    filter: opt(json()),
    params: opt(QdrantSearchParams),
    score_threshold: opt(f64()),
    with_payload: withDefault(QdrantWithPayload, false),
    with_vector: opt(QdrantWithVector),
    with_vectors: opt(QdrantWithVector),
    lookup_from: opt(json()),
    shard_key: shardKey(),
    ...groupFields,
  }).transform(foldWithVector),
);
export type QdrantQueryGroupsRequest = Omit<QdrantQueryRequest, 'offset'> & {
  group_by: string;
  group_size?: number;
  with_lookup?: QdrantWithLookup;
};

export const QdrantSearchGroupsRequest = obj({
  vector: QdrantNamedVectorStruct,
  filter: opt(json()),
  params: opt(QdrantSearchParams),
  with_payload: withDefault(QdrantWithPayload, false),
  with_vector: opt(QdrantWithVector),
  with_vectors: opt(QdrantWithVector),
  score_threshold: opt(f64()),
  shard_key: shardKey(),
  group_by: str(),
  group_size: range(uint('usize'), 1),
  limit: range(uint('usize'), 1),
  with_lookup: opt(QdrantWithLookup),
}).transform(foldWithVector);
export type QdrantSearchGroupsRequest = z.output<typeof QdrantSearchGroupsRequest>;

export const recommendFields = {
  positive: withDefault(list(QdrantVectorInput), []),
  negative: withDefault(list(QdrantVectorInput), []),
  strategy: opt(variants(['average_vector', 'best_score', 'sum_scores'])),
  filter: opt(json()),
  params: opt(QdrantSearchParams),
  with_payload: withDefault(QdrantWithPayload, false),
  with_vector: opt(QdrantWithVector),
  with_vectors: opt(QdrantWithVector),
  score_threshold: opt(f64()),
  using: opt(str()),
  lookup_from: opt(json()),
  shard_key: shardKey(),
};

export const QdrantRecommendRequest = obj({
  ...recommendFields,
  limit: range(uint('usize'), 1),
  offset: opt(uint('usize')),
}).transform(foldWithVector);
export type QdrantRecommendRequest = z.output<typeof QdrantRecommendRequest>;

export const QdrantRecommendRequestBatch = obj({ searches: list(QdrantRecommendRequest) });

export const QdrantRecommendGroupsRequest = obj({
  ...recommendFields,
  group_by: str(),
  group_size: range(uint('usize'), 1),
  limit: range(uint('usize'), 1),
  with_lookup: opt(QdrantWithLookup),
}).transform(foldWithVector);
export type QdrantRecommendGroupsRequest = z.output<typeof QdrantRecommendGroupsRequest>;

export const QdrantDiscoverRequest = obj({
  target: opt(QdrantVectorInput),
  context: opt(list(obj({ positive: QdrantVectorInput, negative: QdrantVectorInput }))),
  filter: opt(json()),
  params: opt(QdrantSearchParams),
  limit: range(uint('usize'), 1),
  offset: opt(uint('usize')),
  with_payload: withDefault(QdrantWithPayload, false),
  with_vector: opt(QdrantWithVector),
  with_vectors: opt(QdrantWithVector),
  using: opt(str()),
  lookup_from: opt(json()),
  shard_key: shardKey(),
}).transform(foldWithVector);
export type QdrantDiscoverRequest = z.output<typeof QdrantDiscoverRequest>;

export const QdrantDiscoverRequestBatch = obj({ searches: list(QdrantDiscoverRequest) });
