import type { Agent } from 'node:http';
import * as grpc from '@grpc/grpc-js';
// The gRPC client loads the same Qdrant .proto files the edge serves (grpc-js, as the server).
import { qdrantService } from '../../services/edge/src/faces/vector/grpc/qdrant-proto.ts';
import { ms, pct, pp, waitQuiet } from './measure.ts';
import type { Mode, Timed, VectorRun } from './vector-context.ts';
import { CONC, FILTER_CLUSTER, GRPC_QUERIES, NQ, NQ_FILTERED, REQUEST_MS, ROUND_MS, SEQ_MS, TOP, http, log, sec } from './vector-data.ts';
import { hybridBench } from './vector-grpc-hybrid.ts';

// Sections 6 and 7 of the vector benchmark: the same queries through gRPC (:6334), REST (:6333)
// and direct SQL. Apart from vector.ts because the three-path comparison (comparePaths) and its
// gRPC client are shared by the dense queries here and the sparse / hybrid ones in
// vector-grpc-hybrid.ts, and by nothing else.

export type Paths = { grpc: (q: number) => Promise<Timed>; rest: (ag: Agent, q: number) => Promise<Timed>; sql: (q: number) => Promise<Timed> };
/** What the sparse / hybrid section borrows from this one. */
export type GrpcTools = {
  grpcCall: (req: unknown) => Promise<Timed>;
  restCall: (ag: Agent, collection: string, body: unknown) => Promise<Timed>;
  comparePaths: (label: string, count: number, paths: Paths) => Promise<void>;
};

export async function grpcBench(run: VectorRun): Promise<void> {
  const { edge, vurl, table, modes, queryValues, stackQuery, directQuery, lines, grpcTable, phase } = run;
  const { seq: seqAgent, conc: concAgent } = run.agents;
  const { snap: cpuSnap, delta: cpuDelta, cores } = run.cpu;
  const Points = grpc.makeGenericClientConstructor(qdrantService('qdrant.Points'), 'Points');
  const grpcClient = new Points(`127.0.0.1:${edge.vectorGrpcPort}`, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': 64 * 1024 * 1024 }) as unknown as grpc.Client & {
    Query: (req: unknown, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: { result?: { id: { num?: number } }[] }) => void) => void;
  };
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
  await hybridBench(run, { grpcCall, restCall, comparePaths });
  grpcClient.close();
  const grpcHeader = ['measurement', 'gRPC (:6334, Points/Query)', 'REST (:6333, …/points/query)', 'direct SQL', 'notes'];
  grpcTable.push(grpcHeader, grpcHeader.map(() => '---'), ...grpcRows);
  lines.push(...grpcCpu);
}
