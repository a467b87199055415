import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface BenchChild<T> {
  /** What the child wrote as its first stdout line (JSON), once it was ready. */
  ready: T;
  child: ChildProcess;
  /** SIGTERM, then SIGKILL after 5 s if it is still there. */
  stop: () => Promise<void>;
}

/**
 * An ES module's `code` run in a child process of its own (so it does not share the benchmark
 * client's event loop), ready once it writes one JSON line to stdout. `tsx` loads TypeScript
 * imports; `cwd` decides where bare imports resolve. Only PATH and HOME are passed on, with `env`.
 */
export async function startBenchChild<T>(label: string, code: string, opts: { env?: Record<string, string>; cwd?: string; tsx?: boolean } = {}): Promise<BenchChild<T>> {
  const child = spawn(process.execPath, [...(opts.tsx ? ['--import', 'tsx'] : []), '--input-type=module', '-e', code], {
    cwd: opts.cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d));
  const ready = await new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label} did not start:\n${err}`)), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) {
        clearTimeout(timer);
        resolve(JSON.parse(line) as T);
      }
    });
    child.once('exit', (c) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited (${c}):\n${err}`));
    });
  });
  return {
    ready,
    child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/**
 * A fake upstream (scripts/src/fake-upstreams) in a child process of its own; its key, if any,
 * comes in the environment.
 */
export async function startFakeProcess(kind: 'openai' | 'ollama', apiKey?: string): Promise<{ url: string; child: ChildProcess; stop: () => Promise<void> }> {
  const module = pathToFileURL(join(import.meta.dirname, '..', 'src', 'fake-upstreams', `${kind}.ts`)).href;
  const code = `
    import * as fakes from ${JSON.stringify(module)};
    const start = fakes.startFakeOpenAI ?? fakes.startFakeOllama;
    const fake = await start({ apiKey: process.env.BENCH_FAKE_KEY || undefined, maxRecorded: 0 });
    process.stdout.write(JSON.stringify({ url: fake.url }) + '\\n');
    process.once('SIGTERM', () => fake.close().then(() => process.exit(0)));
  `;
  const { ready, child, stop } = await startBenchChild<{ url: string }>('fake upstream', code, { env: { BENCH_FAKE_KEY: apiKey ?? '' }, tsx: true });
  return { url: ready.url, child, stop };
}
