import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, Proc, spawnService, Stack, testDatabaseUrl, waitFor, type Edge } from '../../tests/support/local-stack.ts';

/**
 * The stacks the scale benchmark compares, each in a namespace (and schemas) of its own on the
 * shared NATS, Redis and Postgres:
 *   - `1+1`, `2+2`: N edges (LOG_LEVEL=warn, as the per-face benchmarks run them) and N workers of
 *     each measured face (proxy, vector, chat) through tests' Stack; the workers of a face share the
 *     face's NATS queue group (services/common/src/bus/worker.ts), so requests spread over them;
 *   - `start`: scripts/src/run-stack.ts itself, the runner `scripts/start` execs after its set-up:
 *     every service (speech, proxy, vector, chat, ingest, webhooks, edge) at the default log level,
 *     its logs pretty-printed through the runner. Only what a second stack on a shared machine must
 *     change differs from `scripts/start`: ports, namespace, database schemas, state directories.
 */

export interface Listener {
  speechPort: number;
  proxyPort: number;
  vectorPort: number;
  chatPort: number;
}

export interface Topology {
  mode: string;
  stack: Stack;
  listeners: Listener[];
  /** Every process of this stack by role: edge, proxy-worker, vector-worker, chat-worker, …, runner. */
  procs: { role: string; pid: number }[];
  /** What the stack's processes said (for errors). */
  log(): string;
  close(): Promise<void>;
}

/** Environment both kinds of stack get for the LLM proxy: the providers file and its key's variable. */
export interface LlmSetup {
  config: string;
  keyEnv: Record<string, string>;
}

/**
 * Start-up limit of a service. Stack's own helpers allow 20 s, which a worker on a 2-core machine
 * shared with other people's test suites sometimes needs more than (load average 20+).
 */
const START_MS = 120_000;

async function service(stack: Stack, name: string, entry: string, ready: string, env: Record<string, string | undefined>): Promise<Proc> {
  const w = spawnService(name, entry, env);
  stack.workers.push(w);
  await waitFor(() => w.log().includes(ready) || !w.running, START_MS, () => `${name} did not start:\n${w.log()}`);
  if (!w.running) throw new Error(`${name} exited:\n${w.log()}`);
  return w;
}

/** An edge on free ports (as Stack.startEdge), healthy within START_MS; Stack.close stops it. */
async function edge(stack: Stack, extra: Record<string, string>): Promise<Edge> {
  const [port, proxyPort, vectorPort, chatPort, vectorGrpcPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const proc = spawnService(
    'edge',
    'services/edge/src/main.ts',
    stack.env({
      EDGE_HOST: '127.0.0.1',
      SPEECH_PORT: String(port),
      PROXY_PORT: String(proxyPort),
      VECTOR_PORT: String(vectorPort),
      VECTOR_GRPC_PORT: String(vectorGrpcPort),
      CHAT_PORT: String(chatPort),
      REDIS_URL: process.env.REDIS_URL,
      WEBUI_SECRET_KEY_FILE: join(tmpdir(), `gatehouse-${stack.ns}-webui-secret-key`),
      ...extra,
    }),
  );
  const e: Edge = { proc, port, url: `http://127.0.0.1:${port}`, proxyPort, proxyUrl: `http://127.0.0.1:${proxyPort}`, vectorPort, vectorUrl: `http://127.0.0.1:${vectorPort}`, vectorGrpcPort, chatPort, chatUrl: `http://127.0.0.1:${chatPort}` };
  stack.edges.push(e);
  await waitFor(
    async () => {
      if (!proc.running) throw new Error(`edge exited:\n${proc.log()}`);
      return (await fetch(`${e.proxyUrl}/health`).catch(() => undefined))?.status === 200;
    },
    START_MS,
    () => `edge did not become healthy:\n${proc.log()}`,
  );
  return e;
}

export async function replicas(n: number, llm: LlmSetup): Promise<Topology> {
  const stack = new Stack();
  const edges: Edge[] = [];
  try {
    // As Stack's start helpers (migrations first), with a longer start-up limit; no ingest worker (not measured).
    const vectorEnv = stack.env({ DATABASE_URL: testDatabaseUrl(), VECTOR_SCHEMA: `vector_${stack.ns}` });
    const chatEnv = stack.chatEnv();
    await stack.migrate('vector', vectorEnv);
    await stack.migrate('chat', chatEnv);
    for (let i = 0; i < n; i++) {
      await service(stack, 'proxy-worker', 'services/proxy-worker/src/main.ts', 'proxy worker serving', stack.env({ LLMPROXY_CONFIG: llm.config, ...llm.keyEnv }));
      await service(stack, 'vector-worker', 'services/vector-worker/src/main.ts', 'vector worker serving', vectorEnv);
      await service(stack, 'chat-worker', 'services/chat-worker/src/main.ts', 'chat worker serving', chatEnv);
    }
    for (let i = 0; i < n; i++) edges.push(await edge(stack, { LLMPROXY_CONFIG: llm.config, LOG_LEVEL: 'warn' }));
  } catch (err) {
    await stack.close();
    throw err;
  }
  return {
    mode: `${n}+${n}`,
    stack,
    listeners: edges.map((e) => ({ speechPort: e.port, proxyPort: e.proxyPort, vectorPort: e.vectorPort, chatPort: e.chatPort })),
    procs: [...edges.map((e) => ({ role: 'edge', pid: e.proc.child.pid! })), ...stack.workers.map((w) => ({ role: w.name, pid: w.child.pid! }))],
    log: () => [...edges.map((e) => e.proc), ...stack.workers].map((p) => `--- ${p.name}\n${p.log()}`).join('\n'),
    close: () => stack.close(),
  };
}

const ENTRIES: Record<string, string> = {
  'services/speech-worker/src/main.ts': 'speech-worker',
  'services/proxy-worker/src/main.ts': 'proxy-worker',
  'services/vector-worker/src/main.ts': 'vector-worker',
  'services/chat-worker/src/main.ts': 'chat-worker',
  'services/ingest-worker/src/main.ts': 'ingest-worker',
  'services/webhook-dispatcher/src/main.ts': 'webhooks',
  'services/edge/src/main.ts': 'edge',
};
const READY = ['speech worker serving', 'proxy worker serving', 'vector worker serving', 'chat worker serving', 'ingest worker serving', 'webhook dispatcher serving'];

/** Direct children of `pid` (/proc/<p>/stat: the field after the state is the parent's pid). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** `extra`: more environment for the runner (e.g. METRICS_PORT, which run-stack.ts spreads over its services). */
export async function asStarted(llm: LlmSetup, extra: Record<string, string> = {}): Promise<Topology> {
  const stack = new Stack();
  const root = join(import.meta.dirname, '..', '..');
  const chatEnv = stack.chatEnv();
  const vectorSchema = `vector_${stack.ns}`;
  const snapshots = join(tmpdir(), `gatehouse-${stack.ns}-snapshots`);
  mkdirSync(snapshots, { recursive: true });
  // As scripts/lib/setup.sh migrates before the runner starts (every folder; here only the schemas this stack uses).
  await stack.migrate('chat', chatEnv);
  await stack.migrate('vector', { ...stack.env(), DATABASE_URL: testDatabaseUrl(), VECTOR_SCHEMA: vectorSchema });
  const ports = { SPEECH_PORT: await freePort(), PROXY_PORT: await freePort(), VECTOR_PORT: await freePort(), VECTOR_GRPC_PORT: await freePort(), CHAT_PORT: await freePort() };
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({
    ...chatEnv,
    HOME: process.env.HOME,
    PATH: process.env.PATH,
    REDIS_URL: process.env.REDIS_URL,
    VECTOR_SCHEMA: vectorSchema,
    VECTOR_SNAPSHOT_DIR: snapshots,
    WEBUI_SECRET_KEY_FILE: join(tmpdir(), `gatehouse-${stack.ns}-webui-secret-key`),
    EDGE_HOST: '127.0.0.1',
    // scripts/start: API_KEY from TTS_GATEWAY_API_KEY (unset here), SPEECH_PORT from TTS_GATEWAY_PORT.
    API_KEY: '',
    LLMPROXY_CONFIG: llm.config,
    ...llm.keyEnv,
    ...Object.fromEntries(Object.entries(ports).map(([k, p]) => [k, String(p)])),
    ...extra,
  })) {
    if (v !== undefined) env[k] = v;
  }
  // `node --import tsx` rather than scripts/start's tsx wrapper: the same runner, one process fewer to stop.
  const runner = new Proc('run-stack', spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'src', 'run-stack.ts')], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const children: { role: string; pid: number }[] = [];
  const close = async () => {
    if (runner.running) {
      runner.child.kill('SIGTERM');
      // The runner stops its services (SIGKILL after 10 s) and exits when they have.
      await waitFor(() => !runner.running, 15_000, () => 'runner did not exit').catch(() => undefined);
    }
    // A service the runner could not stop (it runs in a process group of its own) is ended here, by its pid.
    for (const c of children) if (alive(c.pid)) process.kill(c.pid, 'SIGKILL');
    if (runner.running) runner.child.kill('SIGKILL');
    rmSync(snapshots, { recursive: true, force: true });
    await stack.close();
  };
  try {
    await waitFor(
      async () => {
        if (!runner.running) throw new Error(`scripts/src/run-stack.ts exited:\n${runner.log().slice(-4000)}`);
        const log = runner.log();
        if (!READY.every((r) => log.includes(r))) return false;
        const ok = await Promise.all(
          [`http://127.0.0.1:${ports.PROXY_PORT}/health`, `http://127.0.0.1:${ports.VECTOR_PORT}/readyz`, `http://127.0.0.1:${ports.CHAT_PORT}/health`].map((u) =>
            fetch(u).then((r) => (r.body?.cancel(), r.status === 200)).catch(() => false),
          ),
        );
        return ok.every(Boolean);
      },
      START_MS,
      () => `the stack did not come up:\n${runner.log().slice(-4000)}`,
    );
    for (const pid of childrenOf(runner.child.pid!)) {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const entry = Object.keys(ENTRIES).find((e) => cmd.includes(e));
      if (entry) children.push({ role: ENTRIES[entry]!, pid });
    }
    if (children.length !== Object.keys(ENTRIES).length) throw new Error(`found ${children.length} of the runner's ${Object.keys(ENTRIES).length} services`);
  } catch (err) {
    await close();
    throw err;
  }
  return {
    mode: 'start',
    stack,
    listeners: [{ speechPort: ports.SPEECH_PORT, proxyPort: ports.PROXY_PORT, vectorPort: ports.VECTOR_PORT, chatPort: ports.CHAT_PORT }],
    procs: [...children, { role: 'runner', pid: runner.child.pid! }],
    log: () => runner.log(),
    close,
  };
}
