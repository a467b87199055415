import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

/**
 * Runs the whole stack in the foreground (edge + every worker), one line per log entry prefixed
 * with the process name. Ctrl-C stops every process (SIGTERM, SIGKILL after a grace period); if
 * one process dies the others are stopped too, so a half-running stack never looks healthy.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const PROCESSES: { name: string; entry: string }[] = [
  { name: 'speech-worker', entry: 'services/speech-worker/src/main.ts' },
  { name: 'proxy-worker', entry: 'services/proxy-worker/src/main.ts' },
  { name: 'vector-worker', entry: 'services/vector-worker/src/main.ts' },
  { name: 'chat-worker', entry: 'services/chat-worker/src/main.ts' },
  { name: 'ingest-worker', entry: 'services/ingest-worker/src/main.ts' },
  { name: 'webhooks', entry: 'services/webhook-dispatcher/src/main.ts' },
  { name: 'edge', entry: 'services/edge/src/main.ts' },
];

/**
 * METRICS_PORT (docs/observability.md): one listener per process on this one host, so the edge
 * serves metrics on METRICS_PORT and the workers on the ports after it, in this order (the same
 * port for all would stop the stack: the second service to bind it exits).
 */
const METRICS_ORDER = ['edge', 'speech-worker', 'proxy-worker', 'vector-worker', 'chat-worker', 'ingest-worker', 'webhooks'];
const metricsBase = Number(process.env.METRICS_PORT ?? '');
const envOf = (name: string): NodeJS.ProcessEnv =>
  process.env.METRICS_PORT && Number.isInteger(metricsBase) && metricsBase > 0 ? { ...process.env, METRICS_PORT: String(metricsBase + METRICS_ORDER.indexOf(name)) } : process.env;

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
const COLOURS: Record<number, string> = { 40: '\x1b[33m', 50: '\x1b[31m', 60: '\x1b[31m' };
const tty = process.stdout.isTTY;

/** pino JSON → `12:00:01 INFO  edge      message key=value`; anything else passes through. */
function pretty(name: string, line: string): string {
  const pad = name.padEnd(14);
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return `${pad} ${line}`;
  }
  const { time, level, msg, pid: _pid, hostname: _h, name: _n, ...rest } = entry;
  const t = new Date(Number(time) || Date.now()).toISOString().slice(11, 19);
  const lv = Number(level);
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const text = `${t} ${LEVELS[lv] ?? lv} ${pad} ${String(msg ?? '')}${fields ? `  ${fields}` : ''}`;
  return tty && COLOURS[lv] ? `${COLOURS[lv]}${text}\x1b[0m` : text;
}

const children = new Map<string, ChildProcess>();
let stopping = false;

function stopAll(code: number): void {
  if (stopping) return;
  stopping = true;
  for (const c of children.values()) c.kill('SIGTERM');
  const force = setTimeout(() => {
    for (const c of children.values()) c.kill('SIGKILL');
  }, 10_000);
  force.unref();
  const check = setInterval(() => {
    if ([...children.values()].every((c) => c.exitCode !== null || c.signalCode !== null)) {
      clearInterval(check);
      process.exit(code);
    }
  }, 100);
}

for (const p of PROCESSES) {
  // `node --import tsx`: one process per service, so SIGTERM reaches the service itself.
  // detached: a process group of its own, so Ctrl-C reaches only this runner, which then stops
  // each service once (a second signal would make a service skip its clean shutdown).
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, p.entry)], {
    cwd: root,
    env: envOf(p.name),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  children.set(p.name, child);
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (l) => process.stdout.write(`${pretty(p.name, l)}\n`));
  }
  child.on('exit', (code, signal) => {
    if (stopping) return;
    process.stdout.write(`${p.name.padEnd(14)} exited (${signal ?? code}); stopping the stack\n`);
    stopAll(1);
  });
}

process.on('SIGINT', () => stopAll(0));
process.on('SIGTERM', () => stopAll(0));
