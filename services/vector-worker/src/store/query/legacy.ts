/**
 * The pre-query-API endpoints Qdrant's gRPC API still has — recommend (+ batch, groups), discover
 * (+ batch) and search groups — as requests of the universal query API (query.ts, groups.ts), so
 * scores, exclusions and errors are the same:
 * - recommend → `{recommend: {positive, negative, strategy}}`; without examples Qdrant's old
 *   checks answer 400 (average_vector needs a positive).
 * - discover → `{discover: {target, context}}`, `{context}` without a target, plain nearest
 *   without context pairs (Qdrant's discovery.rs).
 * - search groups → a nearest query on the named vector.
 */
import type {
  QdrantDiscoverRequest,
  QdrantGroupsResult,
  QdrantQueryRequest,
  QdrantRecommendGroupsRequest,
  QdrantRecommendRequest,
  QdrantScoredPoint,
  QdrantSearchGroupsRequest,
} from '@gatehouse/contracts';
import { QdrantError } from '../errors.ts';
import type { Ctx } from './examples.ts';
import { queryGroups } from './groups.ts';
import { query } from './query.ts';

const badRequest = (msg: string) => new QdrantError(400, `Bad request: ${msg}`);

function recommendQuery(r: QdrantRecommendRequest | QdrantRecommendGroupsRequest): QdrantQueryRequest['query'] {
  const strategy = r.strategy ?? 'average_vector';
  if (strategy === 'average_vector' && r.positive.length === 0) {
    throw badRequest('At least one positive vector ID required with this strategy');
  }
  if (r.positive.length === 0 && r.negative.length === 0) {
    throw badRequest('At least one positive or negative vector ID required with this strategy');
  }
  return { recommend: { positive: r.positive, negative: r.negative, strategy } };
}

/** The fields every legacy request shares with a query request. */
function common(r: QdrantRecommendRequest | QdrantRecommendGroupsRequest | QdrantDiscoverRequest): Omit<QdrantQueryRequest, 'query'> {
  return {
    filter: r.filter,
    params: r.params,
    with_payload: r.with_payload,
    with_vector: r.with_vector,
    ...(r.using !== undefined ? { using: r.using } : {}),
    ...(r.lookup_from !== undefined ? { lookup_from: r.lookup_from } : {}),
  };
}

export async function recommend(ctx: Ctx, r: QdrantRecommendRequest): Promise<QdrantScoredPoint[]> {
  const req: QdrantQueryRequest = {
    ...common(r),
    query: recommendQuery(r),
    limit: r.limit,
    ...(r.offset !== undefined ? { offset: r.offset } : {}),
    ...(r.score_threshold !== undefined ? { score_threshold: r.score_threshold } : {}),
  };
  return (await query(ctx.sql, ctx.schema, ctx.meta, req)).points;
}

export async function recommendGroups(ctx: Ctx, r: QdrantRecommendGroupsRequest): Promise<QdrantGroupsResult> {
  return queryGroups(ctx, {
    ...common(r),
    query: recommendQuery(r),
    ...(r.score_threshold !== undefined ? { score_threshold: r.score_threshold } : {}),
    group_by: r.group_by,
    group_size: r.group_size,
    limit: r.limit,
    ...(r.with_lookup !== undefined ? { with_lookup: r.with_lookup } : {}),
  });
}

export async function discover(ctx: Ctx, r: QdrantDiscoverRequest): Promise<QdrantScoredPoint[]> {
  const pairs = r.context ?? [];
  let q: QdrantQueryRequest['query'];
  if (r.target !== undefined && pairs.length) q = { discover: { target: r.target, context: pairs } };
  else if (r.target !== undefined) q = { nearest: r.target };
  else if (pairs.length) q = { context: pairs };
  else throw badRequest('target and context cannot be both empty');
  const req: QdrantQueryRequest = { ...common(r), query: q, limit: r.limit, ...(r.offset !== undefined ? { offset: r.offset } : {}) };
  return (await query(ctx.sql, ctx.schema, ctx.meta, req)).points;
}

export async function searchGroups(ctx: Ctx, r: QdrantSearchGroupsRequest): Promise<QdrantGroupsResult> {
  const named = !Array.isArray(r.vector);
  return queryGroups(ctx, {
    query: (named ? (r.vector as { vector: unknown }).vector : r.vector) as QdrantQueryRequest['query'],
    using: named ? (r.vector as { name: string }).name : '',
    filter: r.filter,
    params: r.params,
    with_payload: r.with_payload,
    with_vector: r.with_vector,
    ...(r.score_threshold !== undefined ? { score_threshold: r.score_threshold } : {}),
    group_by: r.group_by,
    group_size: r.group_size,
    limit: r.limit,
    ...(r.with_lookup !== undefined ? { with_lookup: r.with_lookup } : {}),
  });
}
