import { Agent, request } from 'node:http';

/**
 * Closed-loop HTTP load for the benchmarks: `conc` requests in flight on keep-alive sockets, spread
 * over one or more listeners (edges), every answer checked. Bounded by a count and a time limit.
 */

export interface HttpTarget {
  host: string;
  port: number;
  method: 'GET' | 'POST';
  /** Path, headers and body of the i-th request (a benchmark varies them: queries, users; a mix may vary the method). */
  request: (i: number) => { path: string; headers: Record<string, string>; body?: string; method?: 'GET' | 'POST' | 'PUT' };
  /** Throws unless the whole answer (status 200) is the expected one for the i-th request. */
  check: (body: string, i: number) => void;
}

const REQUEST_MS = 10_000;

/** A failed request, sorted by kind (`status 503`, `wrong answer`, `timeout`, `socket ECONNRESET`) for a run's error table. */
export class LoadError extends Error {
  constructor(
    readonly kind: string,
    message: string,
  ) {
    super(message);
  }
}
/** The kind of any error a request ended with. */
export const errorKind = (err: unknown): string => (err instanceof LoadError ? err.kind : `socket ${(err as NodeJS.ErrnoException).code ?? (err as Error).message?.slice(0, 60)}`);

export const keepAlive = (maxSockets: number) => new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });

/** One request; resolves with its latency (ms) once the whole body has arrived and passed the check. */
export function send(t: HttpTarget, i: number, agent: Agent): Promise<number> {
  const r = t.request(i);
  const method = r.method ?? t.method;
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const parts: Buffer[] = [];
    const headers = r.body === undefined ? r.headers : { ...r.headers, 'content-length': String(Buffer.byteLength(r.body)) };
    const req = request({ host: t.host, port: t.port, path: r.path, method, agent, headers }, (res) => {
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        const ms = performance.now() - t0;
        const body = Buffer.concat(parts).toString('utf8');
        if (res.statusCode !== 200) return reject(new LoadError(`status ${res.statusCode}`, `${method} :${t.port}${r.path} answered ${res.statusCode}: ${body.slice(0, 300)}`));
        try {
          t.check(body, i);
        } catch (err) {
          return reject(new LoadError('wrong answer', `${method} :${t.port}${r.path}: ${(err as Error).message}: ${body.slice(0, 300)}`));
        }
        resolve(ms);
      });
      res.on('error', reject);
    });
    req.setTimeout(REQUEST_MS, () => req.destroy(new LoadError('timeout', `${r.path}: no answer within ${REQUEST_MS} ms`)));
    req.on('error', reject);
    req.end(r.body);
  });
}

/**
 * `conc` requests in flight until `n` are done or `limitMs` has passed. Loop k sends to
 * `targets[k % targets.length]` (a client spreading its connections over the edges, as a load
 * balancer would), each listener on its own keep-alive agent. Latencies (ms) and elapsed time.
 */
export async function closedLoop(targets: HttpTarget[], n: number, conc: number, limitMs: number): Promise<{ lat: number[]; elapsed: number; stoppedByTime: boolean }> {
  const agents = targets.map(() => keepAlive(Math.ceil(conc / targets.length)));
  const lat: number[] = [];
  let issued = 0;
  const t0 = performance.now();
  const deadline = t0 + limitMs;
  try {
    await Promise.all(
      Array.from({ length: conc }, async (_, k) => {
        const t = targets[k % targets.length]!;
        const ag = agents[k % targets.length]!;
        while (issued < n && performance.now() < deadline) lat.push(await send(t, issued++, ag));
      }),
    );
  } finally {
    for (const a of agents) a.destroy();
  }
  return { lat, elapsed: performance.now() - t0, stoppedByTime: lat.length < n };
}

/** A JSON call during a benchmark's set-up (gates, users, collections) on loopback; throws unless 200. */
export async function setupCall(port: number, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<unknown> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${method} ${path} answered ${r.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}
