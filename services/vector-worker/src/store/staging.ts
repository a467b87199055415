/**
 * Point rows for a write, handed to Postgres by `COPY … FROM STDIN (FORMAT binary)` into a
 * temporary table of the session, which the write's next statement reads (points.ts): dense
 * vectors travel as float32 bits in pgvector's binary form (vector-wire.ts), never as decimal text.
 *
 * One staging table per column shape (`vector` for a dense vector, `text` — the exact hexadecimal
 * literal — for a multivector), created once per connection (`if not exists`, so a later write
 * costs one catalog lookup) with `on commit delete rows`: its rows live until the write's
 * transaction ends, and a transaction that rolls back leaves nothing either.
 */
import { createHash } from 'node:crypto';
import { finished } from 'node:stream/promises';
import type postgres from 'postgres';
import type { DenseVector, Fragment } from './catalog.ts';
import { CopyBinary, vectorLiteral, type CopyField } from './vector-wire.ts';

export type StagedRow = {
  /** The point id as its `pid` text, and whether it is a UUID (else a number). */
  pid: string;
  uuid: boolean;
  /** JSON texts, or null. */
  payload: string | null;
  sparse: string | null;
  /** Per column of `cols`, in that order: the stored vector or multivector, or null. */
  vectors: (number[] | number[][] | null)[];
};

/** Rows a transaction has staged so far, per staging table (the table is empty when it starts). */
const staged = new WeakMap<object, Map<string, number>>();

/** The staging table for columns `cols`: `pg_temp.gh_stage_<shape>`. */
function stagingName(cols: readonly DenseVector[]): string {
  const shape = cols.map((d) => (d.multi ? 't' : 'v')).join('');
  return `gh_stage_${shape.length <= 40 ? shape : createHash('sha1').update(shape).digest('hex').slice(0, 20)}`;
}

/**
 * COPY `rows` into the session's staging table for `cols` (rows keep their order in `ord`);
 * returns them as a subquery, whose columns are `ord, id_num, id_uuid, payload, sparse, c0 … c<n-1>`.
 */
export async function stageRows(tx: postgres.TransactionSql, cols: readonly DenseVector[], rows: readonly StagedRow[]): Promise<{ table: Fragment; column: (i: number) => Fragment }> {
  const name = stagingName(cols);
  let used = staged.get(tx);
  if (!used) staged.set(tx, (used = new Map()));
  const start = used.get(name);
  if (start === undefined) {
    const defs = cols.map((d, i) => `, c${i} ${d.multi ? 'text' : 'vector'}`).join('');
    await tx.unsafe(`create temp table if not exists ${name} (ord int4, id_num text, id_uuid text, payload jsonb, sparse jsonb${defs}) on commit delete rows`);
  }
  // A second write of the same transaction (a batch of operations) stages after the first's rows.
  const first = start ?? 0;
  used.set(name, first + rows.length);
  const copy = new CopyBinary();
  const ord = Buffer.allocUnsafe(4);
  rows.forEach((r, i) => {
    ord.writeInt32BE(first + i, 0);
    const fields: CopyField[] = [
      { bytes: ord },
      r.uuid ? null : { text: r.pid },
      r.uuid ? { text: r.pid } : null,
      r.payload === null ? null : { jsonb: r.payload },
      r.sparse === null ? null : { jsonb: r.sparse },
    ];
    cols.forEach((d, k) => {
      const v = r.vectors[k];
      const half = d.datatype === 'float16';
      if (v == null) fields.push(null);
      else if (d.multi) fields.push({ text: vectorLiteral(v, half) });
      else fields.push({ vector: v as number[], half });
    });
    copy.row(fields);
  });
  const stream = await tx.unsafe(`copy pg_temp.${name} from stdin (format binary)`).writable();
  stream.end(copy.end());
  await finished(stream);
  return {
    table: tx`(select * from pg_temp.${tx(name)} where ord >= ${first} and ord < ${first + rows.length})`,
    column: (i) => tx`${tx(`c${i}`)}`,
  };
}
