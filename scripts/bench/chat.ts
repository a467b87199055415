import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHAT_CATALOG, type ChatCatalogEntry, type ChatOp, type ChatOpRequest } from '@gatehouse/contracts';
import { BusError, createLogger } from '@gatehouse/common';
import { type Proc, Stack, testDatabaseUrl } from '../../tests/support/local-stack.ts';
import { startChatBefore } from './chat-before.ts';
import { cpuMs, ms, pct, waitQuiet } from './measure.ts';
import { openChatDb } from '../../services/chat-worker/src/db.ts';
import { loadSettings, type ChatSettings } from '../../services/chat-worker/src/config/settings.ts';
import { Outbox } from '../../services/chat-worker/src/events/outbox.ts';
import { localUploadStore } from '../../services/chat-worker/src/knowledge/uploads.ts';
import { USER_COLUMNS, checkedBody, type OpContext, type UserRow } from '../../services/chat-worker/src/context.ts';
import { accountsOps } from '../../services/chat-worker/src/auth/accounts.ops.ts';
import { scryptParamsFromEnv, useScryptParams } from '../../services/chat-worker/src/auth/passwords.ts';
import { memoriesOps } from '../../services/chat-worker/src/memories/memories.ops.ts';
import { foldersOps } from '../../services/chat-worker/src/folders/folders.ops.ts';

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
 * The baseline reads the settings as the worker does, from memory (loaded once here; the worker
 * follows them live); BENCH_CHAT_DIRECT_SETTINGS=query makes it query them on every operation, as
 * the baseline did until 2026-11-27 night (a round trip the worker does not make), and =both runs
 * that as one more arm beside the default (its row says what the stack's ratio is against it).
 * BENCH_CHAT_BEFORE=<checkout>: an edge + chat worker started from another checkout (e.g. a
 * worktree of main) on the same schema, users and tokens, in a namespace of their own, measured as
 * a third arm in the same slices (the order of the arms rotates every slice).
 */
const USERS = Number(process.env.BENCH_CHAT_USERS ?? 16);
const OPS = Number(process.env.BENCH_CHAT_OPS ?? 800);
const SIGNIN_OPS = Math.max(USERS, Math.floor(OPS / 5));
const MEMORIES = Number(process.env.BENCH_CHAT_MEMORIES ?? 50);
const ROUNDS = Number(process.env.BENCH_CHAT_ROUNDS ?? 8);
const PICK = (process.env.BENCH_CHAT_PHASES ?? '').split(',').map((w) => w.trim()).filter(Boolean);
const BEFORE = process.env.BENCH_CHAT_BEFORE;
/** memory (default) | query | both (a second direct arm that queries them, for comparison with earlier runs). */
const DIRECT_SETTINGS = process.env.BENCH_CHAT_DIRECT_SETTINGS ?? 'memory';
const PHASE_MS = 90_000;
// The in-process baseline hashes with the worker's scrypt cost (main.ts does the same at start-up).
useScryptParams(scryptParamsFromEnv(process.env));
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

/** Read and write system calls of a process so far (/proc/<pid>/io: read/readv and write/writev on its sockets and files). */
function syscalls(pid: number | undefined): { r: number; w: number } {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    return { r: Number(/^syscr: (\d+)/m.exec(io)?.[1]), w: Number(/^syscw: (\d+)/m.exec(io)?.[1]) };
  } catch {
    return { r: NaN, w: NaN };
  }
}

/** A node:http client with keep-alive (one socket per user) for one edge: every answer must be a 200 with JSON. */
function client(base: string, sockets: number) {
  // node:http, not fetch: the client's own CPU competes with the stack for the same two cores,
  // and fetch costs several times what http.request does.
  const url = new URL(base);
  const agent = new Agent({ keepAlive: true, maxSockets: sockets });
  return (path: string, token: string | undefined, body?: unknown): Promise<unknown> =>
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
}

async function main(): Promise<void> {
  const stack = new Stack();
  const beforeProcs: Proc[] = [];
  try {
    const worker = await stack.startChatWorker();
    const edge = await stack.startEdge({ EDGE_FACES: 'chat', SIGNIN_RATE_LIMIT_PER_ACCOUNT: '1000000', SIGNIN_RATE_LIMIT_PER_ADDRESS: '1000000' });
    const call = client(edge.chatUrl, USERS + 1);
    const before = BEFORE
      ? await startChatBefore(BEFORE, stack, beforeProcs, {
          CHAT_SCHEMA: `chat_${stack.ns}`,
          WEBUI_SECRET_KEY_FILE: join(tmpdir(), `gatehouse-${stack.ns}-webui-secret-key`),
          SIGNIN_RATE_LIMIT_PER_ACCOUNT: '1000000',
          SIGNIN_RATE_LIMIT_PER_ADDRESS: '1000000',
        })
      : undefined;
    const callBefore = before ? client(before.url, USERS + 1) : undefined;
    if (before) say(`before: ${BEFORE} (edge ${before.url})`);

    // The worker's own code on its own pool, in this process: the baseline.
    const schema = `chat_${stack.ns}`;
    const sql = openChatDb(testDatabaseUrl(), schema, 10);
    const outbox = new Outbox('bench-direct', `${schema}_outbox`);
    const log = createLogger('bench', 'warn');
    // The measured operations touch no files; the stores are there because every context has them.
    const blobs = { uploads: localUploadStore(join(tmpdir(), `gatehouse-${stack.ns}-bench-uploads`)), bus: await stack.busHandle(), maxFileBytes: null, maxFileLabel: '' };
    // As the worker reads them (settings.ts LiveSettings: from memory, followed live), unless asked otherwise.
    const settingsNow = await loadSettings(sql);
    const fromMemory = () => Promise.resolve(settingsNow);
    const queried = () => loadSettings(sql);
    const direct = async (op: ChatOp, user: UserRow | null, body: unknown, settingsQueried = DIRECT_SETTINGS === 'query'): Promise<unknown> => {
      const settings: () => Promise<ChatSettings> = settingsQueried ? queried : fromMemory;
      // As the worker dispatches: the body parsed by the entry's form, then the handler.
      const handler = ({ ...accountsOps, ...memoriesOps, ...foldersOps } as unknown as Partial<Record<ChatOp, (req: ChatOpRequest, ctx: OpContext) => Promise<{ body: unknown }>>>)[op]!;
      const form = (CHAT_CATALOG[op] as ChatCatalogEntry).body;
      const req: ChatOpRequest = { identity: user && { userId: user.id, jti: 'bench', expiresAt: null }, params: {}, query: {}, body: form ? checkedBody(form, body) : undefined, client: { ip: '127.0.0.1', userAgent: 'bench' } };
      const ctx: OpContext = { sql, searchSql: sql, user, settings, emit: outbox.emitChecked, log, ingest: { enqueue: async () => undefined }, blobs, saved: { settings: false } };
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

    type Call = typeof call;
    type Phase = { name: string; count: number; http: (c: Call, u: User, i: number) => Promise<unknown>; direct: (u: User, i: number, settingsQueried?: boolean) => Promise<unknown> };
    const phases: Phase[] = [
      {
        name: 'sign-in (scrypt 2^15)',
        count: SIGNIN_OPS,
        http: (c, u) => c('/api/v1/auths/signin', undefined, { email: u.email, password: u.password }),
        direct: (u, _i, q) => direct('auths.signin', null, { email: u.email, password: u.password }, q),
      },
      {
        name: 'memory add',
        count: OPS,
        http: (c, u, i) => c('/api/v1/memories/add', u.token, { content: `${sentence(i)} ${randomUUID()}` }),
        direct: (u, i, q) => direct('memories.add', u.row, { content: `${sentence(i)} ${randomUUID()}` }, q),
      },
      {
        name: 'memory query (k=3)',
        count: OPS,
        http: (c, u, i) => c('/api/v1/memories/query', u.token, { content: sentence(i * 5), k: 3 }),
        direct: (u, i, q) => direct('memories.query', u.row, { content: sentence(i * 5), k: 3 }, q),
      },
      {
        name: 'folder list (20)',
        count: OPS,
        http: (c, u) => c('/api/v1/folders/', u.token),
        direct: (u, _i, q) => direct('folders.list', u.row, null, q),
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

    /** One way of running a phase's operation, with the processes whose CPU it costs. */
    interface Arm {
      label: string;
      fn: (p: Phase) => (u: User, i: number) => Promise<unknown>;
      pids?: { edge: number | undefined; worker: number | undefined };
      lat: number[];
      secs: number;
      cpu: { edge: number; worker: number; self: number };
      /** System calls (reads + writes) of the edge and the worker. */
      sys: { edge: { r: number; w: number }; worker: { r: number; w: number } };
    }
    const arms = (): Arm[] => {
      const zero = () => ({ lat: [] as number[], secs: 0, cpu: { edge: 0, worker: 0, self: 0 }, sys: { edge: { r: 0, w: 0 }, worker: { r: 0, w: 0 } } });
      const list: Arm[] = [{ label: 'stack', fn: (p) => (u, i) => p.http(call, u, i), pids: { edge: edge.proc.child.pid, worker: worker.child.pid }, ...zero() }];
      if (before && callBefore) list.push({ label: 'before', fn: (p) => (u, i) => p.http(callBefore, u, i), pids: { edge: before.edge.child.pid, worker: before.worker.child.pid }, ...zero() });
      list.push({ label: 'direct', fn: (p) => (u, i) => p.direct(u, i), ...zero() });
      if (DIRECT_SETTINGS === 'both') list.push({ label: 'direct, settings queried', fn: (p) => (u, i) => p.direct(u, i, true), ...zero() });
      return list;
    };

    const rows: string[] = [];
    for (const p of phases.filter((ph) => !PICK.length || PICK.some((w) => ph.name.includes(w)))) {
      const all = arms();
      // Warm every path (JIT, pools, keep-alive sockets) before measuring.
      for (const a of all) await run(a.fn(p), USERS * 2);
      await waitQuiet(p.name, 10_000, say);
      // The arms take turns in ROUNDS slices of count/ROUNDS, the order rotating every slice, so a
      // burst of someone else's load on the shared machine falls on all alike; req/s is operations
      // over the time spent. CPU: the edge and worker from /proc, this process (the HTTP client, or
      // the operation itself for direct) from process.cpuUsage.
      const slice = Math.max(USERS, Math.ceil(p.count / ROUNDS));
      for (let r = 0; r < ROUNDS; r++) {
        for (let k = 0; k < all.length; k++) {
          const a = all[(r + k) % all.length]!;
          const cpu0 = { edge: cpuMs(a.pids?.edge), worker: cpuMs(a.pids?.worker), self: process.cpuUsage() };
          const sys0 = { edge: syscalls(a.pids?.edge), worker: syscalls(a.pids?.worker) };
          const t0 = performance.now();
          const x = await run(a.fn(p), slice);
          a.secs += (performance.now() - t0) / 1000;
          a.lat.push(...x.lat);
          if (a.pids) {
            a.cpu.edge += cpuMs(a.pids.edge) - cpu0.edge;
            a.cpu.worker += cpuMs(a.pids.worker) - cpu0.worker;
            for (const who of ['edge', 'worker'] as const) {
              const now = syscalls(a.pids[who]);
              a.sys[who].r += now.r - sys0[who].r;
              a.sys[who].w += now.w - sys0[who].w;
            }
          }
          const c = process.cpuUsage(cpu0.self);
          a.cpu.self += (c.user + c.system) / 1000;
        }
      }
      const d = all.find((a) => a.label === 'direct')!;
      const dRps = d.lat.length / d.secs;
      const stackRps = all[0]!.lat.length / all[0]!.secs;
      for (const a of all.filter((x) => x !== d && !x.label.startsWith('direct'))) {
        const n = a.lat.length;
        const rps = n / a.secs;
        say(`${p.name} (${a.label}): ${ms(pct(a.lat, 50))}, direct ${ms(pct(d.lat, 50))}`);
        rows.push(
          `| ${p.name}${a.label === 'stack' ? '' : ` (${a.label})`} | ${n} | ${ms(pct(a.lat, 50))} / ${ms(pct(a.lat, 99))} | ${ms(pct(d.lat, 50))} / ${ms(pct(d.lat, 99))} | ` +
            `${ms(pct(a.lat, 50) - pct(d.lat, 50))} | ${rps.toFixed(0)} | ${dRps.toFixed(0)} | ${(rps / dRps).toFixed(2)}× | ` +
            `${(a.cpu.edge / n).toFixed(2)} + ${(a.cpu.worker / n).toFixed(2)} | ${(a.cpu.self / n).toFixed(2)} | ${(d.cpu.self / d.lat.length).toFixed(2)} |` +
            ` ${(a.sys.edge.r / n).toFixed(2)} / ${(a.sys.edge.w / n).toFixed(2)} | ${(a.sys.worker.r / n).toFixed(2)} / ${(a.sys.worker.w / n).toFixed(2)} |` +
            (before ? ` ${a.label === 'stack' ? '' : `stack ${(stackRps / rps).toFixed(2)}× this`} |` : ''),
        );
      }
      const q = all.find((a) => a.label === 'direct, settings queried');
      if (q) {
        const qRps = q.lat.length / q.secs;
        rows.push(`| ${p.name} (direct, settings queried per operation: the baseline before 2026-11-27 night) | ${q.lat.length} | | ${ms(pct(q.lat, 50))} / ${ms(pct(q.lat, 99))} | | | ${qRps.toFixed(0)} | stack ${(stackRps / qRps).toFixed(2)}× this | | | ${(q.cpu.self / q.lat.length).toFixed(2)} | | |${before ? ' |' : ''}`);
      }
    }
    console.log(`\nChat face, ${USERS} users in flight (one request each at a time)${before ? `; before = ${BEFORE}` : ''}; baseline settings ${DIRECT_SETTINGS === 'query' ? 'queried per operation' : 'from memory'}\n`);
    console.log(`| operation | n | stack p50 / p99 | direct p50 / p99 | added p50 | stack req/s | direct req/s | stack/direct | CPU ms/op edge + worker | CPU ms/op HTTP client | CPU ms/op direct | edge reads / writes per op | worker reads / writes per op |${before ? ' after vs before req/s |' : ''}`);
    console.log(`|---|---|---|---|---|---|---|---|---|---|---|---|---|${before ? '---|' : ''}`);
    for (const r of rows) console.log(r);
    await sql.end({ timeout: 5 });
  } finally {
    await Promise.allSettled(beforeProcs.map((p) => p.stop()));
    await stack.close();
  }
}

await main();
