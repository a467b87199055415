/**
 * The Qdrant-compatible vector store over Postgres + pgvector: one method per REST route, each
 * returning exactly the `result` Qdrant puts in its envelope (the bus glue adds
 * `{result, status: "ok", time}`). Bodies are the JSON the client sent; they are parsed here with
 * contracts/qdrant.ts (defaults applied). Failures are `QdrantError`s with Qdrant's status and
 * wording. Storage layout: LAYOUT.md.
 */
import type postgres from 'postgres';
import {
  QdrantCountRequest,
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
  type QdrantQueryRequest as QueryRequest,
  type QdrantQueryResponse,
  type QdrantRecord,
  type QdrantScoredPoint,
  type QdrantScrollResult,
  type QdrantUpdateResult,
} from '@gatehouse/contracts';
import { isUndefinedTable, loadCollection, type CollectionMeta } from './catalog.ts';
import * as collections from './collections.ts';
import { parseBody, updateResult, type WriteOptions } from './common.ts';
import { notFoundCollection } from './errors.ts';
import * as points from './points.ts';
import * as reads from './reads.ts';
import { query } from './query.ts';
import * as searches from './search.ts';
import * as vectorNames from './vector-names.ts';

export type { WriteOptions } from './common.ts';

export class VectorStore {
  readonly schema: string;

  constructor(
    private readonly sql: postgres.Sql,
    opts: { schema: string },
  ) {
    this.schema = opts.schema;
  }

  /** Load the collection, run a read; a table dropped mid-read is a 404 too. */
  private async read<T>(name: string, fn: (meta: CollectionMeta) => Promise<T>): Promise<T> {
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
  ): Promise<QdrantUpdateResult> {
    const op = await points.runWrite(this.sql, this.schema, name, fn);
    return updateResult(op, opts);
  }

  // ---------------------------------------------------------------------------------------------
  // Collections

  /** `GET /collections` */
  async listCollections(): Promise<QdrantCollectionsResponse> {
    return collections.listCollections(this.sql, this.schema);
  }

  /** `PUT /collections/{name}` → `true`; 409 if it exists, 422 for a bad name. */
  async createCollection(name: string, body: unknown): Promise<true> {
    return collections.createCollection(this.sql, this.schema, name, body);
  }

  /** `GET /collections/{name}` */
  async getCollection(name: string): Promise<QdrantCollectionInfo> {
    return collections.getCollection(this.sql, this.schema, name);
  }

  /** `GET /collections/{name}/exists` */
  async collectionExists(name: string): Promise<{ exists: boolean }> {
    return collections.collectionExists(this.sql, this.schema, name);
  }

  /** `PATCH /collections/{name}` → `true` (parameters are stored; indexes are not rebuilt). */
  async updateCollection(name: string, body: unknown): Promise<true> {
    return collections.updateCollection(this.sql, this.schema, name, body);
  }

  /** `DELETE /collections/{name}` → `true`, or `false` if it did not exist. */
  async deleteCollection(name: string): Promise<boolean> {
    return collections.deleteCollection(this.sql, this.schema, name);
  }

  /** `PUT /collections/{name}/index` */
  async createFieldIndex(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    return collections.createFieldIndex(this.sql, this.schema, name, body, opts);
  }

  /** `PUT /collections/{name}/vectors/{vector}` (`{dense: VectorParams}` or `{sparse: …}`) */
  async createVectorName(name: string, vector: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    return vectorNames.createVectorName(this.sql, this.schema, name, vector, body, opts);
  }

  /** `DELETE /collections/{name}/vectors/{vector}` (the vector's values go with it) */
  async deleteVectorName(name: string, vector: string, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    return vectorNames.deleteVectorName(this.sql, this.schema, name, vector, opts);
  }

  /** `DELETE /collections/{name}/index/{field}` */
  async deleteFieldIndex(name: string, field: string, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    return collections.deleteFieldIndex(this.sql, this.schema, name, field, opts);
  }

  // ---------------------------------------------------------------------------------------------
  // Point writes

  /** `PUT /collections/{name}/points` (`{points}` or `{batch}`) */
  async upsertPoints(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantPointInsertOperations, body);
    return this.write(name, opts, (c) => points.upsert(c, req));
  }

  /** `POST /collections/{name}/points/delete` */
  async deletePoints(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantPointsSelector, body);
    return this.write(name, opts, (c) => points.deletePoints(c, req));
  }

  /** `POST /collections/{name}/points/payload` (merge keys) */
  async setPayload(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantSetPayload, body);
    return this.write(name, opts, (c) => points.setPayload(c, req, false));
  }

  /** `PUT /collections/{name}/points/payload` (replace the payload) */
  async overwritePayload(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantSetPayload, body);
    return this.write(name, opts, (c) => points.setPayload(c, req, true));
  }

  /** `POST /collections/{name}/points/payload/delete` */
  async deletePayload(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantDeletePayload, body);
    return this.write(name, opts, (c) => points.deletePayload(c, req));
  }

  /** `POST /collections/{name}/points/payload/clear` */
  async clearPayload(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantPointsSelector, body);
    return this.write(name, opts, (c) => points.clearPayload(c, req));
  }

  /** `PUT /collections/{name}/points/vectors` */
  async updateVectors(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantUpdateVectors, body);
    return this.write(name, opts, (c) => points.updateVectors(c, req));
  }

  /** `POST /collections/{name}/points/vectors/delete` */
  async deleteVectors(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult> {
    const req = parseBody(QdrantDeleteVectors, body);
    return this.write(name, opts, (c) => points.deleteVectors(c, req));
  }

  /**
   * `POST /collections/{name}/points/batch` → one UpdateResult per operation. All operations run
   * in one transaction: if one fails, none is applied (Qdrant keeps the ones before it).
   */
  async batchUpdate(name: string, body: unknown, opts: WriteOptions = {}): Promise<QdrantUpdateResult[]> {
    const req = parseBody(QdrantUpdateOperations, body);
    const ops = await points.runWrite(this.sql, this.schema, name, async (c) => {
      const ids: number[] = [];
      for (const operation of req.operations) ids.push(await points.applyOperation(c, operation));
      return ids;
    });
    return ops.map((op) => updateResult(op, opts));
  }

  // ---------------------------------------------------------------------------------------------
  // Point reads

  /** `POST /collections/{name}/points` (missing ids are absent; payload on, vectors off by default) */
  async retrievePoints(name: string, body: unknown): Promise<QdrantRecord[]> {
    const req = parseBody(QdrantPointRequest, body);
    return this.read(name, (meta) => reads.retrieve(this.sql, this.schema, meta, req));
  }

  /** `GET /collections/{name}/points/{id}` (404 if missing) */
  async getPoint(name: string, id: string): Promise<QdrantRecord> {
    return this.read(name, (meta) => reads.getPoint(this.sql, this.schema, meta, id));
  }

  /** `POST /collections/{name}/points/scroll` */
  async scrollPoints(name: string, body: unknown): Promise<QdrantScrollResult> {
    const req = parseBody(QdrantScrollRequest, body);
    return this.read(name, (meta) => reads.scroll(this.sql, this.schema, meta, req));
  }

  /** `POST /collections/{name}/points/count` */
  async countPoints(name: string, body: unknown): Promise<QdrantCountResult> {
    const req = parseBody(QdrantCountRequest, body);
    return this.read(name, (meta) => reads.count(this.sql, this.schema, meta, req));
  }

  /** `POST /collections/{name}/points/search` (deprecated) */
  async searchPoints(name: string, body: unknown): Promise<QdrantScoredPoint[]> {
    const req = parseBody(QdrantSearchRequest, body);
    return this.read(name, (meta) => searches.search(this.sql, this.schema, meta, req));
  }

  /** `POST /collections/{name}/points/search/batch` (deprecated) */
  async searchBatch(name: string, body: unknown): Promise<QdrantScoredPoint[][]> {
    const req = parseBody(QdrantSearchRequestBatch, body);
    return this.read(name, (meta) => Promise.all(req.searches.map((s) => searches.search(this.sql, this.schema, meta, s))));
  }

  /** `POST /collections/{name}/points/query` */
  async queryPoints(name: string, body: unknown): Promise<QdrantQueryResponse> {
    const req = parseBody(QdrantQueryRequest, body) as QueryRequest;
    return this.read(name, (meta) => query(this.sql, this.schema, meta, req));
  }

  /** `POST /collections/{name}/points/query/batch` */
  async queryBatch(name: string, body: unknown): Promise<QdrantQueryResponse[]> {
    const req = parseBody(QdrantQueryRequestBatch, body) as { searches: QueryRequest[] };
    return this.read(name, (meta) => Promise.all(req.searches.map((s) => query(this.sql, this.schema, meta, s))));
  }
}
