import { z } from 'zod';
import { qdrantSchemaKit as k } from './qdrant.ts';
import type { VectorCatalogEntry } from './vector.ts';

/*
 * The vector face's collection-level operations beyond points: aliases, facets, the
 * distance matrix, snapshots, a single node's cluster info and the worker's part of telemetry.
 * Spread into VECTOR_CATALOG (vector.ts), so they are routed, validated and gated like every
 * other operation; request bodies follow Qdrant 1.19's OpenAPI with serde-style errors.
 */

const alias = (fields: Record<string, z.ZodType>) => k.obj(fields);
export const QdrantAliasOperation = k.untagged('AliasOperations', [
  alias({ create_alias: k.obj({ collection_name: k.str(), alias_name: k.str() }) }),
  alias({ delete_alias: k.obj({ alias_name: k.str() }) }),
  alias({ rename_alias: k.obj({ old_alias_name: k.str(), new_alias_name: k.str() }) }),
]);
export type QdrantAliasOperation =
  | { create_alias: { collection_name: string; alias_name: string } }
  | { delete_alias: { alias_name: string } }
  | { rename_alias: { old_alias_name: string; new_alias_name: string } };
export const QdrantChangeAliases = k.obj({ actions: k.list(QdrantAliasOperation), timeout: k.opt(k.uint()) });

export const QdrantAliasesResponse = z.looseObject({
  aliases: z.array(z.looseObject({ alias_name: z.string(), collection_name: z.string() })),
});
export type QdrantAliasesResponse = { aliases: { alias_name: string; collection_name: string }[] };

export const QdrantFacetRequest = k.obj({
  key: k.str(),
  limit: k.withDefault(k.range(k.uint('usize'), 1), 10),
  filter: k.opt(k.json()),
  exact: k.withDefault(k.bool(), false),
  shard_key: k.opt(k.json()),
});
export type QdrantFacetRequest = z.output<typeof QdrantFacetRequest>;
export type QdrantFacetValue = string | number | boolean;
export const QdrantFacetResponse = z.looseObject({
  hits: z.array(z.looseObject({ value: z.union([z.string(), z.number(), z.bigint(), z.boolean()]), count: z.number() })),
});
export type QdrantFacetResponse = { hits: { value: QdrantFacetValue; count: number }[] };

export const QdrantSearchMatrixRequest = k.obj({
  filter: k.opt(k.json()),
  sample: k.withDefault(k.range(k.uint('usize'), 2), 10),
  limit: k.withDefault(k.range(k.uint('usize'), 1), 3),
  using: k.opt(k.str()),
  shard_key: k.opt(k.json()),
});
export type QdrantSearchMatrixRequest = z.output<typeof QdrantSearchMatrixRequest>;
const pointId = () => z.union([z.number(), z.bigint(), z.string()]);
export const QdrantMatrixPairs = z.looseObject({ pairs: z.array(z.looseObject({ a: pointId(), b: pointId(), score: z.number() })) });
export type QdrantMatrixPairs = { pairs: { a: number | bigint | string; b: number | bigint | string; score: number }[] };
export const QdrantMatrixOffsets = z.looseObject({
  offsets_row: z.array(z.number()),
  offsets_col: z.array(z.number()),
  scores: z.array(z.number()),
  ids: z.array(pointId()),
});
export type QdrantMatrixOffsets = { offsets_row: number[]; offsets_col: number[]; scores: number[]; ids: (number | bigint | string)[] };

export const QdrantSnapshotDescription = z.looseObject({
  name: z.string(),
  creation_time: z.string().nullable(),
  size: z.number(),
  checksum: z.string().nullable(),
});
export type QdrantSnapshotDescription = z.output<typeof QdrantSnapshotDescription>;
export const QdrantSnapshotRecover = k.obj({
  location: k.str(),
  priority: k.opt(k.variants(['no_sync', 'snapshot', 'replica'])),
  checksum: k.opt(k.str()),
  api_key: k.opt(k.str()),
});
export type QdrantSnapshotRecover = z.output<typeof QdrantSnapshotRecover>;
/**
 * Snapshot bytes travel through the bus's object store (as the chat face's files do): an upload is
 * put there by the edge and named to the worker in `body`; a download is put there by the worker
 * and named in its reply, and the edge streams it.
 */
export const VectorSnapshotObject = z.looseObject({ object: z.string(), size: z.number(), name: z.string() });
export type VectorSnapshotObject = z.output<typeof VectorSnapshotObject>;

export const QdrantCollectionClusterInfo = z.looseObject({
  peer_id: z.number(),
  shard_count: z.number(),
  local_shards: z.array(z.looseObject({ shard_id: z.number(), points_count: z.number(), state: z.string() })),
  remote_shards: z.array(z.unknown()),
  shard_transfers: z.array(z.unknown()),
});
export type QdrantCollectionClusterInfo = z.output<typeof QdrantCollectionClusterInfo>;

/** The worker's part of `GET /telemetry` and `/metrics`: Qdrant's CollectionsTelemetry at a detail level. */
export const VectorCollectionsTelemetry = z.looseObject({ number_of_collections: z.number() });
export type VectorCollectionsTelemetry = { number_of_collections: number; collections?: unknown[]; snapshots?: unknown[] } & Record<string, unknown>;

/**
 * Operations that answer Qdrant's 202 `{"status":"accepted"}` when called with `?wait=false`
 * (`time_or_accept`; their `wait` defaults to true). The store still finishes before answering.
 */
export const VECTOR_ACCEPTED_WITHOUT_WAIT: ReadonlySet<string> = new Set(['snapshots.create', 'snapshots.delete', 'snapshots.recover', 'snapshots.upload']);
export const acceptedWithoutWait = (op: string, query: unknown): boolean =>
  VECTOR_ACCEPTED_WITHOUT_WAIT.has(op) && ['false', '0'].includes(String((query as Record<string, unknown> | undefined)?.wait ?? '').toLowerCase());

const c = '/collections/:collection';
const snapshots = `${c}/snapshots`;

/** Checks every entry's subject against its name, keeping the literal types (as vectorCatalog in vector.ts). */
const entries = <const C extends { [Op in keyof C & string]: VectorCatalogEntry<Op> }>(x: C): C => x;

export const VECTOR_OPS_CATALOG = entries({
  /** Create, delete and rename actions, applied together in one transaction. */
  'aliases.update': {
    subject: 'vector.aliases.update',
    routes: [{ method: 'POST', url: '/collections/aliases' }],
    body: QdrantChangeAliases,
    reply: z.boolean(),
    writes: true,
  },
  'aliases.list': { subject: 'vector.aliases.list', routes: [{ method: 'GET', url: '/aliases' }], reply: QdrantAliasesResponse, writes: false },
  'aliases.listForCollection': {
    subject: 'vector.aliases.listForCollection',
    routes: [{ method: 'GET', url: `${c}/aliases` }],
    reply: QdrantAliasesResponse,
    writes: false,
  },
  'points.facet': {
    subject: 'vector.points.facet',
    routes: [{ method: 'POST', url: `${c}/facet` }],
    body: QdrantFacetRequest,
    reply: QdrantFacetResponse,
    writes: false,
  },
  'points.matrixPairs': {
    subject: 'vector.points.matrixPairs',
    routes: [{ method: 'POST', url: `${c}/points/search/matrix/pairs` }],
    body: QdrantSearchMatrixRequest,
    reply: QdrantMatrixPairs,
    writes: false,
  },
  'points.matrixOffsets': {
    subject: 'vector.points.matrixOffsets',
    routes: [{ method: 'POST', url: `${c}/points/search/matrix/offsets` }],
    body: QdrantSearchMatrixRequest,
    reply: QdrantMatrixOffsets,
    writes: false,
  },
  'snapshots.create': { subject: 'vector.snapshots.create', routes: [{ method: 'POST', url: snapshots }], reply: QdrantSnapshotDescription, writes: true },
  'snapshots.list': { subject: 'vector.snapshots.list', routes: [{ method: 'GET', url: snapshots }], reply: z.array(QdrantSnapshotDescription), writes: false },
  /** The snapshot name is the `id` path segment. Replies with the object holding its bytes. */
  'snapshots.download': { subject: 'vector.snapshots.download', routes: [{ method: 'GET', url: `${snapshots}/:id` }], reply: VectorSnapshotObject, writes: false },
  'snapshots.delete': { subject: 'vector.snapshots.delete', routes: [{ method: 'DELETE', url: `${snapshots}/:id` }], reply: z.boolean(), writes: true },
  'snapshots.recover': {
    subject: 'vector.snapshots.recover',
    routes: [{ method: 'PUT', url: `${snapshots}/recover` }],
    body: QdrantSnapshotRecover,
    reply: z.boolean(),
    writes: true,
  },
  /** Multipart at the edge; the worker gets `{object, size, name}` of the uploaded bytes as its body. */
  'snapshots.upload': { subject: 'vector.snapshots.upload', routes: [{ method: 'POST', url: `${snapshots}/upload` }], reply: z.boolean(), writes: true },
  'cluster.collectionInfo': {
    subject: 'vector.cluster.collectionInfo',
    routes: [{ method: 'GET', url: `${c}/cluster` }],
    reply: QdrantCollectionClusterInfo,
    writes: false,
  },
  /** No route of its own: the edge's `/telemetry` and `/metrics` add its request statistics to it. */
  'service.telemetry': { subject: 'vector.service.telemetry', routes: [], reply: VectorCollectionsTelemetry, writes: false },
});

