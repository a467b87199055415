import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tcpConnect } from 'node:net';
import { promisify } from 'node:util';
import { freePort, waitFor } from '../../tests/support/local-stack.ts';

/**
 * Private, restartable infrastructure for the fault suite (tests/faults): a NATS server with
 * JetStream, a Redis and a throwaway Postgres 15 cluster, each on a free loopback port with its
 * data in a temporary directory. The fault scenarios stop and start these; the shared services
 * (4222, 5432, 6379) that other tests and engineers use are never touched.
 */
const run = promisify(execFile);

const NATS_BINS = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'];
const REDIS_BIN = '/usr/bin/redis-server';
const PG_BIN = process.env.GATEHOUSE_PG_BIN ?? '/usr/lib/postgresql/15/bin';

const portOpen = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = tcpConnect({ host: '127.0.0.1', port, timeout: 500 });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('timeout', () => (s.destroy(), resolve(false)));
    s.once('error', () => resolve(false));
  });

const exited = (p: ChildProcess) => new Promise<void>((r) => (p.exitCode !== null || p.signalCode !== null ? r() : p.once('exit', () => r())));

/** A NATS server with JetStream on a file store, as deployed; its data survives a restart. */
export class PrivateNats {
  private proc: ChildProcess | undefined;
  private constructor(
    readonly port: number,
    readonly monitor: number,
    readonly dir: string,
  ) {}
  static async start(): Promise<PrivateNats> {
    const n = new PrivateNats(await freePort(), await freePort(), mkdtempSync(join(tmpdir(), 'gatehouse-faults-nats-')));
    await n.start();
    return n;
  }
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }
  async start(): Promise<void> {
    const bin = NATS_BINS.find((b) => existsSync(b));
    if (!bin) throw new Error('nats-server is not installed (scripts/start installs it)');
    this.proc = spawn(bin, ['-a', '127.0.0.1', '-p', String(this.port), '-m', String(this.monitor), '-js', '-sd', this.dir], { stdio: 'ignore' });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${this.monitor}/healthz`).catch(() => undefined))?.ok === true, 20_000, () => 'private nats-server did not start');
  }
  /** SIGTERM (a clean shutdown, JetStream flushed) or SIGKILL. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const p = this.proc;
    if (!p) return;
    this.proc = undefined;
    p.kill(signal);
    await exited(p);
  }
  async close(): Promise<void> {
    await this.stop('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A Redis without persistence: a restart starts it empty, as `--save '' --appendonly no` says. */
export class PrivateRedis {
  private proc: ChildProcess | undefined;
  private constructor(readonly port: number) {}
  static async start(): Promise<PrivateRedis> {
    const r = new PrivateRedis(await freePort());
    await r.start();
    return r;
  }
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
  async start(): Promise<void> {
    this.proc = spawn(REDIS_BIN, ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await waitFor(() => portOpen(this.port), 20_000, () => 'private redis-server did not start');
  }
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.proc;
    if (!p) return;
    this.proc = undefined;
    p.kill(signal);
    await exited(p);
  }
  close(): Promise<void> {
    return this.stop('SIGKILL');
  }
}

/**
 * A throwaway Postgres 15 cluster (trust on loopback, pgvector from the system's extension
 * directory). Postgres refuses to run as root, so as root it runs as the `postgres` OS user.
 */
export class PrivatePostgres {
  private constructor(
    readonly port: number,
    readonly dir: string,
  ) {}
  static async start(): Promise<PrivatePostgres> {
    const parent = mkdtempSync(join(tmpdir(), 'gatehouse-faults-pg-'));
    const pg = new PrivatePostgres(await freePort(), join(parent, 'data'));
    if (process.getuid?.() === 0) chownSync(parent, ...(await pg.postgresIds()));
    await pg.as(`${PG_BIN}/initdb`, ['-D', pg.dir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    await pg.start();
    await pg.psql('postgres', 'create database gatehouse_test');
    return pg;
  }
  url(db = 'gatehouse_test'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${db}`;
  }
  private async postgresIds(): Promise<[number, number]> {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: g } = await run('id', ['-g', 'postgres']);
    return [Number(stdout.trim()), Number(g.trim())];
  }
  private as(bin: string, args: string[]) {
    return process.getuid?.() === 0 ? run('runuser', ['-u', 'postgres', '--', bin, ...args], { cwd: '/' }) : run(bin, args, { cwd: '/' });
  }
  psql(db: string, sql: string) {
    return this.as(`${PG_BIN}/psql`, ['-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres', '-d', db, '-v', 'ON_ERROR_STOP=1', '-qc', sql]);
  }
  async start(): Promise<void> {
    // Its socket lives in its own data directory: the system cluster's /var/run/postgresql is not ours.
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    await this.as(`${PG_BIN}/pg_ctl`, ['-D', this.dir, '-o', opts, '-l', join(this.dir, 'server.log'), '-w', '-t', '60', 'start']);
  }
  /** `immediate`: as a crash (no checkpoint, clients cut); `fast`: a clean shutdown. */
  async stop(mode: 'immediate' | 'fast' = 'immediate'): Promise<void> {
    await this.as(`${PG_BIN}/pg_ctl`, ['-D', this.dir, '-m', mode, '-w', '-t', '60', 'stop']).catch(() => undefined);
  }
  async close(): Promise<void> {
    await this.stop('immediate');
    rmSync(join(this.dir, '..'), { recursive: true, force: true });
  }
}

export interface PrivateInfra {
  nats: PrivateNats;
  redis: PrivateRedis;
  pg: PrivatePostgres;
  /** What a Stack needs to use them (new Stack(infra.urls())). */
  urls(): { natsUrl: string; databaseUrl: string; redisUrl: string };
  close(): Promise<void>;
}

export async function startPrivateInfra(): Promise<PrivateInfra> {
  const [nats, redis, pg] = await Promise.all([PrivateNats.start(), PrivateRedis.start(), PrivatePostgres.start()]);
  return {
    nats,
    redis,
    pg,
    urls: () => ({ natsUrl: nats.url, databaseUrl: pg.url(), redisUrl: redis.url }),
    close: async () => {
      await Promise.allSettled([nats.close(), redis.close(), pg.close()]);
    },
  };
}
