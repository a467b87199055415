import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

/**
 * Builds the chat platform's web UI (services/web-ui) into services/web-ui/dist when its sources
 * changed: a hash of src/, public/, index.html, vite.config.ts, svelte.config.js, tsconfig*.json
 * and package.json is kept in .state/web-ui.stamp and in dist/.gatehouse-build; a different hash in
 * either, or a missing dist/index.html, rebuilds. After Vite, every compressible file under dist/assets gets a `.br` and a `.gz` beside
 * it, which the edge sends to clients that accept them (@fastify/static preCompressed).
 *
 *   node --import tsx scripts/src/build-web-ui.ts [--force]
 *
 * scripts/start and scripts/test run it from scripts/lib/setup.sh.
 */
const root = join(import.meta.dirname, '..', '..');
const app = join(root, 'services', 'web-ui');
const dist = join(app, 'dist');
const stampFile = join(root, '.state', 'web-ui.stamp');
/**
 * The same hash inside dist: a plain `vite build` by hand empties dist (and writes no .br/.gz), so a
 * build this step did not finish is never taken for up to date. A dot file: the edge never serves it.
 */
const distStamp = join(dist, '.gatehouse-build');
/** Bump when the post-build step changes, so existing builds are redone. */
const STEP_VERSION = 'compress-v2-small-chunks';
const COMPRESSIBLE = /\.(js|mjs|css|html|svg|json|txt|map|wasm|woff|ttf)$/;

const say = (msg: string) => process.stderr.write(`[web-ui] ${msg}\n`);

function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? files(p) : e.isFile() ? [p] : [];
  });
}

/** What the build depends on, hashed with each file's path. */
export function sourceHash(): string {
  const h = createHash('sha256').update(STEP_VERSION);
  const inputs = [
    ...files(join(app, 'src')),
    ...files(join(app, 'public')),
    ...['index.html', 'vite.config.ts', 'svelte.config.js', 'package.json', 'tsconfig.json', 'tsconfig.app.json'].map((f) => join(app, f)).filter(existsSync),
  ].sort();
  for (const f of inputs) h.update(relative(app, f)).update('\0').update(readFileSync(f)).update('\0');
  return h.digest('hex');
}

/** `.br` and `.gz` beside every compressible asset that compression shrinks. */
export function compressAssets(dir: string): number {
  let n = 0;
  for (const f of files(dir)) {
    if (!COMPRESSIBLE.test(f)) continue;
    const data = readFileSync(f);
    // Small chunks too (the bundler splits out a few hundred bytes shared by two lazy pages): every
    // script then arrives one way; only a file that compression does not shrink is left alone.
    const br = brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: data.length } });
    if (br.length >= data.length) continue;
    writeFileSync(`${f}.br`, br);
    writeFileSync(`${f}.gz`, gzipSync(data, { level: 9 }));
    n++;
  }
  return n;
}

function main(): void {
  const force = process.argv.includes('--force');
  if (!existsSync(join(app, 'package.json'))) {
    say('services/web-ui is not there; nothing to build');
    return;
  }
  const hash = sourceHash();
  const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8').trim() : '');
  if (!force && read(stampFile) === hash && read(distStamp) === hash && existsSync(join(dist, 'index.html'))) {
    say('up to date');
    return;
  }
  const vite = join(app, 'node_modules', '.bin', 'vite');
  if (!existsSync(vite)) {
    say(`${vite} is missing: run \`pnpm install\` at the repository root first`);
    process.exit(1);
  }
  say('building services/web-ui (vite build)');
  const started = Date.now();
  // A production build whatever called this: under vitest (the browser tests' global set-up)
  // NODE_ENV is `test`, and Vite then builds Svelte's development mode (dev runtime, component
  // tags, ownership checks), several times slower to start and to render.
  const r = spawnSync(vite, ['build', '--logLevel', 'warn'], { cwd: app, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'production' } });
  if (r.status !== 0) {
    say(`vite build failed (exit ${r.status ?? r.signal}); the edge answers 503 "web UI not built" until it succeeds`);
    process.exit(1);
  }
  const n = compressAssets(join(dist, 'assets'));
  mkdirSync(join(root, '.state'), { recursive: true });
  writeFileSync(stampFile, `${hash}\n`);
  writeFileSync(distStamp, `${hash}\n`);
  const size = files(join(dist, 'assets')).filter((f) => !/\.(br|gz)$/.test(f)).reduce((s, f) => s + statSync(f).size, 0);
  say(`built in ${Date.now() - started} ms: ${Math.round(size / 1024)} KiB of assets, ${n} compressed (.br, .gz)`);
}

if (import.meta.filename === process.argv[1]) main();
