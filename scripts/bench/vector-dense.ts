import type { Agent } from 'node:http';
import { loadavg } from 'node:os';
import { loadCollection } from '../../services/vector-worker/src/store/collections/catalog.ts';
import { ms, pct, pp, waitQuiet } from './measure.ts';
import type { Cpu, Mode, Table, VectorRun } from './vector-context.ts';
import { CONC, DB_POOL, DIM, FILTER_CLUSTER, GRPC_ONLY, NQ, NQ_FILTERED, ROUND_MS, SEQ_MS, TOP, log, mean, recallOf } from './vector-data.ts';

// Section 3 of the vector benchmark, the dense queries: for each mode (unfiltered, filtered, a
// larger ef, exact) the stack beside the worker's SQL sent straight to Postgres — recall against
// the exact top-10, sequential (paired) and CONC in flight, CPU per query by process. The largest
// phase; vector.ts sets up the paths it compares (stackQuery, directQuery, cpuSnap) and calls it.

/** What only this phase needs beyond the run's context. */
export type DenseExtras = {
  gt: { all: Int32Array[]; filtered: Int32Array[] };
  /** The same query as a bus request straight to the worker (no HTTP, no edge). */
  busQuery: (m: Mode, q: number) => Promise<{ ms: number; ids: number[] }>;
  /** The bulk-loaded copy of the table (vector-ingest.ts), for recall on an index built at once. */
  bulkTbl: Table;
  /** BENCH_VECTOR_BEFORE's edge, the third path, and its agent. */
  beforeUrl: string | undefined;
  beforeAgent: Agent;
  /** directQuery's count of exact fallbacks (fewer than 10 from the index), reset per mode. */
  fallbacks: { n: number };
};

export async function denseBench(run: VectorRun, { gt, busQuery, bulkTbl, beforeUrl, beforeAgent, fallbacks }: DenseExtras): Promise<void> {
  const { db, schema, data, table, modes, stackQuery, directQuery, rows, lines, phase } = run;
  const { seq: seqAgent, conc: concAgent } = run.agents;
  const { snap: cpuSnap, delta: cpuDelta, cores } = run.cpu;
  const row = (...c: string[]) => rows.push(c);
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
    fallbacks.n = 0;
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
    const seqFallbacks = fallbacks.n;
    // Recall on the bulk-built index (same query, same settings), default ef and the mode's.
    const rb: number[] = [];
    fallbacks.n = 0;
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
}
