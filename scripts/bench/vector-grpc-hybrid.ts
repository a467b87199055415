import { DEFAULT_RRF_K, rrf } from '../../services/vector-worker/src/store/query/fusion.ts';
import { loadCollection, tableOf } from '../../services/vector-worker/src/store/collections/catalog.ts';
import { ID_ORDER } from '../../services/vector-worker/src/store/points/ids.ts';
import type { Timed, VectorRun } from './vector-context.ts';
import { DIM, GRPC_QUERIES, INGEST_CONC, INGEST_MS, NQ, SEED, SPARSE_POINTS, SPARSE_VOCAB, TOP, agent, http, log, mean, rng, values } from './vector-data.ts';
import type { GrpcTools } from './vector-grpc.ts';

// Section 7 of the vector benchmark: sparse and hybrid (sparse + dense prefetches, RRF) queries on
// a second collection with a named dense and a sparse vector, through gRPC, REST and the worker's
// SQL written out (sparse.ts's posting-list join, the dense kNN, fusion.ts's rrf). Its own module:
// it builds and loads its own collection and its own SQL baselines.

export async function hybridBench(run: VectorRun, { grpcCall, restCall, comparePaths }: GrpcTools): Promise<void> {
  const { db, schema, vurl, data, nIn, queryText, queryValues, lines, phase } = run;
  const seqAgent = run.agents.seq;
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
}
