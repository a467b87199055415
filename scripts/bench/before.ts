import { freePort, spawnService, type Proc } from '../../tests/support/local-stack.ts';

/**
 * One service of another checkout (`dir`, e.g. a worktree of main) for a benchmark's before arm
 * (`BENCH_…_BEFORE`): started as every service of the stack is (local-stack.ts spawnService: a CPU
 * profile in BENCH_CPU_PROF_DIR/<name>, BENCH_NODE_ARGS), from `dir`, with exactly `env` (plus PATH
 * and HOME; LOG_LEVEL info unless `env` says otherwise). The process goes into `procs`, which the
 * caller stops.
 */
export function startFrom(dir: string, name: string, entry: string, env: Record<string, string | undefined>, procs: Proc[]): Proc {
  const p = spawnService(name, entry, env, [], dir);
  procs.push(p);
  return p;
}

const PORT_VARS = { speech: 'SPEECH_PORT', llm: 'PROXY_PORT', vector: 'VECTOR_PORT', chat: 'CHAT_PORT' } as const;

/**
 * An edge of another checkout serving `face` on a free loopback port. Every other listener it opens
 * (the other faces, Qdrant's gRPC) gets a free port of its own, so it never collides with the stack.
 */
export async function startEdgeFrom(
  dir: string,
  name: string,
  face: keyof typeof PORT_VARS,
  env: Record<string, string | undefined>,
  procs: Proc[],
): Promise<{ edge: Proc; url: string }> {
  const ports: Record<string, string> = { EDGE_HOST: '127.0.0.1' };
  for (const v of [...Object.values(PORT_VARS), 'VECTOR_GRPC_PORT']) ports[v] = String(await freePort());
  const edge = startFrom(dir, name, 'services/edge/src/main.ts', { ...ports, ...env }, procs);
  return { edge, url: `http://127.0.0.1:${ports[PORT_VARS[face]]}` };
}

/**
 * Wait until every worker has logged `serving` and the edge's `health` path answers 200; a process
 * that exits, or three minutes without that, throws with their logs.
 */
export async function untilServing(workers: [Proc, string][], edge: Proc, health: string): Promise<void> {
  for (const deadline = performance.now() + 180_000; ; ) {
    if (workers.every(([w, serving]) => w.log().includes(serving)) && (await fetch(health).then((r) => r.status, () => 0)) === 200) return;
    if (performance.now() > deadline || !edge.running || workers.some(([w]) => !w.running)) {
      throw new Error(`the before stack did not start:\n${[...workers.map(([w]) => w), edge].map((p) => `${p.name}: ${p.log().slice(-2000)}`).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
