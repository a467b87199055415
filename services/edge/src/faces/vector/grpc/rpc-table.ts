import type { z } from 'zod';
import type { VectorCatalog, VectorOp, VectorOpRequest } from '@gatehouse/contracts';
import { fromRest } from './from-rest.ts';
import { enumToRest, InvalidArgument, pointsSelector, restFields, toRest, type Msg } from './to-rest.ts';

/**
 * Every RPC of Qdrant's public gRPC services, mapped onto the vector catalog: which operation
 * (bus subject) serves it, how its request becomes the REST request the worker takes, and how
 * the worker's `result` becomes the RPC's response (the server adds `time`). `op` is a catalog
 * operation (a name the catalog lacks does not compile); `null`: the RPC has no counterpart in
 * this store at all, and answers UNIMPLEMENTED.
 */
export interface RpcMapping {
  op: VectorOp | null;
  request: (m: Msg) => Omit<VectorOpRequest, 'query'> & { query?: Record<string, string> };
  reply: (result: unknown) => Msg;
}

/** The worker's `result` for `op`, as its contract parses it before `reply` sees it. */
type ResultOf<Op extends VectorOp> = z.output<VectorCatalog[Op]['reply']>;

/** An RPC served by catalog operation `op`: its `reply` is typed by the operation's result. */
function rpc<Op extends VectorOp>(m: { op: Op; request: RpcMapping['request']; reply: (result: ResultOf<Op>) => Msg }): RpcMapping {
  // vector-grpc.ts parses the reply with `op`'s contract, so `result` is ResultOf<Op> there.
  return m as unknown as RpcMapping;
}

/** Fields every request carries beside its body: the path's collection and query parameters. */
const NOT_BODY = ['collection_name', 'wait', 'ordering', 'timeout', 'read_consistency'] as const;

/** Proto field → REST field where the names differ. */
const RENAMES: Record<string, string> = {
  shard_key_selector: 'shard_key',
  with_vectors: 'with_vector',
  vectors_config: 'vectors',
  sparse_vectors_config: 'sparse_vectors',
};

/**
 * The REST body of message `m` (of `typeName`): its fields as REST JSON, renamed; `selectors`
 * name PointsSelector fields that REST spreads into the body as `points` or `filter`.
 */
function body(typeName: string, m: Msg, opts: { skip?: string[]; selectors?: string[]; defaults?: Msg } = {}): Msg {
  const selectors = opts.selectors ?? [];
  const out = restFields(typeName, m, [...NOT_BODY, ...(opts.skip ?? []), ...selectors]);
  for (const [from, to] of Object.entries(RENAMES)) {
    if (from in out) {
      out[to] = out[from];
      delete out[from];
    }
  }
  for (const s of selectors) Object.assign(out, pointsSelector(m[s]));
  return { ...opts.defaults, ...out };
}

/** `wait`, `ordering`, `timeout`, `consistency`: REST's query parameters. */
function queryParams(m: Msg): Record<string, string> {
  const q: Record<string, string> = {};
  if (typeof m.wait === 'boolean') q.wait = String(m.wait);
  if (m.ordering) q.ordering = String(toRest('qdrant.WriteOrdering', m.ordering));
  if (typeof m.timeout === 'number' || typeof m.timeout === 'string') q.timeout = String(m.timeout);
  if (m.read_consistency) q.consistency = String(toRest('qdrant.ReadConsistency', m.read_consistency));
  return q;
}

function collection(m: Msg): string {
  const name = m.collection_name;
  if (typeof name !== 'string' || name === '') throw new InvalidArgument('Validation error: collection_name: must not be empty');
  return name;
}

/** A request whose body is the message's own fields. */
function plain<Op extends VectorOp>(typeName: string, op: Op, reply: (result: ResultOf<Op>) => Msg, opts?: Parameters<typeof body>[2]): RpcMapping {
  return rpc({ op, request: (m) => ({ collection: collection(m), query: queryParams(m), body: body(typeName, m, opts) }), reply });
}

/** An RPC with no counterpart in this store: never forwarded, it answers UNIMPLEMENTED. */
const NOT_SERVED: RpcMapping = { op: null, request: () => ({ body: {} }), reply: () => ({}) };
/** `{result: …}` converted along the response type's declared fields. */
const result = (responseType: string) => (r: unknown): Msg => fromRest(responseType, { result: r }) as Msg;
const batch = (responseType: string) => (r: readonly unknown[]): Msg => fromRest(responseType, { result: r.map((x) => ({ result: x })) }) as Msg;
const pointsOp = result('qdrant.PointsOperationResponse');
const collectionOp = result('qdrant.CollectionOperationResponse');

/** Deprecated search: `vector` + `vector_name` + `sparse_indices` → REST's NamedVectorStruct. */
function searchBody(typeName: string, m: Msg): Msg {
  const out = body(typeName, m, { skip: ['vector', 'vector_name', 'sparse_indices'] });
  const data = (m.vector as number[] | undefined) ?? [];
  const sparse = m.sparse_indices ? { indices: ((m.sparse_indices as Msg).data as number[] | undefined) ?? [], values: data } : undefined;
  const name = m.vector_name as string | undefined;
  out.vector = name !== undefined ? { name, vector: sparse ?? data } : (sparse ?? data);
  return out;
}

/** Recommend: REST's `positive`/`negative` take ids and vectors in one list. */
function recommendBody(typeName: string, m: Msg): Msg {
  const out = body(typeName, m, { skip: ['positive_vectors', 'negative_vectors'] });
  for (const side of ['positive', 'negative'] as const) {
    const vectors = ((m[`${side}_vectors`] as Msg[] | undefined) ?? []).map((v) => toRest('qdrant.Vector', v));
    out[side] = [...((out[side] as unknown[] | undefined) ?? []), ...vectors];
  }
  return out;
}

/** `PointsUpdateOperation` → REST's externally tagged `UpdateOperation`. */
export function updateOperation(op: Msg): Msg {
  const T = 'qdrant.PointsUpdateOperation';
  if (op.upsert) return { upsert: body(`${T}.PointStructList`, op.upsert as Msg, { defaults: { points: [] } }) };
  if (op.delete_deprecated) return { delete: pointsSelector(op.delete_deprecated) };
  if (op.delete_points) return { delete: body(`${T}.DeletePoints`, op.delete_points as Msg, { selectors: ['points'] }) };
  if (op.set_payload) return { set_payload: body(`${T}.SetPayload`, op.set_payload as Msg, { selectors: ['points_selector'], defaults: { payload: {} } }) };
  if (op.overwrite_payload) {
    return { overwrite_payload: body(`${T}.OverwritePayload`, op.overwrite_payload as Msg, { selectors: ['points_selector'], defaults: { payload: {} } }) };
  }
  if (op.delete_payload) return { delete_payload: body(`${T}.DeletePayload`, op.delete_payload as Msg, { selectors: ['points_selector'], defaults: { keys: [] } }) };
  if (op.clear_payload_deprecated) return { clear_payload: pointsSelector(op.clear_payload_deprecated) };
  if (op.clear_payload) return { clear_payload: body(`${T}.ClearPayload`, op.clear_payload as Msg, { selectors: ['points'] }) };
  if (op.update_vectors) return { update_vectors: body(`${T}.UpdateVectors`, op.update_vectors as Msg, { defaults: { points: [] } }) };
  if (op.delete_vectors) {
    const b = body(`${T}.DeleteVectors`, op.delete_vectors as Msg, { selectors: ['points_selector'], skip: ['vectors'] });
    return { delete_vectors: { ...b, vector: ((op.delete_vectors as Msg).vectors as Msg | undefined)?.names ?? [] } };
  }
  throw new InvalidArgument('PointsUpdateOperation: no operation is set');
}

/** `CreateFieldIndexCollection` → `{field_name, field_schema}`: the params carry the type when given. */
function fieldIndexBody(m: Msg): Msg {
  const out: Msg = { field_name: m.field_name ?? '' };
  if (m.field_index_params) out.field_schema = toRest('qdrant.PayloadIndexParams', m.field_index_params);
  else if (m.field_type !== undefined) out.field_schema = enumToRest('qdrant.FieldType', m.field_type);
  return out;
}

/** `CreateVectorNameRequest` → REST's `{dense: VectorParams}` or `{sparse: SparseVectorParams}` (a sparse datatype sits in its index). */
function vectorNameBody(m: Msg): Msg {
  if (m.dense_config) return { dense: toRest('qdrant.DenseVectorCreationConfig', m.dense_config) };
  if (m.sparse_config) {
    const sc = m.sparse_config as Msg;
    const datatype = enumToRest('qdrant.Datatype', sc.datatype);
    return { sparse: { ...(sc.modifier !== undefined ? { modifier: enumToRest('qdrant.Modifier', sc.modifier) } : {}), ...(datatype ? { index: { datatype } } : {}) } };
  }
  throw new InvalidArgument('CreateVectorNameRequest: neither dense_config nor sparse_config is set');
}

const P = 'qdrant.Points';
const C = 'qdrant.Collections';
const S = 'qdrant.Snapshots';

export const RPC_TABLE: Record<string, RpcMapping> = {
  // --- Collections
  [`${C}/Get`]: rpc({ op: 'collections.get', request: (m) => ({ collection: collection(m), body: {} }), reply: result('qdrant.GetCollectionInfoResponse') }),
  [`${C}/List`]: rpc({
    op: 'collections.list',
    request: () => ({ body: {} }),
    reply: (r) => fromRest('qdrant.ListCollectionsResponse', r) as Msg,
  }),
  [`${C}/Create`]: plain('qdrant.CreateCollection', 'collections.create', collectionOp),
  [`${C}/Update`]: plain('qdrant.UpdateCollection', 'collections.update', collectionOp),
  [`${C}/Delete`]: rpc({ op: 'collections.delete', request: (m) => ({ collection: collection(m), query: queryParams(m), body: {} }), reply: collectionOp }),
  [`${C}/CollectionExists`]: rpc({ op: 'collections.exists', request: (m) => ({ collection: collection(m), body: {} }), reply: result('qdrant.CollectionExistsResponse') }),
  [`${C}/UpdateAliases`]: rpc({ op: 'aliases.update', request: (m) => ({ query: queryParams(m), body: body('qdrant.ChangeAliases', m, { defaults: { actions: [] } }) }), reply: collectionOp }),
  [`${C}/ListAliases`]: rpc({ op: 'aliases.list', request: () => ({ body: {} }), reply: (r) => fromRest('qdrant.ListAliasesResponse', r) as Msg }),
  [`${C}/ListCollectionAliases`]: rpc({
    op: 'aliases.listForCollection',
    request: (m) => ({ collection: collection(m), body: {} }),
    reply: (r) => fromRest('qdrant.ListAliasesResponse', r) as Msg,
  }),
  [`${C}/CollectionClusterInfo`]: rpc({
    op: 'cluster.collectionInfo',
    request: (m) => ({ collection: collection(m), body: {} }),
    reply: (r) => fromRest('qdrant.CollectionClusterInfoResponse', r) as Msg,
  }),
  // Shard placement and custom shard keys: a single node on Postgres has no shards to move.
  [`${C}/UpdateCollectionClusterSetup`]: NOT_SERVED,
  [`${C}/CreateShardKey`]: NOT_SERVED,
  [`${C}/DeleteShardKey`]: NOT_SERVED,
  [`${C}/ListShardKeys`]: NOT_SERVED,

  // --- Points: writes
  [`${P}/Upsert`]: plain('qdrant.UpsertPoints', 'points.upsert', pointsOp, { defaults: { points: [] } }),
  [`${P}/Delete`]: plain('qdrant.DeletePoints', 'points.delete', pointsOp, { selectors: ['points'] }),
  [`${P}/UpdateVectors`]: plain('qdrant.UpdatePointVectors', 'points.updateVectors', pointsOp, { defaults: { points: [] } }),
  [`${P}/DeleteVectors`]: rpc({
    op: 'points.deleteVectors',
    request: (m) => ({
      collection: collection(m),
      query: queryParams(m),
      body: { ...body('qdrant.DeletePointVectors', m, { selectors: ['points_selector'], skip: ['vectors'] }), vector: (m.vectors as Msg | undefined)?.names ?? [] },
    }),
    reply: pointsOp,
  }),
  [`${P}/SetPayload`]: plain('qdrant.SetPayloadPoints', 'points.setPayload', pointsOp, { selectors: ['points_selector'], defaults: { payload: {} } }),
  [`${P}/OverwritePayload`]: plain('qdrant.SetPayloadPoints', 'points.overwritePayload', pointsOp, { selectors: ['points_selector'], defaults: { payload: {} } }),
  [`${P}/DeletePayload`]: plain('qdrant.DeletePayloadPoints', 'points.deletePayload', pointsOp, { selectors: ['points_selector'], defaults: { keys: [] } }),
  [`${P}/ClearPayload`]: plain('qdrant.ClearPayloadPoints', 'points.clearPayload', pointsOp, { selectors: ['points'] }),
  [`${P}/CreateFieldIndex`]: rpc({ op: 'index.create', request: (m) => ({ collection: collection(m), query: queryParams(m), body: fieldIndexBody(m) }), reply: pointsOp }),
  [`${P}/DeleteFieldIndex`]: rpc({
    op: 'index.delete',
    request: (m) => ({ collection: collection(m), field: String(m.field_name ?? ''), query: queryParams(m), body: {} }),
    reply: pointsOp,
  }),
  [`${P}/UpdateBatch`]: rpc({
    op: 'points.batch',
    request: (m) => ({ collection: collection(m), query: queryParams(m), body: { operations: ((m.operations as Msg[] | undefined) ?? []).map(updateOperation) } }),
    reply: result('qdrant.UpdateBatchResponse'),
  }),
  // A named vector added to / dropped from a live collection (REST: PUT / DELETE …/vectors/{name}).
  [`${P}/CreateVectorName`]: rpc({
    op: 'vectors.create',
    request: (m) => ({ collection: collection(m), field: String(m.vector_name ?? ''), query: queryParams(m), body: vectorNameBody(m) }),
    reply: pointsOp,
  }),
  [`${P}/DeleteVectorName`]: rpc({
    op: 'vectors.delete',
    request: (m) => ({ collection: collection(m), field: String(m.vector_name ?? ''), query: queryParams(m), body: {} }),
    reply: pointsOp,
  }),

  // --- Points: reads
  [`${P}/Get`]: plain('qdrant.GetPoints', 'points.retrieve', result('qdrant.GetResponse'), { defaults: { ids: [] } }),
  [`${P}/Scroll`]: plain('qdrant.ScrollPoints', 'points.scroll', (r) => {
    return fromRest('qdrant.ScrollResponse', { result: r.points, next_page_offset: r.next_page_offset }) as Msg;
  }),
  [`${P}/Count`]: plain('qdrant.CountPoints', 'points.count', result('qdrant.CountResponse')),
  [`${P}/Search`]: rpc({
    op: 'points.search',
    request: (m) => ({ collection: collection(m), query: queryParams(m), body: searchBody('qdrant.SearchPoints', m) }),
    reply: result('qdrant.SearchResponse'),
  }),
  [`${P}/SearchBatch`]: rpc({
    op: 'points.searchBatch',
    request: (m) => ({
      collection: collection(m),
      query: queryParams(m),
      body: { searches: ((m.search_points as Msg[] | undefined) ?? []).map((s) => searchBody('qdrant.SearchPoints', s)) },
    }),
    reply: batch('qdrant.SearchBatchResponse'),
  }),
  [`${P}/SearchGroups`]: rpc({
    op: 'points.searchGroups',
    request: (m) => ({ collection: collection(m), query: queryParams(m), body: searchBody('qdrant.SearchPointGroups', m) }),
    reply: result('qdrant.SearchGroupsResponse'),
  }),
  [`${P}/Query`]: plain('qdrant.QueryPoints', 'points.query', (r) => fromRest('qdrant.QueryResponse', { result: r.points }) as Msg),
  [`${P}/QueryBatch`]: rpc({
    op: 'points.queryBatch',
    request: (m) => ({
      collection: collection(m),
      query: queryParams(m),
      body: { searches: ((m.query_points as Msg[] | undefined) ?? []).map((q) => body('qdrant.QueryPoints', q)) },
    }),
    reply: (r) => fromRest('qdrant.QueryBatchResponse', { result: r.map((x) => ({ result: x.points })) }) as Msg,
  }),
  [`${P}/QueryGroups`]: plain('qdrant.QueryPointGroups', 'points.queryGroups', result('qdrant.QueryGroupsResponse')),
  [`${P}/Recommend`]: rpc({
    op: 'points.recommend',
    request: (m) => ({ collection: collection(m), query: queryParams(m), body: recommendBody('qdrant.RecommendPoints', m) }),
    reply: result('qdrant.RecommendResponse'),
  }),
  [`${P}/RecommendBatch`]: rpc({
    op: 'points.recommendBatch',
    request: (m) => ({
      collection: collection(m),
      query: queryParams(m),
      body: { searches: ((m.recommend_points as Msg[] | undefined) ?? []).map((r) => recommendBody('qdrant.RecommendPoints', r)) },
    }),
    reply: batch('qdrant.RecommendBatchResponse'),
  }),
  [`${P}/RecommendGroups`]: rpc({
    op: 'points.recommendGroups',
    request: (m) => ({ collection: collection(m), query: queryParams(m), body: recommendBody('qdrant.RecommendPointGroups', m) }),
    reply: result('qdrant.RecommendGroupsResponse'),
  }),
  [`${P}/Discover`]: plain('qdrant.DiscoverPoints', 'points.discover', result('qdrant.DiscoverResponse')),
  [`${P}/DiscoverBatch`]: rpc({
    op: 'points.discoverBatch',
    request: (m) => ({
      collection: collection(m),
      query: queryParams(m),
      body: { searches: ((m.discover_points as Msg[] | undefined) ?? []).map((d) => body('qdrant.DiscoverPoints', d)) },
    }),
    reply: batch('qdrant.DiscoverBatchResponse'),
  }),
  [`${P}/Facet`]: plain('qdrant.FacetCounts', 'points.facet', (r) => fromRest('qdrant.FacetResponse', r) as Msg),
  [`${P}/SearchMatrixPairs`]: plain('qdrant.SearchMatrixPoints', 'points.matrixPairs', result('qdrant.SearchMatrixPairsResponse')),
  [`${P}/SearchMatrixOffsets`]: plain('qdrant.SearchMatrixPoints', 'points.matrixOffsets', result('qdrant.SearchMatrixOffsetsResponse')),

  // --- Snapshots (collection snapshots; full-storage snapshots have no counterpart here)
  [`${S}/Create`]: rpc({
    op: 'snapshots.create',
    request: (m) => ({ collection: collection(m), query: { wait: 'true' }, body: {} }),
    reply: (r) => fromRest('qdrant.CreateSnapshotResponse', { snapshot_description: r }) as Msg,
  }),
  [`${S}/List`]: rpc({
    op: 'snapshots.list',
    request: (m) => ({ collection: collection(m), body: {} }),
    reply: (r) => fromRest('qdrant.ListSnapshotsResponse', { snapshot_descriptions: r }) as Msg,
  }),
  [`${S}/Delete`]: rpc({
    op: 'snapshots.delete',
    request: (m) => ({ collection: collection(m), id: String(m.snapshot_name ?? ''), query: { wait: 'true' }, body: {} }),
    reply: () => ({}),
  }),
  [`${S}/CreateFull`]: NOT_SERVED,
  [`${S}/ListFull`]: NOT_SERVED,
  [`${S}/DeleteFull`]: NOT_SERVED,
};
