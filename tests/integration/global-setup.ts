import { execFileSync } from 'node:child_process';
import { connect as tcpConnect } from 'node:net';
import postgres from 'postgres';
import { ensureTemplate } from '../support/schema-template.ts';

/**
 * The integration suite needs real NATS (JetStream), Postgres with pgvector and Redis. It uses the
 * services given by URL (defaulting to the local ones that scripts/test brings up); where one does
 * not answer and a Docker engine does, it starts that one with testcontainers. Otherwise it stops
 * here, loudly, with the fix — it never skips. Then it migrates the chat and vector schema
 * templates once (tests/support/schema-template.ts), which every stack's schema is copied from.
 */
const SERVICES = [
  { env: 'NATS_URL', fallback: 'nats://127.0.0.1:4222', image: 'nats:2.10-alpine', port: 4222, cmd: ['-js'], scheme: 'nats' },
  {
    env: 'TEST_DATABASE_URL',
    fallback: 'postgres://postgres@127.0.0.1:5432/gatehouse_test',
    image: 'pgvector/pgvector:pg15',
    port: 5432,
    cmd: [],
    scheme: 'postgres',
  },
  { env: 'REDIS_URL', fallback: 'redis://127.0.0.1:6379', image: 'redis:7-alpine', port: 6379, cmd: [], scheme: 'redis' },
] as const;

function reachable(url: string): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const s = tcpConnect({ host: u.hostname, port: Number(u.port), timeout: 1500 });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('timeout', () => (s.destroy(), resolve(false)));
    s.once('error', () => resolve(false));
  });
}

function dockerAnswers(): boolean {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

export default async function setup(): Promise<() => Promise<void>> {
  const stops: (() => Promise<unknown>)[] = [];
  for (const s of SERVICES) {
    const url = process.env[s.env] ?? s.fallback;
    if (await reachable(url)) {
      process.env[s.env] = url;
      continue;
    }
    if (!dockerAnswers()) {
      throw new Error(
        `${s.env}: nothing answers at ${url.replace(/\/\/[^@]*@/, '//')} and no Docker engine runs for testcontainers. ` +
          `Fix: run the suite with scripts/test (it installs and starts NATS, Postgres+pgvector and Redis), ` +
          `or set ${s.env} to a running service.`,
      );
    }
    const { GenericContainer } = await import('testcontainers');
    let c = new GenericContainer(s.image).withExposedPorts(s.port);
    if (s.cmd.length) c = c.withCommand([...s.cmd]);
    if (s.scheme === 'postgres') c = c.withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust', POSTGRES_DB: 'gatehouse_test' });
    const started = await c.start();
    stops.push(() => started.stop());
    const host = `${started.getHost()}:${started.getMappedPort(s.port)}`;
    process.env[s.env] =
      s.scheme === 'postgres' ? `postgres://postgres@${host}/gatehouse_test` : `${s.scheme}://${host}`;
  }
  const databaseUrl = process.env.TEST_DATABASE_URL!;
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
  try {
    for (const folder of ['chat', 'vector']) await ensureTemplate(sql, databaseUrl, folder);
  } finally {
    await sql.end({ timeout: 5 });
  }
  return async () => {
    await Promise.allSettled(stops.map((stop) => stop()));
  };
}
