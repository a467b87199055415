import { Agent, request } from 'node:http';
import postgres from 'postgres';
import { Stack } from '../../tests/support/local-stack.ts';
import { ms, pct, pp, waitQuiet } from './measure.ts';
// The direct-SQL baselines reuse the worker's catalog reader, so they read the same tables.
import { loadCollection, tableOf } from '../../services/vector-worker/src/store/collections/catalog.ts';
import { normalize } from '../../services/vector-worker/src/store/vectors/vectors.ts';

/**
 * Sparse and hybrid queries of the vector face, each beside direct SQL on the same
 * data in the same run. Run by `scripts/bench/run vector` after the dense phases, or alone with
 * `scripts/bench/run vector-kinds` (a stack of its own).
 *   1. data (seeded): N_S points, each a 64-d dense vector (Cosine) and a sparse vector of ~40
 *      terms drawn from a 30 000-term Zipf vocabulary (values 1 + ln tf); ingested through the
 *      stack (PUT …/points, 500 per request);
 *   2. sparse: POST …/points/query {query: {indices, values}, using: "s", limit: 10} with 3–6-term
 *      Zipf queries, vs. the worker's inverted-index SQL (sparse.ts) sent straight to Postgres;
 *      and the design alternative measured on the same data: a `sparsevec` column scanned exactly
 *      (`<#>`, no index), the one other way pgvector offers to score sparse vectors exactly;
 *   3. hybrid: prefetch dense (limit 20) + sparse (limit 20), {fusion: "rrf"}, limit 10, vs. the
 *      same two statements straight to Postgres and RRF fused in the client.
 * Sequential and paired (order alternating); every loop bounded by count and time.
 * Env: BENCH_SPARSE_POINTS (20 000), BENCH_SPARSE_QUERIES (300).
 */
const N_S = Number(process.env.BENCH_SPARSE_POINTS ?? 20_000);
const NQ_S = Number(process.env.BENCH_SPARSE_QUERIES ?? 300);
const DIM = 64;
const VOCAB = 30_000;
const TERMS = 40;
const BATCH = 500;
const PHASE_MS = 60_000;
const REQUEST_MS = 60_000;
const SEED = 20261127;

type Row = string[];
type Sparse = { indices: number[]; values: number[] };

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A Zipf(1) term id in [0, VOCAB): inverse CDF on the harmonic series, approximated by exp. */
const zipf = (r: () => number) => Math.min(VOCAB - 1, Math.floor(Math.exp(r() * Math.log(VOCAB))) - 1);

function sparseOf(r: () => number, terms: number): Sparse {
  const tf = new Map<number, number>();
  for (let i = 0; i < terms; i++) {
    const t = zipf(r);
    tf.set(t, (tf.get(t) ?? 0) + 1);
  }
  const indices = [...tf.keys()].sort((a, b) => a - b);
  return { indices, values: indices.map((i) => Math.fround(1 + Math.log(tf.get(i)!))) };
}

function http(agent: Agent, url: string, method: string, path: string, body: string): Promise<{ ms: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const t0 = performance.now();
    const req = request(
      { host: u.hostname, port: u.port, path, method, agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          if (res.statusCode !== 200) return reject(new Error(`${method} ${path} answered ${res.statusCode}: ${text.slice(0, 300)}`));
          resolve({ ms: performance.now() - t0, json: JSON.parse(text) });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(REQUEST_MS, () => req.destroy(new Error(`${method} ${path}: no answer within ${REQUEST_MS} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

const qps = (xs: number[]) => (xs.length / xs.reduce((a, b) => a + b, 0)) * 1000;

/** Sparse and hybrid rows (measurement, stack, direct SQL, ratio, notes) for the results table. */
export async function kindsBench(vurl: string, db: postgres.Sql, schema: string, log: (m: string) => void): Promise<{ rows: Row[]; lines: string[] }> {
  const r = rng(SEED);
  const gauss = () => Math.sqrt(-2 * Math.log(r() || 1e-12)) * Math.cos(2 * Math.PI * r());
  const agent = new Agent({ keepAlive: true, maxSockets: 4, maxFreeSockets: 4 });
  const rows: Row[] = [];
  const lines: string[] = [];
  try {
    await http(agent, vurl, 'PUT', '/collections/bench_kinds', JSON.stringify({ vectors: { d: { size: DIM, distance: 'Cosine' } }, sparse_vectors: { s: {} } }));
    const tIn = performance.now();
    for (let b = 0; b * BATCH < N_S; b++) {
      const points = [];
      for (let i = b * BATCH; i < Math.min(N_S, (b + 1) * BATCH); i++) {
        points.push({ id: i, vector: { d: Array.from({ length: DIM }, gauss), s: sparseOf(r, TERMS) } });
      }
      await http(agent, vurl, 'PUT', '/collections/bench_kinds/points?wait=true', JSON.stringify({ points }));
    }
    const inMs = performance.now() - tIn;
    const meta = await loadCollection(db, schema, 'bench_kinds');
    const table = tableOf(db, schema, meta);
    const side = db`${db(schema)}.${db(`points_${meta.id}_sparse`)}`;
    const [postings] = await db<{ n: string }[]>`select count(*)::text as n from ${side}`;
    lines.push(
      `sparse/hybrid data: ${N_S.toLocaleString('en-US')} points, ${DIM}-d dense + sparse (~${TERMS} Zipf draws over ${VOCAB.toLocaleString('en-US')} terms; ${Number(postings!.n).toLocaleString('en-US')} postings), ingested through the stack in ${(inMs / 1000).toFixed(1)} s (${((N_S / inMs) * 1000).toFixed(0)} points/s)`,
    );

    // The design alternative: the same sparse vectors in a sparsevec column (exact scan, no index).
    await db`alter table ${table} add column sv sparsevec(${db.unsafe(String(VOCAB))})`;
    await db`
      update ${table} set sv = (
        select (('{' || string_agg((idx + 1)::text || ':' || value::text, ',') || '}/' || ${String(VOCAB)}))::sparsevec
        from ${side} s where s.pid = ${table}.pid)`;
    await db`vacuum analyze ${table}`;
    await db`analyze ${side}`;

    const queries = Array.from({ length: NQ_S }, () => ({ sparse: sparseOf(r, 3 + Math.floor(r() * 4)), dense: Array.from({ length: DIM }, gauss) }));
    const sparseSql = async (q: Sparse, limit: number) => {
      const t0 = performance.now();
      const res = await db<{ pid: string; score: number }[]>`
        with hits as (
          select s.pid, sum(s.value * q.w) as score
          from ${side} s join unnest(${q.indices}::bigint[], ${q.values}::real[]) as q(idx, w) on s.idx = q.idx
          where s.name = 's'
          group by s.pid
        )
        select pid, hits.score from ${table} join hits using (pid)
        order by hits.score desc, (id_uuid is not null), id_num, id_uuid limit ${limit}`;
      return { ms: performance.now() - t0, ids: res.map((x) => x.pid) };
    };
    const sparsevecSql = async (q: Sparse) => {
      const text = `{${q.indices.map((i, k) => `${i + 1}:${q.values[k]}`).join(',')}}/${VOCAB}`;
      const t0 = performance.now();
      const res = await db<{ pid: string }[]>`
        select pid from ${table} where sv is not null and (sv <#> ${text}::sparsevec) < 0
        order by sv <#> ${text}::sparsevec, (id_uuid is not null), id_num, id_uuid limit 10`;
      return { ms: performance.now() - t0, ids: res.map((x) => x.pid) };
    };
    const denseSql = async (v: number[], limit: number) => {
      const text = `[${normalize(v).join(',')}]`;
      const t0 = performance.now();
      const res = await db.begin(async (tx) => {
        await tx`select set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', '40', true)`;
        return tx<{ pid: string }[]>`
          with c as materialized (select pid, id_num, id_uuid, v0 <=> ${text}::vector as d from ${table} where v0 is not null order by d limit 40)
          select pid from c order by d, (id_uuid is not null), id_num, id_uuid limit ${limit}`;
      });
      return { ms: performance.now() - t0, ids: (res as unknown as { pid: string }[]).map((x) => x.pid) };
    };
    const stackSparse = (q: Sparse) => http(agent, vurl, 'POST', '/collections/bench_kinds/points/query', JSON.stringify({ query: q, using: 's', limit: 10 }));
    const stackHybrid = (q: (typeof queries)[number]) =>
      http(
        agent,
        vurl,
        'POST',
        '/collections/bench_kinds/points/query',
        JSON.stringify({
          prefetch: [
            { query: q.dense, using: 'd', limit: 20 },
            { query: q.sparse, using: 's', limit: 20 },
          ],
          query: { fusion: 'rrf' },
          limit: 10,
        }),
      );
    const directHybrid = async (q: (typeof queries)[number]) => {
      const a = await denseSql(q.dense, 20);
      const b = await sparseSql(q.sparse, 20);
      const score = new Map<string, number>();
      for (const list of [a.ids, b.ids]) list.forEach((id, pos) => score.set(id, (score.get(id) ?? 0) + 1 / (pos + 2)));
      const top = [...score.entries()].sort((x, y) => y[1] - x[1]).slice(0, 10);
      return { ms: a.ms + b.ms, ids: top.map((x) => x[0]) };
    };

    await waitQuiet('sparse queries', 10_000, log);
    // Warm both paths.
    for (const q of queries.slice(0, 20)) {
      await stackSparse(q.sparse);
      await sparseSql(q.sparse, 10);
      await sparsevecSql(q.sparse);
    }
    const s = { stack: [] as number[], direct: [] as number[], sv: [] as number[], same: 0 };
    const deadline = performance.now() + PHASE_MS;
    for (let i = 0; i < queries.length && performance.now() < deadline; i++) {
      const q = queries[i]!.sparse;
      let st2: { ms: number; json: unknown };
      let d: { ms: number; ids: string[] };
      if (i % 2) {
        st2 = await stackSparse(q);
        d = await sparseSql(q, 10);
      } else {
        d = await sparseSql(q, 10);
        st2 = await stackSparse(q);
      }
      s.stack.push(st2.ms);
      s.direct.push(d.ms);
      const got = ((st2.json as { result: { points: { id: number }[] } }).result.points ?? []).map((p) => String(p.id));
      if (got.join() === d.ids.join()) s.same++;
      s.sv.push((await sparsevecSql(q)).ms);
    }
    const diffs = s.stack.map((x, i) => x - s.direct[i]!);
    rows.push([
      'sparse query (inverted index), sequential',
      `${qps(s.stack).toFixed(0)} q/s; ${pp(s.stack)}`,
      `${qps(s.direct).toFixed(0)} q/s; ${pp(s.direct)}`,
      `${(qps(s.stack) / qps(s.direct)).toFixed(2)}×`,
      `n=${s.stack.length} paired; added p50 ${ms(pct(diffs, 50))}; same top-10 as direct in ${((s.same / s.stack.length) * 100).toFixed(0)}%`,
    ]);
    rows.push([
      '… design alternative: sparsevec column, exact scan (<#>)',
      '-',
      `${qps(s.sv).toFixed(0)} q/s; ${pp(s.sv)}`,
      `${(qps(s.direct) / qps(s.sv)).toFixed(2)}× (inverted index / sparsevec)`,
      `same queries, direct SQL; pgvector has no exact index for sparsevec, and its dimension cap (10⁹) is below Qdrant's u32 indices`,
    ]);
    log(`sparse: stack ${qps(s.stack).toFixed(0)} q/s, direct ${qps(s.direct).toFixed(0)} q/s, sparsevec ${qps(s.sv).toFixed(0)} q/s`);

    await waitQuiet('hybrid queries', 10_000, log);
    const h = { stack: [] as number[], direct: [] as number[] };
    const hDeadline = performance.now() + PHASE_MS;
    for (let i = 0; i < queries.length && performance.now() < hDeadline; i++) {
      const q = queries[i]!;
      if (i % 2) {
        h.stack.push((await stackHybrid(q)).ms);
        h.direct.push((await directHybrid(q)).ms);
      } else {
        h.direct.push((await directHybrid(q)).ms);
        h.stack.push((await stackHybrid(q)).ms);
      }
    }
    const hd = h.stack.map((x, i) => x - h.direct[i]!);
    rows.push([
      'hybrid dense + sparse, RRF (prefetch 20 + 20, limit 10), sequential',
      `${qps(h.stack).toFixed(0)} q/s; ${pp(h.stack)}`,
      `${qps(h.direct).toFixed(0)} q/s; ${pp(h.direct)}`,
      `${(qps(h.stack) / qps(h.direct)).toFixed(2)}×`,
      `n=${h.stack.length} paired; direct: the two statements back to back + RRF in the client; added p50 ${ms(pct(hd, 50))}`,
    ]);
    log(`hybrid: stack ${qps(h.stack).toFixed(0)} q/s, direct ${qps(h.direct).toFixed(0)} q/s`);
    await db`alter table ${table} drop column sv`;
  } finally {
    agent.destroy();
  }
  return { rows, lines };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const stack = new Stack();
  const DB_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gatehouse_test';
  const sql = postgres(DB_URL, { max: 4, onnotice: () => {} });
  const watchdog = setTimeout(() => {
    console.error('[bench] watchdog: over 15 min; stopping');
    void stack.close().finally(() => process.exit(2));
  }, 900_000);
  watchdog.unref();
  try {
    await stack.startVectorWorker();
    const edge = await stack.startEdge({ LOG_LEVEL: 'warn' });
    const { rows, lines } = await kindsBench(edge.vectorUrl, sql, `vector_${stack.ns}`, (m) => console.error(`[bench] ${m}`));
    const header = ['measurement', 'result (stack)', 'baseline (direct SQL)', 'ratio', 'notes'];
    console.log([header, header.map(() => '---'), ...rows].map((x) => `| ${x.join(' | ')} |`).join('\n'));
    console.log('');
    for (const l of lines) console.log(l);
  } finally {
    await sql.end({ timeout: 5 });
    await stack.close();
    clearTimeout(watchdog);
  }
}
