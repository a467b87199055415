/** Qdrant 1.19 REST bodies of the collection routes: create, update, payload indexes, collection names (qdrant.ts says how the schemas word their errors). */
import type { z } from 'zod';
import { bool, f64, json, map, obj, opt, payloadObject, range, str, uint, untagged, validationIssue, variants } from './qdrant-kit.ts';

// ------------------------------------------------------------------------------------------------
// Collections

export const QdrantDistance = variants(['Cosine', 'Euclid', 'Dot', 'Manhattan']);
export type QdrantDistance = z.output<typeof QdrantDistance>;

/** Memory placement of a component's data (`cold`, `cached`, `pinned`). */
export const QdrantMemory = variants(['cold', 'cached', 'pinned']);
/** Placement of a storage that has no heap variant: `pinned` is refused (422). */
export const storageMemory = (what: string) =>
  QdrantMemory.superRefine((v, ctx) => {
    if (v === 'pinned') validationIssue(ctx, `\`pinned\` is not supported for ${what} storage`);
  });
/** `payload` of a collection: where its payload storage lives. */
export const QdrantPayloadStorageParams = obj({ memory: opt(storageMemory('payload')) });

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
