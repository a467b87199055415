import { availableParallelism } from 'node:os';
import { normalize } from '../../services/vector-worker/src/store/vectors/vectors.ts';
import { type machineTicks, waitQuiet } from './measure.ts';
import type { VectorRun } from './vector-context.ts';
import { BATCH, INGEST_CONC, PREFIX, PREFIX_MS, STATEMENT_MS, log, sec, values } from './vector-data.ts';

// The ingestion baselines of the vector benchmark (section 2a/2b of vector.ts's header): the same
// points inserted straight into Postgres, like-for-like and as a bulk load, beside the stack's own
// upsert that vector.ts has just timed. Apart because it is a self-contained phase of ~140 lines
// that only adds rows; BENCH_VECTOR_GRPC_ONLY=1 skips it.

type CpuAt = { edge: number; worker: number; nats: number; m: ReturnType<typeof machineTicks> };

/** The stack's upsert as vector.ts measured it, and what the baselines need of the run. */
export type IngestRun = Pick<VectorRun, 'db' | 'schema' | 'meta' | 'table' | 'data' | 'nIn' | 'rows' | 'lines' | 'phase'> & {
  notices: string[];
  settings: { mwm: string; pmw: string } | undefined;
  ingestMs: number;
  prefixBatches: number;
  stackPrefixMs: number;
  bodyBytes: number;
  cpuIngest0: CpuAt;
  cpuIngest1: CpuAt;
};

export async function ingestBaselines(run: IngestRun): Promise<void> {
  const { db, schema, meta, table, data, nIn, notices, settings, ingestMs, prefixBatches, stackPrefixMs, bodyBytes, cpuIngest0, cpuIngest1, lines, phase } = run;
  const row = (...c: string[]) => run.rows.push(c);
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
