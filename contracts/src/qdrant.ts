/**
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
 *
 * The schemas live beside this file by subject — qdrant-collections.ts, qdrant-points.ts,
 * qdrant-reads.ts, qdrant-results.ts — on the building blocks of qdrant-kit.ts; this file is the
 * one the package exports (the kit's helpers stay internal).
 */

export {
  isQdrantUuid, type QdrantPointId, QdrantPointIdSchema, qdrantBodyError, qdrantSchemaKit
} from './qdrant-kit.ts';
export {
  QdrantDistance, QdrantMemory, QdrantHnswConfigDiff, QdrantWalConfigDiff,
  QdrantOptimizersConfigDiff, QdrantVectorParams, QdrantVectorsConfig, QdrantSparseVectorParams,
  QdrantVectorNameConfig, QdrantStrictModeConfig, QdrantCreateCollection, QdrantVectorParamsDiff,
  QdrantUpdateCollection, QDRANT_PAYLOAD_SCHEMA_TYPES, type QdrantPayloadSchemaType,
  QdrantPayloadFieldSchema, QdrantCreateFieldIndex, qdrantCollectionNameError
} from './qdrant-collections.ts';
export {
  QdrantSparseVector, QdrantDocument, QdrantVector, QdrantVectorStruct, QdrantPointStruct,
  QdrantBatchVectorStruct, QdrantBatch, QdrantUpdateMode, QdrantPointInsertOperations,
  QdrantPointsSelector, QdrantSetPayload, QdrantDeletePayload, QdrantPointVectors,
  QdrantUpdateVectors, QdrantDeleteVectors, QdrantUpdateOperation, QdrantUpdateOperations
} from './qdrant-points.ts';
export {
  QdrantWithPayload, QdrantWithVector, QdrantSearchParams, QdrantOrderBy, QdrantScrollRequest,
  QdrantCountRequest, QdrantPointRequest, QdrantNamedVectorStruct, QdrantSearchRequest,
  QdrantSearchRequestBatch, QdrantVectorInput, QdrantQueryInterface, QdrantPrefetch,
  QdrantQueryRequest, QdrantQueryRequestBatch, QdrantWithLookup, QdrantQueryGroupsRequest,
  QdrantSearchGroupsRequest, QdrantRecommendRequest, QdrantRecommendRequestBatch,
  QdrantRecommendGroupsRequest, QdrantDiscoverRequest, QdrantDiscoverRequestBatch
} from './qdrant-reads.ts';
export {
  QdrantUpdateStatus, QdrantUpdateResult, type QdrantVectorOutput, QdrantRecord, QdrantScoredPoint,
  QdrantScrollResult, QdrantCountResult, QdrantQueryResponse, QdrantGroupsResult,
  QdrantCollectionsResponse, QdrantOptimizationsResponse, QdrantCollectionExistence,
  type QdrantVectorParamsOutput, type QdrantCollectionParams, type QdrantHnswConfig,
  type QdrantOptimizersConfig, type QdrantCollectionConfig, type QdrantPayloadIndexInfo,
  QdrantCollectionInfo
} from './qdrant-results.ts';
