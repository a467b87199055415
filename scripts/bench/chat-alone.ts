import { randomBytes } from 'node:crypto';
import { Stack } from '../../tests/support/local-stack.ts';

/** What a benchmark run alone gets: the chat face's URL and its first account (the admin). */
export interface ChatAlone {
  chatUrl: string;
  admin: { name: string; email: string; password: string; token: string };
}

/**
 * Run a chat-face benchmark on a stack of its own (one chat worker without ingest, one chat-only
 * edge with `edgeEnv`), the first sign-up as admin; its lines printed; stopped after 5 minutes.
 */
export async function runChatBenchAlone(edgeEnv: Record<string, string>, bench: (c: ChatAlone) => Promise<{ lines: string[] }>): Promise<void> {
  const stack = new Stack();
  const watchdog = setTimeout(() => {
    console.error('[bench] watchdog: the run took longer than 5 minutes; stopping');
    process.exit(2);
  }, 5 * 60_000);
  watchdog.unref();
  try {
    await stack.startChatWorker({}, { ingest: false });
    const edge = await stack.startEdge({ EDGE_FACES: 'chat', ...edgeEnv });
    const admin = { name: 'Bench', email: `bench-${randomBytes(4).toString('hex')}@example.com`, password: randomBytes(12).toString('base64url') };
    const r = await fetch(`${edge.chatUrl}/api/v1/auths/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(admin) });
    const { token } = (await r.json()) as { token: string };
    console.log((await bench({ chatUrl: edge.chatUrl, admin: { ...admin, token } })).lines.join('\n'));
  } finally {
    await stack.close();
  }
}
