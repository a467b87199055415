// The soak benchmark's settings (env) and the few constants every part of it shares (soak.ts, its
// load, sampling, targets and report modules), read once here so the modules agree.

export const FACES = ['speech', 'llm', 'vector', 'chat'] as const;
export type Face = (typeof FACES)[number];
export const MINUTES = Number(process.env.BENCH_SOAK_MINUTES ?? 10);
export const SAMPLE_S = Number(process.env.BENCH_SOAK_SAMPLE_SECONDS ?? 5);
export const SAT_CONC = Number(process.env.BENCH_SOAK_SAT_CONCURRENCY ?? 32);
export const SAT_S = Number(process.env.BENCH_SOAK_SAT_SECONDS ?? 15);
export const MAX_IN_FLIGHT = Number(process.env.BENCH_SOAK_MAX_IN_FLIGHT ?? 256);
export const MAX_SLOPE = Number(process.env.BENCH_SOAK_MAX_SLOPE_MB ?? 1);
export const MAX_FD_GROWTH = Number(process.env.BENCH_SOAK_MAX_FD_GROWTH ?? 5);
export const POINTS = Number(process.env.BENCH_SOAK_POINTS ?? 1000);
export const USERS = Number(process.env.BENCH_SOAK_USERS ?? 8);
export const FIXED_RATES = Object.fromEntries(FACES.map((f) => [f, Number(process.env[`BENCH_SOAK_RATE_${f.toUpperCase()}`] ?? NaN)])) as Record<Face, number>;
export const FOLDERS = 20;
export const DIM = 384;
export const UPSERT_IDS = 500;
export const WARM_S = 5;
export const MAX_HEAP_GROWTH = Number(process.env.BENCH_SOAK_MAX_HEAP_GROWTH_MB ?? 2);
export const FULL_GC = process.env.BENCH_SOAK_FULL_GC !== '0';
export const WATCHDOG_MS = (MINUTES * 60 + 20 * 60) * 1000;
if (!(MINUTES > 0) || !(SAMPLE_S > 0)) throw new Error('BENCH_SOAK_MINUTES and BENCH_SOAK_SAMPLE_SECONDS must be positive');

export const say = (s: string) => console.error(`[soak] ${s}`);
export const PROMPT = 'Say hello to the soak, briefly.';
export const EXPECTED = `echo: ${PROMPT}`;
export const MB = 1024 * 1024;
