import { promisify } from 'node:util';
import { inflateRaw } from 'node:zlib';
import { headers as natsHeaders, type Msg } from 'nats';
import postgres from 'postgres';
import { z } from 'zod';
import { BUS_HEADERS, F32FrameError, qdrantCollectionNameError, unpackF32Frame, VECTOR_F32, VECTOR_PACKED, VECTOR_TEXT_BODY_OPS, vectorContracts, VectorOpRequest, type RequestContract, type VectorCatalog, type VectorOp } from '@gatehouse/contracts';
import {
  BusError,
  connectBus,
  jsonBytes,
  packBody,
  unpackBody,
  publishPlatformEvent,
  createLogger,
  DEFAULT_DATABASE_URL,
  DEFAULT_NATS_URL,
  parseEnv,
  parseExactJson,
  requireMigrated,
  SchemaNotMigratedError,
  serveUntilSignalled,
  startWorker,
  serveMetricsFromEnv,
  continueTrace,
  TRACEPARENT,
  storeUnavailable,
  type Logger,
} from '@gatehouse/common';
import { QdrantError } from './store/errors.ts';
import { EXACT_JSON_TYPES } from './store/common.ts';
import { VectorStore } from './store/vector-store.ts';
import { KNN_SESSION, knnSessionPool } from './store/search.ts';
import { NO_DELAY } from './store/pg-socket.ts';
import { putSnapshot, recoverUploaded } from './snapshot-objects.ts';

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
    /** Where collection snapshots are written and recovered from (docs/vector-store.md, "Snapshots"). */
    VECTOR_SNAPSHOT_DIR: z.string().min(1).default('.state/vector-snapshots'),
  }),
);
const log = createLogger('vector-worker');
// Prometheus metrics on METRICS_PORT when set (common/src/metrics.ts).
await serveMetricsFromEnv('vector-worker', log);
// Every connection starts with the kNN search's default settings (search.ts): a search at the
// default ef is then one statement, not a transaction of three.
// TCP_NODELAY: a batch write's COPY must not wait for a delayed ACK (pg-socket.ts).
const sql = knnSessionPool(postgres(env.DATABASE_URL, { max: env.VECTOR_DB_POOL, onnotice: () => undefined, types: EXACT_JSON_TYPES, connection: KNN_SESSION, ...NO_DELAY }));
/**
 * Catalog changes reach every worker of the queue group on this subject (each forgets its cached
 * collection metadata, store/catalog.ts CatalogCache). It is published before the change is
 * acknowledged, on the connection the acknowledgement then takes, so a worker hears it before any
 * request the client sends after the acknowledgement.
 */
const CATALOG_CHANGED = 'vector.catalog.changed';
const store = new VectorStore(sql, {
  schema: env.VECTOR_SCHEMA,
  snapshotDir: env.VECTOR_SNAPSHOT_DIR,
  onCatalogChange: () => bus.nc.publish(bus.subject(CATALOG_CHANGED)),
});
// The catalog is migrated by the one runner (docs/migrations.md), never here: a worker that finds
// its schema behind says what to run and exits.
try {
  await requireMigrated(sql, { folder: 'vector', schema: env.VECTOR_SCHEMA });
} catch (err) {
  const why = err instanceof SchemaNotMigratedError ? err.message : `cannot read the vector schema in ${env.DATABASE_URL.replace(/\/\/[^@]*@/, '//')} (${(err as Error).message}); run scripts/start (it brings up Postgres with pgvector) or set DATABASE_URL`;
  process.stderr.write(`vector worker not started: ${why}\n`);
  process.exit(1);
}

/**
 * Qdrant's `timeout` query parameter (seconds, ≥ 1) on any route: 400 when it is not an unsigned
 * integer (actix's query deserialize error), 422 when it is 0.
 */
function timeoutOf(req: VectorOpRequest): number | undefined {
  const raw = req.query.timeout;
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new BusError(400, `Query deserialize error: invalid digit found in string`);
  const n = Number(raw);
  if (n < 1) throw new BusError(422, `Validation error in query parameters: [timeout: value ${n} invalid, must be 1 or larger]`);
  return n;
}
/**
 * A body the edge forwarded as text (`bodyText`), parsed once, here: integers beyond 2^53 exact,
 * and not JSON → the 400 the edge gives (Fastify's wording; the edge keeps texts that could
 * poison a prototype, and empty ones, to its own parser).
 */
function bodyOf(text: string): unknown {
  try {
    return parseExactJson(text);
  } catch {
    throw new BusError(400, "Format error in JSON body: Body is not valid JSON but content-type is set to 'application/json'");
  }
}
/** Qdrant's `wait` (default false) and `timeout` query parameters of a write. */
const wait = (req: VectorOpRequest) => ({ wait: req.query.wait === 'true' || req.query.wait === '1', timeout: timeoutOf(req) });
/** Options of a read: `timeout`. */
const readOpts = (req: VectorOpRequest) => ({ timeout: timeoutOf(req) });
const coll = (req: VectorOpRequest) => {
  if (!req.collection) throw new BusError(400, 'Bad request: missing collection name');
  // Every `/collections/{name}…` route checks the name's length (Qdrant's CollectionPath): 422.
  // The character rules (StrictCollectionPath) apply only when creating, so older names still work.
  const length = [...req.collection].length;
  if (length > 255) {
    const bad = qdrantCollectionNameError(req.collection);
    throw new BusError(422, `Validation error in path parameters: [name: ${bad}]`);
  }
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

const bus = await connectBus({ url: env.NATS_URL, name: 'vector-worker', log });
bus.nc.subscribe(bus.subject(CATALOG_CHANGED), { callback: (err) => !err && store.forgetCatalog() });
const worker = await startWorker(bus, { name: 'vector', version: '1.0.0', description: 'Qdrant-compatible vector store on pgvector' });
for (const op of Object.keys(OPS) as VectorOp[]) {
  // VectorHandlers tied each handler to its operation's reply; the loop only dispatches.
  const run = OPS[op] as (req: VectorOpRequest) => Promise<unknown>;
  worker.handle(vectorContracts[op] as RequestContract<typeof VectorOpRequest, z.ZodType>, async (req) => {
    try {
      timeoutOf(req); // refused before any work, whatever the operation
      if (req.bodyText !== undefined) req.body = bodyOf(req.bodyText);
      return { result: await run(req) };
    } catch (err) {
      // Qdrant's own status and wording travel as they are; anything else is a 500.
      if (err instanceof QdrantError) throw new BusError(err.status, err.message, err.details);
      throw err;
    }
  });
}

/** A handler's failure as the bus error the requester reads: Qdrant's own status and wording, else a 500. */
function busErrorOf(err: unknown, subject: string, reqLog: Logger): BusError {
  if (err instanceof QdrantError) return new BusError(err.status, err.message, err.details);
  if (err instanceof BusError) return err;
  // Postgres away or out of connections: the client may retry (503), as on the worker runtime's path.
  const away = storeUnavailable(err);
  if (away) return away;
  reqLog.error({ err, subject }, 'worker handler failed');
  return new BusError(500, 'internal error in the worker');
}

/** An error reply on the worker's own subjects, as startWorker's handlers send it (NATS services headers); the log line carries the request's trace. */
function respondError(msg: Msg, err: unknown, subject: string): void {
  const e = busErrorOf(err, subject, log.child(continueTrace(msg.headers?.get(TRACEPARENT)).logFields));
  const h = natsHeaders();
  h.set(BUS_HEADERS.errorCode, String(e.status));
  h.set(BUS_HEADERS.errorMessage, e.message);
  msg.respond(jsonBytes(e.details), { headers: h });
}

// Big forwarded bodies, deflated (contracts' VECTOR_PACKED): one frame, parsed and validated here once.
const inflate = promisify(inflateRaw);
const PackedHead = VectorOpRequest.extend({ op: z.string() });
const packedInFlight = new Set<Promise<void>>();
async function servePacked(msg: Msg): Promise<void> {
  try {
    const frame = await unpackBody(bus, msg);
    const view = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
    const n = view.readUInt32BE(0);
    const head = PackedHead.parse(JSON.parse(view.subarray(4, 4 + n).toString('utf8')));
    const op = head.op as VectorOp;
    if (!VECTOR_TEXT_BODY_OPS.has(op)) throw new BusError(400, `${op} does not take a packed body`);
    const text = (await inflate(view.subarray(4 + n))).toString('utf8');
    const req: VectorOpRequest = { ...head, body: undefined };
    timeoutOf(req);
    req.body = bodyOf(text);
    const run = OPS[op] as (req: VectorOpRequest) => Promise<unknown>;
    const packed = await packBody(bus, jsonBytes({ result: await run(req) }));
    msg.respond(packed.data, { headers: packed.headers });
  } catch (err) {
    respondError(msg, err, VECTOR_PACKED.subject);
  }
}
// Requests from the gRPC port with their vectors as Float32 bytes (contracts' VECTOR_F32).
const utf8 = new TextDecoder();
async function serveF32(msg: Msg): Promise<void> {
  try {
    const frame = await unpackBody(bus, msg);
    let head: unknown;
    try {
      head = unpackF32Frame(frame, (b) => parseExactJson(utf8.decode(b)));
    } catch (err) {
      if (err instanceof F32FrameError || err instanceof SyntaxError) throw new BusError(400, `not a ${VECTOR_F32.subject} frame: ${err.message}`);
      throw err;
    }
    const req = PackedHead.parse(head);
    const run = Object.hasOwn(OPS, req.op) ? (OPS[req.op as VectorOp] as (req: VectorOpRequest) => Promise<unknown>) : undefined;
    if (!run) throw new BusError(400, `no operation ${req.op}`);
    timeoutOf(req);
    const packed = await packBody(bus, jsonBytes({ result: await run(req) }));
    msg.respond(packed.data, { headers: packed.headers });
  } catch (err) {
    respondError(msg, err, VECTOR_F32.subject);
  }
}
for (const [subject, serve] of [
  [VECTOR_PACKED.subject, servePacked],
  [VECTOR_F32.subject, serveF32],
] as const) {
  bus.nc.subscribe(bus.subject(subject), {
    queue: 'vector',
    callback: (err, msg) => {
      if (err) return;
      const p = serve(msg);
      packedInFlight.add(p);
      void p.finally(() => packedInFlight.delete(p));
    },
  });
}
await serveUntilSignalled(bus, worker, 'vector worker', { schema: env.VECTOR_SCHEMA }, async () => {
  await Promise.allSettled([...packedInFlight]);
  await sql.end({ timeout: 5 });
});
