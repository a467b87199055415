/**
 * The Qdrant-compatible vector store over Postgres + pgvector: one method per REST route, each
 * returning exactly the `result` Qdrant puts in its envelope (the bus glue adds
 * `{result, status: "ok", time}`). Bodies are the JSON the client sent; they are parsed here with
 * contracts/qdrant.ts (defaults applied). Failures are `QdrantError`s with Qdrant's status and
 * wording. Storage layout: LAYOUT.md.
 */
import type postgres from 'postgres';
import {
  QdrantFacetRequest,
  QdrantSearchMatrixRequest,
  type QdrantAliasesResponse,
  type QdrantCollectionClusterInfo,
  type QdrantFacetResponse,
  type QdrantMatrixOffsets,
  type QdrantMatrixPairs,
  type VectorCollectionsTelemetry,
  QdrantCountRequest,
  QdrantDiscoverRequest,
  QdrantDiscoverRequestBatch,
  QdrantQueryGroupsRequest,
  QdrantRecommendGroupsRequest,
  QdrantRecommendRequest,
  QdrantRecommendRequestBatch,
  QdrantSearchGroupsRequest,
  QdrantDeletePayload,
  QdrantDeleteVectors,
  QdrantPointInsertOperations,
  QdrantPointRequest,
  QdrantPointsSelector,
  QdrantQueryRequest,
  QdrantQueryRequestBatch,
  QdrantScrollRequest,
  QdrantSearchRequest,
  QdrantSearchRequestBatch,
  QdrantSetPayload,
  QdrantUpdateOperations,
  QdrantUpdateVectors,
  type QdrantCollectionInfo,
  type QdrantCollectionsResponse,
  type QdrantCountResult,
  type QdrantOptimizationsResponse,
  type QdrantGroupsResult,
  type QdrantQueryGroupsRequest as QueryGroupsRequest,
  type QdrantQueryRequest as QueryRequest,
  type QdrantQueryResponse,
  type QdrantRecord,
  type QdrantScoredPoint,
  type QdrantScrollResult,
  type QdrantUpdateResult,
} from '@gatehouse/contracts';
import { join } from 'node:path';
import { CatalogCache, isUndefinedTable, loadCollection, tableOf, type CollectionMeta } from './collections/catalog.ts';
import * as aliases from './collections/aliases.ts';
import { facet } from './query/facets.ts';
import { matrixOffsets, matrixPairs } from './query/matrix.ts';
import { SnapshotStore } from './snapshots/snapshots.ts';
import { collectionClusterInfo, collectionsTelemetry } from './collections/telemetry.ts';
import { optimizations } from './collections/collection-info.ts';
import * as collections from './collections/collections.ts';
import { parseBody, updateResult, WAIT_TIMEOUT, waitAtMost, type ReadOptions, type WriteOptions } from './common.ts';
import { notFoundCollection } from './errors.ts';
import { queryGroups } from './query/groups.ts';
import * as legacy from './query/legacy.ts';
import * as points from './points/points.ts';
import * as reads from './points/reads.ts';
import { query } from './query/query.ts';
import * as searches from './search/search.ts';
import * as vectorNames from './collections/vector-names.ts';
import * as strict from './strict-mode/strict-mode.ts';

export type { ReadOptions, WriteOptions } from './common.ts';

export class VectorStore {
  readonly schema: string;

  /** Snapshot files (snapshots.ts), under `snapshotDir` (VECTOR_SNAPSHOT_DIR). */
  readonly snapshots: SnapshotStore;

  /** Collection metadata of reads (catalog.ts): forgotten on every catalog change. */
  private readonly catalog = new CatalogCache();
  private readonly announce: () => void;

  constructor(
    private readonly sql: postgres.Sql,
    opts: {
      schema: string;
      snapshotDir?: string;
      /** Tells the other workers that the catalog changed (main.ts: over the bus), after this one forgot its cache. */
      onCatalogChange?: () => void;
    },
  ) {
    this.schema = opts.schema;
    this.announce = opts.onCatalogChange ?? (() => undefined);
    this.snapshots = new SnapshotStore(sql, opts.schema, opts.snapshotDir ?? join('.state', 'vector-snapshots'), () => this.catalogChanged());
  }

  /** The catalog changed (here or, via the bus, on another worker): no cached metadata survives it. */
  forgetCatalog(): void {
    this.catalog.forget();
  }

  /** After a catalog change committed (or failed: it may have done part), before it is acknowledged. */
  private catalogChanged(): void {
    this.catalog.forget();
    this.announce();
  }

  /** Run a catalog change; whatever its outcome, cached metadata is forgotten before it answers. */
  private async changing<T>(change: Promise<T>): Promise<T> {
    try {
      return await change;
    } finally {
      this.catalogChanged();
    }
  }

  /**
   * The collection's metadata (cached), then the read; a table dropped mid-read is a 404 too. A
   * missing table behind cached metadata (the collection was dropped, perhaps recreated, and this
   * worker has not heard yet) is looked up again once before it counts as missing.
   */
  private async read<T>(name: string, fn: (meta: CollectionMeta) => Promise<T>): Promise<T> {
    const { meta, cached } = await this.catalog.get(this.sql, this.schema, name);
    try {
      return await fn(meta);
    } catch (err) {
      if (!isUndefinedTable(err)) throw err;
      if (!cached) throw notFoundCollection(name);
    }
    this.catalog.forget();
    try {
      return await fn(await loadCollection(this.sql, this.schema, name));
    } catch (err) {
      if (isUndefinedTable(err)) throw notFoundCollection(name);
      throw err;
    }
  }

  private async write(
    name: string,
    opts: WriteOptions,
    fn: (c: points.WriteCtx) => Promise<number>,
    checks: strict.WriteCheck[] = [],
  ): Promise<QdrantUpdateResult> {
    await this.checkWrites(name, checks, opts);
    const op = await waitAtMost(points.runWrite(this.sql, this.schema, name, fn), opts);
    return op === undefined ? WAIT_TIMEOUT : updateResult(op, opts);
  }

  /**
   * Strict mode before a write (strict-mode.ts): it needs the collection's config first, so the
   * write's own transaction does not hold the shared rate bucket while it runs.
   */
  private async checkWrites(name: string, checks: strict.WriteCheck[], opts: WriteOptions): Promise<void> {
    // One cheap look first: most collections have no strict mode, and a missing collection is
    // reported by the write itself.
    const [row] = await this.sql<{ on: boolean }[]>`
      select coalesce(config #> '{strict_mode_config,enabled}' = 'true'::jsonb, false) as on
      from ${this.sql(this.schema)}.collections where name = ${name}`;
    if (!row?.on) return;
    const meta = await loadCollection(this.sql, this.schema, name);
    if (!strict.activeStrictMode(meta)) return;
    if (checks.length === 0) strict.checkTimeout(meta, opts.timeout);
    for (const w of checks) await strict.checkWrite(this.sql, this.schema, meta, w, opts.timeout);
  }

  /** Strict mode before a read (limits, filters, search params, rate); see strict-mode.ts. */
  private async checkRead(meta: CollectionMeta, parts: strict.ReadParts | strict.ReadParts[], opts: ReadOptions): Promise<void> {
    await strict.checkRead(this.sql, this.schema, meta, parts, opts.timeout);
  }

  // ---------------------------------------------------------------------------------------------
  // Collections

  /** `GET /collections` */
  async listCollections(): Promise<QdrantCollectionsResponse> {
    return collections.listCollections(this.sql, this.schema);
  }

  /** `PUT /collections/{name}` → `true`; 409 if it exists, 422 for a bad name. */
  async createCollection(name: string, body: unknown): Promise<true> {
    return this.changing(collections.createCollection(this.sql, this.schema, name, body));
  }

  /** `GET /collections/{name}` */
  async getCollection(name: string): Promise<QdrantCollectionInfo> {
    return collections.getCollection(this.sql, this.schema, name);
  }

  /** `GET /collections/{name}/exists` */
  async collectionExists(name: string): Promise<{ exists: boolean }> {
    return collections.collectionExists(this.sql, this.schema, await aliases.resolveName(this.sql, this.schema, name));
  }

  /** `GET /collections/{name}/optimizations` (`with`: comma-separated optional fields). */
  async getOptimizations(name: string, withFields?: string): Promise<QdrantOptimizationsResponse> {
    return this.read(name, async (meta) => {
      const [row] = await this.sql<{ n: string }[]>`select count(*)::text as n from ${tableOf(this.sql, this.schema, meta)}`;
      return optimizations(meta, Number(row!.n), withFields);
    });
  }

  /** `PATCH /collections/{name}` → `true` (parameters are stored; indexes are not rebuilt). */
  async updateCollection(name: string, body: unknown): Promise<true> {
    return this.changing(aliases.resolveName(this.sql, this.schema, name).then((n) => collections.updateCollection(this.sql, this.schema, n, body)));
  }

  /** `DELETE /collections/{name}` → `true`, or `false` if it did not exist. */
  async deleteCollection(name: string): Promise<boolean> {
    return this.changing(collections.deleteCollection(this.sql, this.schema, name));
  }

  /** `PUT /collections/{name}/index` */
  async createFieldIndex(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    return this.changing(collections.createFieldIndex(this.sql, this.schema, name, body, opts));
  }

  /** `PUT /collections/{name}/vectors/{vector}` (`{dense: VectorParams}` or `{sparse: …}`) */
  async createVectorName(name: string, vector: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    return this.changing(vectorNames.createVectorName(this.sql, this.schema, name, vector, body, opts));
  }

  /** `DELETE /collections/{name}/vectors/{vector}` (the vector's values go with it) */
  async deleteVectorName(name: string, vector: string, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    return this.changing(vectorNames.deleteVectorName(this.sql, this.schema, name, vector, opts));
  }

  /** `DELETE /collections/{name}/index/{field}` */
  async deleteFieldIndex(name: string, field: string, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    return this.changing(collections.deleteFieldIndex(this.sql, this.schema, name, field, opts));
  }

  // ---------------------------------------------------------------------------------------------
  // Point writes

  /** `PUT /collections/{name}/points` (`{points}` or `{batch}`) */
  async upsertPoints(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantPointInsertOperations, body);
    return this.write(name, opts, (c) => points.upsert(c, req), [strict.writeCheckOf({ upsert: req })]);
  }

  /** `POST /collections/{name}/points/delete` */
  async deletePoints(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantPointsSelector, body);
    return this.write(name, opts, (c) => points.deletePoints(c, req), [strict.writeCheckOf({ delete: req })]);
  }

  /** `POST /collections/{name}/points/payload` (merge keys) */
  async setPayload(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantSetPayload, body);
    return this.write(name, opts, (c) => points.setPayload(c, req, false), [strict.writeCheckOf({ set_payload: req })]);
  }

  /** `PUT /collections/{name}/points/payload` (replace the payload) */
  async overwritePayload(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantSetPayload, body);
    return this.write(name, opts, (c) => points.setPayload(c, req, true), [strict.writeCheckOf({ overwrite_payload: req })]);
  }

  /** `POST /collections/{name}/points/payload/delete` */
  async deletePayload(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantDeletePayload, body);
    return this.write(name, opts, (c) => points.deletePayload(c, req), [strict.writeCheckOf({ delete_payload: req })]);
  }

  /** `POST /collections/{name}/points/payload/clear` */
  async clearPayload(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantPointsSelector, body);
    return this.write(name, opts, (c) => points.clearPayload(c, req), [strict.writeCheckOf({ clear_payload: req })]);
  }

  /** `PUT /collections/{name}/points/vectors` */
  async updateVectors(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantUpdateVectors, body);
    return this.write(name, opts, (c) => points.updateVectors(c, req), [strict.writeCheckOf({ update_vectors: req })]);
  }

  /** `POST /collections/{name}/points/vectors/delete` */
  async deleteVectors(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantDeleteVectors, body);
    return this.write(name, opts, (c) => points.deleteVectors(c, req), [strict.writeCheckOf({ delete_vectors: req })]);
  }

  /**
   * `POST /collections/{name}/points/batch` → one UpdateResult per operation. All operations run
   * in one transaction: if one fails, none is applied (Qdrant keeps the ones before it).
   */
  async batchUpdate(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult[]> {
    const req = parseBody(QdrantUpdateOperations, body);
    await this.checkWrites(name, req.operations.map(strict.writeCheckOf), opts);
    const ops = await waitAtMost(
      points.runWrite(this.sql, this.schema, name, async (c) => {
        const ids: number[] = [];
        for (const operation of req.operations) ids.push(await points.applyOperation(c, operation));
        return ids;
      }),
      opts,
    );
    if (ops === undefined) return req.operations.map(() => WAIT_TIMEOUT);
    return ops.map((op) => updateResult(op, opts));
  }

  // ---------------------------------------------------------------------------------------------
  // Point reads

  /** `POST /collections/{name}/points` (missing ids are absent; payload on, vectors off by default) */
  async retrievePoints(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantRecord[]> {
    const req = parseBody(QdrantPointRequest, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, { cost: req.ids.length }, opts);
      return reads.retrieve(this.sql, this.schema, meta, req);
    });
  }

  /** `GET /collections/{name}/points/{id}` (404 if missing) */
  async getPoint(name: string, id: string, opts: ReadOptions = {}): Promise<QdrantRecord> {
    return this.read(name, async (meta) => {
      await this.checkRead(meta, {}, opts);
      return reads.getPoint(this.sql, this.schema, meta, id);
    });
  }

  /** `POST /collections/{name}/points/scroll` */
  async scrollPoints(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantScrollResult> {
    const req = parseBody(QdrantScrollRequest, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, strict.scrollParts(req), opts);
      return reads.scroll(this.sql, this.schema, meta, req);
    });
  }

  /** `POST /collections/{name}/points/count` */
  async countPoints(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantCountResult> {
    const req = parseBody(QdrantCountRequest, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, strict.countParts(req), opts);
      return reads.count(this.sql, this.schema, meta, req);
    });
  }

  /** `POST /collections/{name}/points/search` (deprecated) */
  async searchPoints(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantScoredPoint[]> {
    const req = parseBody(QdrantSearchRequest, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, strict.searchParts(req), opts);
      return searches.search(this.sql, this.schema, meta, req);
    });
  }

  /** `POST /collections/{name}/points/search/batch` (deprecated) */
  async searchBatch(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantScoredPoint[][]> {
    const req = parseBody(QdrantSearchRequestBatch, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, req.searches.map(strict.searchParts), opts);
      return Promise.all(req.searches.map((s) => searches.search(this.sql, this.schema, meta, s)));
    });
  }

  /** `POST /collections/{name}/points/query` */
  async queryPoints(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantQueryResponse> {
    const req = parseBody(QdrantQueryRequest, body) as QueryRequest;
    return this.read(name, async (meta) => {
      await this.checkRead(meta, strict.queryRequestParts(req), opts);
      return query(this.sql, this.schema, meta, req);
    });
  }

  /** `POST /collections/{name}/points/query/batch` */
  async queryBatch(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantQueryResponse[]> {
    const req = parseBody(QdrantQueryRequestBatch, body) as { searches: QueryRequest[] };
    return this.read(name, async (meta) => {
      await this.checkRead(meta, req.searches.map((s) => strict.queryRequestParts(s)), opts);
      return Promise.all(req.searches.map((s) => query(this.sql, this.schema, meta, s)));
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Aliases, facets, distance matrix, cluster, telemetry (snapshots: `this.snapshots`)

  /** `POST /collections/aliases` */
  async updateAliases(body: unknown): Promise<true> {
    return this.changing(aliases.updateAliases(this.sql, this.schema, body));
  }

  /** `GET /aliases`, `GET /collections/{name}/aliases` */
  async listAliases(collection?: string): Promise<QdrantAliasesResponse> {
    return aliases.listAliases(this.sql, this.schema, collection);
  }

  /** `POST /collections/{name}/facet` */
  async facet(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantFacetResponse> {
    const req = parseBody(QdrantFacetRequest, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, strict.facetParts(body), opts);
      return facet(this.sql, this.schema, meta, req);
    });
  }

  /** `POST /collections/{name}/points/search/matrix/pairs` */
  async matrixPairs(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantMatrixPairs> {
    const req = parseBody(QdrantSearchMatrixRequest, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, strict.matrixParts(body), opts);
      return matrixPairs(this.sql, this.schema, meta, req);
    });
  }

  /** `POST /collections/{name}/points/search/matrix/offsets` */
  async matrixOffsets(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantMatrixOffsets> {
    const req = parseBody(QdrantSearchMatrixRequest, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, strict.matrixParts(body), opts);
      return matrixOffsets(this.sql, this.schema, meta, req);
    });
  }

  /** `GET /collections/{name}/cluster` */
  async clusterInfo(name: string): Promise<QdrantCollectionClusterInfo> {
    return collectionClusterInfo(this.sql, this.schema, name);
  }

  /** The collections part of `GET /telemetry` at `details_level` (telemetry.ts). */
  async telemetry(level: number): Promise<VectorCollectionsTelemetry> {
    return collectionsTelemetry(this.sql, this.schema, level, (c) => this.snapshots.count(c));
  }

  /** `POST /collections/{name}/points/query/groups` */
  async queryGroups(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantGroupsResult> {
    const req = parseBody(QdrantQueryGroupsRequest, body) as QueryGroupsRequest;
    return this.read(name, async (meta) => {
      await this.checkRead(meta, strict.groupsRequestParts(req), opts);
      return queryGroups(this.ctx(meta), req);
    });
  }

  /** `POST /collections/{name}/points/search/groups` (deprecated) */
  async searchGroups(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantGroupsResult> {
    const req = parseBody(QdrantSearchGroupsRequest, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, { ...strict.searchParts(req), limit: req.limit * req.group_size, groupBy: req.group_by }, opts);
      return legacy.searchGroups(this.ctx(meta), req);
    });
  }

  /** `POST /collections/{name}/points/recommend` (deprecated) */
  async recommendPoints(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantScoredPoint[]> {
    const req = parseBody(QdrantRecommendRequest, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, strict.searchParts(req), opts);
      return legacy.recommend(this.ctx(meta), req);
    });
  }

  /** `POST /collections/{name}/points/recommend/batch` (deprecated) */
  async recommendBatch(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantScoredPoint[][]> {
    const req = parseBody(QdrantRecommendRequestBatch, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, req.searches.map(strict.searchParts), opts);
      return Promise.all(req.searches.map((s) => legacy.recommend(this.ctx(meta), s)));
    });
  }

  /** `POST /collections/{name}/points/recommend/groups` (deprecated) */
  async recommendGroups(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantGroupsResult> {
    const req = parseBody(QdrantRecommendGroupsRequest, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, { ...strict.searchParts(req), limit: req.limit * req.group_size, groupBy: req.group_by }, opts);
      return legacy.recommendGroups(this.ctx(meta), req);
    });
  }

  /** `POST /collections/{name}/points/discover` (deprecated) */
  async discoverPoints(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantScoredPoint[]> {
    const req = parseBody(QdrantDiscoverRequest, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, strict.searchParts(req), opts);
      return legacy.discover(this.ctx(meta), req);
    });
  }

  /** `POST /collections/{name}/points/discover/batch` (deprecated) */
  async discoverBatch(name: string, body: unknown, opts: ReadOptions = {}): Promise<QdrantScoredPoint[][]> {
    const req = parseBody(QdrantDiscoverRequestBatch, body);
    return this.read(name, async (meta) => {
      await this.checkRead(meta, req.searches.map(strict.searchParts), opts);
      return Promise.all(req.searches.map((s) => legacy.discover(this.ctx(meta), s)));
    });
  }

  private ctx(meta: CollectionMeta) {
    return { sql: this.sql, schema: this.schema, meta };
  }
}
