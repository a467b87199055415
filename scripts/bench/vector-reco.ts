import type postgres from 'postgres';
import { pp, waitQuiet } from './measure.ts';
import type { VectorRun } from './vector-context.ts';
import { NQ, SEED, SEQ_MS, TOP, agent, http, log, mean, rng } from './vector-data.ts';

// Section 5 of the vector benchmark, recommend and discover by point ids: a phase of its own
// because its baseline is different SQL (an exact scan with Qdrant's score written out), not the
// kNN statement the dense phases share.

export async function recoBench(run: VectorRun): Promise<void> {
  const { db, table, nIn, vurl, phase } = run;
  const row = (...c: string[]) => run.rows.push(c);
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
  for (const k of recoKinds) {
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
}
