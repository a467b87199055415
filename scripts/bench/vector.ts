
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import postgres from 'postgres';
import { vectorContracts } from '@gatehouse/contracts';
import { busRequest } from '@gatehouse/common';
import { type Proc, Stack, type Edge } from '../../tests/support/local-stack.ts';
import { cpuMs, findPid, machineTicks, waitQuiet } from './measure.ts';
import { kindsBench } from './vector-kinds.ts';
// The direct-SQL baseline reuses the worker's own catalog reader, filter compiler and normaliser, so
// it sends Postgres the same WHERE clause and the same vector text; the query itself is written out
// below, mirroring services/vector-worker/src/store/search.ts (knn).
import { loadCollection, tableOf, type CollectionMeta, type Db } from '../../services/vector-worker/src/store/collections/catalog.ts';
import { filterWhere } from '../../services/vector-worker/src/store/filter/where.ts';
import { normalize } from '../../services/vector-worker/src/store/vectors/vectors.ts';
import { estimatedRows, exactBelow, KNN_SESSION } from '../../services/vector-worker/src/store/search/search.ts';
import { startEdgeFrom, startFrom, untilServing } from './before.ts';
import type { Agent } from 'node:http';
// Settings, data set, ground truth and the HTTP client (vector-data.ts); the phases, each a module
// taking the run's context (vector-context.ts): ingestion baselines, dense queries, recommend /
// discover, gRPC vs. REST with the sparse / hybrid collection. This file starts the stack, sets up
// the paths every phase compares, runs the phases in order and prints the report.
import type { Cpu, Mode, VectorRun } from './vector-context.ts';
import {
  agent,
  BATCH,
  CLUSTERS,
  CONC,
  CORE_ONLY,
  DB_POOL,
  DB_URL,
  DIM,
  FILTER_CLUSTER,
  GRPC_ONLY,
  groundTruth,
  http,
  INGEST_CONC,
  INGEST_MS,
  log,
  makeData,
  N,
  NQ,
  PREFIX,
  REQUEST_MS,
  sec,
  SEED,
  TOP,
  values,
  WATCHDOG_MS,
} from './vector-data.ts';
import { denseBench } from './vector-dense.ts';
import { ingestBaselines } from './vector-ingest.ts';
import { recoBench } from './vector-reco.ts';
import { grpcBench } from './vector-grpc.ts';

/**
 * Vector store face benchmark. Every figure stands beside its baseline measured in the same run:
 *   1. a synthetic clustered data set (seeded, reproducible): N vectors of 384 dims around 100
 *      Gaussian cluster centres, unit-normalised, payload {cluster: k % 10, n: i}; Q query vectors
 *      from the same distribution; exact cosine top-10 (brute force in JS, two worker threads),
 *      unfiltered and for the filter cluster == 3 (~10% of the points);
 *   2. ingestion (vector-ingest.ts for the baselines): PUT /collections/bench/points?wait=true through HTTP → edge → NATS → vector worker
 *      → Postgres (the HNSW index is maintained row by row as the points arrive), vs.
 *      (a) the same first points as multi-row INSERTs straight into an identical table that already
 *          has its indexes (same batches, same number in flight): like-for-like;
 *      (b) a bulk load: COPY into an identical table without indexes, then CREATE INDEX — insert
 *          and index build timed separately;
 *   3. queries (vector-dense.ts): POST /collections/bench/points/query {query, limit: 10} through the stack vs. the
 *      worker's own SQL (the same plan: a filter's planner estimate decides exact scoring or the
 *      index; the same session / transaction-local hnsw settings, CTE with exact re-ordering and
 *      exact fallback) issued straight to Postgres on the same
 *      table and index; sequential (paired, order alternating) and CONC in flight; unfiltered and
 *      filtered, at the worker's default ef_search and with params.hnsw_ef = 128. Recall@10 of every
 *      path against the exact top-10, also on the bulk-built index. The unfiltered sequential phase
 *      also times the same query as a bus request straight to the worker (no HTTP, no edge) and the
 *      direct SQL preceded by the worker's per-request catalog lookup, to tell where the time goes;
 *   4. (code section 6, vector-grpc.ts) gRPC (:6334, Points/Query) vs. REST (:6333, POST …/points/query) vs. direct SQL: the same
 *      queries on the same data, unfiltered and filtered, sequential (three paths per query, order
 *      rotating) and CONC in flight (one HTTP/2 channel vs. CONC keep-alive sockets), with the
 *      edge's CPU per query on each port;
 *   5. (code section 7, vector-grpc-hybrid.ts) sparse and hybrid (sparse + dense prefetches fused by RRF) on a second collection of the
 *      first BENCH_VECTOR_SPARSE_POINTS points (20 000) with a named dense and a sparse vector,
 *      through gRPC and REST vs. the worker's SQL (sparse.ts's posting-list join, the dense knn,
 *      fusion.ts's rrf) sent straight to Postgres — same comparison as 4.
 * Loopback only; every loop is bounded by count and by time; the whole run has a watchdog.
 * Env: BENCH_VECTOR_POINTS (100 000), BENCH_VECTOR_QUERIES (1000), BENCH_VECTOR_FILTERED_QUERIES
 * (300: a filtered query costs Postgres ~10× an unfiltered one), BENCH_VECTOR_CONCURRENCY (16),
 * BENCH_VECTOR_PREFIX (points of the like-for-like ingestion baseline, 20 000),
 * BENCH_VECTOR_GRPC_QUERIES (unfiltered queries per path in 4., 500), BENCH_VECTOR_GRPC_ONLY=1
 * (ingest through the stack, then only 4. and 5.: no ingestion baselines, recall, recommend or
 * vector-kinds phases), BENCH_VECTOR_CORE_ONLY=1 (ingestion, recall and dense queries only: no
 * recommend/discover, sparse/hybrid or gRPC phases), BENCH_VECTOR_BEFORE=<checkout> (a second
 * edge + vector worker started from another checkout — e.g. a worktree of main — on the same schema
 * and tables, in a bus namespace of its own: every dense query phase adds it as a third path,
 * sequential in rotating order with the same queries, and in its own rounds at CONC in flight).
 * Recommend / discover by ids (code section 5) is vector-reco.ts; the sparse / hybrid collection of
 * its own that runs before section 6 is vector-kinds.ts.
 */
/** BENCH_VECTOR_BEFORE: another checkout's edge + vector worker, read here only (it narrows in closures as a local). */
const BEFORE = process.env.BENCH_VECTOR_BEFORE;

const rows: string[][] = [];
const grpcTable: string[][] = [];
const lines: string[] = [];
const started = performance.now();
const phases: string[] = [];
let mark = performance.now();
const phase = (name: string) => {
  const now = performance.now();
  phases.push(`${name} ${sec(now - mark)}`);
  mark = now;
};

const stack = new Stack();
const schema = `vector_${stack.ns}`;
const appWorker = `bench-vector-worker-${stack.ns}`;
const appDirect = `bench-vector-direct-${stack.ns}`;
let sql: postgres.Sql | undefined;
const appBefore = `bench-vector-before-${stack.ns}`;
const beforeStack = BEFORE ? new Stack() : undefined;
const beforeProcs: Proc[] = [];
// Once: the watchdog's clean-up makes the run's requests fail, and the run's own finally then
// cleans up too (a second drain of the bus connection threw and left the schema behind).
let cleaning: Promise<void> | undefined;
const cleanup = () =>
  (cleaning ??= (async () => {
    await sql?.end({ timeout: 5 }).catch(() => undefined);
    await Promise.allSettled(beforeProcs.map((p) => p.stop()));
    await beforeStack?.close();
    await stack.close();
  })());
const watchdog = setTimeout(() => {
  log(`watchdog: the run took over ${WATCHDOG_MS} ms; stopping`);
  void cleanup().finally(() => process.exit(2));
}, WATCHDOG_MS);
watchdog.unref();

try {
  // 1. Data set.
  const data = makeData();
  phase('data');
  log(`namespace ${stack.ns} (schema ${schema}, dropped at the end)`);
  log(`data: ${N} points, ${NQ} queries, ${DIM} dims, ${CLUSTERS} clusters (${((performance.now() - started) / 1000).toFixed(1)} s)`);

  const dbUrl = (app: string) => `${DB_URL}${DB_URL.includes('?') ? '&' : '?'}application_name=${app}`;
  let worker: Awaited<ReturnType<Stack['startVectorWorker']>> | undefined;
  for (let attempt = 1; !worker; attempt++) {
    try {
      worker = await stack.startVectorWorker({ DATABASE_URL: dbUrl(appWorker), VECTOR_DB_POOL: String(DB_POOL) });
    } catch (err) {
      if (attempt >= 4) throw err;
      log(`vector worker start-up attempt ${attempt} timed out; retrying`);
      await stack.workers.pop()?.stop();
    }
  }
  // Start-up waits 20 s for health; on a machine other work keeps fully busy that can run out, so retry.
  let edge: Edge | undefined;
  for (let attempt = 1; !edge; attempt++) {
    try {
      edge = await stack.startEdge({ LOG_LEVEL: 'warn' });
    } catch (err) {
      if (attempt >= 4) throw err;
      log(`edge start-up attempt ${attempt} timed out; retrying`);
      await stack.edges.pop()?.proc.stop();
    }
  }
  // BENCH_VECTOR_BEFORE: the same edge + worker from another checkout, on this stack's schema (the
  // same tables), in a namespace of its own; its edge's REST port is the third path of the query phases.
  let beforeUrl: string | undefined;
  const beforePids: { edge?: number; worker?: number } = {};
  if (BEFORE && beforeStack) {
    const start = (name: string, entry: string, env: Record<string, string | undefined>) => startFrom(BEFORE, name, entry, beforeStack.env(env), beforeProcs);
    const w = start('vector-worker (before)', 'services/vector-worker/src/main.ts', { DATABASE_URL: dbUrl(appBefore), VECTOR_SCHEMA: schema, VECTOR_DB_POOL: String(DB_POOL) });
    const before = await startEdgeFrom(BEFORE, 'edge (before)', 'vector', beforeStack.env({
      LOG_LEVEL: 'warn',
      REDIS_URL: beforeStack.redisUrl,
      WEBUI_SECRET_KEY_FILE: join(process.env.TMPDIR ?? '/tmp', `gatehouse-${beforeStack.ns}-webui-secret-key`),
    }), beforeProcs);
    const e = before.edge;
    beforeUrl = before.url;
    await untilServing([[w, 'vector worker serving']], e, `${beforeUrl}/readyz`);
    beforePids.edge = e.child.pid;
    beforePids.worker = w.child.pid;
    log(`before: ${BEFORE} on ${beforeUrl}`);
  }
  const notices: string[] = [];
  // The worker's session settings for kNN (search.ts KNN_SESSION), so the same statements run the same way.
  sql = postgres(dbUrl(appDirect), { max: DB_POOL, onnotice: (n) => notices.push(String(n.message)), connection: KNN_SESSION });
  const db = sql;
  const vurl = edge.vectorUrl;
  const [settings] = await db<{ mwm: string; pmw: string; sb: string; pg: string; pgv: string }[]>`
    select current_setting('maintenance_work_mem') as mwm, current_setting('max_parallel_maintenance_workers') as pmw,
           current_setting('shared_buffers') as sb, current_setting('server_version') as pg,
           (select extversion from pg_extension where extname = 'vector') as pgv`;

  // 2. Ingestion through the stack.
  await http(agent(1), vurl, 'PUT', '/collections/bench', JSON.stringify({ vectors: { size: DIM, distance: 'Cosine' } }));
  const meta: CollectionMeta = await loadCollection(db, schema, 'bench');
  const table = tableOf(db, schema, meta);
  const [hnswRow] = await db<{ indexdef: string }[]>`
    select indexdef from pg_indexes where schemaname = ${schema} and tablename = ${meta.table} and indexdef like '%USING hnsw%'`;
  log(`collection bench → ${schema}.${meta.table}; ${hnswRow?.indexdef}`);

  const batches = Math.ceil(N / BATCH);
  const upsertBody = (b: number) => {
    const points = [];
    for (let i = b * BATCH; i < Math.min(N, (b + 1) * BATCH); i++) {
      points.push({ id: i, vector: values(data.vectors, i), payload: { cluster: data.labels[i]! % 10, n: i } });
    }
    return Buffer.from(JSON.stringify({ points }));
  };
  // Bodies are serialised before the clock starts (both paths), so the client's JSON work is not timed.
  const bodies = Array.from({ length: batches }, (_, b) => upsertBody(b));
  const bodyBytes = bodies.reduce((a, b) => a + b.length, 0);
  await waitQuiet('stack upsert', 10_000, log);
  const ingestAgent = agent(INGEST_CONC);
  const doneAt: number[] = []; // ms since start at which batch b was acknowledged
  let nextBatch = 0;
  const tIngest = performance.now();
  const ingestDeadline = tIngest + INGEST_MS;
  const cpuIngest0 = { edge: cpuMs(edge.proc.child.pid), worker: cpuMs(worker.child.pid), nats: cpuMs(findPid('nats-server')), m: machineTicks() };
  await Promise.all(
    Array.from({ length: INGEST_CONC }, async () => {
      while (nextBatch < batches && performance.now() < ingestDeadline) {
        const b = nextBatch++;
        await http(ingestAgent, vurl, 'PUT', '/collections/bench/points?wait=true', bodies[b]!);
        doneAt[b] = performance.now() - tIngest;
      }
    }),
  );
  const ingestMs = performance.now() - tIngest;
  const cpuIngest1 = { edge: cpuMs(edge.proc.child.pid), worker: cpuMs(worker.child.pid), nats: cpuMs(findPid('nats-server')), m: machineTicks() };
  ingestAgent.destroy();
  bodies.length = 0;
  const nIn = Math.min(N, nextBatch * BATCH);
  if (nIn < N) log(`stack upsert: stopped by the ${INGEST_MS} ms limit after ${nIn} of ${N} points; the rest of the run uses those`);
  const [{ count }] = (await db`select count(*)::int as count from ${table}`) as unknown as [{ count: number }];
  if (count !== nIn) throw new Error(`the stack stored ${count} points, expected ${nIn}`);
  const prefixBatches = Math.ceil(Math.min(PREFIX, nIn) / BATCH);
  const stackPrefixMs = Math.max(...doneAt.slice(0, prefixBatches));
  phase('stack upsert');
  log(`stack upsert: ${nIn} points in ${sec(ingestMs)}`);

  // BENCH_VECTOR_GRPC_ONLY=1: only the gRPC vs. REST comparisons (6, 7) on the stack's data — no
  // ingestion baselines, ground truth or recall phases, so the run is short on a shared machine.
  if (!GRPC_ONLY) {
    await ingestBaselines({ db, schema, meta, table, data, nIn, rows, lines, phase, notices, settings, ingestMs, prefixBatches, stackPrefixMs, bodyBytes, cpuIngest0, cpuIngest1 });
  }


  // 3. Ground truth over the points the stack stored.
  const gt = GRPC_ONLY ? { all: [], filtered: [] } : await groundTruth(data, nIn);
  phase('ground truth');
  if (!GRPC_ONLY) log(`ground truth: ${NQ} queries`);

  // 4. Queries.
  const queryText = Array.from({ length: NQ }, (_, q) => `[${normalize(values(data.queries, q)).join(',')}]`);
  const queryValues = Array.from({ length: NQ }, (_, q) => values(data.queries, q));
  const filter = { must: [{ key: 'cluster', match: { value: FILTER_CLUSTER } }] };
  const bus = await stack.busHandle();
  const busQuery = async (m: Mode, q: number): Promise<{ ms: number; ids: number[] }> => {
    const t0 = performance.now();
    const body = JSON.parse(stackBody(m, q)) as unknown;
    const r = await busRequest(bus, vectorContracts['points.query'], { collection: 'bench', query: {}, body }, { timeoutMs: REQUEST_MS });
    return { ms: performance.now() - t0, ids: r.result.points.map((p) => Number(p.id)) };
  };
  const modes: Mode[] = [
    { name: 'unfiltered', filtered: false },
    { name: `filtered (cluster == ${FILTER_CLUSTER}, ~10%)`, filtered: true },
    { name: 'unfiltered, params.hnsw_ef = 128', filtered: false, ef: 128 },
    { name: `filtered, params.hnsw_ef = 128`, filtered: true, ef: 128 },
    { name: `filtered, params.exact = true`, filtered: true, exact: true },
  ];
  const stackBody = (m: Mode, q: number) =>
    JSON.stringify({ query: queryValues[q], limit: TOP, ...(m.filtered ? { filter } : {}), ...(m.ef ? { params: { hnsw_ef: m.ef } } : {}), ...(m.exact ? { params: { exact: true } } : {}) });
  const stackQuery = async (ag: Agent, m: Mode, q: number, url = vurl): Promise<{ ms: number; ids: number[] }> => {
    const r = await http(ag, url, 'POST', '/collections/bench/points/query', stackBody(m, q));
    const pts = (r.json as { result: { points: { id: number }[] } }).result.points;
    return { ms: r.ms, ids: pts.map((p) => Number(p.id)) };
  };
  const fallbacks = { n: 0 };
  /**
   * search.ts knn, written out: the same plan (a filter's planner estimate → exact scoring or the
   * index), the same session settings (the direct pool starts with KNN_SESSION, as the worker's),
   * the same CTE and re-ordering, the same exact fallback.
   */
  const dense = meta.dense.get('')!;
  const estimates = new Map<unknown, { rows: number; at: number }>(); // the run's one filter, by table fragment
  const directQuery = async (tbl: ReturnType<typeof tableOf>, m: Mode, q: number): Promise<{ ms: number; ids: number[] }> => {
    const t0 = performance.now();
    const need = TOP;
    const ef = Math.min(1000, Math.max(40, need, m.ef ?? 0));
    const maxScan = Math.min(1_000_000, Math.max(100_000, ef * 1000));
    const text = queryText[q]!;
    const where = (d: Db) => d`${d('v0')} is not null and ${filterWhere(d, meta, m.filtered ? filter : undefined)}`;
    // The worker keeps a filter's planner estimate for 10 s (search.ts): so does this path, per table.
    const estimate = async () => {
      const hit = estimates.get(tbl);
      if (hit && performance.now() - hit.at < 10_000) return hit.rows;
      const rows = await estimatedRows(db, db`select 1 from ${tbl} where ${where(db)}`);
      estimates.set(tbl, { rows, at: performance.now() });
      return rows;
    };
    const useIndex = !m.exact && (!m.filtered || (await estimate()) > exactBelow(meta, dense));
    const knn = (d: Db) => d<{ id_num: string }[]>`
        with candidates as materialized (
          select id_num, id_uuid, version::text as version, ${d('v0')} <=> ${text}::vector as distance
          from ${tbl}
          where ${where(d)}
          order by distance
          limit ${ef}
        )
        select * from candidates order by distance, (id_uuid is not null), id_num, id_uuid limit ${need}`;
    let found: { id_num: string }[] = [];
    if (useIndex && ef === 40) found = await knn(db);
    else if (useIndex) {
      found = (await db.begin(async (tx) => {
        await tx`
          select set_config('hnsw.iterative_scan', 'strict_order', true),
                 set_config('hnsw.ef_search', ${String(ef)}, true),
                 set_config('hnsw.max_scan_tuples', ${String(maxScan)}, true)`;
        return knn(tx);
      })) as { id_num: string }[];
    }
    if (found.length < need) {
      if (useIndex) fallbacks.n++;
      found = await db<{ id_num: string }[]>`
        select id_num, id_uuid, version::text as version, ${db('v0')} <=> ${text}::vector as distance
        from ${tbl} where ${where(db)}
        order by (${db('v0')} <=> ${text}::vector) + 0, (id_uuid is not null), id_num, id_uuid limit ${need}`;
    }
    return { ms: performance.now() - t0, ids: found.map((r) => Number(r.id_num)) };
  };
  const bulkTbl = db`${db(schema)}.${db('direct_bulk')}`;

  // Our Postgres backends (worker pool and direct pool), for CPU per query.
  const seqAgent = agent(1);
  const beforeAgent = agent(CONC);
  for (let i = 0; i < 100; i++) {
    const m = modes[i % modes.length]!;
    await stackQuery(seqAgent, m, i % NQ);
    if (beforeUrl) await stackQuery(beforeAgent, m, i % NQ, beforeUrl);
    await directQuery(table, m, i % NQ);
  }
  const concAgent = agent(CONC);
  await Promise.all(Array.from({ length: CONC }, (_, c) => stackQuery(concAgent, modes[0]!, c % NQ)));
  if (beforeUrl) await Promise.all(Array.from({ length: CONC }, (_, c) => stackQuery(beforeAgent, modes[0]!, c % NQ, beforeUrl)));
  await Promise.all(Array.from({ length: CONC }, (_, c) => directQuery(table, modes[0]!, c % NQ)));
  const backends = async () =>
    (await db<{ pid: number; app: string }[]>`
      select pid, application_name as app from pg_stat_activity where application_name in (${appWorker}, ${appDirect}, ${appBefore})`).map((r) => ({ pid: r.pid, app: r.app }));
  const pgPids = await backends();
  const pids = { edge: edge.proc.child.pid, worker: worker.child.pid, nats: findPid('nats-server'), edgeB: beforePids.edge, workerB: beforePids.worker };
  const cpuSnap = (): Cpu => {
    const own = process.cpuUsage();
    const m = machineTicks();
    const pgW = pgPids.filter((p) => p.app === appWorker).reduce((a, p) => a + (cpuMs(p.pid) || 0), 0);
    const pgD = pgPids.filter((p) => p.app === appDirect).reduce((a, p) => a + (cpuMs(p.pid) || 0), 0);
    const pgB = pgPids.filter((p) => p.app === appBefore).reduce((a, p) => a + (cpuMs(p.pid) || 0), 0);
    return {
      client: (own.user + own.system) / 1000,
      edge: cpuMs(pids.edge),
      worker: cpuMs(pids.worker),
      nats: cpuMs(pids.nats),
      pgStack: pgW,
      pgDirect: pgD,
      edgeB: cpuMs(pids.edgeB) || 0,
      workerB: cpuMs(pids.workerB) || 0,
      pgBefore: pgB,
      busy: m.busy,
      total: m.total,
    };
  };
  const cpuDelta = (a: Cpu, b: Cpu): Cpu => Object.fromEntries(Object.keys(b).map((k) => [k, b[k as keyof Cpu] - a[k as keyof Cpu]])) as Cpu;
  const cores = (c: Cpu) => ((c.busy / c.total) * availableParallelism()).toFixed(2);
  phase('query warm-up');

  const run: VectorRun = {
    edge,
    db,
    schema,
    vurl,
    data,
    nIn,
    meta,
    table,
    queryText,
    queryValues,
    modes,
    agents: { seq: seqAgent, conc: concAgent },
    stackQuery,
    directQuery,
    cpu: { snap: cpuSnap, delta: cpuDelta, cores },
    rows,
    grpcTable,
    lines,
    phase,
  };
  // 4. Dense queries, mode by mode (vector-dense.ts).
  await denseBench(run, { gt, busQuery, bulkTbl, beforeUrl, beforeAgent, fallbacks });
  // 5. Recommend (best_score) and discover by point ids (vector-reco.ts).
  if (!GRPC_ONLY && !CORE_ONLY) await recoBench(run);
  // Sparse and hybrid (dense + sparse, RRF) queries on a collection of their own (vector-kinds.ts).
  const kinds = GRPC_ONLY || CORE_ONLY ? { rows: [], lines: [] } : await kindsBench(vurl, db, schema, log);
  rows.push(...kinds.rows);
  lines.push(...kinds.lines);
  phase('sparse and hybrid');
  // 6. gRPC vs. REST: the same queries, the same data, the same run; 7. sparse and hybrid through both ports (vector-grpc.ts).
  if (!CORE_ONLY) await grpcBench(run);
  seqAgent.destroy();
  concAgent.destroy();
  beforeAgent.destroy();
  lines.push(
    `data: ${nIn.toLocaleString('en-US')} points × ${DIM} dims, ${CLUSTERS} clusters (seed ${SEED}), ${NQ} queries; Postgres ${settings!.pg}, pgvector ${settings!.pgv}, shared_buffers ${settings!.sb}`,
  );
  lines.push(`phases: ${phases.join(', ')}; whole run ${sec(performance.now() - started)}`);
  const said = worker
    .log()
    .split('\n')
    .filter((l) => l.trim() && !l.includes('vector worker serving'))
    .join('\n');
  if (said) log(`the vector worker said:\n${said.slice(0, 2000)}`);
  if (edge.proc.log().trim()) log(`the edge said:\n${edge.proc.log().slice(0, 2000)}`);
} finally {
  await cleanup();
  clearTimeout(watchdog);
}

const header = ['measurement', 'result (stack)', 'baseline (direct SQL)', 'ratio', 'notes'];
const table = [header, header.map(() => '---'), ...rows];
if (rows.length) {
  console.log(table.map((r) => `| ${r.join(' | ')} |`).join('\n'));
  console.log('');
}
if (grpcTable.length) {
  console.log(grpcTable.map((r) => `| ${r.join(' | ')} |`).join('\n'));
  console.log('');
}
for (const l of lines) console.log(l);
