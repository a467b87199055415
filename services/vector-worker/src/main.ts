import postgres from 'postgres';
import { z } from 'zod';
import { vectorContracts, type RequestContract, type VectorCatalog, type VectorOp, type VectorOpRequest } from '@gatehouse/contracts';
import {
  BusError,
  connectBus,
  publishPlatformEvent,
  createLogger,
  DEFAULT_DATABASE_URL,
  DEFAULT_NATS_URL,
  parseEnv,
  requireMigrated,
  SchemaNotMigratedError,
  serveUntilSignalled,
  startWorker,
} from '@gatehouse/common';
import { QdrantError } from './store/errors.ts';
import { VectorStore } from './store/vector-store.ts';

/**
 * Vector store worker: a NATS service in queue group `vector`, one endpoint per Qdrant
 * operation, storing in Postgres + pgvector (store/LAYOUT.md). Run N copies to share the load;
 * every write is one transaction, committed before it is acknowledged.
 */
const env = parseEnv(
  z.object({
    NATS_URL: z.string().default(DEFAULT_NATS_URL),
    DATABASE_URL: z.string().default(DEFAULT_DATABASE_URL),
    /** Schema holding the catalog and the point tables; tests use one per run. */
    VECTOR_SCHEMA: z.string().regex(/^[a-z_][a-z0-9_]*$/, 'a lowercase SQL identifier').default('vector'),
    /** Postgres connections of this worker. */
    VECTOR_DB_POOL: z.coerce.number().int().min(1).max(100).default(10),
  }),
);
const log = createLogger('vector-worker');
const sql = postgres(env.DATABASE_URL, { max: env.VECTOR_DB_POOL, onnotice: () => undefined });
const store = new VectorStore(sql, { schema: env.VECTOR_SCHEMA });
// The catalog is migrated by the one runner (docs/migrations.md), never here: a worker that finds
// its schema behind says what to run and exits.
try {
  await requireMigrated(sql, { folder: 'vector', schema: env.VECTOR_SCHEMA });
} catch (err) {
  const why = err instanceof SchemaNotMigratedError ? err.message : `cannot read the vector schema in ${env.DATABASE_URL.replace(/\/\/[^@]*@/, '//')} (${(err as Error).message}); run scripts/start (it brings up Postgres with pgvector) or set DATABASE_URL`;
  process.stderr.write(`vector worker not started: ${why}\n`);
  process.exit(1);
}

/** Qdrant's `wait` query parameter (default false). */
const wait = (req: VectorOpRequest) => ({ wait: req.query.wait === 'true' || req.query.wait === '1' });
const coll = (req: VectorOpRequest) => {
  if (!req.collection) throw new BusError(400, 'Bad request: missing collection name');
  return req.collection;
};

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

/** One handler per catalog operation (a missing one does not compile), answering that operation's Qdrant `result`. */
type VectorHandlers = { [Op in VectorOp]: (req: VectorOpRequest) => Promise<z.input<VectorCatalog[Op]['reply']>> };

const OPS: VectorHandlers = {
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
  'index.create': (r) => store.createFieldIndex(coll(r), r.body, wait(r)),
  'index.delete': (r) => store.deleteFieldIndex(coll(r), r.field ?? '', wait(r)),
  'vectors.create': (r) => store.createVectorName(coll(r), r.field ?? '', r.body, wait(r)),
  'vectors.delete': (r) => store.deleteVectorName(coll(r), r.field ?? '', wait(r)),
  'points.upsert': (r) => store.upsertPoints(coll(r), r.body, wait(r)),
  'points.retrieve': (r) => store.retrievePoints(coll(r), r.body),
  'points.get': (r) => store.getPoint(coll(r), r.id ?? ''),
  'points.delete': (r) => store.deletePoints(coll(r), r.body, wait(r)),
  'points.setPayload': (r) => store.setPayload(coll(r), r.body, wait(r)),
  'points.overwritePayload': (r) => store.overwritePayload(coll(r), r.body, wait(r)),
  'points.deletePayload': (r) => store.deletePayload(coll(r), r.body, wait(r)),
  'points.clearPayload': (r) => store.clearPayload(coll(r), r.body, wait(r)),
  'points.updateVectors': (r) => store.updateVectors(coll(r), r.body, wait(r)),
  'points.deleteVectors': (r) => store.deleteVectors(coll(r), r.body, wait(r)),
  'points.batch': (r) => store.batchUpdate(coll(r), r.body, wait(r)),
  'points.scroll': (r) => store.scrollPoints(coll(r), r.body),
  'points.count': (r) => store.countPoints(coll(r), r.body),
  'points.search': (r) => store.searchPoints(coll(r), r.body),
  'points.searchBatch': (r) => store.searchBatch(coll(r), r.body),
  'points.query': (r) => store.queryPoints(coll(r), r.body),
  'points.queryBatch': (r) => store.queryBatch(coll(r), r.body),
};

const bus = await connectBus({ url: env.NATS_URL, name: 'vector-worker', log });
const worker = await startWorker(bus, { name: 'vector', version: '1.0.0', description: 'Qdrant-compatible vector store on pgvector' });
for (const op of Object.keys(OPS) as VectorOp[]) {
  // VectorHandlers tied each handler to its operation's reply; the loop only dispatches.
  const run = OPS[op] as (req: VectorOpRequest) => Promise<unknown>;
  worker.handle(vectorContracts[op] as RequestContract<typeof VectorOpRequest, z.ZodType>, async (req) => {
    try {
      return { result: await run(req) };
    } catch (err) {
      // Qdrant's own status and wording travel as they are; anything else is a 500.
      if (err instanceof QdrantError) throw new BusError(err.status, err.message);
      throw err;
    }
  });
}
await serveUntilSignalled(bus, worker, 'vector worker', { schema: env.VECTOR_SCHEMA }, () => sql.end({ timeout: 5 }));
