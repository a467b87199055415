import { errorKind, keepAlive, send, type HttpTarget } from './load.ts';
import { FACES, type Face, MAX_IN_FLIGHT } from './soak-settings.ts';

// The soak's load on all four faces at once: closed loop (warm-up, saturation) and open loop at a
// fixed rate (the soak itself), each answer checked by its target and every failure counted by kind.

export interface FaceStats {
  sent: number;
  ok: number;
  errors: Record<string, number>;
  firstErrors: string[];
  /** Latencies (ms) by minute of the soak. */
  byMinute: number[][];
  inFlight: number;
  maxInFlight: number;
}
export const newStats = (): FaceStats => ({ sent: 0, ok: 0, errors: {}, firstErrors: [], byMinute: [], inFlight: 0, maxInFlight: 0 });
export const fail = (s: FaceStats, kind: string, detail: string) => {
  s.errors[kind] = (s.errors[kind] ?? 0) + 1;
  if (s.firstErrors.length < 5) s.firstErrors.push(`${kind}: ${detail.slice(0, 300)}`);
};

/** Closed loop on every face at once (saturation beside the others); errors are counted, not thrown. */
export async function closedAll(targets: Record<Face, HttpTarget>, conc: Record<Face, number>, seconds: number, offset: Record<Face, number>): Promise<Record<Face, { n: number; rps: number; stats: FaceStats }>> {
  const out = {} as Record<Face, { n: number; rps: number; stats: FaceStats }>;
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    FACES.map(async (f) => {
      const stats = newStats();
      const ag = keepAlive(conc[f]);
      let i = offset[f];
      await Promise.all(
        Array.from({ length: conc[f] }, async () => {
          for (let k = 0; k < 1_000_000 && performance.now() < deadline; k++) {
            stats.sent++;
            try {
              await send(targets[f], i++, ag);
              stats.ok++;
            } catch (err) {
              fail(stats, errorKind(err), (err as Error).message);
            }
          }
        }),
      );
      ag.destroy();
      offset[f] = i;
      out[f] = { n: stats.ok, rps: (stats.ok / (performance.now() - t0)) * 1000, stats };
    }),
  );
  return out;
}

/**
 * Open loop: request k of a face is due at k / rate seconds; a timer sends whatever is due (so a
 * slow answer never delays the next request), at most MAX_IN_FLIGHT per face at once.
 */
export async function openAll(targets: Record<Face, HttpTarget>, rates: Record<Face, number>, ms: number, offset: Record<Face, number>, stats: Record<Face, FaceStats>): Promise<void> {
  const agents = Object.fromEntries(FACES.map((f) => [f, keepAlive(MAX_IN_FLIGHT)])) as Record<Face, ReturnType<typeof keepAlive>>;
  const t0 = performance.now();
  const pending = new Set<Promise<void>>();
  const issued = Object.fromEntries(FACES.map((f) => [f, 0])) as Record<Face, number>;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      const elapsed = Math.min(now - t0, ms);
      for (const f of FACES) {
        const s = stats[f];
        const due = Math.floor((elapsed / 1000) * rates[f]);
        for (; issued[f] < due; issued[f]++) {
          s.sent++;
          if (s.inFlight >= MAX_IN_FLIGHT) {
            fail(s, 'client cap', `${MAX_IN_FLIGHT} in flight at ${((now - t0) / 1000).toFixed(1)} s`);
            continue;
          }
          s.inFlight++;
          s.maxInFlight = Math.max(s.maxInFlight, s.inFlight);
          const minute = Math.floor((now - t0) / 60_000);
          const p = send(targets[f], offset[f]++, agents[f]).then(
            (lat) => {
              s.ok++;
              (s.byMinute[minute] ??= []).push(lat);
            },
            (err) => fail(s, errorKind(err), (err as Error).message),
          );
          const q = p.finally(() => {
            s.inFlight--;
            pending.delete(q);
          });
          pending.add(q);
        }
      }
      if (now - t0 >= ms) return resolve();
      setTimeout(tick, 5);
    };
    tick();
  });
  // What is still in flight ends by load.ts' request limit (10 s).
  await Promise.allSettled([...pending]);
  for (const a of Object.values(agents)) a.destroy();
}
