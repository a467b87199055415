/**
 * Groups (`…/points/query/groups`, and through legacy.ts search/recommend groups): the query's
 * ranked points bucketed by the values of the `group_by` payload key.
 *
 * As Qdrant: a point joins one group per distinct string or integer value at the key (each
 * element of an array; other values and missing keys are skipped); groups come in the order of
 * their best hit, at most `limit` of them, each with at most `group_size` hits in score order.
 * The ranked list is read in growing windows (limit × group_size, ×4 each round, at most six
 * rounds) until every group is full or the points run out, so a few large groups cannot starve
 * the rest. `with_lookup` adds the record whose id is the group id from another collection.
 */
import type { QdrantGroupsResult, QdrantQueryGroupsRequest, QdrantRecord, QdrantWithLookup } from '@gatehouse/contracts';
import { isQdrantUuid } from '@gatehouse/contracts';
import { tableOf } from '../collections/catalog.ts';
import { loadOtherCollection, type Ctx } from './examples.ts';
import { valuesAt } from './formula.ts';
import { parseKeyPath } from '../points/json-path.ts';
import { rankQuery, scoredPoints } from './query.ts';
import { clampLimit } from '../points/reads.ts';
import * as reads from '../points/reads.ts';
import { parsedOfPid, type Ranked } from './scored.ts';
import { vectorSelection } from '../vectors/vectors.ts';
import { pidIn } from '../filter/where.ts';

/** Qdrant's default group size. */
const DEFAULT_GROUP_SIZE = 3;
const MAX_ROUNDS = 6;

/** A `bigint` is a payload integer beyond 2^53 (the store reads payloads exactly). */
type GroupId = string | number | bigint;

/** The group ids of a payload: distinct strings and integers at the key. */
function groupIds(payload: unknown, path: ReturnType<typeof parseKeyPath>): GroupId[] {
  const out = new Set<GroupId>();
  for (const v of valuesAt(payload, path)) {
    if (typeof v === 'string' || typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) out.add(v);
  }
  return [...out];
}

type Bucket = { id: GroupId; hits: Ranked[] };

function bucket(ranked: Ranked[], payloads: Map<string, unknown>, path: ReturnType<typeof parseKeyPath>, limit: number, size: number): Bucket[] {
  const groups = new Map<string, Bucket>();
  for (const r of ranked) {
    for (const id of groupIds(payloads.get(r.pid), path)) {
      const key = `${typeof id}:${id}`;
      let g = groups.get(key);
      if (!g) {
        if (groups.size >= limit) continue;
        g = { id, hits: [] };
        groups.set(key, g);
      }
      if (g.hits.length < size) g.hits.push(r);
    }
  }
  return [...groups.values()];
}

export async function queryGroups(ctx: Ctx, req: QdrantQueryGroupsRequest): Promise<QdrantGroupsResult> {
  const { sql, schema, meta } = ctx;
  const limit = clampLimit(req.limit ?? 10);
  const size = clampLimit(req.group_size ?? DEFAULT_GROUP_SIZE);
  const path = parseKeyPath(req.group_by);
  const sel = vectorSelection(meta, req.with_vector);
  // Only points holding some value at the key can form a group.
  const filter = { must: [...(req.filter ? [req.filter] : []), { must_not: [{ is_empty: { key: req.group_by } }] }] };
  let take = clampLimit(limit * size);
  let groups: Bucket[] = [];
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const ranked = await rankQuery(ctx, { ...req, filter }, take);
    const payloads = new Map<string, unknown>();
    if (ranked.length) {
      const rows = await sql<{ pid: string; payload: unknown }[]>`
        select pid, payload from ${tableOf(sql, schema, meta)} where ${pidIn(sql, ranked.map((r) => parsedOfPid(r.pid)))}`;
      for (const r of rows) payloads.set(r.pid, r.payload);
    }
    groups = bucket(ranked, payloads, path, limit, size);
    const full = groups.length === limit && groups.every((g) => g.hits.length === size);
    if (full || ranked.length < take || take >= 2 ** 31 - 1) break;
    take = clampLimit(take * 4);
  }
  const hits = await scoredPoints(ctx, [...new Map(groups.flatMap((g) => g.hits).map((h) => [h.pid, h])).values()], req.with_payload, sel);
  const byId = new Map(hits.map((h) => [String(h.id), h]));
  const lookups = req.with_lookup === undefined ? undefined : await lookupRecords(ctx, req.with_lookup, groups.map((g) => g.id));
  return {
    groups: groups.map((g) => {
      const out: QdrantGroupsResult['groups'][number] = {
        id: g.id,
        hits: g.hits.map((h) => byId.get(h.pid)!),
      };
      const lookup = lookups?.get(String(g.id));
      if (lookup) out.lookup = lookup;
      return out;
    }),
  };
}

/** The records whose ids are the group ids, from the `with_lookup` collection. */
async function lookupRecords(ctx: Ctx, w: QdrantWithLookup, ids: GroupId[]): Promise<Map<string, QdrantRecord>> {
  const spec: Exclude<QdrantWithLookup, string> = typeof w === 'string' ? { collection: w, with_payload: undefined, with_vector: undefined, with_vectors: undefined } : w;
  const meta = await loadOtherCollection(ctx, spec.collection);
  const pointIds = ids.filter((id) => (typeof id === 'string' ? isQdrantUuid(id) : id >= 0));
  const records = await reads.retrieve(ctx.sql, ctx.schema, meta, {
    ids: pointIds,
    with_payload: spec.with_payload ?? true,
    with_vector: spec.with_vectors ?? spec.with_vector ?? false,
    with_vectors: undefined,
    shard_key: undefined,
  });
  return new Map(records.map((r) => [String(r.id), r]));
}
