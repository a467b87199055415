import { z } from 'zod';
import { requestContract, type CatalogEntry, type RequestContract } from './catalog.ts';
import {
  QdrantCollectionExistence,
  QdrantCollectionInfo,
  QdrantCollectionsResponse,
  QdrantCountRequest,
  QdrantCountResult,
  QdrantCreateCollection,
  QdrantCreateFieldIndex,
  QdrantDiscoverRequest,
  QdrantDiscoverRequestBatch,
  QdrantGroupsResult,
  QdrantQueryGroupsRequest,
  QdrantRecommendGroupsRequest,
  QdrantRecommendRequest,
  QdrantRecommendRequestBatch,
  QdrantSearchGroupsRequest,
  QdrantDeletePayload,
  QdrantDeleteVectors,
  QdrantOptimizationsResponse,
  QdrantPointInsertOperations,
  QdrantPointRequest,
  QdrantPointsSelector,
  QdrantQueryRequest,
  QdrantQueryRequestBatch,
  QdrantQueryResponse,
  QdrantRecord,
  QdrantScoredPoint,
  QdrantScrollRequest,
  QdrantScrollResult,
  QdrantSearchRequest,
  QdrantSearchRequestBatch,
  QdrantSetPayload,
  QdrantUpdateCollection,
  QdrantUpdateOperations,
  QdrantUpdateResult,
  QdrantUpdateVectors,
  QdrantVectorNameConfig,
} from './qdrant.ts';
import { VECTOR_OPS_CATALOG } from './vector-ops.ts';

/**
 * The vector store's operations on the bus, one subject each (`vector.<resource>.<verb>`). Every
 * operation carries the same envelope: path parameters, query parameters and the JSON body as
 * the client sent it (the edge validates it against the catalog's body schema, except for the
 * operations it forwards as text, `bodyText`; the worker parses it with the defaults applied).
 * The reply is Qdrant's `result`.
 */
export const VectorOpRequest = z.object({
  collection: z.string().optional(),
  /** `/points/{id}`, `/index/{field}` and `/vectors/{field}` path segments, as sent. */
  id: z.string().optional(),
  field: z.string().optional(),
  query: z.record(z.string(), z.string()),
  body: z.unknown(),
  /**
   * The JSON body as the client sent it, instead of `body`: the REST edge forwards the text of the
   * hot operations unparsed (it decides nothing from it), and the worker parses and validates it
   * once. A body that is not JSON gets Qdrant's 400, as from the edge.
   */
  bodyText: z.string().optional(),
});
export type VectorOpRequest = z.infer<typeof VectorOpRequest>;

/** A catalog entry: its subject is `vector.<op>`, and `writes` says a read-only key gets 403. */
export type VectorCatalogEntry<Op extends string> = CatalogEntry<`vector.${Op}`> & { writes: boolean };

/** Checks every entry's subject against its name, keeping the literal types. */
const vectorCatalog = <const C extends { [Op in keyof C & string]: VectorCatalogEntry<Op> }>(c: C): C => c;

const c = '/collections/:collection';
const points = `${c}/points`;
const UpdateResult = QdrantUpdateResult;

/**
 * The vector face's catalog, Qdrant 1.19's REST API (reference §1.4): the edge registers its
 * routes, validates bodies and decides what a read-only key may do from it; the worker's handler
 * table is typed against it. Adding an operation is one entry here and one handler there.
 */
export const VECTOR_CATALOG = vectorCatalog({
  'collections.list': {
    subject: 'vector.collections.list',
    routes: [{ method: 'GET', url: '/collections' }],
    reply: QdrantCollectionsResponse,
    writes: false,
  },
  'collections.create': {
    subject: 'vector.collections.create',
    routes: [{ method: 'PUT', url: c }],
    body: QdrantCreateCollection,
    reply: z.boolean(),
    writes: true,
  },
  'collections.get': { subject: 'vector.collections.get', routes: [{ method: 'GET', url: c }], reply: QdrantCollectionInfo, writes: false },
  'collections.update': {
    subject: 'vector.collections.update',
    routes: [{ method: 'PATCH', url: c }],
    body: QdrantUpdateCollection,
    reply: z.boolean(),
    writes: true,
  },
  'collections.delete': { subject: 'vector.collections.delete', routes: [{ method: 'DELETE', url: c }], reply: z.boolean(), writes: true },
  'collections.exists': {
    subject: 'vector.collections.exists',
    routes: [{ method: 'GET', url: `${c}/exists` }],
    reply: QdrantCollectionExistence,
    writes: false,
  },
  /** Optimization progress: this store has no background optimizer, so nothing is ever running. */
  'collections.optimizations': {
    subject: 'vector.collections.optimizations',
    routes: [{ method: 'GET', url: `${c}/optimizations` }],
    reply: QdrantOptimizationsResponse,
    writes: false,
  },
  'index.create': {
    subject: 'vector.index.create',
    routes: [{ method: 'PUT', url: `${c}/index` }],
    body: QdrantCreateFieldIndex,
    reply: UpdateResult,
    writes: true,
  },
  'index.delete': { subject: 'vector.index.delete', routes: [{ method: 'DELETE', url: `${c}/index/:field` }], reply: UpdateResult, writes: true },
  /** A named vector added to / removed from an existing collection (`field` carries its name). */
  'vectors.create': {
    subject: 'vector.vectors.create',
    routes: [{ method: 'PUT', url: `${c}/vectors/:field` }],
    body: QdrantVectorNameConfig,
    reply: UpdateResult,
    writes: true,
  },
  'vectors.delete': { subject: 'vector.vectors.delete', routes: [{ method: 'DELETE', url: `${c}/vectors/:field` }], reply: UpdateResult, writes: true },
  'points.upsert': {
    subject: 'vector.points.upsert',
    routes: [{ method: 'PUT', url: points }],
    body: QdrantPointInsertOperations,
    reply: UpdateResult,
    writes: true,
  },
  'points.retrieve': {
    subject: 'vector.points.retrieve',
    routes: [{ method: 'POST', url: points }],
    body: QdrantPointRequest,
    reply: z.array(QdrantRecord),
    writes: false,
  },
  'points.get': { subject: 'vector.points.get', routes: [{ method: 'GET', url: `${points}/:id` }], reply: QdrantRecord, writes: false },
  'points.delete': {
    subject: 'vector.points.delete',
    routes: [{ method: 'POST', url: `${points}/delete` }],
    body: QdrantPointsSelector,
    reply: UpdateResult,
    writes: true,
  },
  /** Merges keys into the payload. */
  'points.setPayload': {
    subject: 'vector.points.setPayload',
    routes: [{ method: 'POST', url: `${points}/payload` }],
    body: QdrantSetPayload,
    reply: UpdateResult,
    writes: true,
  },
  /** Replaces the payload. */
  'points.overwritePayload': {
    subject: 'vector.points.overwritePayload',
    routes: [{ method: 'PUT', url: `${points}/payload` }],
    body: QdrantSetPayload,
    reply: UpdateResult,
    writes: true,
  },
  'points.deletePayload': {
    subject: 'vector.points.deletePayload',
    routes: [{ method: 'POST', url: `${points}/payload/delete` }],
    body: QdrantDeletePayload,
    reply: UpdateResult,
    writes: true,
  },
  'points.clearPayload': {
    subject: 'vector.points.clearPayload',
    routes: [{ method: 'POST', url: `${points}/payload/clear` }],
    body: QdrantPointsSelector,
    reply: UpdateResult,
    writes: true,
  },
  'points.updateVectors': {
    subject: 'vector.points.updateVectors',
    routes: [{ method: 'PUT', url: `${points}/vectors` }],
    body: QdrantUpdateVectors,
    reply: UpdateResult,
    writes: true,
  },
  'points.deleteVectors': {
    subject: 'vector.points.deleteVectors',
    routes: [{ method: 'POST', url: `${points}/vectors/delete` }],
    body: QdrantDeleteVectors,
    reply: UpdateResult,
    writes: true,
  },
  /** One UpdateResult per operation. */
  'points.batch': {
    subject: 'vector.points.batch',
    routes: [{ method: 'POST', url: `${points}/batch` }],
    body: QdrantUpdateOperations,
    reply: z.array(UpdateResult),
    writes: true,
  },
  'points.scroll': {
    subject: 'vector.points.scroll',
    routes: [{ method: 'POST', url: `${points}/scroll` }],
    body: QdrantScrollRequest,
    reply: QdrantScrollResult,
    writes: false,
  },
  'points.count': {
    subject: 'vector.points.count',
    routes: [{ method: 'POST', url: `${points}/count` }],
    body: QdrantCountRequest,
    reply: QdrantCountResult,
    writes: false,
  },
  /** Deprecated in Qdrant, still served. */
  'points.search': {
    subject: 'vector.points.search',
    routes: [{ method: 'POST', url: `${points}/search` }],
    body: QdrantSearchRequest,
    reply: z.array(QdrantScoredPoint),
    writes: false,
  },
  'points.searchBatch': {
    subject: 'vector.points.searchBatch',
    routes: [{ method: 'POST', url: `${points}/search/batch` }],
    body: QdrantSearchRequestBatch,
    reply: z.array(z.array(QdrantScoredPoint)),
    writes: false,
  },
  'points.query': {
    subject: 'vector.points.query',
    routes: [{ method: 'POST', url: `${points}/query` }],
    body: QdrantQueryRequest,
    reply: QdrantQueryResponse,
    writes: false,
  },
  'points.queryBatch': {
    subject: 'vector.points.queryBatch',
    routes: [{ method: 'POST', url: `${points}/query/batch` }],
    body: QdrantQueryRequestBatch,
    reply: z.array(QdrantQueryResponse),
    writes: false,
  },
  /** Aliases, facets, distance matrix, snapshots, cluster info, telemetry (vector-ops.ts). */
  ...VECTOR_OPS_CATALOG,
  'points.queryGroups': {
    subject: 'vector.points.queryGroups',
    routes: [{ method: 'POST', url: `${points}/query/groups` }],
    body: QdrantQueryGroupsRequest,
    reply: QdrantGroupsResult,
    writes: false,
  },
  /** Deprecated in Qdrant (gone from its 1.19 REST document, still in its gRPC API), served. */
  'points.searchGroups': {
    subject: 'vector.points.searchGroups',
    routes: [{ method: 'POST', url: `${points}/search/groups` }],
    body: QdrantSearchGroupsRequest,
    reply: QdrantGroupsResult,
    writes: false,
  },
  'points.recommend': {
    subject: 'vector.points.recommend',
    routes: [{ method: 'POST', url: `${points}/recommend` }],
    body: QdrantRecommendRequest,
    reply: z.array(QdrantScoredPoint),
    writes: false,
  },
  'points.recommendBatch': {
    subject: 'vector.points.recommendBatch',
    routes: [{ method: 'POST', url: `${points}/recommend/batch` }],
    body: QdrantRecommendRequestBatch,
    reply: z.array(z.array(QdrantScoredPoint)),
    writes: false,
  },
  'points.recommendGroups': {
    subject: 'vector.points.recommendGroups',
    routes: [{ method: 'POST', url: `${points}/recommend/groups` }],
    body: QdrantRecommendGroupsRequest,
    reply: QdrantGroupsResult,
    writes: false,
  },
  'points.discover': {
    subject: 'vector.points.discover',
    routes: [{ method: 'POST', url: `${points}/discover` }],
    body: QdrantDiscoverRequest,
    reply: z.array(QdrantScoredPoint),
    writes: false,
  },
  'points.discoverBatch': {
    subject: 'vector.points.discoverBatch',
    routes: [{ method: 'POST', url: `${points}/discover/batch` }],
    body: QdrantDiscoverRequestBatch,
    reply: z.array(z.array(QdrantScoredPoint)),
    writes: false,
  },
});

export type VectorCatalog = typeof VECTOR_CATALOG;
export type VectorOp = keyof VectorCatalog;
/** What the worker answers for `op`: `{result}`, Qdrant's result before the edge adds status and time. */
export type VectorReply<Op extends VectorOp> = z.ZodObject<{ result: VectorCatalog[Op]['reply'] }>;

/** The bus contracts, derived from the catalog. */
export const vectorContracts = Object.fromEntries(
  (Object.keys(VECTOR_CATALOG) as VectorOp[]).map((op) => {
    const { subject, reply } = VECTOR_CATALOG[op];
    return [op, requestContract(subject, 1, VectorOpRequest, z.object({ result: reply }), { exactIntegers: true })];
  }),
) as { [Op in VectorOp]: RequestContract<typeof VectorOpRequest, VectorReply<Op>> };

/**
 * The operations whose JSON body the REST edge forwards as the client's text (`bodyText`): the
 * worker validates each body first, with the catalog's schema and Qdrant's wording, so the edge
 * need not.
 */
export const VECTOR_TEXT_BODY_OPS: ReadonlySet<VectorOp> = new Set<VectorOp>([
  'points.upsert',
  'points.retrieve',
  'points.delete',
  'points.setPayload',
  'points.overwritePayload',
  'points.deletePayload',
  'points.clearPayload',
  'points.updateVectors',
  'points.deleteVectors',
  'points.batch',
  'points.scroll',
  'points.count',
  'points.search',
  'points.searchBatch',
  'points.query',
  'points.queryBatch',
  'points.queryGroups',
  'points.searchGroups',
  'points.recommend',
  'points.recommendBatch',
  'points.recommendGroups',
  'points.discover',
  'points.discoverBatch',
]);

/**
 * Bodies of VECTOR_TEXT_BODY_OPS above the bus's max payload (a 500-point upsert of 384-d vectors is
 * ~1.8 MB of JSON) travel deflated on this subject instead of through the claim-check object store,
 * whose SHA-256 digest and chunked JetStream writes cost the edge and the worker more CPU than the
 * compression: one frame `[u32 BE n][n bytes: JSON {op, collection?, id?, field?, query}][raw
 * DEFLATE of the body text]`, claim-checked only if still too big. The reply is the operation's
 * (`{"result":…}`, or an error reply), as on `vector.<op>`.
 */
export const VECTOR_PACKED = { subject: 'vector.packed', version: 1 } as const;

/**
 * Operations from the gRPC port whose body holds float32 lists (vectors) travel on this subject
 * with those lists as Float32 bytes, not decimal JSON: one frame (vector-f32.ts), claim-checked
 * if too big. Any operation of the catalog; the reply is the operation's, as on `vector.<op>`.
 */
export const VECTOR_F32 = { subject: 'vector.f32', version: 1 } as const;
