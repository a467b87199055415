import { randomBytes, randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHAT_CATALOG, type ChatOp, type ChatOpRequest } from '@gatehouse/contracts';
import { BusError, createLogger } from '@gatehouse/common';
import { Stack, testDatabaseUrl } from '../src/local-stack.ts';
import { cpuMs, ms, pct, waitQuiet } from './measure.ts';
import { openChatDb } from '../../services/chat-worker/src/db.ts';
import { loadSettings } from '../../services/chat-worker/src/settings.ts';
import { Outbox } from '../../services/chat-worker/src/events/outbox.ts';
import { localUploadStore } from '../../services/chat-worker/src/knowledge/upload-store.ts';
import { USER_COLUMNS, type OpContext, type OpHandler, type UserRow } from '../../services/chat-worker/src/context.ts';
import { accountsOps } from '../../services/chat-worker/src/ops/accounts.ts';
import { memoriesOps } from '../../services/chat-worker/src/ops/memories.ts';
import { foldersOps } from '../../services/chat-worker/src/ops/folders.ts';

/**
 * Chat face benchmark: sign-in, memory add, memory query and folder list, with USERS signed-in
 * users in flight at once (each its own session), through the stack — HTTP → edge (token check,
 * revocation check (from memory while the Redis channel is up), form validation; for sign-in the rate limiter and token minting) →
 * NATS → chat worker (loads the caller, runs the operation) → Postgres — against the baseline of
 * the same worker operation called in this process on its own pool: the same SQL, the same scrypt,
 * the same outbox writes, with no HTTP, no edge and no bus. Same users, same data, same number in
 * flight; stack and direct alternate in slices (BENCH_CHAT_ROUNDS) within each operation.
 * The sign-in rate limit is raised for the run (it would otherwise stop a benchmark after 15
 * attempts per account); its Redis script still runs on every stack sign-in.
 * Loopback only; each phase is bounded by count (OPS) and time (PHASE_MS); a watchdog ends the run.
 * Env: BENCH_CHAT_USERS (16), BENCH_CHAT_OPS (per phase, 800; sign-in 160), BENCH_CHAT_MEMORIES
 * (per user before the query phase, 50), BENCH_CHAT_PHASES (comma-separated words that pick phases by
 * name, e.g. `folder,query`; all when unset), BENCH_CHAT_ROUNDS (8: stack and direct alternate in
 * that many slices per phase).
 */
const USERS = Number(process.env.BENCH_CHAT_USERS ?? 16);
const OPS = Number(process.env.BENCH_CHAT_OPS ?? 800);
const SIGNIN_OPS = Math.max(USERS, Math.floor(OPS / 5));
const MEMORIES = Number(process.env.BENCH_CHAT_MEMORIES ?? 50);
const ROUNDS = Number(process.env.BENCH_CHAT_ROUNDS ?? 8);
const PICK = (process.env.BENCH_CHAT_PHASES ?? '').split(',').map((w) => w.trim()).filter(Boolean);
const PHASE_MS = 90_000;
const watchdog = setTimeout(() => {
  console.error('[bench] watchdog: the run took longer than 15 minutes; stopping');
  process.exit(2);
}, 15 * 60_000);
watchdog.unref();
const say = (s: string) => console.error(`[bench] ${s}`);

const WORDS = 'lighthouse harbour tide compass lantern orchard meadow granite violin saffron glacier ember falcon prairie canyon pepper'.split(' ');
const sentence = (i: number) => Array.from({ length: 8 }, (_, k) => WORDS[(i * 7 + k * 3) % WORDS.length]).join(' ');

interface User {
  id: string;
  email: string;
  password: string;
  token: string;
  row: UserRow;
}

async function main(): Promise<void> {
  const stack = new Stack();
  try {
    const worker = await stack.startChatWorker();
    const edge = await stack.startEdge({ EDGE_FACES: 'chat', SIGNIN_RATE_LIMIT_PER_ACCOUNT: '1000000', SIGNIN_RATE_LIMIT_PER_ADDRESS: '1000000' });
    const base = edge.chatUrl;
    // node:http with keep-alive (one socket per user), not fetch: the client's own CPU competes
    // with the stack for the same two cores, and fetch costs several times what http.request does.
    const url = new URL(base);
    const agent = new Agent({ keepAlive: true, maxSockets: USERS + 1 });
    const call = (path: string, token: string | undefined, body?: unknown): Promise<unknown> =>
      new Promise((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const headers: Record<string, string | number> = { ...(token ? { authorization: `Bearer ${token}` } : {}) };
        if (payload !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
        const req = request({ host: url.hostname, port: url.port, path, method: payload === undefined ? 'GET' : 'POST', agent, headers }, (res) => {
          const parts: Buffer[] = [];
          res.on('data', (d: Buffer) => parts.push(d));
          res.on('end', () => {
            const text = Buffer.concat(parts).toString('utf8');
            if (res.statusCode !== 200) return reject(new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 200)}`));
            try {
              resolve(JSON.parse(text));
            } catch (err) {
              reject(err as Error);
            }
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(payload);
      });

    // The worker's own code on its own pool, in this process: the baseline.
    const schema = `chat_${stack.ns}`;
    const sql = openChatDb(testDatabaseUrl(), schema, 10);
    const outbox = new Outbox('bench-direct', `${schema}_outbox`);
    const log = createLogger('bench', 'warn');
    // The measured operations touch no files; the stores are there because every context has them.
    const blobs = { uploads: localUploadStore(join(tmpdir(), `gatehouse-${stack.ns}-bench-uploads`)), bus: await stack.busHandle(), maxFileBytes: null, maxFileLabel: '' };
    const direct = async (op: ChatOp, user: UserRow | null, body: unknown): Promise<unknown> => {
      const handler = ({ ...accountsOps, ...memoriesOps, ...foldersOps } as Partial<Record<ChatOp, OpHandler>>)[op]!;
      const req: ChatOpRequest = { identity: user && { userId: user.id, jti: 'bench', expiresAt: null }, params: {}, query: {}, body, client: { ip: '127.0.0.1', userAgent: 'bench' } };
      const ctx: OpContext = { sql, user, settings: () => loadSettings(sql), emit: outbox.emitChecked, log, ingest: { enqueue: async () => undefined }, blobs };
      if (CHAT_CATALOG[op].auth === 'none' && user) throw new Error('sign-in runs without a user');
      try {
        return (await handler(req, ctx)).body;
      } catch (err) {
        throw err instanceof BusError ? new Error(`${op}: ${err.status} ${err.message}`) : err;
      }
    };

    say(`creating ${USERS} users, ${MEMORIES} memories and 20 folders each`);
    const adminPw = randomBytes(12).toString('base64url');
    const admin = (await call('/api/v1/auths/signup', undefined, { name: 'Bench Admin', email: `admin-${stack.ns}@bench.test`, password: adminPw })) as { token: string };
    const users: User[] = [];
    for (let i = 0; i < USERS; i++) {
      const u = { name: `User ${i}`, email: `u${i}-${stack.ns}@bench.test`, password: randomBytes(12).toString('base64url'), role: 'user' };
      const r = (await call('/api/v1/auths/add', admin.token, u)) as { id: string; token: string };
      const [row] = await sql<UserRow[]>`select ${sql(USER_COLUMNS as unknown as string[])} from "user" where id = ${r.id}`;
      users.push({ id: r.id, email: u.email, password: u.password, token: r.token, row: row! });
    }
    await Promise.all(users.map(async (u) => {
      for (let m = 0; m < MEMORIES; m++) await call('/api/v1/memories/add', u.token, { content: sentence(m + users.indexOf(u)), type: 'user' });
      for (let f = 0; f < 20; f++) await call('/api/v1/folders/', u.token, { name: `Folder ${f}` });
    }));

    type Phase = { name: string; count: number; stack: (u: User, i: number) => Promise<unknown>; direct: (u: User, i: number) => Promise<unknown> };
    const phases: Phase[] = [
      {
        name: 'sign-in (scrypt 2^15)',
        count: SIGNIN_OPS,
        stack: (u) => call('/api/v1/auths/signin', undefined, { email: u.email, password: u.password }),
        direct: (u) => direct('auths.signin', null, { email: u.email, password: u.password }),
      },
      {
        name: 'memory add',
        count: OPS,
        stack: (u, i) => call('/api/v1/memories/add', u.token, { content: `${sentence(i)} ${randomUUID()}` }),
        direct: (u, i) => direct('memories.add', u.row, { content: `${sentence(i)} ${randomUUID()}` }),
      },
      {
        name: 'memory query (k=3)',
        count: OPS,
        stack: (u, i) => call('/api/v1/memories/query', u.token, { content: sentence(i * 5), k: 3 }),
        direct: (u, i) => direct('memories.query', u.row, { content: sentence(i * 5), k: 3 }),
      },
      {
        name: 'folder list (20)',
        count: OPS,
        stack: (u) => call('/api/v1/folders/', u.token),
        direct: (u) => direct('folders.list', u.row, null),
      },
    ];

    /** `count` operations, USERS in flight (one per user), bounded by PHASE_MS. */
    const run = async (fn: (u: User, i: number) => Promise<unknown>, count: number) => {
      const lat: number[] = [];
      let next = 0;
      const t0 = performance.now();
      await Promise.all(users.map(async (u) => {
        while (next < count && performance.now() - t0 < PHASE_MS) {
          const i = next++;
          const s = performance.now();
          await fn(u, i);
          lat.push(performance.now() - s);
        }
      }));
      return { lat, rps: lat.length / ((performance.now() - t0) / 1000) };
    };

    const rows: string[] = [];
    for (const p of phases.filter((ph) => !PICK.length || PICK.some((w) => ph.name.includes(w)))) {
      // Warm both paths (JIT, pools, keep-alive sockets) before measuring.
      await run(p.stack, USERS * 2);
      await run(p.direct, USERS * 2);
      await waitQuiet(p.name, 10_000, say);
      // Stack and direct alternate in ROUNDS slices of count/ROUNDS, so a burst of someone else's
      // load on the shared machine falls on both alike; req/s is operations over the time spent.
      const s = { lat: [] as number[], secs: 0, rps: 0 };
      const d = { lat: [] as number[], secs: 0, rps: 0 };
      let cpuEdge = 0, cpuWorker = 0, cpuClient = 0, cpuDirect = 0;
      const slice = Math.max(USERS, Math.ceil(p.count / ROUNDS));
      for (let r = 0; r < ROUNDS; r++) {
        const stackSlice = async () => {
          const cpu0 = { edge: cpuMs(edge.proc.child.pid), worker: cpuMs(worker.child.pid), client: process.cpuUsage() };
          const t0 = performance.now();
          const x = await run(p.stack, slice);
          s.secs += (performance.now() - t0) / 1000;
          s.lat.push(...x.lat);
          cpuEdge += cpuMs(edge.proc.child.pid) - cpu0.edge;
          cpuWorker += cpuMs(worker.child.pid) - cpu0.worker;
          const c = process.cpuUsage(cpu0.client);
          cpuClient += (c.user + c.system) / 1000;
        };
        const directSlice = async () => {
          const self0 = process.cpuUsage();
          const t0 = performance.now();
          const x = await run(p.direct, slice);
          d.secs += (performance.now() - t0) / 1000;
          d.lat.push(...x.lat);
          const c = process.cpuUsage(self0);
          cpuDirect += (c.user + c.system) / 1000;
        };
        if (r % 2) {
          await directSlice();
          await stackSlice();
        } else {
          await stackSlice();
          await directSlice();
        }
      }
      s.rps = s.lat.length / s.secs;
      d.rps = d.lat.length / d.secs;
      cpuEdge /= s.lat.length;
      cpuWorker /= s.lat.length;
      cpuClient /= s.lat.length;
      cpuDirect /= d.lat.length;
      say(`${p.name}: stack ${ms(pct(s.lat, 50))}, direct ${ms(pct(d.lat, 50))}`);
      rows.push(
        `| ${p.name} | ${s.lat.length} | ${ms(pct(s.lat, 50))} / ${ms(pct(s.lat, 99))} | ${ms(pct(d.lat, 50))} / ${ms(pct(d.lat, 99))} | ` +
          `${ms(pct(s.lat, 50) - pct(d.lat, 50))} | ${s.rps.toFixed(0)} | ${d.rps.toFixed(0)} | ${(s.rps / d.rps).toFixed(2)}× | ` +
          `${cpuEdge.toFixed(2)} + ${cpuWorker.toFixed(2)} | ${cpuClient.toFixed(2)} | ${cpuDirect.toFixed(2)} |`,
      );
    }
    console.log(`\nChat face, ${USERS} users in flight (one request each at a time)\n`);
    console.log('| operation | n | stack p50 / p99 | direct p50 / p99 | added p50 | stack req/s | direct req/s | stack/direct | CPU ms/op edge + worker | CPU ms/op HTTP client | CPU ms/op direct |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
    await sql.end({ timeout: 5 });
  } finally {
    await stack.close();
  }
}

await main();
