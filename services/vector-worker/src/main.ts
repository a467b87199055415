import postgres from 'postgres';
import { z } from 'zod';
import { VECTOR_F32, VECTOR_PACKED, vectorContracts, type VectorOp } from '@gatehouse/contracts';
import {
  connectBus,
  jsonBytes,
  createLogger,
  DEFAULT_DATABASE_URL,
  DEFAULT_NATS_URL,
  parseEnv,
  requireMigrated,
  SchemaNotMigratedError,
  serveUntilSignalled,
  startWorker,
  serveMetricsFromEnv,
} from '@gatehouse/common';
import { EXACT_JSON_TYPES } from './store/common.ts';
import { VectorStore } from './store/vector-store.ts';
import { KNN_SESSION, knnSessionPool } from './store/search/search.ts';
import { NO_DELAY } from './store/pg-socket.ts';
import { vectorOps } from './ops.ts';
import { f32Request, packedRequest } from './frames.ts';

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

const bus = await connectBus({ url: env.NATS_URL, name: 'vector-worker', log });
bus.nc.subscribe(bus.subject(CATALOG_CHANGED), { callback: (err) => !err && store.forgetCatalog() });
const worker = await startWorker(bus, { name: 'vector', version: '1.0.0', description: 'Qdrant-compatible vector store on pgvector' });
const ops = vectorOps(store, bus, log);
// Every catalog operation on its own subject (`vector.<op>`), its JSON envelope parsed by the runtime.
function serveOp<Op extends VectorOp>(op: Op): void {
  worker.handle(vectorContracts[op], (req) => ops.run(op, req));
}
for (const op of Object.keys(vectorContracts) as VectorOp[]) serveOp(op);
// The frame subjects carry the same operations with bodies encoded for the hot paths (big REST
// bodies deflated, gRPC vectors as Float32 bytes); the runtime hands over the bytes, the frame is
// decoded once here, and the reply is the operation's `{"result":…}` bytes.
worker.handleBytes(VECTOR_PACKED, async (frame) => {
  const req = await packedRequest(frame);
  return jsonBytes(await ops.run(req.op, req));
});
worker.handleBytes(VECTOR_F32, async (frame) => {
  const req = f32Request(frame, ops.serves);
  return jsonBytes(await ops.run(req.op, req));
});
await serveUntilSignalled(bus, worker, 'vector worker', { schema: env.VECTOR_SCHEMA }, () => sql.end({ timeout: 5 }));
