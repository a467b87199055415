import postgres from 'postgres';
import { finished } from 'node:stream/promises';
import { CopyBinary } from '../services/vector-worker/src/store/vector-wire.ts';
const sql = postgres('postgres://postgres@127.0.0.1:5432/gatehouse_test', { onnotice: () => {}, max: 1 });
for (let k = 0; k < 3; k++) {
  const r = await sql.begin(async (tx) => {
    const c = new CopyBinary(); c.row([{ text: 'a' + k }, { vector: [1, 2, 3], half: false }]);
    const stream = await tx.unsafe(`create temp table if not exists gh_dbg (t text, v vector) on commit delete rows; copy pg_temp.gh_dbg from stdin (format binary)`).writable();
    stream.end(c.end());
    await finished(stream);
    return tx`select t, v::text from pg_temp.gh_dbg`;
  });
  console.log(JSON.stringify(r));
}
// error inside copy: bad vector dim 0
try {
  await sql.begin(async (tx) => {
    const c = new CopyBinary(); c.row([{ text: 'x' }, { vector: [], half: false }]);
    const stream = await tx.unsafe(`create temp table if not exists gh_dbg (t text, v vector) on commit delete rows; copy pg_temp.gh_dbg from stdin (format binary)`).writable();
    stream.end(c.end());
    await finished(stream);
  });
} catch (e) { console.log('error:', (e as Error).message, (e as { code?: string }).code); }
console.log(JSON.stringify(await sql`select 1 as ok`));
await sql.end();
