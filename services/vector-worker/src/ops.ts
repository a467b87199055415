import type { z } from 'zod';
import { BusError, publishPlatformEvent, type Bus, type Logger } from '@gatehouse/common';
import type { VectorCatalog, VectorOp, VectorOpRequest } from '@gatehouse/contracts';
import { QdrantError } from './store/errors.ts';
import type { VectorStore } from './store/vector-store.ts';
import { putSnapshot, recoverUploaded } from './snapshot-objects.ts';
import { bodyOf, coll, readOpts, timeoutOf, wait } from './request.ts';

/** One handler per catalog operation (a missing one does not compile), answering that operation's Qdrant `result`. */
export type VectorHandlers = { [Op in VectorOp]: (req: VectorOpRequest) => Promise<z.input<VectorCatalog[Op]['reply']>> };

/** The vector worker's operations over `store`: the catalog's table, and `run`, which serves one. */
export function vectorOps(store: VectorStore, bus: Bus, log: Logger) {
  /**
   * A collection created or deleted, on the EVENTS stream for webhook subscribers (after the
   * change committed; a publish that fails is logged, the request still succeeds).
   */
  async function collectionEvent(name: 'collection.created' | 'collection.deleted', collection: string, body?: unknown): Promise<void> {
    const size = (body as { vectors?: { size?: unknown } } | undefined)?.vectors?.size;
    await publishPlatformEvent(bus, name, {
      subject: { type: 'collection', id: collection },
      data: name === 'collection.created' ? { collection, face: 'vector', ...(typeof size === 'number' ? { dimension: size } : {}) } : { collection, face: 'vector' },
      source: 'vector',
    }).catch((err) => log.warn({ err: (err as Error).message, collection }, `${name} not published`));
  }

  const handlers: VectorHandlers = {
    'collections.list': () => store.listCollections(),
    'collections.create': async (r) => {
      const created = await store.createCollection(coll(r), r.body);
      await collectionEvent('collection.created', coll(r), r.body);
      return created;
    },
    'collections.get': (r) => store.getCollection(coll(r)),
    'collections.update': (r) => store.updateCollection(coll(r), r.body),
    'collections.delete': async (r) => {
      const existed = await store.deleteCollection(coll(r));
      if (existed) await collectionEvent('collection.deleted', coll(r));
      return existed;
    },
    'collections.exists': (r) => store.collectionExists(coll(r)),
    'collections.optimizations': (r) => store.getOptimizations(coll(r), r.query.with),
    'index.create': (r) => store.createFieldIndex(coll(r), r.body, wait(r)),
    'index.delete': (r) => store.deleteFieldIndex(coll(r), r.field ?? '', wait(r)),
    'vectors.create': (r) => store.createVectorName(coll(r), r.field ?? '', r.body, wait(r)),
    'vectors.delete': (r) => store.deleteVectorName(coll(r), r.field ?? '', wait(r)),
    'points.upsert': (r) => store.upsertPoints(coll(r), r.body, wait(r)),
    'points.retrieve': (r) => store.retrievePoints(coll(r), r.body, readOpts(r)),
    'points.get': (r) => store.getPoint(coll(r), r.id ?? '', readOpts(r)),
    'points.delete': (r) => store.deletePoints(coll(r), r.body, wait(r)),
    'points.setPayload': (r) => store.setPayload(coll(r), r.body, wait(r)),
    'points.overwritePayload': (r) => store.overwritePayload(coll(r), r.body, wait(r)),
    'points.deletePayload': (r) => store.deletePayload(coll(r), r.body, wait(r)),
    'points.clearPayload': (r) => store.clearPayload(coll(r), r.body, wait(r)),
    'points.updateVectors': (r) => store.updateVectors(coll(r), r.body, wait(r)),
    'points.deleteVectors': (r) => store.deleteVectors(coll(r), r.body, wait(r)),
    'points.batch': (r) => store.batchUpdate(coll(r), r.body, wait(r)),
    'points.scroll': (r) => store.scrollPoints(coll(r), r.body, readOpts(r)),
    'points.count': (r) => store.countPoints(coll(r), r.body, readOpts(r)),
    'points.search': (r) => store.searchPoints(coll(r), r.body, readOpts(r)),
    'points.searchBatch': (r) => store.searchBatch(coll(r), r.body, readOpts(r)),
    'points.query': (r) => store.queryPoints(coll(r), r.body, readOpts(r)),
    'points.queryBatch': (r) => store.queryBatch(coll(r), r.body, readOpts(r)),
    'aliases.update': (r) => store.updateAliases(r.body),
    'aliases.list': () => store.listAliases(),
    'aliases.listForCollection': (r) => store.listAliases(coll(r)),
    'points.facet': (r) => store.facet(coll(r), r.body, readOpts(r)),
    'points.matrixPairs': (r) => store.matrixPairs(coll(r), r.body, readOpts(r)),
    'points.matrixOffsets': (r) => store.matrixOffsets(coll(r), r.body, readOpts(r)),
    'snapshots.create': (r) => store.snapshots.create(coll(r)),
    'snapshots.list': (r) => store.snapshots.list(coll(r)),
    'snapshots.download': async (r) => putSnapshot(bus, await store.snapshots.pathOf(coll(r), r.id ?? '')),
    'snapshots.delete': (r) => store.snapshots.delete(coll(r), r.id ?? ''),
    'snapshots.recover': (r) => store.snapshots.recoverFromLocation(coll(r), r.body),
    'snapshots.upload': (r) => recoverUploaded(bus, store.snapshots, coll(r), r.body, r.query.checksum),
    'cluster.collectionInfo': (r) => store.clusterInfo(coll(r)),
    'service.telemetry': (r) => store.telemetry(Number(r.query.details_level ?? 0) || 0),
    'points.queryGroups': (r) => store.queryGroups(coll(r), r.body, readOpts(r)),
    'points.searchGroups': (r) => store.searchGroups(coll(r), r.body, readOpts(r)),
    'points.recommend': (r) => store.recommendPoints(coll(r), r.body, readOpts(r)),
    'points.recommendBatch': (r) => store.recommendBatch(coll(r), r.body, readOpts(r)),
    'points.recommendGroups': (r) => store.recommendGroups(coll(r), r.body, readOpts(r)),
    'points.discover': (r) => store.discoverPoints(coll(r), r.body, readOpts(r)),
    'points.discoverBatch': (r) => store.discoverBatch(coll(r), r.body, readOpts(r)),
  };

  /**
   * Serve `op`, whichever subject `req` came on: its `timeout` refused before any work, a body
   * forwarded as text parsed once, Qdrant's own status and wording as the bus error (anything
   * else goes to the runtime: a store away is a 503, a bug a 500).
   */
  async function run<Op extends VectorOp>(op: Op, req: VectorOpRequest): Promise<{ result: z.input<VectorCatalog[Op]['reply']> }> {
    try {
      timeoutOf(req);
      if (req.bodyText !== undefined) req.body = bodyOf(req.bodyText);
      return { result: await handlers[op](req) };
    } catch (err) {
      if (err instanceof QdrantError) throw new BusError(err.status, err.message, err.details);
      throw err;
    }
  }

  return { handlers, run, serves: (op: string): op is VectorOp => Object.hasOwn(handlers, op) };
}
