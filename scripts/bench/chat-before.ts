import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, type Proc, type Stack } from '../src/local-stack.ts';
import { startFrom } from './before.ts';

/**
 * `BENCH_CHAT_BEFORE` / `BENCH_KNOWLEDGE_BEFORE`: a chat worker and a chat-only edge started from
 * another checkout (e.g. a worktree of main), on `stack`'s database and the schema and session
 * secret given in `env` (so the same users and tokens work), in a namespace of their own: a before
 * arm measured in the same run as the stack of this checkout. With BENCH_CPU_PROF_DIR they write
 * CPU profiles too (`chat-worker-before`, `edge-before`). Started processes go into `procs`, which
 * the caller stops.
 */
export async function startChatBefore(
  dir: string,
  stack: Stack,
  procs: Proc[],
  env: { CHAT_SCHEMA: string } & Record<string, string>,
): Promise<{ url: string; edge: Proc; worker: Proc }> {
  const ns = `${stack.ns}b`;
  const start = (name: string, entry: string, extra: Record<string, string | undefined>) =>
    startFrom(dir, name, entry, { NATS_URL: stack.natsUrl, GATEHOUSE_NS: ns, ...env, ...extra }, procs);
  const worker = start('chat-worker-before', 'services/chat-worker/src/main.ts', { DATABASE_URL: stack.databaseUrl, UPLOAD_DIR: join(tmpdir(), `gatehouse-${stack.ns}-uploads`) });
  const port = await freePort();
  const edge = start('edge-before', 'services/edge/src/main.ts', {
    EDGE_FACES: 'chat',
    EDGE_HOST: '127.0.0.1',
    CHAT_PORT: String(port),
    SPEECH_PORT: String(await freePort()),
    PROXY_PORT: String(await freePort()),
    VECTOR_PORT: String(await freePort()),
    VECTOR_GRPC_PORT: String(await freePort()),
    REDIS_URL: stack.redisUrl,
  });
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = performance.now() + 180_000; ; ) {
    if (worker.log().includes('chat worker serving') && (await fetch(`${url}/health`).then((r) => r.status, () => 0)) === 200) break;
    if (!worker.running || !edge.running || performance.now() > deadline) throw new Error(`the before stack did not start:\n${worker.log().slice(-2000)}\n${edge.log().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return { url, edge, worker };
}
