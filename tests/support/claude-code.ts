import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Drives the real Claude Code CLI (`claude -p`) from the repository's node_modules, and records what it
 * sends on the way to the LLM proxy.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface ClaudeBuild {
  /** Short label for test names. */
  name: string;
  version: string;
  command: string;
  /** Arguments before Claude Code's own. */
  prefix: string[];
}

/** The native build (its install script puts the binary over a small stub) and the last pure-JavaScript one. */
export const CLAUDE_BUILDS: ClaudeBuild[] = [
  { name: 'native 2.1.197', version: '2.1.197', command: join(root, 'node_modules/@anthropic-ai/claude-code/bin/claude.exe'), prefix: [] },
  { name: 'js 2.1.112', version: '2.1.112', command: process.execPath, prefix: [join(root, 'node_modules/claude-code-js/cli.js')] },
];

/** Throws a clear message when a build is missing or its native binary was never placed. */
export function checkBuild(build: ClaudeBuild): void {
  const file = build.prefix[0] ?? build.command;
  const size = statSync(file, { throwIfNoEntry: false })?.size;
  if (size === undefined) throw new Error(`${build.name}: ${file} is missing (pnpm install at the root)`);
  // The package ships a shell stub of a few hundred bytes; its postinstall replaces it with the binary.
  if (build.prefix.length === 0 && size < 100_000) {
    throw new Error(`${build.name}: ${file} is the stub, not the binary: its install script did not run (onlyBuiltDependencies in pnpm-workspace.yaml)`);
  }
}

export interface ClaudeRun {
  /** Exit code; null when killed. */
  code: number | null;
  timedOut: boolean;
  ms: number;
  stdout: string;
  stderr: string;
  /** stdout parsed (`--output-format json`), undefined when it is not JSON. */
  json: ClaudeResult | undefined;
}

/** The `--output-format json` result object (the fields the tests read). */
export interface ClaudeResult {
  type: string;
  subtype: string;
  is_error: boolean;
  result?: string;
  num_turns?: number;
  api_error_status?: number | null;
  [k: string]: unknown;
}

/** What a run's environment starts from: a throwaway HOME, nothing phoned home, no update checks. */
export const QUIET_ENV = {
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  DISABLE_AUTOUPDATER: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
};

/** Every model slot Claude Code has, set to one id. */
export function modelSlots(model: string, small = model): Record<string, string> {
  return {
    ANTHROPIC_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: small,
    ANTHROPIC_DEFAULT_OPUS_MODEL: model,
    ANTHROPIC_DEFAULT_SONNET_MODEL: model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: small,
    CLAUDE_CODE_SUBAGENT_MODEL: model,
  };
}

/**
 * Runs `claude -p prompt --output-format json …args` with only PATH, a fresh HOME, QUIET_ENV and `env`
 * (none of the caller's ANTHROPIC_* variables leak in). Killed with its process group after `timeoutMs`.
 */
export async function runClaude(
  build: ClaudeBuild,
  opts: { prompt: string; env: Record<string, string>; cwd: string; args?: string[]; timeoutMs: number },
): Promise<ClaudeRun> {
  checkBuild(build);
  const home = mkdtempSync(join(tmpdir(), 'claude-home-'));
  const started = Date.now();
  const child = spawn(build.command, [...build.prefix, '-p', opts.prompt, '--output-format', 'json', ...(opts.args ?? [])], {
    cwd: opts.cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...QUIET_ENV, ...opts.env },
    // No stdin: in -p mode it otherwise waits 3 s for piped input.
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so a timeout also ends the tools and MCP servers it started.
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid);
  }, opts.timeoutMs);
  const code = await new Promise<number | null>((done) => {
    child.on('error', (err) => {
      stderr += `\nspawn failed: ${err.message}`;
      done(null);
    });
    child.on('exit', (c) => done(c));
  });
  clearTimeout(timer);
  // Anything it left behind in its group (an MCP server) goes too.
  killGroup(child.pid);
  rmSync(home, { recursive: true, force: true });
  let json: ClaudeResult | undefined;
  try {
    json = JSON.parse(stdout) as ClaudeResult;
  } catch {
    json = undefined;
  }
  return { code, timedOut, ms: Date.now() - started, stdout, stderr, json };
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** A run's outcome in one line, for assertion messages. */
export function describeRun(run: ClaudeRun, recorder?: Recorder): string {
  const sent = recorder ? ` requests: ${recorder.summary().join(' | ')}` : '';
  return `exit ${run.code}${run.timedOut ? ' (killed: timed out)' : ''} after ${run.ms} ms; stdout: ${run.stdout.slice(0, 600)} stderr: ${run.stderr.slice(0, 600)}${sent}`;
}

/** One request Claude Code sent, as the recorder saw it. Credential values are never kept. */
export interface Sent {
  method: string;
  /** Path and query. */
  path: string;
  /** Header values, with x-api-key and authorization replaced by what kind they were. */
  headers: Record<string, string>;
  json: unknown;
  /** The proxy's status, once it answered. */
  status?: number;
  /** The proxy's answer headers. */
  answerHeaders?: IncomingHttpHeaders;
}

export interface Recorder {
  url: string;
  sent: Sent[];
  /** `METHOD path -> status` per request. */
  summary(): string[];
  clear(): void;
  close(): Promise<void>;
}

/**
 * A loopback HTTP forwarder in front of `target` (the proxy face) that records each request, so a test sees
 * exactly what the client sent and what it got back. Bodies and answers are passed through unchanged and
 * streamed.
 */
export async function startRecorder(target: string): Promise<Recorder> {
  const t = new URL(target);
  const sent: Sent[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (p: Buffer) => parts.push(p));
    req.on('end', () => {
      const raw = Buffer.concat(parts);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) {
        const value = Array.isArray(v) ? v.join(', ') : (v ?? '');
        headers[k] = k === 'x-api-key' ? '<set>' : k === 'authorization' ? value.replace(/^(\S+)\s.*$/, '$1 <set>') : value;
      }
      let json: unknown;
      try {
        json = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
      } catch {
        json = undefined;
      }
      const rec: Sent = { method: req.method ?? '', path: req.url ?? '', headers, json };
      sent.push(rec);
      const up = request(
        { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: { ...req.headers, host: t.host } },
        (answer) => {
          rec.status = answer.statusCode;
          rec.answerHeaders = answer.headers;
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      up.on('error', (err) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`recorder: ${err.message}`);
      });
      res.on('close', () => up.destroy());
      up.end(raw);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    sent,
    summary: () => sent.map((s) => `${s.method} ${s.path} -> ${s.status ?? '…'}`),
    clear: () => void sent.splice(0),
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

/** The stdio MCP server claude-code-mcp-server.mjs as an `--mcp-config` entry, run by this Node. */
export function mcpServerConfig(name: string, env: Record<string, string>): string {
  return JSON.stringify({
    mcpServers: {
      [name]: {
        type: 'stdio',
        command: process.execPath,
        args: [join(root, 'tests/support/claude-code-mcp-server.mjs')],
        env,
      },
    },
  });
}
