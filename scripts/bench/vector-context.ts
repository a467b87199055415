import type { Agent } from 'node:http';
import type postgres from 'postgres';
import type { Edge } from '../../tests/support/local-stack.ts';
import type { CollectionMeta, tableOf } from '../../services/vector-worker/src/store/collections/catalog.ts';
import type { Data } from './vector-data.ts';

// What vector.ts hands each later phase module (vector-ingest.ts, vector-reco.ts, vector-grpc.ts):
// one object instead of a dozen parameters, so a phase reads the run's stack, data, paths and
// result rows the same way and the main file keeps only the order of phases and the report.

/** `exact`: params.exact (search.ts skips the index: a full ordered scan of the filtered rows); sequential only. */
export type Mode = { name: string; filtered: boolean; ef?: number; exact?: boolean };
export type Timed = { ms: number; ids: number[] };
export type Table = ReturnType<typeof tableOf>;
/** CPU ms of every process a query touches (and the machine's ticks), as vector.ts's cpuSnap reads them. */
export type Cpu = {
  client: number;
  edge: number;
  worker: number;
  nats: number;
  pgStack: number;
  pgDirect: number;
  edgeB: number;
  workerB: number;
  pgBefore: number;
  busy: number;
  total: number;
};

export type VectorRun = {
  edge: Edge;
  db: postgres.Sql;
  schema: string;
  /** The edge's REST base URL (:6333 face). */
  vurl: string;
  data: Data;
  /** Points the stack stored (N unless the upsert hit its time limit). */
  nIn: number;
  meta: CollectionMeta;
  table: Table;
  queryText: string[];
  queryValues: number[][];
  modes: Mode[];
  agents: { seq: Agent; conc: Agent };
  stackQuery: (ag: Agent, m: Mode, q: number, url?: string) => Promise<Timed>;
  directQuery: (tbl: Table, m: Mode, q: number) => Promise<Timed>;
  cpu: { snap: () => Cpu; delta: (a: Cpu, b: Cpu) => Cpu; cores: (c: Cpu) => string };
  /** The main table's rows, the gRPC table's rows (header included) and the free lines under them. */
  rows: string[][];
  grpcTable: string[][];
  lines: string[];
  phase: (name: string) => void;
};
