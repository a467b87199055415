import postgres from 'postgres';
import { stageRows } from '../services/vector-worker/src/store/staging.ts';
const sql = postgres('postgres://postgres@127.0.0.1:5432/gatehouse_test', { onnotice: () => {}, max: 1 });
const d = { name: '', column: 'v0', size: 384, distance: 'Dot', multi: false, datatype: 'float32' } as const;
for (let k = 0; k < 5; k++) {
  const t0 = performance.now(); const marks: number[] = [];
  await sql.begin(async (tx) => {
    marks.push(performance.now() - t0);
    const st = await stageRows(tx, [d], [{ pid: '1', uuid: false, payload: null, sparse: null, vectors: [Array.from({ length: 384 }, () => 0.5)] }]);
    marks.push(performance.now() - t0);
    await tx`select count(*) from ${st.table} as x`;
    marks.push(performance.now() - t0);
  });
  marks.push(performance.now() - t0);
  console.log(marks.map((m) => m.toFixed(1)).join(' '));
}
await sql.end();
