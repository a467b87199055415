import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * A fake upstream (scripts/src/fake-upstreams) in a child process of its own, so it does not share
 * the benchmark client's event loop; its key, if any, comes in the environment.
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
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, BENCH_FAKE_KEY: apiKey ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fake upstream did not start:\n${err}`)), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url);
      }
    });
    child.once('exit', (c) => {
      clearTimeout(timer);
      reject(new Error(`fake upstream exited (${c}):\n${err}`));
    });
  });
  return {
    url,
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

