import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Stack } from '../../tests/support/local-stack.ts';

/**
 * Runs Qdrant's own HTTP API test suite (../shared/conformance/qdrant) against a
 * vector-only stack of this checkout: a vector worker and an edge serving only the vector face, in
 * a NATS namespace and Postgres schema of their own, on a free port. Nothing else on the machine
 * is touched, so several checkouts can run it side by side.
 *
 *   node --import tsx scripts/src/vector-conformance.ts                      # the whole suite
 *   node --import tsx scripts/src/vector-conformance.ts openapi/test_query.py -x
 *   VECTOR_CONFORMANCE_KEEP=1 …  → starts the stack, prints its URL and waits (Ctrl-C stops it)
 *
 * Prints pytest's report and ends with the runner's line "N passed, N failed". The kit's path is
 * `GATEHOUSE_QDRANT_CONFORMANCE` (default ../shared/conformance/qdrant beside the checkout).
 */
const root = join(import.meta.dirname, '..', '..');
export const conformanceKit = () => process.env.GATEHOUSE_QDRANT_CONFORMANCE ?? join(root, '..', 'shared', 'conformance', 'qdrant');

/** Start a vector-only stack; returns it and the REST base URL. */
export async function startVectorStack(): Promise<{ stack: Stack; url: string; grpcPort?: number }> {
  const stack = new Stack();
  await stack.startVectorWorker();
  const edge = await stack.startEdge({ EDGE_FACES: 'vector' });
  return { stack, url: edge.vectorUrl };
}

/** Run the kit's runner against `url`; resolves with its whole output and exit code. */
export function runConformance(url: string, args: string[], echo = true): Promise<{ code: number; output: string }> {
  const run = join(conformanceKit(), 'run');
  if (!existsSync(run)) {
    throw new Error(`Qdrant conformance kit not found at ${run}: set GATEHOUSE_QDRANT_CONFORMANCE to the folder holding its 'run'`);
  }
  return new Promise((resolve, reject) => {
    const child = spawn(run, args, { env: { ...process.env, QDRANT_HOST: url }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const take = (d: Buffer) => {
      output += d.toString();
      if (echo) process.stdout.write(d);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code: code ?? -1, output }));
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { stack, url } = await startVectorStack();
  const stop = async (code: number) => {
    await stack.close();
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(130));
  process.on('SIGTERM', () => void stop(143));
  if (process.env.VECTOR_CONFORMANCE_KEEP) {
    process.stdout.write(`vector face at ${url} (namespace ${stack.ns}); Ctrl-C stops it\n`);
  } else {
    const { code } = await runConformance(url, process.argv.slice(2));
    await stop(code);
  }
}
