import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import postgres from 'postgres';
import { vectorContracts } from '@gatehouse/contracts';
import { busRequest } from '@gatehouse/common';
import { type Proc, Stack, type Edge } from '../../tests/support/local-stack.ts';
import { cpuMs, findPid, machineTicks, ms, pct, pp, waitQuiet } from './measure.ts';
import { kindsBench } from './vector-kinds.ts';
// The direct-SQL baseline reuses the worker's own catalog reader, filter compiler and normaliser, so
// it sends Postgres the same WHERE clause and the same vector text; the query itself is written out
// below, mirroring services/vector-worker/src/store/search.ts (knn).
import { loadCollection, tableOf, type CollectionMeta, type Db } from '../../services/vector-worker/src/store/collections/catalog.ts';
import { filterWhere } from '../../services/vector-worker/src/store/filter/where.ts';
import { normalize } from '../../services/vector-worker/src/store/vectors/vectors.ts';
import { ID_ORDER } from '../../services/vector-worker/src/store/points/ids.ts';
import { DEFAULT_RRF_K, rrf } from '../../services/vector-worker/src/store/query/fusion.ts';
import { estimatedRows, exactBelow, KNN_SESSION } from '../../services/vector-worker/src/store/search/search.ts';
// The gRPC client loads the same Qdrant .proto files the edge serves (grpc-js, as the server).
import { qdrantService } from '../../services/edge/src/faces/vector/grpc/qdrant-proto.ts';
import { startEdgeFrom, startFrom, untilServing } from './before.ts';

/**
 * Vector store face benchmark. Every figure stands beside its baseline measured in the same run:
 *   1. a synthetic clustered data set (seeded, reproducible): N vectors of 384 dims around 100
 *      Gaussian cluster centres, unit-normalised, payload {cluster: k % 10, n: i}; Q query vectors
 *      from the same distribution; exact cosine top-10 (brute force in JS, two worker threads),
 *      unfiltered and for the filter cluster == 3 (~10% of the points);
 *   2. ingestion: PUT /collections/bench/points?wait=true through HTTP → edge → NATS → vector worker
 *      → Postgres (the HNSW index is maintained row by row as the points arrive), vs.
 *      (a) the same first points as multi-row INSERTs straight into an identical table that already
 *          has its indexes (same batches, same number in flight): like-for-like;
 *      (b) a bulk load: COPY into an identical table without indexes, then CREATE INDEX — insert
 *          and index build timed separately;
 *   3. queries: POST /collections/bench/points/query {query, limit: 10} through the stack vs. the
 *      worker's own SQL (the same plan: a filter's planner estimate decides exact scoring or the
 *      index; the same session / transaction-local hnsw settings, CTE with exact re-ordering and
 *      exact fallback) issued straight to Postgres on the same
 *      table and index; sequential (paired, order alternating) and CONC in flight; unfiltered and
 *      filtered, at the worker's default ef_search and with params.hnsw_ef = 128. Recall@10 of every
 *      path against the exact top-10, also on the bulk-built index. The unfiltered sequential phase
 *      also times the same query as a bus request straight to the worker (no HTTP, no edge) and the
 *      direct SQL preceded by the worker's per-request catalog lookup, to tell where the time goes;
 *   4. (code section 6) gRPC (:6334, Points/Query) vs. REST (:6333, POST …/points/query) vs. direct SQL: the same
 *      queries on the same data, unfiltered and filtered, sequential (three paths per query, order
 *      rotating) and CONC in flight (one HTTP/2 channel vs. CONC keep-alive sockets), with the
 *      edge's CPU per query on each port;
 *   5. (code section 7) sparse and hybrid (sparse + dense prefetches fused by RRF) on a second collection of the
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
 */
const N = Number(process.env.BENCH_VECTOR_POINTS ?? 100_000);
const NQ = Number(process.env.BENCH_VECTOR_QUERIES ?? 1000);
const NQ_FILTERED = Math.min(NQ, Number(process.env.BENCH_VECTOR_FILTERED_QUERIES ?? 300));
const CONC = Number(process.env.BENCH_VECTOR_CONCURRENCY ?? 16);
const PREFIX = Math.min(N, Number(process.env.BENCH_VECTOR_PREFIX ?? 20_000));
const DIM = 384;
const CLUSTERS = 100;
const TOP = 10;
const FILTER_CLUSTER = 3;
/** Noise around a (unit) centre: |noise| ≈ NOISE, spread over the dimensions with a decaying spectrum. */
const NOISE = 1.0;
const SEED = 20261122;
const BATCH = 500; // points per upsert request / INSERT
const INGEST_CONC = 4; // upsert requests (or INSERTs) in flight
const DB_POOL = 10; // the worker's VECTOR_DB_POOL default; the direct pool gets the same
const INGEST_MS = 420_000; // the stack's upsert stops issuing batches here
const PREFIX_MS = 150_000; // the like-for-like direct INSERT stops here
const STATEMENT_MS = 300_000; // COPY and each CREATE INDEX
const GT_MS = 240_000; // ground truth
const SEQ_MS = Number(process.env.BENCH_VECTOR_SEQ_MS ?? 60_000); // one sequential query phase
const ROUND_MS = Number(process.env.BENCH_VECTOR_ROUND_MS ?? 15_000); // one concurrent round
const REQUEST_MS = 60_000; // one HTTP request
const WATCHDOG_MS = 1_260_000; // the whole run
const GRPC_ONLY = process.env.BENCH_VECTOR_GRPC_ONLY === '1';
const BEFORE = process.env.BENCH_VECTOR_BEFORE;
/** Only ingestion, recall and the dense query phases (1–4): no recommend/discover, sparse/hybrid or gRPC phases. */
const CORE_ONLY = process.env.BENCH_VECTOR_CORE_ONLY === '1';
const SPARSE_POINTS = Number(process.env.BENCH_VECTOR_SPARSE_POINTS ?? 20_000); // the hybrid collection (6.)
const SPARSE_VOCAB = 30_000;
const GRPC_QUERIES = Math.min(NQ, Number(process.env.BENCH_VECTOR_GRPC_QUERIES ?? 500)); // per path, unfiltered (filtered: NQ_FILTERED)
const DB_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gatehouse_test';

const sec = (x: number) => `${(x / 1000).toFixed(1)} s`;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const log = (m: string) => console.error(`[bench] ${m}`);

// ------------------------------------------------------------------------------------------------
// Data set

/** mulberry32: small, fast, seeded. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function gauss(r: () => number): () => number {
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const s = spare;
      spare = null;
      return s;
    }
    let u = 0;
    while (u === 0) u = r();
    const v = r();
    const m = Math.sqrt(-2 * Math.log(u));
    spare = m * Math.sin(2 * Math.PI * v);
    return m * Math.cos(2 * Math.PI * v);
  };
}

/**
 * 100 cluster centres (random unit vectors, so nearly orthogonal). A point is centre + noise,
 * normalised and rounded to 6 decimals (the values the client sends; the worker re-normalises).
 * The noise has a decaying spectrum (variance of the j-th axis ∝ 1/(j+1), axes shuffled per
 * cluster), as real embeddings have a few strong directions, rather than isotropic noise in 384
 * dims (the worst case for any ANN index, not what sentence embeddings look like).
 */
function makeData(): { vectors: Float32Array; labels: Uint8Array; queries: Float32Array; qLabels: Uint8Array } {
  const r = rng(SEED);
  const g = gauss(r);
  const harmonic = Array.from({ length: DIM }, (_, j) => 1 / (j + 1)).reduce((a, b) => a + b, 0);
  const centres = new Float64Array(CLUSTERS * DIM);
  const scales = new Float64Array(CLUSTERS * DIM);
  for (let k = 0; k < CLUSTERS; k++) {
    let n2 = 0;
    for (let j = 0; j < DIM; j++) n2 += (centres[k * DIM + j] = g()) ** 2;
    for (let j = 0; j < DIM; j++) centres[k * DIM + j]! /= Math.sqrt(n2);
    const perm = Array.from({ length: DIM }, (_, j) => j);
    for (let j = DIM - 1; j > 0; j--) {
      const s = Math.floor(r() * (j + 1));
      [perm[j], perm[s]] = [perm[s]!, perm[j]!];
    }
    for (let j = 0; j < DIM; j++) scales[k * DIM + perm[j]!] = NOISE * Math.sqrt(1 / (j + 1) / harmonic);
  }
  const draw = (count: number, out: Float32Array, labels: Uint8Array) => {
    const x = new Float64Array(DIM);
    for (let i = 0; i < count; i++) {
      const k = Math.floor(r() * CLUSTERS);
      labels[i] = k;
      let n2 = 0;
      for (let j = 0; j < DIM; j++) n2 += (x[j] = centres[k * DIM + j]! + scales[k * DIM + j]! * g()) ** 2;
      const inv = 1 / Math.sqrt(n2);
      for (let j = 0; j < DIM; j++) out[i * DIM + j] = Math.round(x[j]! * inv * 1e6) / 1e6;
    }
  };
  const vectors = new Float32Array(new SharedArrayBuffer(N * DIM * 4));
  const labels = new Uint8Array(new SharedArrayBuffer(N));
  draw(N, vectors, labels);
  const queries = new Float32Array(new SharedArrayBuffer(NQ * DIM * 4));
  const qLabels = new Uint8Array(NQ);
  draw(NQ, queries, qLabels);
  return { vectors, labels, queries, qLabels };
}

/** The numbers of vector i exactly as sent (6 decimals; float32 keeps them, rounding recovers them). */
function values(v: Float32Array, i: number): number[] {
  const out = new Array<number>(DIM);
  for (let j = 0; j < DIM; j++) out[j] = Math.round(v[i * DIM + j]! * 1e6) / 1e6;
  return out;
}

// ------------------------------------------------------------------------------------------------
// Ground truth: exact cosine top-10 by brute force, four queries per pass over the data, in worker threads.

const GT_WORKER = `
const { parentPort, workerData: w } = require('node:worker_threads');
const X = new Float32Array(w.vectors), Q = new Float32Array(w.queries), L = new Uint8Array(w.labels);
const D = w.dim, K = w.top, n = w.n, nq = w.q1 - w.q0;
const inv = new Float64Array(n);
for (let i = 0; i < n; i++) { let s = 0; for (let j = 0; j < D; j++) s += X[i * D + j] * X[i * D + j]; inv[i] = 1 / Math.sqrt(s); }
const all = new Int32Array(nq * K), filt = new Int32Array(nq * K);
function push(ids, sc, id, s) {
  let p = K - 1;
  while (p > 0 && sc[p - 1] < s) { sc[p] = sc[p - 1]; ids[p] = ids[p - 1]; p--; }
  sc[p] = s; ids[p] = id;
}
for (let q = w.q0; q < w.q1; q += 4) {
  const m = Math.min(4, w.q1 - q);
  const o0 = q * D, o1 = (q + Math.min(1, m - 1)) * D, o2 = (q + Math.min(2, m - 1)) * D, o3 = (q + Math.min(3, m - 1)) * D;
  const tops = [];
  for (let t = 0; t < 8; t++) tops.push({ ids: new Int32Array(K).fill(-1), sc: new Float64Array(K).fill(-Infinity) });
  for (let i = 0; i < n; i++) {
    const o = i * D;
    let a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (let j = 0; j < D; j++) { const x = X[o + j]; a0 += x * Q[o0 + j]; a1 += x * Q[o1 + j]; a2 += x * Q[o2 + j]; a3 += x * Q[o3 + j]; }
    const f = inv[i], lab = L[i] % 10 === w.filterCluster;
    const s = [a0 * f, a1 * f, a2 * f, a3 * f];
    for (let t = 0; t < m; t++) {
      if (s[t] > tops[t].sc[K - 1]) push(tops[t].ids, tops[t].sc, i, s[t]);
      if (lab && s[t] > tops[4 + t].sc[K - 1]) push(tops[4 + t].ids, tops[4 + t].sc, i, s[t]);
    }
  }
  for (let t = 0; t < m; t++) { all.set(tops[t].ids, (q - w.q0 + t) * K); filt.set(tops[4 + t].ids, (q - w.q0 + t) * K); }
}
parentPort.postMessage({ all, filt });
`;

async function groundTruth(d: ReturnType<typeof makeData>, n: number): Promise<{ all: Int32Array[]; filtered: Int32Array[] }> {
  const threads = Math.max(1, Math.min(2, availableParallelism()));
  const per = Math.ceil(NQ / threads / 4) * 4;
  const parts: Promise<{ all: Int32Array; filt: Int32Array }>[] = [];
  const workers: Worker[] = [];
  for (let t = 0; t < threads; t++) {
    const q0 = Math.min(NQ, t * per);
    const q1 = Math.min(NQ, q0 + per);
    const w = new Worker(GT_WORKER, {
      eval: true,
      workerData: { vectors: d.vectors.buffer, queries: d.queries.buffer, labels: d.labels.buffer, dim: DIM, top: TOP, n, q0, q1, filterCluster: FILTER_CLUSTER },
    });
    workers.push(w);
    parts.push(new Promise((resolve, reject) => (w.once('message', resolve), w.once('error', reject))));
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`ground truth took over ${GT_MS} ms`)), GT_MS)));
  try {
    const res = await Promise.race([Promise.all(parts), timeout]);
    const all: Int32Array[] = [];
    const filtered: Int32Array[] = [];
    for (const r of res) {
      for (let i = 0; i < r.all.length / TOP; i++) {
        all.push(r.all.slice(i * TOP, (i + 1) * TOP));
        filtered.push(r.filt.slice(i * TOP, (i + 1) * TOP));
      }
    }
    return { all, filtered };
  } finally {
    clearTimeout(timer);
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

const recallOf = (got: number[], truth: Int32Array) => {
  const t = new Set(truth);
  return got.filter((id) => t.has(id)).length / TOP;
};

// ------------------------------------------------------------------------------------------------
// HTTP

function http(agent: Agent, url: string, method: string, path: string, body: string | Buffer): Promise<{ ms: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const t0 = performance.now();
    const req = request(
      { host: u.hostname, port: u.port, path, method, agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => {
          const elapsed = performance.now() - t0;
          const text = Buffer.concat(parts).toString('utf8');
          if (res.statusCode !== 200) return reject(new Error(`${method} ${path} answered ${res.statusCode}: ${text.slice(0, 300)}`));
          try {
            resolve({ ms: elapsed, json: JSON.parse(text) });
          } catch (err) {
            reject(err as Error);
          }
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(REQUEST_MS, () => req.destroy(new Error(`${method} ${path}: no answer within ${REQUEST_MS} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
const agent = (n: number) => new Agent({ keepAlive: true, maxSockets: n, maxFreeSockets: n });

// ------------------------------------------------------------------------------------------------
// CPU accounting (as in llm.ts): our processes and the whole machine

// ------------------------------------------------------------------------------------------------

const rows: string[][] = [];
const grpcTable: string[][] = [];
const row = (...c: string[]) => rows.push(c);
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
    // An identical table: same columns, constraints and generated pid (LIKE), the stack table's indexes replayed.
    const [{ size: stackTableSize }] = (await db`select pg_size_pretty(pg_total_relation_size(${`${schema}.${meta.table}`}::regclass)) as size`) as unknown as [{ size: string }];
    const indexDefs = (await db<{ indexdef: string }[]>`select indexdef from pg_indexes where schemaname = ${schema} and tablename = ${meta.table}`).map((r) => r.indexdef);
    const likeTable = async (name: string) => {
      await db`create table ${db(schema)}.${db(name)} (like ${table} including defaults including generated including constraints)`;
    };
    const createIndexes = async (name: string, which: 'hnsw' | 'other') => {
      for (const def of indexDefs) {
        const isHnsw = def.includes('USING hnsw');
        if ((which === 'hnsw') !== isHnsw) continue;
        const stmt = def.replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+ /, (_m, u: string | undefined) => `CREATE ${u ?? ''}INDEX ON "${schema}"."${name}" `);
        await db.unsafe(stmt);
      }
    };

    // 2a. Like-for-like: the first PREFIX points as multi-row INSERTs into an identical table that already has its indexes.
    const sqlRows = (b: number) => {
      const out = [];
      for (let i = b * BATCH; i < Math.min(nIn, (b + 1) * BATCH); i++) {
        out.push({ id_num: String(i), payload: { cluster: data.labels[i]! % 10, n: i }, version: String(b), v0: `[${normalize(values(data.vectors, i)).join(',')}]` });
      }
      return out;
    };
    await likeTable('direct_inc');
    await createIndexes('direct_inc', 'other');
    await createIndexes('direct_inc', 'hnsw');
    const incTable = db`${db(schema)}.${db('direct_inc')}`;
    const incRows = Array.from({ length: prefixBatches }, (_, b) => sqlRows(b));
    await waitQuiet('direct insert', 10_000, log);
    let nextInc = 0;
    let incDone = 0;
    const tInc = performance.now();
    const incDeadline = tInc + PREFIX_MS;
    await Promise.all(
      Array.from({ length: INGEST_CONC }, async () => {
        while (nextInc < prefixBatches && performance.now() < incDeadline) {
          const b = nextInc++;
          await db`insert into ${incTable} ${db(incRows[b]!, 'id_num', 'payload', 'version', 'v0')}`;
          incDone += incRows[b]!.length;
        }
      }),
    );
    const incMs = performance.now() - tInc;
    incRows.length = 0;
    await db`drop table ${incTable}`;
    const stackPrefixPoints = Math.min(PREFIX, nIn);
    phase('direct insert (prefix)');

    // 2b. Bulk load: COPY into an identical table without indexes, then build them.
    await likeTable('direct_bulk');
    const bulkTable = db`${db(schema)}.${db('direct_bulk')}`;
    const copyChunks: string[] = [];
    for (let b = 0; b * BATCH < nIn; b++) {
      let s = '';
      for (let i = b * BATCH; i < Math.min(nIn, (b + 1) * BATCH); i++) {
        s += `${i}\t${JSON.stringify({ cluster: data.labels[i]! % 10, n: i })}\t0\t[${normalize(values(data.vectors, i)).join(',')}]\n`;
      }
      copyChunks.push(s);
    }
    await waitQuiet('COPY', 10_000, log);
    const tCopy = performance.now();
    const reserved = await db.reserve();
    let copyMs = 0;
    let otherIdxMs = 0;
    let hnswMs = 0;
    try {
      await reserved.unsafe(`set statement_timeout = ${STATEMENT_MS}`);
      const stream = await reserved`copy ${bulkTable} (id_num, payload, version, v0) from stdin`.writable();
      await new Promise<void>((resolve, reject) => {
        stream.on('error', reject);
        stream.on('finish', () => resolve());
        let i = 0;
        const pump = () => {
          while (i < copyChunks.length) {
            if (!stream.write(copyChunks[i++]!)) return void stream.once('drain', pump);
          }
          stream.end();
        };
        pump();
      });
      copyMs = performance.now() - tCopy;
      copyChunks.length = 0;
      const [{ n: bulkCount }] = (await reserved`select count(*)::int as n from ${bulkTable}`) as unknown as [{ n: number }];
      if (bulkCount !== nIn) throw new Error(`COPY stored ${bulkCount} rows, expected ${nIn}`);
      await waitQuiet('index build', 10_000, log);
      let t = performance.now();
      for (const def of indexDefs.filter((d) => !d.includes('USING hnsw'))) {
        await reserved.unsafe(def.replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+ /, (_m, u: string | undefined) => `CREATE ${u ?? ''}INDEX ON "${schema}"."direct_bulk" `));
      }
      otherIdxMs = performance.now() - t;
      t = performance.now();
      for (const def of indexDefs.filter((d) => d.includes('USING hnsw'))) {
        await reserved.unsafe(def.replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+ /, `CREATE INDEX ON "${schema}"."direct_bulk" `));
      }
      hnswMs = performance.now() - t;
      await reserved`analyze ${bulkTable}`;
    } finally {
      reserved.release();
    }
    const [{ size: bulkTableSize }] = (await db`select pg_size_pretty(pg_total_relation_size(${`${schema}.direct_bulk`}::regclass)) as size`) as unknown as [{ size: string }];
    await db`analyze ${table}`;
    const buildNotices = [...new Set(notices)];
    if (buildNotices.length) lines.push(`Postgres said during the bulk load: ${buildNotices.join(' | ')}`);
    phase('bulk load');
    log(`bulk: COPY ${sec(copyMs)}, other indexes ${sec(otherIdxMs)}, HNSW ${sec(hnswMs)}`);

    const pps = (n: number, t: number) => `${Math.round((n / t) * 1000).toLocaleString('en-US')} points/s`;
    const bulkTotal = copyMs + otherIdxMs + hnswMs;
    const stackIngestRate = nIn / ingestMs;
    const incRate = incDone / incMs;
    const stackPrefixRate = stackPrefixPoints / stackPrefixMs;
    row(
      `upsert ${nIn.toLocaleString('en-US')} points through the stack (PUT …/points?wait=true, ${BATCH}/request, ${INGEST_CONC} in flight)`,
      `${pps(nIn, ingestMs)} (${sec(ingestMs)})`,
      `${pps(nIn, bulkTotal)} (${sec(bulkTotal)})`,
      `${(stackIngestRate / (nIn / bulkTotal)).toFixed(2)}×`,
      `baseline: bulk load (COPY, then CREATE INDEX), rows below; the stack maintains the HNSW index row by row; ${(bodyBytes / nIn / 1024).toFixed(1)} KiB of JSON per point`,
    );
    row(
      `… first ${stackPrefixPoints.toLocaleString('en-US')} points, index present on both sides`,
      `${pps(stackPrefixPoints, stackPrefixMs)} (${sec(stackPrefixMs)})`,
      `${pps(incDone, incMs)} (${sec(incMs)})`,
      `${(stackPrefixRate / incRate).toFixed(2)}×`,
      `like-for-like: multi-row INSERT (postgres.js) of the same ${BATCH}-point batches, ${INGEST_CONC} in flight, into an identical empty table with its 4 indexes${incDone < stackPrefixPoints ? `; stopped by the time limit after ${incDone}` : ''}`,
    );
    row(`bulk: COPY ${nIn.toLocaleString('en-US')} rows into the bare table`, '-', `${pps(nIn, copyMs)} (${sec(copyMs)})`, '-', 'one COPY stream, no indexes');
    row(`bulk: CREATE INDEX hnsw (v0 vector_cosine_ops) m=16, ef_construction=100`, 'incremental (inside the upsert above)', sec(hnswMs), '-', `maintenance_work_mem ${settings!.mwm}, max_parallel_maintenance_workers ${settings!.pmw} (server defaults)`);
    row(`bulk: CREATE INDEX pid (unique), id order, GIN payload`, 'incremental', sec(otherIdxMs), '-', `table + indexes: stack ${stackTableSize}, bulk ${bulkTableSize}`);
    const ingestCpu = {
      edge: cpuIngest1.edge - cpuIngest0.edge,
      worker: cpuIngest1.worker - cpuIngest0.worker,
      nats: cpuIngest1.nats - cpuIngest0.nats,
      busy: ((cpuIngest1.m.busy - cpuIngest0.m.busy) / (cpuIngest1.m.total - cpuIngest0.m.total)) * availableParallelism(),
    };
    lines.push(
      `stack upsert CPU: edge ${sec(ingestCpu.edge)}, worker ${sec(ingestCpu.worker)}, NATS ${sec(ingestCpu.nats)} over ${sec(ingestMs)}; the machine had ${ingestCpu.busy.toFixed(2)} of ${availableParallelism()} cores busy (the rest is Postgres building the graph)`,
    );

  }

  // 3. Ground truth over the points the stack stored.
  const gt = GRPC_ONLY ? { all: [], filtered: [] } : await groundTruth(data, nIn);
  phase('ground truth');
  if (!GRPC_ONLY) log(`ground truth: ${NQ} queries`);

  // 4. Queries.
  const queryText = Array.from({ length: NQ }, (_, q) => `[${normalize(values(data.queries, q)).join(',')}]`);
  const queryValues = Array.from({ length: NQ }, (_, q) => values(data.queries, q));
  const filter = { must: [{ key: 'cluster', match: { value: FILTER_CLUSTER } }] };
  /** `exact`: params.exact (search.ts skips the index: a full ordered scan of the filtered rows); sequential only. */
  type Mode = { name: string; filtered: boolean; ef?: number; exact?: boolean };
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
  let fallbacks = 0;
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
      if (useIndex) fallbacks++;
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
  const cpuSnap = () => {
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
  type Cpu = ReturnType<typeof cpuSnap>;
  const cpuDelta = (a: Cpu, b: Cpu): Cpu => Object.fromEntries(Object.keys(b).map((k) => [k, b[k as keyof Cpu] - a[k as keyof Cpu]])) as Cpu;
  const cores = (c: Cpu) => ((c.busy / c.total) * availableParallelism()).toFixed(2);
  phase('query warm-up');

  const recallRows: string[][] = [];
  const decompRows: string[][] = [];
  const cpuLines: string[] = [];
  for (const [mi, m] of (GRPC_ONLY ? [] : modes).entries()) {
    const truth = m.filtered ? gt.filtered : gt.all;
    const count = m.exact ? Math.min(200, NQ_FILTERED) : m.filtered ? NQ_FILTERED : NQ;
    const decompose = mi === 0;
    const extra = { bus: [] as number[], catalog: [] as number[] };
    // Sequential, paired, order alternating.
    await waitQuiet(`sequential ${m.name}`, 10_000, log);
    const seq = { stack: [] as number[], direct: [] as number[], before: [] as number[], rs: [] as number[], rd: [] as number[], rb: [] as number[], same: 0 };
    fallbacks = 0;
    const deadline = performance.now() + SEQ_MS;
    let n = 0;
    const c0 = cpuSnap();
    const seqStart = performance.now();
    for (; n < count && performance.now() < deadline; n++) {
      let s: { ms: number; ids: number[] } | undefined;
      let d: { ms: number; ids: number[] } | undefined;
      let b: { ms: number; ids: number[] } | undefined;
      // Order rotating over the paths, so none always meets a warmer cache.
      const arms = beforeUrl ? (['stack', 'direct', 'before'] as const) : (['stack', 'direct'] as const);
      for (let a = 0; a < arms.length; a++) {
        const arm = arms[(a + n) % arms.length]!;
        if (arm === 'stack') s = await stackQuery(seqAgent, m, n);
        else if (arm === 'direct') d = await directQuery(table, m, n);
        else b = await stackQuery(beforeAgent, m, n, beforeUrl);
      }
      s = s!;
      d = d!;
      if (b) {
        seq.before.push(b.ms);
        seq.rb.push(recallOf(b.ids, truth[n]!));
      }
      seq.stack.push(s.ms);
      seq.direct.push(d.ms);
      seq.rs.push(recallOf(s.ids, truth[n]!));
      seq.rd.push(recallOf(d.ids, truth[n]!));
      if (s.ids.join() === d.ids.join()) seq.same++;
      if (decompose) {
        extra.bus.push((await busQuery(m, n)).ms);
        const t0 = performance.now();
        await loadCollection(db, schema, 'bench'); // what the worker did before every read until it cached the metadata
        await directQuery(table, m, n);
        extra.catalog.push(performance.now() - t0);
      }
    }
    const c1 = cpuSnap();
    const seqWall = performance.now() - seqStart;
    if (n < count) log(`sequential ${m.name}: stopped by the ${SEQ_MS} ms limit after ${n} of ${count}`);
    const seqFallbacks = fallbacks;
    // Recall on the bulk-built index (same query, same settings), default ef and the mode's.
    const rb: number[] = [];
    fallbacks = 0;
    const bulkDeadline = performance.now() + (m.exact ? 0 : SEQ_MS / 2);
    for (let q = 0; q < n && performance.now() < bulkDeadline; q++) rb.push(recallOf((await directQuery(bulkTbl, m, q)).ids, truth[q]!));

    // CONC in flight: direct, stack, direct, stack; each round up to NQ/2 queries.
    const conc = {
      stack: { lat: [] as number[], ms: 0, cpu: null as Cpu | null },
      direct: { lat: [] as number[], ms: 0, cpu: null as Cpu | null },
      before: { lat: [] as number[], ms: 0, cpu: null as Cpu | null },
    };
    for (let round = 0; round < (m.exact ? 0 : 2); round++) {
      for (const which of beforeUrl ? (['direct', 'stack', 'before'] as const) : (['direct', 'stack'] as const)) {
        await waitQuiet(`${CONC} in flight ${m.name} ${which}`, 10_000, log);
        const before = cpuSnap();
        const t0 = performance.now();
        const stop = t0 + ROUND_MS;
        const target = Math.ceil(count / 2);
        let issued = 0;
        const acc = conc[which];
        await Promise.all(
          Array.from({ length: CONC }, async () => {
            while (issued < target && performance.now() < stop) {
              const q = (round * target + issued++) % count;
              const r =
                which === 'stack' ? await stackQuery(concAgent, m, q) : which === 'before' ? await stackQuery(beforeAgent, m, q, beforeUrl) : await directQuery(table, m, q);
              acc.lat.push(r.ms);
            }
          }),
        );
        acc.ms += performance.now() - t0;
        const d = cpuDelta(before, cpuSnap());
        acc.cpu = acc.cpu ? (Object.fromEntries(Object.keys(d).map((k) => [k, acc.cpu![k as keyof Cpu] + d[k as keyof Cpu]])) as Cpu) : d;
        if (issued < target) log(`${CONC} in flight ${m.name} ${which}: stopped by the ${ROUND_MS} ms limit after ${issued} of ${target}`);
      }
    }
    const ef = Math.min(1000, Math.max(40, TOP, m.ef ?? 0));
    const qps = (count: number, t: number) => (count / t) * 1000;
    const seqQpsS = qps(seq.stack.length, seq.stack.reduce((a, b) => a + b, 0));
    const seqQpsD = qps(seq.direct.length, seq.direct.reduce((a, b) => a + b, 0));
    const cQpsS = qps(conc.stack.lat.length, conc.stack.ms);
    const cQpsD = qps(conc.direct.lat.length, conc.direct.ms);
    const diffs = seq.stack.map((x, i) => x - seq.direct[i]!);
    let split = '';
    if (m.filtered) {
      const inF = [...seq.rs.keys()].filter((q) => data.qLabels[q]! % 10 === FILTER_CLUSTER);
      const outF = [...seq.rs.keys()].filter((q) => data.qLabels[q]! % 10 !== FILTER_CLUSTER);
      // Cosine of the 1st and 10th exact filtered neighbour: how far apart the right answers are.
      const cos = (q: number, id: number) => {
        let dot = 0;
        let n2 = 0;
        for (let j = 0; j < DIM; j++) {
          const x = data.vectors[id * DIM + j]!;
          dot += x * data.queries[q * DIM + j]!;
          n2 += x * x;
        }
        return dot / Math.sqrt(n2);
      };
      const gap = (qs: number[]) => `${mean(qs.map((q) => cos(q, truth[q]![0]!))).toFixed(3)} → ${mean(qs.map((q) => cos(q, truth[q]![TOP - 1]!))).toFixed(3)}`;
      split =
        `; by query: own cluster passes the filter ${mean(inF.map((q) => seq.rs[q]!)).toFixed(3)} (n=${inF.length}, exact cosine 1st → 10th ${gap(inF)}), ` +
        `does not ${mean(outF.map((q) => seq.rs[q]!)).toFixed(3)} (n=${outF.length}, ${gap(outF)})`;
    }
    recallRows.push([
      `recall@10, ${m.name}${m.exact ? ' (no index)' : ` (ef_search ${ef})`}`,
      mean(seq.rs).toFixed(3),
      mean(seq.rd).toFixed(3),
      (mean(seq.rs) / mean(seq.rd)).toFixed(2),
      `n=${n} queries vs. exact top-10${m.filtered ? ' of the filtered points' : ''}; same ids as direct in ${((seq.same / n) * 100).toFixed(0)}%${m.exact ? '' : `; bulk-built index ${mean(rb).toFixed(3)} (n=${rb.length}); exact fallback (fewer than 10 from the index) ${seqFallbacks} of ${n}${split}`}`,
    ]);
    if (decompose) {
      const dBus = extra.bus.map((x, i) => x - seq.direct[i]!);
      const dCat = extra.catalog.map((x, i) => x - seq.direct[i]!);
      const dEdge = seq.stack.map((x, i) => x - extra.bus[i]!);
      decompRows.push(
        [`… same query as a bus request straight to the worker (no HTTP, no edge)`, pp(extra.bus), pp(seq.direct), '-', `n=${n} paired; added p50 ${ms(pct(dBus, 50))} over direct SQL; the edge's share (stack − bus, paired) p50 ${ms(pct(dEdge, 50))}`],
        [`… direct SQL preceded by a catalog lookup (loadCollection)`, '-', `${pp(extra.catalog)} vs. ${pp(seq.direct)}`, '-', `n=${n} paired; the lookup adds p50 ${ms(pct(dCat, 50))}; what a worker without its metadata cache (CatalogCache) did before every read`],
      );
    }
    row(
      `query ${m.name}, sequential`,
      `${seqQpsS.toFixed(0)} q/s; ${pp(seq.stack)}`,
      `${seqQpsD.toFixed(0)} q/s; ${pp(seq.direct)}`,
      `${(seqQpsS / seqQpsD).toFixed(2)}×`,
      `n=${n} paired; latency p50 / p99; added p50 ${ms(pct(diffs, 50))} (paired), p99 of paired Δ ${ms(pct(diffs, 99))}`,
    );
    if (decompose) rows.push(...decompRows);
    if (seq.before.length) {
      const seqQpsB = qps(seq.before.length, seq.before.reduce((a, b) => a + b, 0));
      const dB = seq.before.map((x, i) => x - seq.direct[i]!);
      const dSB = seq.stack.map((x, i) => x - seq.before[i]!);
      row(
        `… before (BENCH_VECTOR_BEFORE), sequential`,
        `${seqQpsB.toFixed(0)} q/s; ${pp(seq.before)}`,
        `${seqQpsD.toFixed(0)} q/s; ${pp(seq.direct)}`,
        `${(seqQpsB / seqQpsD).toFixed(2)}×`,
        `same queries, rotating order with stack and direct; added p50 ${ms(pct(dB, 50))}; after − before paired p50 ${ms(pct(dSB, 50))}; recall ${mean(seq.rb).toFixed(3)}`,
      );
    }
    if (!m.exact) {
      row(
        `query ${m.name}, ${CONC} in flight`,
        `${cQpsS.toFixed(0)} q/s; ${pp(conc.stack.lat)}`,
        `${cQpsD.toFixed(0)} q/s; ${pp(conc.direct.lat)}`,
        `${(cQpsS / cQpsD).toFixed(2)}×`,
        `n=${conc.stack.lat.length} / ${conc.direct.lat.length}, 2 alternating rounds each; direct: postgres.js pool of ${DB_POOL} (the worker's)`,
      );
      const per = (c: Cpu, count: number, keys: (keyof Cpu)[]) => keys.map((k) => `${k} ${(c[k] / count).toFixed(2)}`).join(', ');
      const s = conc.stack.cpu!;
      const d = conc.direct.cpu!;
      const sumS = (['client', 'edge', 'worker', 'nats', 'pgStack'] as const).reduce((a, k) => a + s[k], 0) / conc.stack.lat.length;
      const sumD = (['client', 'pgDirect'] as const).reduce((a, k) => a + d[k], 0) / conc.direct.lat.length;
      cpuLines.push(
        `${m.name}, ${CONC} in flight — CPU ms per query, stack: ${per(s, conc.stack.lat.length, ['client', 'edge', 'worker', 'nats', 'pgStack'])} (sum ${sumS.toFixed(2)}; cores busy ${cores(s)}); direct: ${per(d, conc.direct.lat.length, ['client', 'pgDirect'])} (sum ${sumD.toFixed(2)}; cores busy ${cores(d)})`,
      );
      if (conc.before.cpu) {
        const b = conc.before.cpu;
        const nB = conc.before.lat.length;
        const cQpsB = qps(nB, conc.before.ms);
        row(
          `… before (BENCH_VECTOR_BEFORE), ${CONC} in flight`,
          `${cQpsB.toFixed(0)} q/s; ${pp(conc.before.lat)}`,
          `${cQpsD.toFixed(0)} q/s; ${pp(conc.direct.lat)}`,
          `${(cQpsB / cQpsD).toFixed(2)}×`,
          `n=${nB}, its own rounds between stack and direct; after / before ${(cQpsS / cQpsB).toFixed(2)}×`,
        );
        const sumB = (b.client + b.edgeB + b.workerB + b.nats + b.pgBefore) / nB;
        cpuLines.push(
          `${m.name}, ${CONC} in flight — CPU ms per query, before: client ${(b.client / nB).toFixed(2)}, edge ${(b.edgeB / nB).toFixed(2)}, worker ${(b.workerB / nB).toFixed(2)}, nats ${(b.nats / nB).toFixed(2)}, pgStack ${(b.pgBefore / nB).toFixed(2)} (sum ${sumB.toFixed(2)}; cores busy ${cores(b)})`,
        );
      }
    }
    const sq = cpuDelta(c0, c1);
    const per1 = (x: number) => (x / Math.max(1, n)).toFixed(2);
    cpuLines.push(
      `${m.name}, sequential — CPU ms per query: after edge ${per1(sq.edge)}, worker ${per1(sq.worker)}, its Postgres ${per1(sq.pgStack)}; direct Postgres ${per1(sq.pgDirect)}` +
        (seq.before.length ? `; before edge ${per1(sq.edgeB)}, worker ${per1(sq.workerB)}, its Postgres ${per1(sq.pgBefore)}` : '') +
        `; shared: nats ${per1(sq.nats)}, client ${per1(sq.client)}${decompose ? ' (the decomposition requests included)' : ''}`,
    );
    cpuLines.push(`${m.name}, sequential — cores busy ${cores(sq)} (our processes ${((sq.client + sq.edge + sq.worker + sq.nats + sq.pgStack + sq.pgDirect + sq.edgeB + sq.workerB + sq.pgBefore) / seqWall).toFixed(2)}); load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    log(`queries ${m.name}: recall stack ${mean(seq.rs).toFixed(3)} direct ${mean(seq.rd).toFixed(3)}; seq ${seqQpsS.toFixed(0)} vs ${seqQpsD.toFixed(0)} q/s${m.exact ? '' : `; conc ${cQpsS.toFixed(0)} vs ${cQpsD.toFixed(0)} q/s`}`);
    phase(`queries ${m.name}`);
  }
  rows.push(...recallRows);
  lines.push(...cpuLines);

  // 5. Recommend (best_score) and discover by point ids: an exact scan with a custom score, so the
  // stack's cost is compared with the same two statements written out here (read the examples'
  // vectors by id, then one ordered scan computing Qdrant's score), issued straight to Postgres.
  const NR = Math.min(NQ, Number(process.env.BENCH_VECTOR_RECO_QUERIES ?? 100));
  const pick = rng(SEED + 1);
  const someId = () => Math.floor(pick() * nIn);
  const recoCases = Array.from({ length: NR }, () => ({ pos: [someId(), someId()], neg: [someId()], target: someId(), pair: [someId(), someId()] }));
  const sim = (x: string) => db`(-(v0 <#> ${x}::vector))`;
  const sigmoid = (x: postgres.PendingQuery<postgres.Row[]>) => db`(0.5 * (${x} / (1 + abs(${x})) + 1))`;
  const directTop = async (ids: number[], score: (v: Map<number, string>) => postgres.PendingQuery<postgres.Row[]>): Promise<number[]> => {
    const vs = await db<{ id: string; v: string }[]>`select id_num::text as id, v0::text as v from ${table} where pid = any(${ids.map(String)}::text[])`;
    const byId = new Map(vs.map((r) => [Number(r.id), r.v]));
    const found = await db<{ id: string }[]>`
      select id_num::text as id from (
        select id_num, (${score(byId)})::float8 as score from ${table} where v0 is not null and not (pid = any(${ids.map(String)}::text[]))
      ) s order by score desc, id_num limit ${TOP}`;
    return found.map((r) => Number(r.id));
  };
  const recoKinds = [
    {
      name: 'recommend best_score (2 positive ids, 1 negative id)',
      body: (c: (typeof recoCases)[number]) => ({ query: { recommend: { positive: c.pos, negative: c.neg, strategy: 'best_score' } }, limit: TOP }),
      direct: (c: (typeof recoCases)[number]) =>
        directTop([...c.pos, ...c.neg], (v) => {
          const p = db`greatest(${sim(v.get(c.pos[0]!)!)}, ${sim(v.get(c.pos[1]!)!)})`;
          const n = sim(v.get(c.neg[0]!)!);
          return db`case when ${p} > ${n} then ${sigmoid(p)} else -${sigmoid(n)} end`;
        }),
    },
    {
      name: 'discover (target id, 1 context pair of ids)',
      body: (c: (typeof recoCases)[number]) => ({ query: { discover: { target: c.target, context: [{ positive: c.pair[0], negative: c.pair[1] }] } }, limit: TOP }),
      direct: (c: (typeof recoCases)[number]) =>
        directTop([c.target, ...c.pair], (v) => db`sign(${sim(v.get(c.pair[0]!)!)} - ${sim(v.get(c.pair[1]!)!)}) + ${sigmoid(sim(v.get(c.target)!))}`),
    },
  ];
  const recoAgent = agent(1);
  for (const k of GRPC_ONLY || CORE_ONLY ? [] : recoKinds) {
    await waitQuiet(k.name, 10_000, log);
    const stackMs: number[] = [];
    const directMs: number[] = [];
    let agree = 0;
    const deadline = performance.now() + SEQ_MS;
    for (let i = 0; i < NR && performance.now() < deadline; i++) {
      const c = recoCases[i]!;
      // Paired, order alternating, as the nearest phases.
      const runStack = async () => {
        const r = await http(recoAgent, vurl, 'POST', '/collections/bench/points/query', JSON.stringify(k.body(c)));
        stackMs.push(r.ms);
        return (r.json as { result: { points: { id: number }[] } }).result.points.map((p) => Number(p.id));
      };
      const runDirect = async () => {
        const t0 = performance.now();
        const ids = await k.direct(c);
        directMs.push(performance.now() - t0);
        return ids;
      };
      let stackIds: number[];
      let directIds: number[];
      if (i % 2) {
        directIds = await runDirect();
        stackIds = await runStack();
      } else {
        stackIds = await runStack();
        directIds = await runDirect();
      }
      if (JSON.stringify(stackIds) === JSON.stringify(directIds)) agree++;
    }
    const qps = (xs: number[]) => 1000 / mean(xs);
    row(
      `${k.name}, sequential, ${stackMs.length} queries`,
      `${qps(stackMs).toFixed(1)} q/s (p50 / p99 ${pp(stackMs)})`,
      `${qps(directMs).toFixed(1)} q/s (p50 / p99 ${pp(directMs)})`,
      `${(qps(stackMs) / qps(directMs)).toFixed(2)}×`,
      `exact scan of ${nIn.toLocaleString('en-US')} points with the score in SQL on both sides; same top-${TOP} ids in ${agree}/${stackMs.length}`,
    );
    log(`${k.name}: stack ${qps(stackMs).toFixed(1)} q/s, direct ${qps(directMs).toFixed(1)} q/s`);
    phase(k.name);
  }
  recoAgent.destroy();
  // Sparse and hybrid (dense + sparse, RRF) queries on a collection of their own (vector-kinds.ts).
  const kinds = GRPC_ONLY || CORE_ONLY ? { rows: [], lines: [] } : await kindsBench(vurl, db, schema, log);
  rows.push(...kinds.rows);
  lines.push(...kinds.lines);
  phase('sparse and hybrid');
  // 6. gRPC vs. REST: the same queries, the same data, the same run.
  if (!CORE_ONLY) {
  const Points = grpc.makeGenericClientConstructor(qdrantService('qdrant.Points'), 'Points');
  const grpcClient = new Points(`127.0.0.1:${edge.vectorGrpcPort}`, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': 64 * 1024 * 1024 }) as unknown as grpc.Client & {
    Query: (req: unknown, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: { result?: { id: { num?: number } }[] }) => void) => void;
  };
  type Timed = { ms: number; ids: number[] };
  const grpcCall = (req: unknown): Promise<Timed> =>
    new Promise((resolve, reject) => {
      const t0 = performance.now();
      grpcClient.Query(req, { deadline: Date.now() + REQUEST_MS }, (err, res) =>
        err ? reject(err) : resolve({ ms: performance.now() - t0, ids: (res?.result ?? []).map((p) => Number(p.id.num)) }),
      );
    });
  const restCall = async (ag: Agent, collection: string, body: unknown): Promise<Timed> => {
    const r = await http(ag, vurl, 'POST', `/collections/${collection}/points/query`, JSON.stringify(body));
    return { ms: r.ms, ids: (r.json as { result: { points: { id: number }[] } }).result.points.map((p) => Number(p.id)) };
  };
  const grpcDense = (m: Mode, q: number) => ({
    collection_name: 'bench',
    query: { nearest: { dense: { data: queryValues[q] } } },
    limit: TOP,
    ...(m.filtered ? { filter: { must: [{ field: { key: 'cluster', match: { integer: FILTER_CLUSTER } } }] } } : {}),
    ...(m.ef ? { params: { hnsw_ef: m.ef } } : {}),
  });
  for (let i = 0; i < 50; i++) await grpcCall(grpcDense(modes[i % 2]!, i % NQ));
  const grpcRows: string[][] = [];
  const grpcCpu: string[] = [];
  type Paths = { grpc: (q: number) => Promise<Timed>; rest: (ag: Agent, q: number) => Promise<Timed>; sql: (q: number) => Promise<Timed> };
  /** One query kind over the three paths: sequential (paired, order rotating), then CONC in flight over gRPC and REST. */
  const comparePaths = async (label: string, count: number, paths: Paths) => {
    await waitQuiet(`gRPC vs REST sequential ${label}`, 10_000, log);
    const lat = { grpc: [] as number[], rest: [] as number[], sql: [] as number[] };
    let same = 0;
    let sameSql = 0;
    const deadline = performance.now() + SEQ_MS;
    let n = 0;
    const c0 = cpuSnap();
    const t0 = performance.now();
    for (; n < count && performance.now() < deadline; n++) {
      // Rotate which path goes first, so none always meets a warmer cache.
      const order = (['grpc', 'rest', 'sql'] as const).map((_, i, a) => a[(i + n) % 3]!);
      const got: Partial<Record<'grpc' | 'rest' | 'sql', Timed>> = {};
      for (const path of order) got[path] = path === 'grpc' ? await paths.grpc(n) : path === 'rest' ? await paths.rest(seqAgent, n) : await paths.sql(n);
      lat.grpc.push(got.grpc!.ms);
      lat.rest.push(got.rest!.ms);
      lat.sql.push(got.sql!.ms);
      if (got.grpc!.ids.join() === got.rest!.ids.join()) same++;
      if (got.rest!.ids.join() === got.sql!.ids.join()) sameSql++;
    }
    const seqCpu = cpuDelta(c0, cpuSnap());
    if (n < count) log(`gRPC vs REST sequential ${label}: stopped by the ${SEQ_MS} ms limit after ${n} of ${count}`);
    const dGrpc = lat.grpc.map((x, i) => x - lat.sql[i]!);
    const dRest = lat.rest.map((x, i) => x - lat.sql[i]!);
    const dPorts = lat.grpc.map((x, i) => x - lat.rest[i]!);
    const qps = (xs: number[]) => (xs.length / xs.reduce((a, b) => a + b, 0)) * 1000;
    const pc = (k: number) => `${((k / Math.max(1, n)) * 100).toFixed(0)}%`;
    grpcRows.push([
      `${label}, sequential`,
      `${qps(lat.grpc).toFixed(0)} q/s; ${pp(lat.grpc)}`,
      `${qps(lat.rest).toFixed(0)} q/s; ${pp(lat.rest)}`,
      `${qps(lat.sql).toFixed(0)} q/s; ${pp(lat.sql)}`,
      `n=${n} per path, paired, order rotating; added over SQL p50: gRPC ${ms(pct(dGrpc, 50))}, REST ${ms(pct(dRest, 50))}; gRPC − REST p50 ${ms(pct(dPorts, 50))}, p99 ${ms(pct(dPorts, 99))}; same ids gRPC = REST ${pc(same)}, REST = SQL ${pc(sameSql)}; cores busy ${cores(seqCpu)} over ${sec(performance.now() - t0)}`,
    ]);
    // CONC in flight: REST, gRPC, REST, gRPC.
    const conc = { grpc: { lat: [] as number[], ms: 0, edge: 0 }, rest: { lat: [] as number[], ms: 0, edge: 0 } };
    for (let round = 0; round < 2; round++) {
      for (const which of ['rest', 'grpc'] as const) {
        await waitQuiet(`gRPC vs REST ${CONC} in flight ${label} ${which}`, 10_000, log);
        const before = cpuSnap();
        const start = performance.now();
        const stop = start + ROUND_MS;
        const target = Math.ceil(count / 2);
        let issued = 0;
        const acc = conc[which];
        await Promise.all(
          Array.from({ length: CONC }, async () => {
            while (issued < target && performance.now() < stop) {
              const q = (round * target + issued++) % count;
              acc.lat.push((which === 'grpc' ? await paths.grpc(q) : await paths.rest(concAgent, q)).ms);
            }
          }),
        );
        acc.ms += performance.now() - start;
        acc.edge += cpuDelta(before, cpuSnap()).edge;
      }
    }
    const cq = (c: { lat: number[]; ms: number }) => (c.lat.length / c.ms) * 1000;
    grpcRows.push([
      `${label}, ${CONC} in flight`,
      `${cq(conc.grpc).toFixed(0)} q/s; ${pp(conc.grpc.lat)}`,
      `${cq(conc.rest).toFixed(0)} q/s; ${pp(conc.rest.lat)}`,
      '(sequential only)',
      `n=${conc.grpc.lat.length} / ${conc.rest.lat.length}, 2 alternating rounds each; gRPC: one HTTP/2 channel, REST: ${CONC} keep-alive sockets; gRPC / REST ${(cq(conc.grpc) / cq(conc.rest)).toFixed(2)}×`,
    ]);
    grpcCpu.push(`${label}, ${CONC} in flight — edge CPU ms per query: gRPC ${(conc.grpc.edge / conc.grpc.lat.length).toFixed(2)}, REST ${(conc.rest.edge / conc.rest.lat.length).toFixed(2)}`);
    log(`gRPC vs REST ${label}: seq ${qps(lat.grpc).toFixed(0)} vs ${qps(lat.rest).toFixed(0)} vs SQL ${qps(lat.sql).toFixed(0)} q/s; conc ${cq(conc.grpc).toFixed(0)} vs ${cq(conc.rest).toFixed(0)} q/s`);
    phase(`gRPC vs REST ${label}`);
  };
  for (const m of modes.slice(0, 2)) {
    await comparePaths(`dense query ${m.name}`, m.filtered ? NQ_FILTERED : GRPC_QUERIES, {
      grpc: (q) => grpcCall(grpcDense(m, q)),
      rest: (ag, q) => stackQuery(ag, m, q),
      sql: (q) => directQuery(table, m, q),
    });
  }

  // 7. Sparse and hybrid (dense + sparse, RRF) through both ports, on a collection with a named dense and a sparse vector.
  const NS = Math.min(nIn, SPARSE_POINTS);
  const sparseOf = (r: () => number, cluster: number, own: number, global: number) => {
    const idx = new Set<number>();
    for (let t = 0; idx.size < own + global && t < 10 * (own + global); t++) {
      // A cluster's own terms (its topic) and Zipf-like global ones (frequent words).
      idx.add(idx.size < own ? cluster * 200 + Math.floor(200 * r() ** 2) : Math.floor(SPARSE_VOCAB * r() ** 3));
    }
    const indices = [...idx];
    return { indices, values: indices.map(() => Math.round((0.05 + 0.95 * r()) * 1000) / 1000) };
  };
  const rs = rng(SEED + 1);
  const pointSparse = Array.from({ length: NS }, (_, i) => sparseOf(rs, data.labels[i]!, 10, 10));
  const querySparse = Array.from({ length: NQ }, (_, q) => sparseOf(rs, data.qLabels[q]!, 4, 2));
  await http(agent(1), vurl, 'PUT', '/collections/bench_hybrid', JSON.stringify({ vectors: { dense: { size: DIM, distance: 'Cosine' } }, sparse_vectors: { text: {} } }));
  const loadAgent = agent(INGEST_CONC);
  let nextLoad = 0;
  const loadDeadline = performance.now() + INGEST_MS;
  await Promise.all(
    Array.from({ length: INGEST_CONC }, async () => {
      while (nextLoad * 250 < NS && performance.now() < loadDeadline) {
        const b = nextLoad++;
        const pts = [];
        for (let i = b * 250; i < Math.min(NS, (b + 1) * 250); i++) pts.push({ id: i, vector: { dense: values(data.vectors, i), text: pointSparse[i] }, payload: { cluster: data.labels[i]! % 10 } });
        await http(loadAgent, vurl, 'PUT', '/collections/bench_hybrid/points?wait=true', JSON.stringify({ points: pts }));
      }
    }),
  );
  loadAgent.destroy();
  phase('hybrid load');
  const hmeta = await loadCollection(db, schema, 'bench_hybrid');
  const htable = tableOf(db, schema, hmeta);
  const hside = db`${db(schema)}.${db(`points_${hmeta.id}_sparse`)}`;
  const hcol = hmeta.dense.get('dense')!.column;
  await db`analyze ${htable}`;
  await db`analyze ${hside}`;
  const [{ stored }] = (await db`select count(*)::int as stored from ${htable}`) as unknown as [{ stored: number }];
  log(`hybrid collection: ${stored} points with a dense and a sparse vector (${mean(pointSparse.map((v) => v.indices.length)).toFixed(1)} dims each, vocabulary ${SPARSE_VOCAB})`);
  const PRE = 20; // each prefetch's limit
  /** sparse.ts sparseRows, written out: posting lists joined to the query's dimensions, dot product, best first. */
  const sqlSparse = async (q: number, need: number): Promise<{ pid: string; score: number }[]> => {
    const v = querySparse[q]!;
    const rows = await db<{ pid: string; score: number }[]>`
      with hits as (
        select s.pid, sum(s.value * q.w) as score
        from ${hside} s join unnest(${v.indices}::bigint[], ${v.values}::real[]) as q(idx, w) on s.idx = q.idx
        where s.name = 'text'
        group by s.pid
      )
      select pid, hits.score::float8 as score from ${htable} join hits using (pid)
      order by hits.score desc, ${db.unsafe(ID_ORDER)} limit ${need}`;
    return rows.map((r) => ({ pid: r.pid, score: Number(r.score) }));
  };
  /** The dense leg, as directQuery: same settings, CTE and re-ordering. */
  const sqlDense = async (q: number, need: number): Promise<{ pid: string; score: number }[]> => {
    const ef = Math.max(40, need);
    const text = queryText[q]!;
    return db.begin(async (tx) => {
      await tx`select set_config('hnsw.iterative_scan', 'strict_order', true), set_config('hnsw.ef_search', ${String(ef)}, true),
                      set_config('hnsw.max_scan_tuples', ${String(Math.max(100_000, ef * 1000))}, true)`;
      const rows = await tx<{ pid: string; distance: number }[]>`
        with candidates as materialized (
          select pid, id_num, id_uuid, ${tx(hcol)} <=> ${text}::vector as distance from ${htable}
          where ${tx(hcol)} is not null order by distance limit ${ef}
        )
        select pid, distance from candidates order by distance, ${tx.unsafe(ID_ORDER)} limit ${need}`;
      return rows.map((r) => ({ pid: r.pid, score: 1 - Number(r.distance) }));
    });
  };
  const idsOf = (xs: { pid: string }[]) => xs.map((x) => Number(x.pid));
  const timedSql = async (f: () => Promise<number[]>): Promise<Timed> => {
    const t0 = performance.now();
    const ids = await f();
    return { ms: performance.now() - t0, ids };
  };
  const sparseRest = (q: number) => ({ query: querySparse[q], using: 'text', limit: TOP });
  const hybridRest = (q: number) => ({
    prefetch: [
      { query: querySparse[q], using: 'text', limit: PRE },
      { query: queryValues[q], using: 'dense', limit: PRE },
    ],
    query: { fusion: 'rrf' },
    limit: TOP,
  });
  const sparseGrpc = (q: number) => ({ collection_name: 'bench_hybrid', query: { nearest: { sparse: querySparse[q] } }, using: 'text', limit: TOP });
  const hybridGrpc = (q: number) => ({
    collection_name: 'bench_hybrid',
    prefetch: [
      { query: { nearest: { sparse: querySparse[q] } }, using: 'text', limit: PRE },
      { query: { nearest: { dense: { data: queryValues[q] } } }, using: 'dense', limit: PRE },
    ],
    query: { fusion: 'RRF' },
    limit: TOP,
  });
  for (let i = 0; i < 30; i++) {
    await restCall(seqAgent, 'bench_hybrid', hybridRest(i % NQ));
    await grpcCall(hybridGrpc(i % NQ));
  }
  await comparePaths('sparse query (6 dims, dot product)', GRPC_QUERIES, {
    grpc: (q) => grpcCall(sparseGrpc(q)),
    rest: (ag, q) => restCall(ag, 'bench_hybrid', sparseRest(q)),
    sql: (q) => timedSql(async () => idsOf(await sqlSparse(q, TOP))),
  });
  await comparePaths(`hybrid query (sparse + dense, ${PRE} each, RRF)`, GRPC_QUERIES, {
    grpc: (q) => grpcCall(hybridGrpc(q)),
    rest: (ag, q) => restCall(ag, 'bench_hybrid', hybridRest(q)),
    // The worker's plan: both legs, then RRF (fusion.ts, k = 2) over the two lists.
    sql: (q) => timedSql(async () => idsOf(rrf([await sqlSparse(q, PRE), await sqlDense(q, PRE)], DEFAULT_RRF_K).slice(0, TOP))),
  });
  lines.push(
    `hybrid collection: ${stored.toLocaleString('en-US')} points (the first of the data set), named dense vector \`dense\` (${DIM} dims, Cosine) and sparse vector \`text\` (no modifier; ${mean(pointSparse.map((v) => v.indices.length)).toFixed(1)} non-zero dims of ${SPARSE_VOCAB}: 10 from the point's cluster's 200 terms, 10 Zipf-like global ones); queries: 4 cluster terms + 2 global`,
  );
  grpcClient.close();
  const grpcHeader = ['measurement', 'gRPC (:6334, Points/Query)', 'REST (:6333, …/points/query)', 'direct SQL', 'notes'];
  grpcTable.push(grpcHeader, grpcHeader.map(() => '---'), ...grpcRows);
  lines.push(...grpcCpu);
  }
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
