import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recordLogScan, rememberSecret } from '../../scripts/src/log-scan.ts';
import { cloneTemplate } from './schema-template.ts';
import { connectBus, createLogger, migrateDatabase, openGateStore, PLATFORM_FOLDER, type Bus, type GateStore } from '@gatehouse/common';

/**
 * Local stack for tests and benchmarks: real edge and worker processes (the same entry points scripts/start runs), on
 * free loopback ports, in a namespace of their own on the shared NATS server (GATEHOUSE_NS), so
 * test files run side by side without seeing each other's gates or workers.
 */
const root = join(import.meta.dirname, '..', '..');

export const natsUrl = () => process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const testDatabaseUrl = () => process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gatehouse_test';

/** How long a service may take to start (a loaded 2-core machine needs far more than a quiet one). */
const START_LIMIT_MS = Number(process.env.GATEHOUSE_START_LIMIT_MS ?? 90_000);

/**
 * A free loopback port for a service to listen on, below the kernel's ephemeral range (32768 and
 * up on Linux). Port 0 hands out an ephemeral port, and between this check and the service's own
 * listen (seconds under tsx) any outgoing connection of the run may take it as its local port: the
 * service then fails with EADDRINUSE, or the test talks to whatever took it. Random, so parallel
 * test workers rarely pick the same one; bound once here to be sure it is free now.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await bindable(port)) return port;
  }
  throw new Error('no free loopback port between 20000 and 32000 after 100 tries');
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

export class Proc {
  readonly output: string[] = [];
  private exited: Promise<void>;
  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    /** The environment it was given: its secrets are what its log must never show (log-scan.ts). */
    env: Record<string, string | undefined> = {},
  ) {
    for (const s of [child.stdout, child.stderr]) s?.on('data', (d: Buffer) => this.output.push(d.toString()));
    this.exited = new Promise((r) => child.once('exit', () => r()));
    // 'close': after the last output has arrived, which 'exit' does not promise.
    child.once('close', () => {
      recordLogScan(name, child.pid ?? 0, this.log(), env);
      if (process.env.BENCH_SERVICE_LOG_DIR) writeFileSync(join(process.env.BENCH_SERVICE_LOG_DIR, `${name}-${child.pid}.log`), this.log());
    });
  }
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (!this.running) return;
    this.child.kill(signal);
    const t = setTimeout(() => this.child.kill('SIGKILL'), 8000);
    await this.exited;
    clearTimeout(t);
  }
  log(): string {
    return this.output.join('');
  }
}

/**
 * `nodeArgs`: extra Node options (a benchmark's `--cpu-prof`, which NODE_OPTIONS does not accept).
 * `dir`: the checkout to run it from (a benchmark's before arm, scripts/bench/before.ts); this one by default.
 */
export function spawnService(name: string, entry: string, env: Record<string, string | undefined>, nodeArgs: string[] = [], dir = root): Proc {
  // `node --import tsx`, not the tsx wrapper: one process, so signals (SIGSTOP too) reach the service.
  // BENCH_CPU_PROF_DIR: every service of the stack writes a CPU profile there when it exits.
  // (a folder per service; the biggest file of one is its main thread, the others tsx's loader).
  // BENCH_NODE_ARGS: further options for every service (scripts/bench/README.md).
  const bench = [
    ...(process.env.BENCH_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_CPU_PROF_DIR, name)}`] : []),
    ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
  ];
  const child = spawn(process.execPath, [...bench, ...nodeArgs, '--import', 'tsx', join(dir, entry)], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Proc(name, child, env);
}

export interface Edge {
  proc: Proc;
  /** Speech face. */
  port: number;
  url: string;
  /** LLM proxy face. */
  proxyPort: number;
  proxyUrl: string;
  /** Vector store face. */
  vectorPort: number;
  vectorUrl: string;
  /** Vector store face, Qdrant's gRPC API (host:port, plaintext HTTP/2). */
  vectorGrpcPort: number;
  /** Chat platform face (Open WebUI-compatible). */
  chatPort: number;
  chatUrl: string;
}

export class Stack {
  readonly ns = `t${randomBytes(5).toString('hex')}`;
  readonly edges: Edge[] = [];
  readonly workers: Proc[] = [];
  private readonly schemas: string[] = [];
  private bus: Bus | undefined;
  private storeP: Promise<GateStore> | undefined;
  readonly natsUrl: string;
  readonly databaseUrl: string;
  readonly redisUrl: string | undefined;

  /** Defaults: the shared services (NATS_URL, TEST_DATABASE_URL, REDIS_URL); the fault suite passes private ones (private-infra.ts). */
  /** The least time a process is given to start (the fault suite's busy machine needs more than the defaults). */
  private readonly startMs: number;
  constructor(urls: { natsUrl?: string; databaseUrl?: string; redisUrl?: string; startTimeoutMs?: number } = {}) {
    this.startMs = urls.startTimeoutMs ?? 0;
    this.natsUrl = urls.natsUrl ?? natsUrl();
    this.databaseUrl = urls.databaseUrl ?? testDatabaseUrl();
    this.redisUrl = urls.redisUrl ?? process.env.REDIS_URL;
  }

  /** Environment every process of this stack gets. */
  env(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
    return { NATS_URL: this.natsUrl, GATEHOUSE_NS: this.ns, ...extra };
  }

  async startWorker(extra: Record<string, string | undefined> = {}): Promise<Proc> {
    const w = spawnService('speech-worker', 'services/speech-worker/src/main.ts', this.env(extra));
    this.workers.push(w);
    await waitFor(() => w.log().includes('speech worker serving'), Math.max(START_LIMIT_MS, this.startMs), () => `speech worker did not start:\n${w.log()}`, w);
    return w;
  }

  async startProxyWorker(extra: Record<string, string | undefined> = {}): Promise<Proc> {
    const w = spawnService('proxy-worker', 'services/proxy-worker/src/main.ts', this.env(extra));
    this.workers.push(w);
    await waitFor(() => w.log().includes('proxy worker serving'), Math.max(START_LIMIT_MS, this.startMs), () => `proxy worker did not start:\n${w.log()}`, w);
    return w;
  }

  /**
   * Bring `schema` to the migrations of `folder` (and platform), as scripts/start and the compose
   * migrate service do before any worker starts: workers only check their schema. A schema that
   * does not exist yet is copied from a template the runner migrated once (schema-template.ts);
   * an existing one goes through the runner (nothing to do, or the files it lacks).
   */
  async migrate(folder: 'chat' | 'vector', env: Record<string, string | undefined>): Promise<void> {
    const schema = env[`${folder.toUpperCase()}_SCHEMA`]!;
    if (!this.schemas.includes(schema)) this.schemas.push(schema);
    const { default: postgres } = await import('postgres');
    const databaseUrl = env.DATABASE_URL ?? this.databaseUrl;
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
    try {
      const [present] = await sql`select 1 from pg_namespace where nspname = ${schema}`;
      if (!present) await cloneTemplate(sql, databaseUrl, folder, schema);
      await migrateDatabase(sql, { folders: [PLATFORM_FOLDER, folder], schemas: { [folder]: schema }, databaseUrl, backupDir: env.GATEHOUSE_BACKUP_DIR });
    } finally {
      await sql.end({ timeout: 5 });
    }
  }

  /** The vector worker stores in a schema named after this stack (migrated first), dropped by close(). */
  async startVectorWorker(extra: Record<string, string | undefined> = {}): Promise<Proc> {
    const env = this.env({ DATABASE_URL: this.databaseUrl, VECTOR_SCHEMA: `vector_${this.ns}`, ...extra });
    await this.migrate('vector', env);
    const w = spawnService('vector-worker', 'services/vector-worker/src/main.ts', env);
    this.workers.push(w);
    await waitFor(() => w.log().includes('vector worker serving'), Math.max(START_LIMIT_MS, this.startMs), () => `vector worker did not start:\n${w.log()}`, w);
    return w;
  }

  /** The chat worker's environment (the ingest worker shares it: same schema, same upload store). */
  chatEnv(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
    return this.env({
      DATABASE_URL: this.databaseUrl,
      CHAT_SCHEMA: `chat_${this.ns}`,
      GATEHOUSE_BACKUP_DIR: join(tmpdir(), `gatehouse-${this.ns}-backups`),
      UPLOAD_DIR: join(tmpdir(), `gatehouse-${this.ns}-uploads`),
      ...extra,
    });
  }

  /**
   * The chat worker stores in a schema named after this stack (migrated first), dropped by close();
   * the ingest worker that processes its uploads starts beside it (`ingest: false` leaves it out).
   */
  async startChatWorker(extra: Record<string, string | undefined> = {}, opts: { ingest?: boolean } = {}): Promise<Proc> {
    const env = this.chatEnv(extra);
    await this.migrate('chat', env);
    const w = spawnService('chat-worker', 'services/chat-worker/src/main.ts', env);
    this.workers.push(w);
    const ingest = opts.ingest === false ? undefined : this.startIngestWorker(extra);
    await waitFor(() => w.log().includes('chat worker serving'), Math.max(START_LIMIT_MS, this.startMs), () => `chat worker did not start:\n${w.log()}`, w);
    await ingest;
    return w;
  }

  /** The ingest worker (extract → chunk → embed off the request path) on the chat worker's schema and uploads. */
  ingest: Proc | undefined;
  async startIngestWorker(extra: Record<string, string | undefined> = {}): Promise<Proc> {
    const w = spawnService('ingest-worker', 'services/ingest-worker/src/main.ts', this.chatEnv(extra));
    this.workers.push(w);
    this.ingest = w;
    await waitFor(() => w.log().includes('ingest worker serving'), Math.max(START_LIMIT_MS, this.startMs), () => `ingest worker did not start:\n${w.log()}`, w);
    return w;
  }

  /**
   * A webhook dispatcher on the chat worker's schema (start the chat worker first: it migrates the
   * schema and creates the events stream). Only tests that need deliveries start one.
   */
  readonly dispatchers: Proc[] = [];
  async startWebhookDispatcher(extra: Record<string, string | undefined> = {}, nodeArgs: string[] = []): Promise<Proc> {
    const w = spawnService('webhook-dispatcher', 'services/webhook-dispatcher/src/main.ts', this.chatEnv(extra), nodeArgs);
    this.workers.push(w);
    this.dispatchers.push(w);
    await waitFor(() => w.log().includes('webhook dispatcher serving'), Math.max(START_LIMIT_MS, this.startMs), () => `webhook dispatcher did not start:\n${w.log()}`, w);
    return w;
  }

  /** Start an edge; `ready` waits for /health 200 (pass false for an edge expected to be degraded). */
  async startEdge(
    extra: Record<string, string | undefined> = {},
    ready = true,
    ports?: { port: number; proxyPort: number; vectorPort: number; chatPort: number; vectorGrpcPort?: number },
  ): Promise<Edge> {
    const p = ports?.port ?? (await freePort());
    const pp = ports?.proxyPort ?? (await freePort());
    const vp = ports?.vectorPort ?? (await freePort());
    const cp = ports?.chatPort ?? (await freePort());
    const vgp = ports?.vectorGrpcPort ?? (await freePort());
    const proc = spawnService(
      'edge',
      'services/edge/src/main.ts',
      this.env({
        EDGE_HOST: '127.0.0.1',
        SPEECH_PORT: String(p),
        PROXY_PORT: String(pp),
        VECTOR_PORT: String(vp),
        VECTOR_GRPC_PORT: String(vgp),
        CHAT_PORT: String(cp),
        REDIS_URL: this.redisUrl,
        // One session secret per stack, shared by its edges (as a deployment shares one).
        WEBUI_SECRET_KEY_FILE: join(tmpdir(), `gatehouse-${this.ns}-webui-secret-key`),
        ...extra,
      }),
    );
    const edge = {
      proc,
      port: p,
      url: `http://127.0.0.1:${p}`,
      proxyPort: pp,
      proxyUrl: `http://127.0.0.1:${pp}`,
      vectorPort: vp,
      vectorUrl: `http://127.0.0.1:${vp}`,
      vectorGrpcPort: vgp,
      chatPort: cp,
      chatUrl: `http://127.0.0.1:${cp}`,
    };
    this.edges.push(edge);
    // Probe the first face this edge serves (a chat-only edge has no speech listener).
    const faces = (extra.EDGE_FACES ?? 'speech').split(',').map((f) => f.trim());
    const healthUrl = faces.includes('speech')
      ? `${edge.url}/health`
      : faces[0] === 'chat'
        ? `${edge.chatUrl}/health`
        : faces[0] === 'vector'
          ? `${edge.vectorUrl}/readyz`
          : `${edge.proxyUrl}/health`;
    await waitFor(
      async () => {
        const r = await fetch(healthUrl).catch(() => undefined);
        return ready ? r?.status === 200 : r !== undefined;
      },
      Math.max(START_LIMIT_MS, this.startMs),
      () => `edge (${healthUrl}) did not become ${ready ? 'healthy' : 'reachable'}:\n${proc.log()}`,
      proc,
    );
    return edge;
  }

  async restartEdge(edge: Edge, extra: Record<string, string | undefined>): Promise<Edge> {
    await edge.proc.stop();
    this.edges.splice(this.edges.indexOf(edge), 1);
    return this.startEdge(extra, true, { port: edge.port, proxyPort: edge.proxyPort, vectorPort: edge.vectorPort, chatPort: edge.chatPort, vectorGrpcPort: edge.vectorGrpcPort });
  }

  /** The gate store of this stack's namespace, as the operator CLI sees it. */
  store(): Promise<GateStore> {
    return (this.storeP ??= (async () => {
      this.bus = await connectBus({ url: this.natsUrl, name: 'test', log: createLogger('test', 'warn'), ns: this.ns });
      return openGateStore(this.bus);
    })());
  }

  async busHandle(): Promise<Bus> {
    await this.store();
    return this.bus!;
  }

  /** Run scripts/gate as an operator would, against this stack's namespace and `edge`'s faces. */
  gateCli(args: string[], edge: Edge, stdin = ''): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(join(root, 'scripts', 'gate'), args, {
        env: {
          PATH: process.env.PATH,
          NATS_URL: this.natsUrl,
          REDIS_URL: this.redisUrl,
          GATEHOUSE_NS: this.ns,
          SPEECH_URL: edge.url,
          PROXY_URL: edge.proxyUrl,
          VECTOR_URL: edge.vectorUrl,
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.on('error', reject);
      child.on('exit', (code) => (clearTimeout(t), resolve({ code: code ?? -1, stdout, stderr })));
      child.stdin.end(stdin);
    });
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.edges.map((e) => e.proc.stop()), ...this.workers.map((w) => w.stop())]);
    for (const f of [`gatehouse-${this.ns}-webui-secret-key`, `gatehouse-${this.ns}-backups`, `gatehouse-${this.ns}-uploads`]) rmSync(join(tmpdir(), f), { recursive: true, force: true });
    // Leave nothing behind on the shared server (events, ingest queue, object store): connect if no test did.
    if (!this.bus && this.workers.length) {
      this.bus = await connectBus({ url: this.natsUrl, name: 'test-cleanup', log: createLogger('test', 'warn'), ns: this.ns }).catch(() => undefined);
    }
    if (this.bus) {
      // Leave nothing behind on the shared server: this namespace's buckets go with the stack.
      const jsm = await this.bus.nc.jetstreamManager();
      for await (const s of jsm.streams.list()) {
        if (s.config.name.includes(this.ns)) await jsm.streams.delete(s.config.name).catch(() => undefined);
      }
      await this.bus.nc.drain();
    }
    if (this.schemas.length) {
      const { default: postgres } = await import('postgres');
      const sql = postgres(this.databaseUrl, { max: 1, onnotice: () => undefined });
      for (const s of this.schemas) await sql`drop schema if exists ${sql(s)} cascade`.catch(() => undefined);
      await sql.end({ timeout: 5 });
    }
  }
}

/** `proc`: the process being waited for; once it has exited, waiting longer cannot help (a start that refuses its config). */
export async function waitFor(cond: () => boolean | Promise<boolean>, ms: number, why: () => string, proc?: Proc): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await cond()) return;
    if (proc && !proc.running) throw new Error(`${proc.name} exited (${proc.child.exitCode ?? proc.child.signalCode}) before it was ready; ${why()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(why());
}

export function newKey(): string {
  return rememberSecret(randomBytes(32).toString('base64url'));
}
