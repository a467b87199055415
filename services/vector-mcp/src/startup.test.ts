import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = 'services/vector-mcp/src/main.ts';
const BIN = 'services/vector-mcp/bin/gatehouse-vector-mcp.mjs';
const TIME_LIMIT_MS = 20_000;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the server with exactly `env` (plus PATH/HOME, none of the caller's VECTORDB_* or EMBEDDING_*),
 * stdin open and silent as an MCP client would leave it, and waits for it to exit, at most TIME_LIMIT_MS.
 */
function run(env: Record<string, string>, entry: string[] = ['--import', 'tsx', MAIN]): Promise<Exit> {
  const base: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR']) if (process.env[k] !== undefined) base[k] = process.env[k]!;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, entry, { cwd: REPO_ROOT, env: { ...base, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`still running after ${TIME_LIMIT_MS} ms; stderr: ${stderr}`));
    }, TIME_LIMIT_MS);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe('start-up without a usable VECTORDB_API_KEY', () => {
  it.each([
    ['unset', {}],
    ['empty', { VECTORDB_API_KEY: '' }],
    ['whitespace only', { VECTORDB_API_KEY: '   ' }],
  ])('exits non-zero naming VECTORDB_API_KEY when it is %s, before the MCP transport starts', async (_, env) => {
    const exit = await run({ VECTORDB_URL: 'http://127.0.0.1:9', ...env });
    expect(exit.code).not.toBe(0);
    expect(exit.code).not.toBeNull(); // exited by itself, not killed
    expect(exit.stderr).toContain('VECTORDB_API_KEY');
    // Nothing on the protocol channel: the transport never started.
    expect(exit.stdout).toBe('');
  });

  it('also refuses through the bin wrapper', async () => {
    const exit = await run({}, [BIN]);
    expect(exit.code).not.toBe(0);
    expect(exit.stderr).toContain('VECTORDB_API_KEY');
    expect(exit.stdout).toBe('');
  });
});

describe('start-up with bad values', () => {
  it.each([
    ['VECTORDB_SEARCH_LIMIT', { VECTORDB_SEARCH_LIMIT: 'ten' }],
    ['VECTORDB_SEARCH_LIMIT', { VECTORDB_SEARCH_LIMIT: '0' }],
    ['VECTORDB_READ_ONLY', { VECTORDB_READ_ONLY: 'maybe' }],
    ['VECTORDB_URL', { VECTORDB_URL: 'ftp://example.test' }],
    ['VECTORDB_COLLECTION', { VECTORDB_COLLECTION: 'a/b' }],
    ['EMBEDDING_PROVIDER', { EMBEDDING_PROVIDER: 'fastembed' }],
    ['EMBEDDING_MODEL', { EMBEDDING_MODEL: 'sentence-transformers/all-MiniLM-L6-v2' }],
    ['EMBEDDING_BASE_URL', { EMBEDDING_PROVIDER: 'openai', EMBEDDING_MODEL: 'nomic-embed-text' }],
  ])('exits non-zero naming %s', async (variable, env) => {
    const exit = await run({ VECTORDB_API_KEY: 'k', ...env });
    expect(exit.code).not.toBe(0);
    expect(exit.code).not.toBeNull();
    expect(exit.stderr).toContain(variable);
    expect(exit.stdout).toBe('');
  });
});

describe('start-up with a key', () => {
  it('serves until stdin closes, then exits 0, without printing the key', async () => {
    const key = 'k-' + Math.random().toString(36).slice(2);
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', VECTORDB_API_KEY: key },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    // Wait (bounded) for the start-up line, then hang up like a client would.
    const deadline = Date.now() + TIME_LIMIT_MS;
    while (!stderr.includes('vector store http://127.0.0.1:6333') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(stderr).toContain('embedding lexical-hash-v1');
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), TIME_LIMIT_MS);
    const code = await exited;
    clearTimeout(timer);
    expect(code).toBe(0);
    expect(stderr).not.toContain(key);
  });
});
