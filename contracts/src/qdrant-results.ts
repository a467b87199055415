/** The `result` schemas of Qdrant 1.19's replies (the vector catalog's reply schemas). */
import { z } from 'zod';
import type { QdrantDistance, QdrantPayloadSchemaType } from './qdrant-collections.ts';
import type { QdrantSparseVector } from './qdrant-points.ts';

// ------------------------------------------------------------------------------------------------
// Results (the `result` of the envelope)
//
// The reply schemas of the vector catalog (vector.ts): the edge checks every worker reply against
// them. They check the shape Qdrant's clients rely on and pass the rest through: objects are loose
// (a field the store adds is kept), and what the client owns (payloads, vectors, metadata) is not
// walked, so a large reply costs no per-value checks and no key of it is lost in a copy.

/** A JSON object passed through as it is (checked, not copied). */
export const jsonObject = () =>
  z.custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v));
export const pointIdOut = () => z.union([z.number(), z.bigint(), z.string()]);

export const QdrantUpdateStatus = z.enum(['acknowledged', 'completed', 'wait_timeout']);
export type QdrantUpdateStatus = z.output<typeof QdrantUpdateStatus>;
export const QdrantUpdateResult = z.looseObject({ operation_id: z.number().nullable(), status: QdrantUpdateStatus });
export type QdrantUpdateResult = z.output<typeof QdrantUpdateResult>;

/** A dense vector, a sparse vector, or (named collections, or when sparse vectors exist) a map of them. */
export type QdrantVectorOutput = number[] | { [name: string]: number[] | QdrantSparseVector };
/** Typed, not re-checked: the store built it from validated input. */
export const vectorOut = () => z.custom<QdrantVectorOutput>((v) => typeof v === 'object' && v !== null);

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
