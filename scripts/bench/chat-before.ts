import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Proc, Stack } from '../../tests/support/local-stack.ts';
import { startEdgeFrom, startFrom, untilServing } from './before.ts';

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
  const base = { NATS_URL: stack.natsUrl, GATEHOUSE_NS: `${stack.ns}b`, ...env };
  const worker = startFrom(dir, 'chat-worker-before', 'services/chat-worker/src/main.ts', { ...base, DATABASE_URL: stack.databaseUrl, UPLOAD_DIR: join(tmpdir(), `gatehouse-${stack.ns}-uploads`) }, procs);
  const { edge, url } = await startEdgeFrom(dir, 'edge-before', 'chat', { ...base, EDGE_FACES: 'chat', REDIS_URL: stack.redisUrl }, procs);
  await untilServing([[worker, 'chat worker serving']], edge, `${url}/health`);
  return { url, edge, worker };
}
