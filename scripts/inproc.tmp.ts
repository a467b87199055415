// In-process: VectorStore of a given checkout against the test database; upsert batches, single upserts, searches.
import postgres from 'postgres';
const root = process.argv[2]!;
const label = process.argv[3]!;
const { VectorStore } = await import(`${root}/services/vector-worker/src/store/vector-store.ts`);
const { EXACT_JSON_TYPES } = await import(`${root}/services/vector-worker/src/store/common.ts`);
const { migrateDatabase, PLATFORM_FOLDER, parseExactJson } = await import('@gatehouse/common');
const sql = postgres('postgres://postgres@127.0.0.1:5432/gatehouse_test', { onnotice: () => {}, max: 4, types: EXACT_JSON_TYPES });
const schema = `vb_${label}_${process.pid}`;
await migrateDatabase(sql, { folders: [PLATFORM_FOLDER, 'vector'], schemas: { vector: schema } });
const store = new VectorStore(sql, { schema });
const D = 384, N = Number(process.env.N ?? 4000), B = 500;
let s = 1; const rnd = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648) - 0.5;
const vec = () => Array.from({ length: D }, () => Number(rnd().toFixed(6)));
await store.createCollection('c', { vectors: { size: D, distance: 'Cosine' } });
const bodies = Array.from({ length: N / B }, (_, b) => JSON.stringify({ points: Array.from({ length: B }, (_, i) => ({ id: b * B + i, vector: vec(), payload: { cluster: i % 10, n: b * B + i } })) }));
const cpu0 = process.cpuUsage(); let t0 = performance.now();
for (const text of bodies) await store.upsertPoints('c', parseExactJson(text), { wait: true });
let ms = performance.now() - t0; let cpu = process.cpuUsage(cpu0);
const pct = (a: number[], p: number) => [...a].sort((x, y) => x - y)[Math.floor(a.length * p)]!.toFixed(2);
console.log(`${label} upsert ${N} pts in ${B}-batches: ${(N / ms * 1000).toFixed(0)} pts/s, JS CPU ${((cpu.user + cpu.system) / 1000 / N * 1000).toFixed(1)} µs/pt`);
const single: number[] = []; const c1 = process.cpuUsage();
for (let i = 0; i < 200; i++) { const text = JSON.stringify({ points: [{ id: 100000 + i, vector: vec(), payload: { n: i } }] }); const t = performance.now(); await store.upsertPoints('c', parseExactJson(text), { wait: true }); single.push(performance.now() - t); }
let c = process.cpuUsage(c1);
console.log(`${label} single-point upsert p50 ${pct(single, 0.5)} ms p90 ${pct(single, 0.9)} ms, JS CPU ${((c.user + c.system) / 200 / 1000).toFixed(3)} ms/op`);
const qs = Array.from({ length: 300 }, () => JSON.stringify({ query: vec(), limit: 10 }));
const lat: number[] = []; const c2 = process.cpuUsage();
for (const q of qs) { const t = performance.now(); await store.queryPoints('c', parseExactJson(q)); lat.push(performance.now() - t); }
c = process.cpuUsage(c2);
console.log(`${label} query p50 ${pct(lat, 0.5)} ms p90 ${pct(lat, 0.9)} ms, JS CPU ${((c.user + c.system) / 300 / 1000).toFixed(3)} ms/q`);
const lat2: number[] = []; const qs2 = qs.map((q) => q.replace('"limit":10', '"limit":10,"with_vector":true'));
for (const q of qs2) { const t = performance.now(); await store.queryPoints('c', parseExactJson(q)); lat2.push(performance.now() - t); }
console.log(`${label} query with_vector p50 ${pct(lat2, 0.5)} ms p90 ${pct(lat2, 0.9)} ms`);
await sql`drop schema ${sql(schema)} cascade`;
await sql.end();
