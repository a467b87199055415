/** postgres.js on the sockets of pg-socket.ts: TCP (each host in turn), a Unix socket, errors. */
import { existsSync } from 'node:fs';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { NO_DELAY } from './pg-socket.ts';
import { TEST_DATABASE_URL } from './test-support.ts';

const one = async (url: string, opts: object = {}) => {
  const sql = postgres(url, { onnotice: () => {}, max: 1, connect_timeout: 5, ...NO_DELAY, ...opts });
  try {
    return (await sql<{ n: number }[]>`select 41 + 1 as n`)[0]!.n;
  } finally {
    await sql.end({ timeout: 1 });
  }
};

describe('noDelaySocket', () => {
  it('connects over TCP and runs queries, a COPY among them', async () => {
    expect(await one(TEST_DATABASE_URL)).toBe(42);
    const sql = postgres(TEST_DATABASE_URL, { onnotice: () => {}, max: 1, ...NO_DELAY });
    try {
      const n = await sql.begin(async (tx) => {
        await tx`create temp table t (x int) on commit drop`;
        const s = await tx`copy t from stdin`.writable();
        s.end('1\n2\n3\n');
        await new Promise((resolve, reject) => s.on('finish', resolve).on('error', reject));
        return (await tx<{ n: number }[]>`select sum(x)::int as n from t`)[0]!.n;
      });
      expect(n).toBe(6);
    } finally {
      await sql.end();
    }
  });

  it('tries each host in turn', async () => {
    const u = new URL(TEST_DATABASE_URL);
    expect(await one(`postgres://${u.username}@127.0.0.1:1,${u.host}${u.pathname}`)).toBe(42);
  });

  it('a refused connection is the query’s error', async () => {
    await expect(one('postgres://postgres@127.0.0.1:1/gatehouse_test')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('a pool whose server was away serves again once it is back (the fault suite’s Postgres restart)', async () => {
    const free = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as net.AddressInfo;
        s.close(() => resolve(port));
      });
    });
    const target = new URL(TEST_DATABASE_URL);
    const sql = postgres(`postgres://${target.username}@127.0.0.1:${free}${target.pathname}`, { onnotice: () => {}, max: 1, connect_timeout: 5, ...NO_DELAY });
    // A loopback relay to the real server on that port, started after the first query failed.
    const relay = net.createServer((client) => {
      const server = net.connect({ host: target.hostname, port: Number(target.port || 5432) });
      client.pipe(server).pipe(client);
      client.on('error', () => server.destroy());
      server.on('error', () => client.destroy());
    });
    try {
      await expect(sql`select 1`).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      await new Promise<void>((resolve) => relay.listen(free, '127.0.0.1', resolve));
      let timer: NodeJS.Timeout | undefined;
      const answer = await Promise.race([
        sql<{ n: number }[]>`select 41 + 1 as n`.then((r) => r[0]!.n),
        new Promise<string>((resolve) => (timer = setTimeout(() => resolve('no answer in 10 s'), 10_000))),
      ]).finally(() => clearTimeout(timer));
      expect(answer).toBe(42);
    } finally {
      await sql.end({ timeout: 1 });
      relay.close();
    }
  });

  it.skipIf(!existsSync('/var/run/postgresql/.s.PGSQL.5432'))('connects over a Unix socket', async () => {
    expect(await one(TEST_DATABASE_URL, { host: '/var/run/postgresql' })).toBe(42);
  });
});
