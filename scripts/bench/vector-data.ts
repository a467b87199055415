import { Agent, request } from 'node:http';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

// The vector benchmark's settings (env), its seeded data set, the exact ground truth and the plain
// HTTP client every phase shares: kept apart from vector.ts so the phase modules read the same
// constants and data without importing the run itself.
export const N = Number(process.env.BENCH_VECTOR_POINTS ?? 100_000);
export const NQ = Number(process.env.BENCH_VECTOR_QUERIES ?? 1000);
export const NQ_FILTERED = Math.min(NQ, Number(process.env.BENCH_VECTOR_FILTERED_QUERIES ?? 300));
export const CONC = Number(process.env.BENCH_VECTOR_CONCURRENCY ?? 16);
export const PREFIX = Math.min(N, Number(process.env.BENCH_VECTOR_PREFIX ?? 20_000));
export const DIM = 384;
export const CLUSTERS = 100;
export const TOP = 10;
export const FILTER_CLUSTER = 3;
/** Noise around a (unit) centre: |noise| ≈ NOISE, spread over the dimensions with a decaying spectrum. */
const NOISE = 1.0;
export const SEED = 20261122;
export const BATCH = 500; // points per upsert request / INSERT
export const INGEST_CONC = 4; // upsert requests (or INSERTs) in flight
export const DB_POOL = 10; // the worker's VECTOR_DB_POOL default; the direct pool gets the same
export const INGEST_MS = 420_000; // the stack's upsert stops issuing batches here
export const PREFIX_MS = 150_000; // the like-for-like direct INSERT stops here
export const STATEMENT_MS = 300_000; // COPY and each CREATE INDEX
const GT_MS = 240_000; // ground truth
export const SEQ_MS = Number(process.env.BENCH_VECTOR_SEQ_MS ?? 60_000); // one sequential query phase
export const ROUND_MS = Number(process.env.BENCH_VECTOR_ROUND_MS ?? 15_000); // one concurrent round
export const REQUEST_MS = 60_000; // one HTTP request
export const WATCHDOG_MS = 1_260_000; // the whole run
export const GRPC_ONLY = process.env.BENCH_VECTOR_GRPC_ONLY === '1';
/** Only ingestion, recall and the dense query phases (1–4): no recommend/discover, sparse/hybrid or gRPC phases. */
export const CORE_ONLY = process.env.BENCH_VECTOR_CORE_ONLY === '1';
export const SPARSE_POINTS = Number(process.env.BENCH_VECTOR_SPARSE_POINTS ?? 20_000); // the hybrid collection (6.)
export const SPARSE_VOCAB = 30_000;
export const GRPC_QUERIES = Math.min(NQ, Number(process.env.BENCH_VECTOR_GRPC_QUERIES ?? 500)); // per path, unfiltered (filtered: NQ_FILTERED)
export const DB_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gatehouse_test';

export const sec = (x: number) => `${(x / 1000).toFixed(1)} s`;
export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
export const log = (m: string) => console.error(`[bench] ${m}`);

// ------------------------------------------------------------------------------------------------
// Data set

/** mulberry32: small, fast, seeded. */
export function rng(seed: number): () => number {
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
export function makeData(): { vectors: Float32Array; labels: Uint8Array; queries: Float32Array; qLabels: Uint8Array } {
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
export function values(v: Float32Array, i: number): number[] {
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

export async function groundTruth(d: ReturnType<typeof makeData>, n: number): Promise<{ all: Int32Array[]; filtered: Int32Array[] }> {
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

export const recallOf = (got: number[], truth: Int32Array) => {
  const t = new Set(truth);
  return got.filter((id) => t.has(id)).length / TOP;
};

// ------------------------------------------------------------------------------------------------
// HTTP

export function http(agent: Agent, url: string, method: string, path: string, body: string | Buffer): Promise<{ ms: number; json: unknown }> {
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
export const agent = (n: number) => new Agent({ keepAlive: true, maxSockets: n, maxFreeSockets: n });

export type Data = ReturnType<typeof makeData>;
