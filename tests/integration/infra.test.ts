import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import { parse } from 'yaml';
import ts from 'typescript';
import { migrateDatabase } from '@gatehouse/common';
import { freePort, spawnService, waitFor, type Proc } from '../support/local-stack.ts';

/**
 * What the bring-up promises (Postgres with a working pgvector, Redis), and checks of the compose
 * stack that fail for real reasons: `docker compose config` where the compose CLI exists, every
 * variable compose gives a process is one that process reads, dependencies and healthchecks
 * that hold together, the image's files exist, and the workers' healthcheck against a real NATS.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const sql = postgres(process.env.TEST_DATABASE_URL!, { max: 1, onnotice: () => undefined });
const redis = new Redis(process.env.REDIS_URL!, { lazyConnect: true, maxRetriesPerRequest: 1 });
afterAll(async () => {
  await sql.end({ timeout: 5 });
  redis.disconnect();
});

describe('infrastructure brought up by scripts/test', () => {
  it('the platform migration gives Postgres pgvector 0.8, in public, and it computes distances', async () => {
    await migrateDatabase(sql, { folders: ['platform'] });
    const [ext] = await sql`select extversion, extnamespace::regnamespace::text as schema from pg_extension where extname = 'vector'`;
    expect(ext?.extversion).toMatch(/^0\.8\./);
    expect(ext?.schema).toBe('public');
    const [row] = await sql`select ('[1,0,0]'::vector <=> '[0,1,0]'::vector) as cos, ('[3,4]'::vector <-> '[0,0]'::vector) as l2`;
    expect(Number(row?.cos)).toBeCloseTo(1, 6);
    expect(Number(row?.l2)).toBeCloseTo(5, 6);
  });

  it('Redis answers', async () => {
    await redis.connect();
    const key = `infra-test:${process.pid}`;
    await redis.set(key, 'ok', 'EX', 10);
    expect(await redis.get(key)).toBe('ok');
  });
});

type Service = {
  image?: string;
  build?: unknown;
  command?: string[];
  working_dir?: string;
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  extra_hosts?: string[];
  ports?: string[];
  volumes?: string[];
  restart?: string;
};
const composeText = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
// Merge keys (`<<: *gatehouse`) as compose reads them.
const compose = parse(composeText, { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const services = compose.services;
const ours = Object.entries(services).filter(([, s]) => s.build !== undefined);

/** The repository file a service runs: its working_dir (under /app) plus the command's last argument. */
const entryOf = (s: Service) => join(ROOT, (s.working_dir ?? '/app').replace(/^\/app/, ''), s.command!.at(-1)!);

/** Parse a TypeScript file and visit every node. */
function walk(file: string, visit: (n: ts.Node, src: ts.SourceFile) => void): ts.SourceFile {
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const go = (n: ts.Node): void => {
    visit(n, src);
    n.forEachChild(go);
  };
  go(src);
  return src;
}

/** The initializer of `const <name> = …` in a file. */
function constInit(file: string, name: string): ts.Expression | undefined {
  let found: ts.Expression | undefined;
  walk(file, (n) => {
    if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.name.text === name && n.initializer) found ??= n.initializer;
  });
  return found;
}

/**
 * The keys of the zod object an entry file hands to parseEnv: `parseEnv(z.object({…}))` (or
 * looseObject/strictObject, possibly transformed), or
 * `parseEnv(Name)` with Name declared in the file or imported from a relative module.
 */
function envSchemaKeys(entry: string): Set<string> {
  let arg: ts.Expression | undefined;
  const src = walk(entry, (n) => {
    if (ts.isCallExpression(n) && n.expression.getText() === 'parseEnv') arg ??= n.arguments[0];
  });
  expect(arg, `${entry} calls parseEnv`).toBeDefined();
  if (ts.isIdentifier(arg!)) {
    const name = arg.text;
    let from = entry;
    for (const st of src.statements) {
      if (!ts.isImportDeclaration(st) || !st.importClause?.namedBindings || !ts.isNamedImports(st.importClause.namedBindings)) continue;
      if (st.importClause.namedBindings.elements.some((e) => e.name.text === name)) {
        from = join(dirname(entry), (st.moduleSpecifier as ts.StringLiteral).text);
      }
    }
    arg = constInit(from, name);
    expect(arg, `${name} is declared in ${from}`).toBeDefined();
  }
  const keys = new Set<string>();
  const find = (n: ts.Node): boolean => {
    if (ts.isCallExpression(n) && /^z\.(object|looseObject|strictObject)$/.test(n.expression.getText()) && n.arguments[0] && ts.isObjectLiteralExpression(n.arguments[0])) {
      for (const p of n.arguments[0].properties) if (p.name) keys.add(p.name.getText().replace(/^['"]|['"]$/g, ''));
      return true;
    }
    return n.forEachChild(find) ?? false;
  };
  expect(find(arg!), 'parseEnv is given a z.object').toBe(true);
  return keys;
}

/**
 * Variables a process reads outside its parseEnv schema's keys, through a loader handed the
 * environment: the proxy worker's Open WebUI connections and provider config, the speech engine's
 * limits and upstreams. A name counts only if the loader names it (as `env.NAME` or a 'NAME' string).
 */
const LOADERS: Record<string, string[]> = {
  'proxy-worker': ['services/proxy-worker/src/connections/config.ts', 'services/proxy-worker/src/upstream/config.ts'],
  'speech-worker': ['services/speech-worker/src/engine/config.ts'],
};
/** Read by every service, outside its parseEnv schema (METRICS_PORT, METRICS_HOST). */
const EVERY_SERVICE_LOADERS = ['services/common/src/metrics.ts'];
function loaderNames(files: string[]): Set<string> {
  const names = new Set<string>();
  for (const f of files) {
    walk(join(ROOT, f), (n) => {
      if (ts.isPropertyAccessExpression(n) && n.expression.getText().endsWith('env')) names.add(n.name.text);
      if (ts.isStringLiteral(n) && /^[A-Z][A-Z0-9_]+$/.test(n.text)) names.add(n.text);
    });
  }
  return names;
}

describe('docker-compose.yml', () => {
  // Compose's own loader (`config` needs no engine): `docker compose` where the machine has it,
  // else the binary scripts/test puts in .state/tools (infra/bringup/compose-cli.sh).
  const composeCli = (args: string[]) => {
    const viaDocker = spawnSync('docker', ['compose', 'version'], { timeout: 20_000 }).status === 0;
    const local = join(ROOT, '.state', 'tools', 'docker-compose');
    if (!viaDocker && !existsSync(local)) {
      throw new Error('no Compose CLI: run the suite with scripts/test, or run infra/bringup/compose-cli.sh (it fetches Debian 13\'s compose binary into .state/tools)');
    }
    return viaDocker
      ? spawnSync('docker', ['compose', ...args], { encoding: 'utf8', timeout: 60_000 })
      : spawnSync(local, args, { encoding: 'utf8', timeout: 60_000 });
  };

  it('docker compose config accepts the file, and resolves the depends_on conditions this test reads', () => {
    const r = composeCli(['-f', join(ROOT, 'docker-compose.yml'), 'config', '--format', 'json']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const resolved = JSON.parse(r.stdout) as { services: Record<string, { depends_on?: Record<string, { condition: string }> }> };
    expect(Object.keys(resolved.services).sort()).toEqual(Object.keys(services).sort());
    expect(resolved.services['chat-worker']?.depends_on?.migrate?.condition).toBe('service_completed_successfully');
  });

  it('runs the infrastructure, a migrate one-shot, the edge and every worker, each from a file that exists', () => {
    expect(Object.keys(services).sort()).toEqual(
      ['chat-worker', 'edge', 'ingest-worker', 'migrate', 'nats', 'postgres', 'proxy-worker', 'redis', 'speech-worker', 'vector-worker', 'webhook-dispatcher'].sort(),
    );
    for (const [name, s] of ours) {
      expect(s.command?.slice(0, 3), `${name} runs plain node with the tsx loader`).toEqual(['node', '--import', 'tsx']);
      expect(existsSync(entryOf(s)), `${name}: ${entryOf(s)}`).toBe(true);
      // The runtime image is installed with --prod: the package it runs from must have tsx as a dependency.
      const pkg = JSON.parse(readFileSync(join(ROOT, s.working_dir!.replace(/^\/app/, ''), 'package.json'), 'utf8'));
      expect(pkg.dependencies?.tsx, `${name}: tsx in ${s.working_dir}/package.json dependencies`).toBeDefined();
    }
  });

  it('gives each process only variables that process reads', () => {
    for (const [name, s] of ours) {
      const known = new Set([...envSchemaKeys(entryOf(s)), ...loaderNames([...(LOADERS[name] ?? []), ...EVERY_SERVICE_LOADERS])]);
      const unknown = Object.keys(s.environment ?? {}).filter((k) => !known.has(k));
      expect(unknown, `${name} is given variables ${entryOf(s).slice(ROOT.length + 1)} never reads`).toEqual([]);
    }
  });

  it('names only real services in depends_on, with conditions that can be met', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const [dep, { condition }] of Object.entries(s.depends_on ?? {})) {
        expect(services[dep], `${name} depends on ${dep}`).toBeDefined();
        if (condition === 'service_healthy') expect(services[dep]!.healthcheck, `${dep} has a healthcheck (${name} waits for it)`).toBeDefined();
        else if (condition === 'service_completed_successfully') expect(services[dep]!.restart, `${dep} is a one-shot`).toBe('no');
        else expect(condition).toBe('service_started');
      }
    }
  });

  it('starts whatever touches Postgres only after the migrate one-shot succeeded; the edge gets no database', () => {
    expect(services.migrate!.depends_on?.postgres?.condition).toBe('service_healthy');
    expect(services.migrate!.restart).toBe('no');
    const users = Object.entries(services).filter(([n, s]) => n !== 'migrate' && s.environment?.DATABASE_URL);
    expect(users.map(([n]) => n).sort()).toEqual(['chat-worker', 'ingest-worker', 'vector-worker', 'webhook-dispatcher']);
    for (const [name, s] of users) {
      expect(s.depends_on?.migrate?.condition, name).toBe('service_completed_successfully');
      expect(s.environment!.DATABASE_URL, name).toBe(services.migrate!.environment!.DATABASE_URL);
    }
    expect(services.edge!.environment?.DATABASE_URL).toBeUndefined();
  });

  it('has a healthcheck on every long-running service; Postgres is checked over TCP, not the init socket', () => {
    for (const [name, s] of Object.entries(services)) {
      if (name === 'migrate') expect(s.healthcheck).toBeUndefined();
      else expect(s.healthcheck?.test?.[0], `${name} healthcheck`).toBe('CMD');
    }
    const pg = services.postgres!.healthcheck!.test;
    expect(pg.slice(1, 2)).toEqual(['pg_isready']);
    expect(pg[pg.indexOf('-h') + 1]).toBe('127.0.0.1');
    expect(pg[pg.indexOf('-d') + 1]).toBe(services.postgres!.environment!.POSTGRES_DB);
    // Ours run the healthcheck script shipped in the image, with a mode it knows.
    for (const [name, s] of ours.filter(([n]) => n !== 'migrate')) {
      const [, node, script, mode] = s.healthcheck!.test;
      expect([node, script], name).toEqual(['node', '/app/infra/docker/healthcheck.mjs']);
      expect(['http', 'nats-service'], name).toContain(mode);
    }
  });

  it('maps host.docker.internal to the host wherever a service uses it', () => {
    for (const [name, s] of Object.entries(services)) {
      if (JSON.stringify(s.environment ?? {}).includes('host.docker.internal')) {
        expect(s.extra_hosts, name).toContain('host.docker.internal:host-gateway');
      }
    }
  });

  it('mounts files that exist and volumes it declares', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const v of s.volumes ?? []) {
        const source = v.replace(/\$\{[A-Z_]+:-([^}]+)\}/g, '$1').split(':')[0]!;
        if (source.startsWith('.')) expect(existsSync(join(ROOT, source)), `${name} mounts ${source}`).toBe(true);
        else expect(compose.volumes, `${name} mounts volume ${source}`).toHaveProperty(source);
      }
    }
  });

  it('publishes on loopback only, the speech face as documented, its key from TTS_GATEWAY_API_KEY', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const p of s.ports ?? []) expect(p, `${name} publishes ${p}`).toMatch(/^127\.0\.0\.1:/);
    }
    expect(services.edge!.ports).toContain('127.0.0.1:${TTS_GATEWAY_PORT:-8196}:8000');
    expect(services.edge!.environment!.SPEECH_PORT).toBe('8000');
    expect(services.edge!.environment!.API_KEY).toBe('${TTS_GATEWAY_API_KEY:-}');
    expect(services.edge!.healthcheck!.test.at(-1)).toBe(`http://127.0.0.1:${services.edge!.environment!.SPEECH_PORT}/health`);
  });
});

describe('infra/docker/Dockerfile', () => {
  const lines = readFileSync(join(ROOT, 'infra', 'docker', 'Dockerfile'), 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() && !l.trim().startsWith('#'));

  it('copies only files that exist, from stages it defines, and runs an entry that exists', () => {
    const stages = new Set<string>();
    let workdir = '/app';
    let cmd: string[] = [];
    for (const line of lines) {
      const [op, ...rest] = line.trim().split(/\s+/);
      if (op === 'FROM') {
        const as = rest.findIndex((w) => w.toUpperCase() === 'AS');
        if (as >= 0) stages.add(rest[as + 1]!);
      } else if (op === 'COPY') {
        const from = rest.find((w) => w.startsWith('--from='))?.slice('--from='.length);
        const args = rest.filter((w) => !w.startsWith('--'));
        if (from) expect(stages, `COPY --from=${from}`).toContain(from);
        else for (const src of args.slice(0, -1)) expect(existsSync(join(ROOT, src)), `COPY ${src}`).toBe(true);
      } else if (op === 'WORKDIR') workdir = rest[0]!;
      else if (op === 'CMD') cmd = JSON.parse(rest.join(' '));
    }
    expect(stages.size).toBeGreaterThan(0);
    // Two stages: the runtime one installs no package manager and no dev dependency.
    const runtime = lines.slice(lines.map((l) => l.startsWith('FROM ')).lastIndexOf(true));
    expect(runtime.join('\n')).not.toMatch(/pnpm|npm install/);
    expect(lines.join('\n')).toMatch(/pnpm install [^\n]*--prod/);
    expect(cmd.slice(0, 3)).toEqual(['node', '--import', 'tsx']);
    expect(existsSync(join(ROOT, workdir.replace(/^\/app/, ''), cmd.at(-1)!))).toBe(true);
  });
});

describe('infra/docker/healthcheck.mjs against a real NATS server', () => {
  const run = (args: string[], env: Record<string, string> = {}) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [join(ROOT, 'infra', 'docker', 'healthcheck.mjs'), ...args], {
        env: { PATH: process.env.PATH, ...env },
      });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      child.on('exit', (code) => resolve({ code, out }));
    });

  it('worker mode: fails with no connection from here, passes while this host serves the service, fails for another service', async () => {
    const bin = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((b) => existsSync(b));
    expect(bin, 'nats-server is installed (infra/bringup installs it)').toBeDefined();
    const [port, monitor] = [await freePort(), await freePort()];
    const store = mkdtempSync(join(tmpdir(), 'gatehouse-nats-'));
    const nats = spawn(bin!, ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitor), '-js', '-sd', store], { stdio: 'ignore' });
    let worker: Proc | undefined;
    try {
      const env = { NATS_MONITOR_URL: `http://127.0.0.1:${monitor}` };
      await waitFor(async () => (await fetch(`${env.NATS_MONITOR_URL}/healthz`).catch(() => undefined))?.ok === true, 10_000, () => 'nats-server did not start');
      const none = await run(['nats-service', 'speech'], env);
      expect(none.code).toBe(1);
      expect(none.out).toMatch(/no NATS connection from this container/);

      worker = spawnService('speech-worker', 'services/speech-worker/src/main.ts', { NATS_URL: `nats://127.0.0.1:${port}` });
      await waitFor(() => worker!.log().includes('speech worker serving'), 20_000, () => `speech worker did not start:\n${worker!.log()}`);
      const ok = await run(['nats-service', 'speech'], env);
      expect(ok.out).toMatch(/healthy: serving speech/);
      expect(ok.code).toBe(0);
      const other = await run(['nats-service', 'vector'], env);
      expect(other.code).toBe(1);
      expect(other.out).toMatch(/not serving vector/);

      await worker.stop();
      await waitFor(async () => (await run(['nats-service', 'speech'], env)).code === 1, 10_000, () => 'still healthy after the worker stopped');
    } finally {
      await worker?.stop();
      nats.kill();
      rmSync(store, { recursive: true, force: true });
    }
  });

  it('http mode: passes on 2xx, fails on 503 and on nothing listening', async () => {
    let status = 200;
    const srv = createServer((_req, res) => res.writeHead(status).end());
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(srv.address() as { port: number }).port}/health`;
    try {
      expect((await run(['http', url])).code).toBe(0);
      status = 503;
      const bad = await run(['http', url]);
      expect(bad.code).toBe(1);
      expect(bad.out).toMatch(/answered 503/);
    } finally {
      await new Promise((r) => srv.close(r));
    }
    expect((await run(['http', url])).code).toBe(1);
  });
});
