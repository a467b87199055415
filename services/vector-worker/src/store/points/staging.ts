/**
 * Point rows for a write (points.ts), handed to Postgres without decimal text for vectors. A
 * batch goes by `COPY … FROM STDIN (FORMAT binary)` into a temporary table of the session, which
 * the write's next statement reads: dense vectors as float32 bits in pgvector's binary form
 * (vector-wire.ts). A few points go as one JSON parameter with exact hexadecimal vector literals
 * (no extra statement).
 *
 * One staging table per column shape (`vector` for a dense vector, `text` — the exact hexadecimal
 * literal — for a multivector), created once per connection (`if not exists`, in the same simple
 * query as the COPY) with `on commit delete rows`: its rows live until the write's transaction
 * ends, and a transaction that rolls back leaves nothing either.
 */
import { createHash } from 'node:crypto';
import { finished } from 'node:stream/promises';
import type postgres from 'postgres';
import type { DenseVector, Fragment } from '../collections/catalog.ts';
import { CopyBinary, vectorLiteral, type CopyField } from '../vectors/vector-wire.ts';

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
 * Below this many vector values a write sends its rows as one JSON parameter instead (vectors as
 * exact hexadecimal literals, vector-wire.ts): one statement fewer, and for a few points the
 * text is cheap — the binary COPY pays off on batches.
 */
export const COPY_MIN_VALUES = 4096;

/**
 * The rows of a write as a relation `x` for its next statement, with columns `s_ord, s_num,
 * s_uuid, s_payload, s_sparse, s_c0 … s_c<n-1>` (`s_c<i>` holds column `cols[i]`'s vector, to be
 * cast to its type; rows keep their order in `s_ord`; the prefix keeps them apart from the point
 * table's columns, which a filter in the same statement names unqualified): a batch by binary
 * COPY into the session's staging table, a few points as `jsonb_to_recordset` of one parameter.
 */
export async function stageRows(
  tx: postgres.TransactionSql,
  cols: readonly DenseVector[],
  rows: readonly StagedRow[],
  via?: 'copy' | 'json', // by size unless given (tests)
): Promise<{ table: Fragment; column: (i: number) => Fragment }> {
  const column = (i: number) => tx`${tx(`s_c${i}`)}`;
  let values = 0;
  for (const r of rows) for (const v of r.vectors) if (v) values += Array.isArray(v[0]) ? (v as number[][]).reduce((n, x) => n + x.length, 0) : v.length;
  if ((via ?? (values < COPY_MIN_VALUES ? 'json' : 'copy')) === 'json') return { table: asJson(tx, cols, rows), column };

  const name = stagingName(cols);
  let used = staged.get(tx);
  if (!used) staged.set(tx, (used = new Map()));
  const start = used.get(name);
  // The table is created on the connection's first use (one simple query with the COPY).
  const create =
    start === undefined
      ? `create temp table if not exists ${name} (s_ord int4, s_num text, s_uuid text, s_payload jsonb, s_sparse jsonb${cols.map((d, i) => `, s_c${i} ${d.multi ? 'text' : 'vector'}`).join('')}) on commit delete rows; `
      : '';
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
  const stream = await tx.unsafe(`${create}copy pg_temp.${name} from stdin (format binary)`).writable();
  stream.end(copy.end());
  await finished(stream);
  return {
    table: tx`(select * from pg_temp.${tx(name)} where s_ord >= ${first} and s_ord < ${first + rows.length}) as x`,
    column,
  };
}

/** The rows as `jsonb_to_recordset` of one JSON text (payload and sparse are JSON texts already). */
function asJson(tx: postgres.TransactionSql, cols: readonly DenseVector[], rows: readonly StagedRow[]): Fragment {
  const parts = rows.map((r, i) => {
    let o = `{"s_ord":${i},"${r.uuid ? 's_uuid' : 's_num'}":${JSON.stringify(r.pid)},"s_payload":${r.payload ?? 'null'},"s_sparse":${r.sparse ?? 'null'}`;
    cols.forEach((d, k) => {
      const v = r.vectors[k];
      if (v != null) o += `,"s_c${k}":${JSON.stringify(vectorLiteral(v, d.datatype === 'float16'))}`;
    });
    return `${o}}`;
  });
  const defs = cols.map((_, i) => `, s_c${i} text`).join('');
  return tx`jsonb_to_recordset(${`[${parts.join(',')}]`}::text::jsonb) as x(s_ord int4, s_num text, s_uuid text, s_payload jsonb, s_sparse jsonb${tx.unsafe(defs)})`;
}
