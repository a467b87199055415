import { z } from 'zod';

/*
 * Qdrant 1.19 REST request bodies (reference: ../shared/reference/qdrant-api.md §1.5–1.6).
 *
 * The edge validates bodies with these schemas and the vector worker parses them again to apply
 * the defaults. Objects are loose (unknown fields pass, as serde ignores them), types are strict.
 * Optional fields also accept `null` (serde's `Option`), which means "absent".
 *
 * Qdrant answers two kinds of body errors (reference §1.3), and the issues here carry which:
 * - the body does not deserialize (wrong type, missing field, negative u64, unknown enum
 *   variant): 400 `Format error in JSON body: <field>: <serde-style message>`;
 * - it deserializes but breaks a validator rule (`limit: 0`, `size: 0`, `ef_construct: 0`):
 *   422 `Validation error in JSON body: [<field>: <message>; …]`.
 * `qdrantBodyError(error)` turns a ZodError from these schemas into that status and message.
 *
 * Untagged unions (`VectorStruct`, `PointInsertOperations`, `WithPayloadInterface`, …) follow
 * serde: the first variant whose shape matches wins and its validator errors are reported; when
 * none matches, `data did not match any variant of untagged enum <Name>`.
 */

// ------------------------------------------------------------------------------------------------
// Issue kinds and serde-style messages

const FORMAT = { qdrant: 'format' } as const;
const VALIDATION = { qdrant: 'validation' } as const;
/** Message of an issue for an absent required field; qdrantBodyError names the field. */
const MISSING = 'missing field';

type RawIssue = { input?: unknown };

/** serde's `Unexpected` description of a JSON value. */
function unexpected(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return `boolean \`${v}\``;
  if (typeof v === 'number') return Number.isInteger(v) ? `integer \`${v}\`` : `floating point \`${v}\``;
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  if (Array.isArray(v)) return 'a sequence';
  return 'a map';
}

const serdeType =
  (expected: string) =>
  (iss: RawIssue): string =>
    iss.input === undefined ? MISSING : `invalid type: ${unexpected(iss.input)}, expected ${expected}`;

function formatIssue(ctx: z.RefinementCtx, message: string): void {
  ctx.addIssue({ code: 'custom', message, params: FORMAT });
}
function validationIssue(ctx: z.RefinementCtx, message: string, path?: PropertyKey[]): void {
  ctx.addIssue({ code: 'custom', message, params: VALIDATION, ...(path ? { path } : {}) });
}

function isValidationIssue(issue: z.core.$ZodIssue): boolean {
  if (issue.code === 'custom') return (issue.params as { qdrant?: string } | undefined)?.qdrant === 'validation';
  return issue.code === 'too_small' || issue.code === 'too_big';
}

/** Copy a nested parse's issues into the current context (paths stay relative). */
function forwardIssues(ctx: z.RefinementCtx, error: z.ZodError): void {
  for (const issue of error.issues) {
    ctx.addIssue({
      code: 'custom',
      message: issue.message,
      path: issue.path as PropertyKey[],
      params: isValidationIssue(issue) ? VALIDATION : FORMAT,
    });
  }
}

// ------------------------------------------------------------------------------------------------
// Building blocks

const str = () => z.string({ error: serdeType('a string') });
const bool = () => z.boolean({ error: serdeType('a boolean') });
const f64 = () => z.number({ error: serdeType('f64') });
const obj = <S extends z.ZodRawShape>(shape: S) => z.looseObject(shape, { error: serdeType('a map') });
const list = <T extends z.ZodType>(item: T) => z.array(item, { error: serdeType('a sequence') });
const map = <T extends z.ZodType>(value: T) => z.record(z.string(), value, { error: serdeType('a map') });
const json = () => z.unknown();
const payloadObject = () => z.record(z.string(), z.unknown(), { error: serdeType('a map') });

/**
 * An unsigned integer. Above 2^53 it is read as the nearest double, so u64::MAX (which rounds to
 * 2^64) is accepted; callers clamp it.
 */
const uint = (expected = 'u64') =>
  // The vector face parses integers above 2^53 exactly (a BigInt, for point ids); a count or a
  // limit that large means "no limit" to every caller here, so it is read as the nearest double.
  z.preprocess(
    (v) => (typeof v === 'bigint' ? Number(v) : v),
    z.number({ error: serdeType(expected) }).superRefine((v, ctx) => {
      if (!Number.isInteger(v)) formatIssue(ctx, `invalid type: floating point \`${v}\`, expected ${expected}`);
      else if (v < 0 || v > 2 ** 64) formatIssue(ctx, `invalid value: integer \`${v}\`, expected ${expected}`);
    }),
  );

/** validator's `range(min = …)` / `range(min, max)` on a number. */
function range<T extends z.ZodType<number, unknown>>(schema: T, min: number, max?: number) {
  return schema.superRefine((v, ctx) => {
    if (max === undefined) {
      if (v < min) validationIssue(ctx, `value ${v} invalid, must be ${min} or larger`);
    } else if (v < min || v > max) validationIssue(ctx, `value ${v} invalid, must be from ${min} to ${max}`);
  });
}

/** Optional field: absent or `null` → `undefined`. */
const opt = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? undefined);
/** Optional field with a default for absent or `null`. */
const withDefault = <T extends z.ZodType>(schema: T, dflt: z.output<T>) =>
  schema.nullish().transform((v): z.output<T> => v ?? dflt);

/** A string enum with serde's unknown-variant message. */
function variants<const T extends readonly [string, ...string[]]>(values: T) {
  const expected = values.map((v) => `\`${v}\``).join(', ');
  return z.enum(values, {
    error: (iss: RawIssue) =>
      iss.input === undefined
        ? MISSING
        : typeof iss.input === 'string'
          ? `unknown variant \`${iss.input}\`, expected one of ${expected}`
          : `invalid type: ${unexpected(iss.input)}, expected a string`,
  });
}

/** serde `#[serde(untagged)]`: the first variant that deserializes wins (see the module comment). */
function untagged<const T extends readonly z.ZodType[]>(name: string, options: T): z.ZodType<z.output<T[number]>, unknown> {
  return z.unknown().transform((value, ctx): z.output<T[number]> => {
    let matched: z.ZodError | undefined;
    const failures: z.ZodError[] = [];
    for (const option of options) {
      const parsed = option.safeParse(value);
      if (parsed.success) return parsed.data as z.output<T[number]>;
      if (!matched && parsed.error.issues.every(isValidationIssue)) matched = parsed.error;
      failures.push(parsed.error);
    }
    if (matched) forwardIssues(ctx, matched);
    else if (value === undefined) formatIssue(ctx, MISSING);
    else {
      // serde only says "did not match"; when one variant clearly got further than the others
      // (e.g. `points[0].id` is bad, while the `batch` variant misses its key), name that error.
      const closest = furthest(failures);
      if (closest) forwardIssues(ctx, closest);
      else formatIssue(ctx, `data did not match any variant of untagged enum ${name}`);
    }
    return z.NEVER;
  }) as unknown as z.ZodType<z.output<T[number]>, unknown>;
}

/** How deep into the value a failed parse got (a missing field's own key does not count). */
function depth(error: z.ZodError): number {
  return Math.max(...error.issues.map((i) => i.path.length - (i.message === MISSING ? 1 : 0)));
}

/** The single failure that got strictly deeper than every other, if any (and past the top level). */
function furthest(failures: z.ZodError[]): z.ZodError | undefined {
  const depths = failures.map(depth);
  const best = Math.max(...depths);
  if (best <= 0 || depths.filter((d) => d === best).length !== 1) return undefined;
  return failures[depths.indexOf(best)];
}

/** serde's default externally tagged enum: `{"<variant>": value}` with exactly one key. */
function externallyTagged<M extends Record<string, z.ZodType>>(
  name: string,
  schemas: M,
): z.ZodType<{ [K in keyof M]: { [P in K]: z.output<M[K]> } }[keyof M], unknown> {
  const tags = Object.keys(schemas);
  const expected = tags.map((t) => `\`${t}\``).join(', ');
  return z.unknown().transform((value, ctx) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      formatIssue(ctx, value === undefined ? MISSING : `invalid type: ${unexpected(value)}, expected enum ${name}`);
      return z.NEVER;
    }
    const keys = Object.keys(value);
    const tag = keys[0];
    if (keys.length !== 1 || tag === undefined) {
      formatIssue(ctx, `invalid type: map, expected map with a single key`);
      return z.NEVER;
    }
    const schema = schemas[tag];
    if (!schema) {
      formatIssue(ctx, `unknown variant \`${tag}\`, expected one of ${expected}`);
      return z.NEVER;
    }
    const parsed = schema.safeParse((value as Record<string, unknown>)[tag]);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        ctx.addIssue({
          code: 'custom',
          message: issue.message,
          path: [tag, ...(issue.path as PropertyKey[])],
          params: isValidationIssue(issue) ? VALIDATION : FORMAT,
        });
      }
      return z.NEVER;
    }
    return { [tag]: parsed.data };
  }) as never;
}

// ------------------------------------------------------------------------------------------------
// Point ids

const UUID_SIMPLE = /^[0-9a-fA-F]{32}$/;
const UUID_HYPHENATED = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Whether `s` is a UUID in a form the Rust `uuid` crate parses (simple, hyphenated, braced, urn). */
export function isQdrantUuid(s: string): boolean {
  if (s.length === 32) return UUID_SIMPLE.test(s);
  if (s.length === 36) return UUID_HYPHENATED.test(s);
  if (s.length === 38 && s.startsWith('{') && s.endsWith('}')) return UUID_HYPHENATED.test(s.slice(1, -1));
  if (s.length === 45 && s.startsWith('urn:uuid:')) return UUID_HYPHENATED.test(s.slice(9));
  return false;
}

/**
 * Qdrant `ExtendedPointId` on the wire: an unsigned integer or a UUID string. A u64 beyond 2^53
 * is a `bigint` (the vector face and the bus parse JSON exactly: common/src/exact-json.ts).
 */
export type QdrantPointId = number | bigint | string;

const U64_MAX = 18446744073709551615n;

function isPointId(v: unknown): v is QdrantPointId {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v <= 2 ** 64;
  if (typeof v === 'bigint') return v >= 0n && v <= U64_MAX;
  return typeof v === 'string' && isQdrantUuid(v);
}

export const QdrantPointIdSchema: z.ZodType<QdrantPointId, unknown> = z.unknown().transform((v, ctx) => {
  if (isPointId(v)) return v;
  formatIssue(
    ctx,
    v === undefined
      ? MISSING
      : `value ${typeof v === 'string' || typeof v === 'bigint' ? String(v) : JSON.stringify(v)} is not a valid point ID, valid values are either an unsigned integer or a UUID`,
  );
  return z.NEVER;
}) as unknown as z.ZodType<QdrantPointId, unknown>;

const ids = () => list(QdrantPointIdSchema);

// ------------------------------------------------------------------------------------------------
// Collections

export const QdrantDistance = variants(['Cosine', 'Euclid', 'Dot', 'Manhattan']);
export type QdrantDistance = z.output<typeof QdrantDistance>;

/** Memory placement of a component's data (`cold`, `cached`, `pinned`). */
export const QdrantMemory = variants(['cold', 'cached', 'pinned']);
/** Placement of a storage that has no heap variant: `pinned` is refused (422). */
const storageMemory = (what: string) =>
  QdrantMemory.superRefine((v, ctx) => {
    if (v === 'pinned') validationIssue(ctx, `\`pinned\` is not supported for ${what} storage`);
  });
/** `payload` of a collection: where its payload storage lives. */
const QdrantPayloadStorageParams = obj({ memory: opt(storageMemory('payload')) });

export const QdrantHnswConfigDiff = obj({
  m: opt(uint()),
  ef_construct: opt(range(uint(), 4)),
  full_scan_threshold: opt(range(uint(), 10)),
  max_indexing_threads: opt(uint()),
  on_disk: opt(bool()),
  payload_m: opt(uint()),
  memory: opt(QdrantMemory),
});
export type QdrantHnswConfigDiff = z.output<typeof QdrantHnswConfigDiff>;

export const QdrantWalConfigDiff = obj({
  wal_capacity_mb: opt(range(uint(), 1)),
  wal_segments_ahead: opt(uint()),
});

export const QdrantOptimizersConfigDiff = obj({
  deleted_threshold: opt(range(f64(), 0, 1)),
  vacuum_min_vector_number: opt(range(uint(), 100)),
  default_segment_number: opt(uint()),
  max_segment_size: opt(uint()),
  memmap_threshold: opt(uint()),
  indexing_threshold: opt(uint()),
  flush_interval_sec: opt(uint()),
  max_optimization_threads: opt(json()),
});

export const QdrantVectorParams = obj({
  size: range(uint(), 1, 65536),
  distance: QdrantDistance,
  hnsw_config: opt(QdrantHnswConfigDiff),
  quantization_config: opt(json()),
  on_disk: opt(bool()),
  datatype: opt(variants(['float32', 'uint8', 'float16', 'turbo4'])),
  multivector_config: opt(json()),
  memory: opt(storageMemory('dense vector')),
});
export type QdrantVectorParams = z.output<typeof QdrantVectorParams>;

/** One unnamed vector (stored under the name `""`) or named vectors. */
export const QdrantVectorsConfig = untagged('VectorsConfig', [QdrantVectorParams, map(QdrantVectorParams)]);
export type QdrantVectorsConfig = z.output<typeof QdrantVectorsConfig>;

export const QdrantSparseVectorParams = obj({
  index: opt(json()),
  modifier: opt(variants(['idf', 'none'])),
});

/** `PUT /collections/{name}/vectors/{vector}`: a new dense or sparse vector on a collection. */
export const QdrantVectorNameConfig = untagged('VectorNameConfig', [
  obj({ dense: QdrantVectorParams }),
  obj({ sparse: QdrantSparseVectorParams }),
]);
export type QdrantVectorNameConfig = z.output<typeof QdrantVectorNameConfig>;

/** Strict mode (Qdrant's StrictModeConfig): every limit optional; the store checks them (strict-mode.ts). */
export const QdrantStrictModeConfig = obj({
  enabled: opt(bool()),
  max_query_limit: opt(range(uint('usize'), 1)),
  max_timeout: opt(range(uint('usize'), 1)),
  unindexed_filtering_retrieve: opt(bool()),
  unindexed_filtering_update: opt(bool()),
  search_max_hnsw_ef: opt(uint('usize')),
  search_allow_exact: opt(bool()),
  search_max_oversampling: opt(f64()),
  upsert_max_batchsize: opt(uint('usize')),
  search_max_batchsize: opt(uint('usize')),
  max_collection_vector_size_bytes: opt(uint('usize')),
  read_rate_limit: opt(range(uint('usize'), 1)),
  write_rate_limit: opt(range(uint('usize'), 1)),
  max_collection_payload_size_bytes: opt(uint('usize')),
  max_points_count: opt(range(uint('usize'), 1)),
  filter_max_conditions: opt(uint('usize')),
  condition_max_size: opt(uint('usize')),
  max_payload_index_count: opt(uint('usize')),
  multivector_config: opt(map(obj({ max_vectors: opt(range(uint('usize'), 1)) }))),
  sparse_config: opt(map(obj({ max_length: opt(range(uint('usize'), 1)) }))),
});

export const QdrantCreateCollection = obj({
  vectors: opt(QdrantVectorsConfig),
  shard_number: opt(range(uint('u32'), 1)),
  sharding_method: opt(variants(['auto', 'custom'])),
  replication_factor: opt(range(uint('u32'), 1)),
  write_consistency_factor: opt(range(uint('u32'), 1)),
  on_disk_payload: opt(bool()),
  hnsw_config: opt(QdrantHnswConfigDiff),
  wal_config: opt(QdrantWalConfigDiff),
  optimizers_config: opt(QdrantOptimizersConfigDiff),
  quantization_config: opt(json()),
  sparse_vectors: opt(map(QdrantSparseVectorParams)),
  strict_mode_config: opt(QdrantStrictModeConfig),
  metadata: opt(payloadObject()),
  payload: opt(QdrantPayloadStorageParams),
});
export type QdrantCreateCollection = z.output<typeof QdrantCreateCollection>;

export const QdrantVectorParamsDiff = obj({
  hnsw_config: opt(QdrantHnswConfigDiff),
  quantization_config: opt(json()),
  on_disk: opt(bool()),
  memory: opt(storageMemory('dense vector')),
});

export const QdrantUpdateCollection = obj({
  vectors: opt(map(QdrantVectorParamsDiff)),
  optimizers_config: opt(QdrantOptimizersConfigDiff),
  params: opt(
    obj({
      replication_factor: opt(range(uint('u32'), 1)),
      write_consistency_factor: opt(range(uint('u32'), 1)),
      read_fan_out_factor: opt(uint('u32')),
      on_disk_payload: opt(bool()),
      payload: opt(QdrantPayloadStorageParams),
    }),
  ),
  hnsw_config: opt(QdrantHnswConfigDiff),
  quantization_config: opt(json()),
  sparse_vectors: opt(map(QdrantSparseVectorParams)),
  strict_mode_config: opt(QdrantStrictModeConfig),
  metadata: opt(payloadObject()),
});
export type QdrantUpdateCollection = z.output<typeof QdrantUpdateCollection>;

export const QDRANT_PAYLOAD_SCHEMA_TYPES = ['keyword', 'integer', 'float', 'geo', 'text', 'bool', 'datetime', 'uuid'] as const;
export type QdrantPayloadSchemaType = (typeof QDRANT_PAYLOAD_SCHEMA_TYPES)[number];

/** `"keyword"` or `{"type": "text", "tokenizer": …, …}`. */
export const QdrantPayloadFieldSchema = untagged('PayloadFieldSchema', [
  variants(QDRANT_PAYLOAD_SCHEMA_TYPES),
  obj({ type: variants(QDRANT_PAYLOAD_SCHEMA_TYPES) }),
]);
export type QdrantPayloadFieldSchema = z.output<typeof QdrantPayloadFieldSchema>;

export const QdrantCreateFieldIndex = obj({
  field_name: str(),
  field_schema: opt(QdrantPayloadFieldSchema),
});
export type QdrantCreateFieldIndex = z.output<typeof QdrantCreateFieldIndex>;

/**
 * Collection name rule (`StrictCollectionPath`): 1..=255 characters, none of
 * `< > : " / \ | ? * \0 \x1F`. Returns the validator message, or null when the name is fine.
 * The edge answers 422 `Validation error in path parameters: [name: <message>]`.
 */
export function qdrantCollectionNameError(name: string): string | null {
  const length = [...name].length;
  if (length < 1 || length > 255) return `value ${name} invalid, must be from 1 to 255 characters`;
  for (const c of ['<', '>', ':', '"', '/', '\\', '|', '?', '*', '\0', '\u001f']) {
    if (name.includes(c)) return `collection name cannot contain "${c}" char`;
  }
  return null;
}

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
const numberList = () => {
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
const denseVector = () => numberList();
const multiDenseVector = () => list(numberList());

/** A stored dense vector: Qdrant's validator refuses an empty one. */
const storedDense = () =>
  denseVector().superRefine((v, ctx) => {
    if (v.length === 0) validationIssue(ctx, 'dense vector must not be empty');
  });

/** A stored multivector: rows non-empty and of one size (Qdrant's `MultiDenseVector` validator). */
const storedMulti = () =>
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

const shardKey = () => opt(json());

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
function requireSelector(v: { points?: unknown; filter?: unknown }, ctx: z.RefinementCtx): void {
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
function foldWithVector<T extends { with_vector?: QdrantWithVector; with_vectors?: QdrantWithVector }>(
  v: T,
): T & { with_vector: QdrantWithVector } {
  const { with_vectors, with_vector, ...rest } = v;
  return { ...rest, with_vector: with_vector ?? with_vectors ?? false } as T & { with_vector: QdrantWithVector };
}

const limitField = () => opt(range(uint('usize'), 1));

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

const QUERY_KINDS = [
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
const rustFloat = (v: number) => (Number.isInteger(v) ? v.toFixed(1) : String(v));

/** `RecommendInput`: at least one example (a validator rule in Qdrant, hence 422). */
const QdrantRecommendInput = obj({
  positive: opt(list(QdrantVectorInput)),
  negative: opt(list(QdrantVectorInput)),
  strategy: opt(variants(['average_vector', 'best_score', 'sum_scores'])),
}).superRefine((v, ctx) => {
  if (!v.positive?.length && !v.negative?.length) {
    validationIssue(ctx, 'At least one positive or negative vector/id must be provided', ['positives, negatives']);
  }
});

const QdrantContextPair = obj({ positive: QdrantVectorInput, negative: QdrantVectorInput });
const QdrantContextInput = opt(untagged('ContextInput', [QdrantContextPair, list(QdrantContextPair)]));

/** `DiscoverInput`: `context` must be present (null means none). */
/** A field that must be present (null allowed, meaning none). */
const present = <T extends z.ZodType>(schema: T) => json().refine((v) => v !== undefined, { message: MISSING, params: FORMAT }).pipe(schema);

const QdrantDiscoverInput = obj({ target: QdrantVectorInput, context: present(QdrantContextInput) });

const QdrantRelevanceFeedbackInput = obj({
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

const QdrantMmr = obj({
  diversity: opt(f64()).superRefine((v, ctx) => {
    if (v !== undefined && (v < 0 || v > 1)) validationIssue(ctx, `value ${rustFloat(v)} invalid, must be from 0.0 to 1.0`);
  }),
  candidates_limit: opt(range(uint('usize'), 0, 16384)),
});

/** Query kinds whose body the contract checks (Qdrant's validators); the others stay loose. */
const CHECKED_KINDS: Partial<Record<(typeof QUERY_KINDS)[number], z.ZodType>> = {
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
function flattenedAs<T extends z.ZodType>(name: string, schema: T): z.ZodType<z.output<T>, unknown> {
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

const QdrantQueryRequestFields = obj({
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

const groupFields = {
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

const recommendFields = {
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

// ------------------------------------------------------------------------------------------------
// Results (the `result` of the envelope)
//
// The reply schemas of the vector catalog (vector.ts): the edge checks every worker reply against
// them. They check the shape Qdrant's clients rely on and pass the rest through: objects are loose
// (a field the store adds is kept), and what the client owns (payloads, vectors, metadata) is not
// walked, so a large reply costs no per-value checks and no key of it is lost in a copy.

/** A JSON object passed through as it is (checked, not copied). */
const jsonObject = () =>
  z.custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v));
const pointIdOut = () => z.union([z.number(), z.bigint(), z.string()]);

export const QdrantUpdateStatus = z.enum(['acknowledged', 'completed', 'wait_timeout']);
export type QdrantUpdateStatus = z.output<typeof QdrantUpdateStatus>;
export const QdrantUpdateResult = z.looseObject({ operation_id: z.number().nullable(), status: QdrantUpdateStatus });
export type QdrantUpdateResult = z.output<typeof QdrantUpdateResult>;

/** A dense vector, a sparse vector, or (named collections, or when sparse vectors exist) a map of them. */
export type QdrantVectorOutput = number[] | { [name: string]: number[] | QdrantSparseVector };
/** Typed, not re-checked: the store built it from validated input. */
const vectorOut = () => z.custom<QdrantVectorOutput>((v) => typeof v === 'object' && v !== null);

export const QdrantRecord = z.looseObject({
  id: pointIdOut(),
  payload: jsonObject().optional(),
  vector: vectorOut().optional(),
});
export type QdrantRecord = z.output<typeof QdrantRecord>;

export const QdrantScoredPoint = z.looseObject({
  id: pointIdOut(),
  version: z.number(),
  score: z.number(),
  payload: jsonObject().optional(),
  vector: vectorOut().optional(),
});
export type QdrantScoredPoint = z.output<typeof QdrantScoredPoint>;

export const QdrantScrollResult = z.looseObject({ points: z.array(QdrantRecord), next_page_offset: pointIdOut().nullable() });
export type QdrantScrollResult = z.output<typeof QdrantScrollResult>;
export const QdrantCountResult = z.looseObject({ count: z.number() });
export type QdrantCountResult = z.output<typeof QdrantCountResult>;
export const QdrantQueryResponse = z.looseObject({ points: z.array(QdrantScoredPoint) });
export type QdrantQueryResponse = z.output<typeof QdrantQueryResponse>;
export const QdrantGroupsResult = z.looseObject({
  groups: z.array(z.looseObject({ id: z.union([z.string(), z.number(), z.bigint()]), hits: z.array(QdrantScoredPoint), lookup: QdrantRecord.optional() })),
});
export type QdrantGroupsResult = z.output<typeof QdrantGroupsResult>;
export const QdrantCollectionsResponse = z.looseObject({ collections: z.array(z.looseObject({ name: z.string() })) });
export type QdrantCollectionsResponse = z.output<typeof QdrantCollectionsResponse>;
/** `GET /collections/{name}/optimizations` (`queued`, `completed`, `idle_segments` on request). */
export const QdrantOptimizationsResponse = z.looseObject({
  summary: z.looseObject({ queued_optimizations: z.number(), queued_segments: z.number(), queued_points: z.number(), idle_segments: z.number() }),
  running: z.array(jsonObject()),
  queued: z.array(jsonObject()).optional(),
  completed: z.array(jsonObject()).optional(),
  idle_segments: z.array(z.looseObject({ uuid: z.string(), points_count: z.number() })).optional(),
});
export type QdrantOptimizationsResponse = z.output<typeof QdrantOptimizationsResponse>;
export const QdrantCollectionExistence = z.looseObject({ exists: z.boolean() });
export type QdrantCollectionExistence = z.output<typeof QdrantCollectionExistence>;

export type QdrantVectorParamsOutput = {
  size: number;
  distance: QdrantDistance;
  hnsw_config?: Record<string, unknown>;
  quantization_config?: unknown;
  on_disk?: boolean;
  datatype?: string;
  multivector_config?: unknown;
  memory?: string;
};

export type QdrantCollectionParams = {
  vectors: QdrantVectorParamsOutput | Record<string, QdrantVectorParamsOutput>;
  shard_number: number;
  sharding_method?: string;
  replication_factor: number;
  write_consistency_factor: number;
  read_fan_out_factor?: number;
  on_disk_payload: boolean;
  sparse_vectors?: Record<string, Record<string, unknown>>;
  payload?: { memory?: string };
};

export type QdrantHnswConfig = {
  m: number;
  ef_construct: number;
  full_scan_threshold: number;
  max_indexing_threads: number;
  on_disk: boolean;
  payload_m?: number;
};

export type QdrantOptimizersConfig = {
  deleted_threshold: number;
  vacuum_min_vector_number: number;
  default_segment_number: number;
  max_segment_size: number | null;
  memmap_threshold: number | null;
  indexing_threshold: number | null;
  flush_interval_sec: number;
  max_optimization_threads: unknown;
};

export type QdrantCollectionConfig = {
  params: QdrantCollectionParams;
  hnsw_config: QdrantHnswConfig;
  optimizer_config: QdrantOptimizersConfig;
  wal_config: { wal_capacity_mb: number; wal_segments_ahead: number };
  quantization_config: unknown;
  strict_mode_config?: unknown;
  metadata?: Record<string, unknown>;
};

export type QdrantPayloadIndexInfo = {
  data_type: QdrantPayloadSchemaType;
  params?: Record<string, unknown>;
  points: number;
};

/**
 * `GET /collections/{name}`: the top level is checked; the config's sections pass through (their
 * exact shape is the type below, which the store is held to at compile time).
 */
export const QdrantCollectionInfo = z.looseObject({
  status: z.enum(['green', 'yellow', 'grey', 'red']),
  optimizer_status: z.union([z.literal('ok'), z.looseObject({ error: z.string() })]),
  indexed_vectors_count: z.number(),
  points_count: z.number(),
  segments_count: z.number(),
  config: z.looseObject({
    params: jsonObject(),
    hnsw_config: jsonObject(),
    optimizer_config: jsonObject(),
    wal_config: jsonObject(),
  }),
  payload_schema: jsonObject(),
});
export type QdrantCollectionInfo = {
  status: 'green' | 'yellow' | 'grey' | 'red';
  optimizer_status: 'ok' | { error: string };
  indexed_vectors_count: number;
  points_count: number;
  segments_count: number;
  config: QdrantCollectionConfig;
  payload_schema: Record<string, QdrantPayloadIndexInfo>;
  /** Settings accepted but without effect as configured (absent when there are none). */
  warnings?: { message: string }[];
  /** Writes waiting to be applied: always 0 here (a write is applied before it is answered). */
  update_queue?: { length: number };
};

// ------------------------------------------------------------------------------------------------
// Error mapping

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = [...issue.path];
  // Qdrant's validator does not know map keys: a named vector of a point shows as `?`
  // (`points[0].vector.?.values: …`).
  if (path[0] === 'points' && path[2] === 'vector' && path.length >= 4 && typeof path[3] === 'string') path[3] = '?';
  if (issue.message === MISSING) {
    const field = path.pop();
    const msg = field === undefined ? 'missing field' : `missing field \`${String(field)}\``;
    return path.length ? `${formatPath(path)}: ${msg}` : msg;
  }
  let message = issue.message;
  if (issue.code === 'too_small' || issue.code === 'too_big') {
    // Built-in zod checks are not used by these schemas; keep a readable fallback.
    message = `value invalid, ${issue.message}`;
  }
  return path.length ? `${formatPath(path)}: ${message}` : message;
}

/**
 * Status and message Qdrant gives for a body that failed one of these schemas: 400
 * `Format error in JSON body: <field>: <msg>` when any issue is a deserialization error (the
 * first one is reported, as serde stops there), otherwise 422
 * `Validation error in JSON body: [<field>: <msg>; …]`.
 */
export function qdrantBodyError(err: z.ZodError): { status: 400 | 422; message: string } {
  const format = err.issues.find((i) => !isValidationIssue(i));
  if (format) return { status: 400, message: `Format error in JSON body: ${describeIssue(format)}` };
  return { status: 422, message: `Validation error in JSON body: [${err.issues.map(describeIssue).join('; ')}]` };
}

/** The building blocks above, for schemas kept in other files (qdrant-ops.ts) with the same serde-style errors. */
export const qdrantSchemaKit = { str, bool, f64, obj, list, map, json, uint, range, opt, withDefault, variants, untagged, externallyTagged, validationIssue, formatIssue, ids };
