/**
 * The catalog (LAYOUT.md): `collections` and `payload_indexes` in the store's schema, and the
 * per-collection metadata every operation loads first (vector name → column, distance, size).
 * The catalog tables come from infra/migrations/vector, applied by the one migration runner
 * (docs/migrations.md); the worker only checks they are current (main.ts).
 */
import type postgres from 'postgres';
import type {
  QdrantCollectionConfig,
  QdrantDistance,
  QdrantPayloadFieldSchema,
  QdrantVectorParamsOutput,
} from '@gatehouse/contracts';
import { collectionByNameOrAlias } from './aliases.ts';
import { notFoundCollection } from '../errors.ts';

/** A `postgres.Sql` or a transaction of it (both run tagged templates). */
export type Db = postgres.Sql | postgres.TransactionSql;
export type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** What `collections.config` holds: Qdrant's CollectionConfig plus our storage mapping. */
export type StoredConfig = QdrantCollectionConfig & {
  /** Vector name (`""` for the unnamed vector) → column (`v0`, `v1`, … in config order). */
  columns: Record<string, string>;
  /** Whether `vectors` was given as a map of named vectors (records then always show a map). */
  named: boolean;
};

/**
 * A dense vector column (kinds.ts): `multi` when it holds a multivector (`vector[]`, MaxSim),
 * `datatype` as configured (float16 columns are `halfvec`; uint8 and turbo4 values are converted
 * on the way in, vectors.ts).
 */
export type DenseVector = {
  name: string;
  column: string;
  size: number;
  distance: QdrantDistance;
  multi: boolean;
  datatype: VectorDatatype;
};
export type VectorDatatype = 'float32' | 'float16' | 'uint8' | 'turbo4';

export type CollectionMeta = {
  id: number;
  name: string;
  config: StoredConfig;
  /** `points_<id>` */
  table: string;
  /** `points_<id>_ops`: operation ids, also used as point versions. */
  sequence: string;
  dense: Map<string, DenseVector>;
  sparse: Set<string>;
  payloadIndexes: Map<string, QdrantPayloadFieldSchema>;
};

/** Columns that belong to the storage mapping, not to Qdrant's CollectionConfig. */
export const INTERNAL_CONFIG_KEYS = ['columns', 'named'] as const;

/** Sorted vector-params map, as Qdrant (a BTreeMap) prints it. */
export function vectorParamsOf(config: StoredConfig): Record<string, QdrantVectorParamsOutput> {
  const v = config.params.vectors;
  if (!config.named) return { '': v as QdrantVectorParamsOutput };
  return v as Record<string, QdrantVectorParamsOutput>;
}

type CollectionRow = { id: number; name: string; config: StoredConfig };

export function metaOf(row: CollectionRow, indexes: { field: string; schema: QdrantPayloadFieldSchema }[]): CollectionMeta {
  const params = vectorParamsOf(row.config);
  const dense = new Map<string, DenseVector>();
  for (const [name, column] of Object.entries(row.config.columns)) {
    const p = params[name];
    if (p) {
      const datatype = (p.datatype ?? 'float32') as VectorDatatype;
      dense.set(name, { name, column, size: p.size, distance: p.distance, multi: p.multivector_config != null, datatype });
    }
  }
  return {
    id: row.id,
    name: row.name,
    config: row.config,
    table: `points_${row.id}`,
    sequence: `points_${row.id}_ops`,
    dense,
    sparse: new Set(Object.keys(row.config.params.sparse_vectors ?? {})),
    payloadIndexes: new Map(indexes.map((i) => [i.field, i.schema])),
  };
}

/**
 * Load a collection's metadata or throw Qdrant's 404. With `lock`, the catalog row is share-locked
 * until the transaction ends, so a concurrent delete waits for this write to finish.
 */
export async function loadCollection(db: Db, schema: string, name: string, lock = false): Promise<CollectionMeta> {
  // `name` may be an alias (aliases.ts): an alias works wherever a collection name does.
  const which = collectionByNameOrAlias(db, schema, name);
  if (!lock) {
    // Every read starts here: the collection and its payload indexes in one round trip.
    const [row] = await db<(CollectionRow & { indexes: { field: string; schema: QdrantPayloadFieldSchema }[] })[]>`
      select id, name, config,
             coalesce((select json_agg(json_build_object('field', p.field, 'schema', p.schema) order by p.field)
                       from ${db(schema)}.payload_indexes p where p.collection_id = c.id), '[]'::json) as indexes
      from ${db(schema)}.collections c where ${which}`;
    if (!row) throw notFoundCollection(name);
    return metaOf(row, row.indexes);
  }
  const rows = await db<CollectionRow[]>`select id, name, config from ${db(schema)}.collections where ${which} for share`;
  const row = rows[0];
  if (!row) throw notFoundCollection(name);
  const indexes = await db<{ field: string; schema: QdrantPayloadFieldSchema }[]>`
    select field, schema from ${db(schema)}.payload_indexes where collection_id = ${row.id} order by field`;
  return metaOf(row, [...indexes]);
}

/**
 * Collection metadata kept between reads, so a search is not preceded by a catalog round trip.
 * Every change to the catalog (collections, payload indexes, vector names, aliases, snapshot
 * recovery) calls `forget()` after it commits — on this worker directly, on the others through the
 * bus (main.ts) before the change is acknowledged. A load that began before a `forget()` is not
 * kept (the generation moved on), and an entry older than `ttlMs` is read again, which bounds how
 * long a lost bus message could leave one stale. Entries are shared: callers never mutate them.
 * Writes do not use it: they load the row under a share lock in their own transaction.
 */
export class CatalogCache {
  private readonly byName = new Map<string, { meta: CollectionMeta; at: number }>();
  private generation = 0;
  constructor(
    private readonly ttlMs = 5000,
    private readonly maxEntries = 1000,
  ) {}

  /** The collection (or alias) `name`, from the cache when fresh; `cached` says which. */
  async get(db: Db, schema: string, name: string): Promise<{ meta: CollectionMeta; cached: boolean }> {
    const now = performance.now();
    const hit = this.byName.get(name);
    if (hit && now - hit.at < this.ttlMs) return { meta: hit.meta, cached: true };
    const generation = this.generation;
    const meta = await loadCollection(db, schema, name);
    if (generation === this.generation) {
      if (this.byName.size >= this.maxEntries) this.byName.clear();
      this.byName.set(name, { meta, at: now });
    }
    return { meta, cached: false };
  }

  /** Drop everything (the catalog changed; which entries it touched is not worth working out). */
  forget(): void {
    this.generation++;
    this.byName.clear();
  }
}

/** `schema.points_<id>` as an identifier fragment. */
export function tableOf(db: Db, schema: string, meta: CollectionMeta): Fragment {
  return db`${db(schema)}.${db(meta.table)}`;
}

/** Postgres "undefined_table": the collection was dropped under a running operation. */
export function isUndefinedTable(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: string }).code === '42P01';
}
