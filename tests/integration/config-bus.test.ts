import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { announceFrom, connectBus, createLogger, LiveConfig, openConfigStore, type Bus } from '@gatehouse/common';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, natsUrl, newKey, Stack, waitFor, type Edge, type Proc } from '../support/local-stack.ts';
import { startFakeOpenAI, type FakeUpstream } from '../../scripts/src/fake-upstreams/openai.ts';
import { startFakeOllama } from '../../scripts/src/fake-upstreams/ollama.ts';
import { chatClient, chatDb, PROHIBITED, type Account } from './chat-fixture.ts';

/**
 * Admin settings travel the bus (docs/config.md): every group has one source of truth, announced
 * in the config bucket with a revision; every replica applies it live and says which revision it
 * runs (`GET /api/v1/configs/status`). Two chat worker replicas and two proxy workers share one
 * stack; changes go through the chat face's API, as an admin makes them.
 */
const stack = new Stack();
let edge: Edge;
let admin: Account;
let user: Account;
let oa: FakeUpstream;
let db: Sql;
const chatWorkers: Proc[] = [];
const proxyWorkers: Proc[] = [];
const upstreamKey = newKey();
const { call, signup, addUser } = chatClient(() => edge.chatUrl);
// Short, so the test of a lost announcement (Postgres changed behind the bus's back) converges quickly.
const CHAT_ENV = { CONFIG_RECONCILE_MS: '300' };
// No connection from the environment: the Ollama default would be localhost:11434.
const PROXY_ENV = { ENABLE_OLLAMA_API: 'false' };

type Replica = { instance: string; service: string; pid: number; applied: Record<string, { revision: number; digest: string }>; in_step: boolean };
type Status = { groups: Record<string, { revision: number; digest: string; by: string }>; replicas: Replica[] };

async function status(): Promise<Status> {
  const r = await call('/api/v1/configs/status', admin);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as Status;
}

/** The replicas of `service` whose processes are running now (a stopped one lingers in presence until its TTL). */
function live(s: Status, service: string, procs: Proc[]): Replica[] {
  const pids = new Set(procs.filter((p) => p.running).map((p) => p.child.pid));
  return s.replicas.filter((r) => r.service === service && pids.has(r.pid));
}

/** Wait (bounded) until every running replica of `service` reports `group` at `revision` or later; returns the status. */
async function converged(service: string, procs: Proc[], group: string, revision: number): Promise<Status> {
  let last: Status | undefined;
  const expected = procs.filter((p) => p.running).length;
  await waitFor(
    async () => {
      last = await status();
      const rs = live(last, service, procs);
      return rs.length === expected && rs.every((r) => (r.applied[group]?.revision ?? 0) >= revision);
    },
    5000,
    () => `${service} replicas did not all reach ${group} revision ${revision}: ${JSON.stringify(last)}`,
  );
  return last!;
}

/** Wait (bounded) for a line in a process's log: it travels a pipe, slower than the bus at times. */
const logged = (p: Proc, text: string) => waitFor(() => p.log().includes(text), 5000, () => `${p.name} did not log "${text}":\n${p.log().slice(-2000)}`);

const modelIds = async (): Promise<string[]> => {
  const r = await call('/api/models?refresh=true', admin);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body.data as { id: string }[]).map((m) => m.id);
};

beforeAll(async () => {
  oa = await startFakeOpenAI({ apiKey: upstreamKey });
  proxyWorkers.push(await stack.startProxyWorker(PROXY_ENV), await stack.startProxyWorker(PROXY_ENV));
  chatWorkers.push(await stack.startChatWorker(CHAT_ENV), await stack.startChatWorker(CHAT_ENV, { ingest: false }));
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await signup();
  user = await addUser(admin, 'User');
  db = chatDb(stack);
}, 120_000);

afterAll(async () => {
  await db?.end({ timeout: 5 });
  await stack.close();
  await oa?.close();
});

describe('chat settings on the bus', () => {
  it('a setting changed through one replica applies on the other with no restart, and its revision shows', async () => {
    const before = await status();
    const start = before.groups['chat.settings']!.revision;
    expect(start).toBeGreaterThan(0);
    expect(live(before, 'chat-worker', chatWorkers).map((r) => r.applied['chat.settings']!.revision)).toEqual([start, start]);

    const mark = new Map(chatWorkers.map((w) => [w, w.log().length]));
    const set = await call('/api/v1/auths/admin/config', admin, 'POST', { ENABLE_MESSAGE_RATING: false, RESPONSE_WATERMARK: 'from the bus' });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.RESPONSE_WATERMARK).toBe('from the bus');

    // Exactly one replica wrote and announced it; find it, and the other one.
    const since = (w: Proc) => w.log().slice(mark.get(w));
    const saidSaved = (w: Proc) => /config chat\.settings: saved here, announced as revision \d+/.test(since(w));
    // The log line travels a pipe, the answer the bus and HTTP: it may arrive a moment later.
    await waitFor(() => chatWorkers.some(saidSaved), 5000, () => 'no replica logged the save');
    const announced = chatWorkers.filter(saidSaved);
    expect(announced).toHaveLength(1);
    const writer = announced[0]!;
    const other = chatWorkers.find((w) => w !== writer)!;
    const revision = Number(/saved here, announced as revision (\d+)/.exec(since(writer))![1]);
    expect(revision).toBeGreaterThan(start);

    const after = await converged('chat-worker', chatWorkers, 'chat.settings', revision);
    expect(after.groups['chat.settings']!.revision).toBe(revision);
    expect(after.groups['chat.settings']!.by).toMatch(/^chat-worker /);
    const replicas = live(after, 'chat-worker', chatWorkers);
    expect(replicas.every((r) => r.in_step && r.applied['chat.settings']!.digest === after.groups['chat.settings']!.digest)).toBe(true);
    // The other replica applied it from its watch, the same process that started with the stack.
    await logged(other, `config chat.settings: applied revision ${revision}`);

    // With the writer gone, the other replica alone answers: it runs the new settings.
    await writer.stop();
    const seen = await call('/api/v1/auths/admin/config', admin);
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({ ENABLE_MESSAGE_RATING: false, RESPONSE_WATERMARK: 'from the bus' });
    expect(other.running).toBe(true);

    // Back to two replicas: the new one loads the current revision at start-up.
    const again = await stack.startChatWorker(CHAT_ENV, { ingest: false });
    chatWorkers.push(again);
    const s = await converged('chat-worker', chatWorkers, 'chat.settings', revision);
    expect(live(s, 'chat-worker', chatWorkers).find((r) => r.pid === again.child.pid)!.applied['chat.settings']!.revision).toBe(revision);
  });

  it('a change that reached Postgres but never the bus (writer died before announcing) still reaches every replica', async () => {
    const start = (await status()).groups['chat.settings']!.revision;
    // What a writer leaves behind when it commits and dies before its announcement: the row only.
    await db`update config set value = ${db.json('written behind the bus')}, updated_at = ${Math.floor(Date.now() / 1000)} where key = 'RESPONSE_WATERMARK'`;
    const s = await converged('chat-worker', chatWorkers, 'chat.settings', start + 1);
    expect(s.groups['chat.settings']!.revision).toBeGreaterThan(start);
    for (let i = 0; i < 6; i++) expect((await call('/api/v1/auths/admin/config', admin)).body.RESPONSE_WATERMARK).toBe('written behind the bus');
  });
});

describe('the ingest worker follows the settings', () => {
  it('chunks an upload with the CHUNK_SIZE an admin set a moment ago, without a restart', async () => {
    const ingest = stack.ingest!;
    const set = await call('/api/v1/retrieval/config/update', admin, 'POST', { CHUNK_SIZE: 150, CHUNK_OVERLAP: 0 });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const revision = (await status()).groups['chat.settings']!.revision;
    await converged('ingest-worker', [ingest], 'chat.settings', revision);
    // Ten paragraphs of about 100 characters: one chunk each at 150, one or two at the default 1000.
    const text = Array.from({ length: 10 }, (_, i) => `Paragraph ${i} about lighthouses, harbours and tides, written to be close to one hundred chars.`).join('\n\n');
    const form = new FormData();
    form.append('file', new Blob([text], { type: 'text/plain' }), 'paragraphs.txt');
    const r = await fetch(`${edge.chatUrl}/api/v1/files/`, { method: 'POST', headers: { authorization: `Bearer ${admin.token}` }, body: form });
    const body = (await r.json()) as { id: string };
    expect(r.status, JSON.stringify(body)).toBe(200);
    await waitFor(
      async () => (await call(`/api/v1/files/${body.id}/process/status`, admin)).body?.status === 'completed',
      60_000,
      () => `the upload was not processed:\n${ingest.log().slice(-2000)}`,
    );
    const [row] = await db<{ n: number }[]>`select count(*)::int as n from file_chunk where file_id = ${body.id}`;
    expect(row!.n).toBe(10);
    await logged(ingest, `config chat.settings: applied revision ${revision}`);
  });
});

describe('scripts/config status', () => {
  it('lists each group’s revision and every live replica with the revision it runs, exit 0 when all are in step', async () => {
    // Every record is a running process in step (a stopped one withdraws its record, or it expires within 15 s).
    const running = [...chatWorkers, ...proxyWorkers, stack.ingest!].filter((p) => p.running).length;
    let s = await status();
    await waitFor(
      async () => {
        s = await status();
        return s.replicas.length === running && s.replicas.every((r) => r.in_step);
      },
      20_000,
      () => `replicas not all live and in step: ${JSON.stringify(s)}`,
    );
    const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve) =>
      execFile(join(import.meta.dirname, '..', '..', 'scripts', 'config'), ['status'], { env: { PATH: process.env.PATH, NATS_URL: natsUrl(), GATEHOUSE_NS: stack.ns }, timeout: 30_000 }, (err, out) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout: out }),
      ),
    );
    expect(code, stdout).toBe(0);
    expect(stdout).toContain(`chat.settings: revision ${s.groups['chat.settings']!.revision}, ${s.groups['chat.settings']!.digest.slice(0, 12)}`);
    for (const r of live(s, 'chat-worker', chatWorkers)) expect(stdout).toContain(`chat-worker ${r.instance} (pid ${r.pid}`);
    for (const r of live(s, 'proxy-worker', proxyWorkers)) expect(stdout).toContain(`proxy-worker ${r.instance} (pid ${r.pid}`);
  });
});

describe('connections on the bus', () => {
  const form = (keys: string[], extra: Record<string, unknown> = {}) => ({
    ENABLE_OPENAI_API: true,
    OPENAI_API_BASE_URLS: [oa.url],
    OPENAI_API_KEYS: keys,
    OPENAI_API_CONFIGS: { '0': { enable: true, prefix_id: 'fake', ...extra } },
  });

  it('only an admin may update, and a malformed form is a 422 list, a config that cannot load a 400', async () => {
    const denied = await call('/openai/config/update', user, 'POST', form([upstreamKey]));
    expect(denied).toEqual({ status: 401, body: { detail: PROHIBITED } });
    expect(await call('/ollama/config/update', user, 'POST', { OLLAMA_BASE_URLS: [], OLLAMA_API_CONFIGS: {} })).toEqual({ status: 401, body: { detail: PROHIBITED } });
    expect(await call('/api/v1/configs/status', user)).toEqual({ status: 401, body: { detail: PROHIBITED } });
    const malformed = await call('/openai/config/update', admin, 'POST', { OPENAI_API_BASE_URLS: 'not a list', OPENAI_API_KEYS: [], OPENAI_API_CONFIGS: {} });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail[0]).toMatchObject({ loc: ['body', 'OPENAI_API_BASE_URLS'] });
    const bad = await call('/openai/config/update', admin, 'POST', form([upstreamKey], { model_ids: 'echo' }));
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain('model_ids: must be a list of model ids');
    // Nothing was stored by the refused ones.
    expect((await call('/openai/config', admin)).body.OPENAI_API_BASE_URLS).toEqual([]);
  });

  it('connections updated through the API reach every proxy worker; keys are stored, never returned, kept when the form leaves them empty', async () => {
    expect((await modelIds()).filter((id) => id.startsWith('fake.'))).toEqual([]);
    const r = await call('/openai/config/update', admin, 'POST', form([upstreamKey]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      ENABLE_OPENAI_API: true,
      OPENAI_API_BASE_URLS: [oa.url],
      OPENAI_API_KEYS: [''],
      OPENAI_API_CONFIGS: { '0': { enable: true, prefix_id: 'fake', model_ids: [], tags: [], connection_type: 'external', auth_type: 'bearer', key_set: true } },
    });
    expect(JSON.stringify(r.body)).not.toContain(upstreamKey);

    // The event names the API, its URLs and the revision, never the key.
    const [event] = await db<{ event: any }[]>`select event from outbox where event ->> 'event' = 'config.connections.updated' order by seq`;
    expect(event!.event.data).toMatchObject({ api: 'openai', enabled: true, urls: [oa.url] });
    expect(JSON.stringify(event!.event)).not.toContain(upstreamKey);
    const revision = event!.event.data.revision as number;

    const s = await converged('proxy-worker', proxyWorkers, 'connections', revision);
    expect(s.groups.connections!.revision).toBe(revision);
    expect(live(s, 'proxy-worker', proxyWorkers)).toHaveLength(2);
    // The chat workers follow the group too (their model list cache is dropped on each change).
    await converged('chat-worker', chatWorkers, 'connections', revision);

    // Exactly one proxy worker stored it; with that one gone, the other (which applied it from its
    // watch, no restart) lists the new connection's models — the fake answers only with the key.
    const storedIt = (p: Proc) => p.log().includes(`config connections: stored revision ${revision}`);
    await waitFor(() => proxyWorkers.some(storedIt), 5000, () => 'no proxy worker logged the store');
    const stored = proxyWorkers.filter(storedIt);
    expect(stored).toHaveLength(1);
    const other = proxyWorkers.find((p) => p !== stored[0])!;
    await logged(other, `config connections: applied revision ${revision}`);
    await stored[0]!.stop();
    expect(await modelIds()).toContain('fake.echo');
    expect(other.running).toBe(true);

    // Saving what the GET shows (keys withheld as "") keeps the stored key: the fake still answers.
    const shown = (await call('/openai/config', admin)).body;
    const resave = await call('/openai/config/update', admin, 'POST', { ...shown, OPENAI_API_CONFIGS: { '0': { ...shown.OPENAI_API_CONFIGS['0'], prefix_id: 'kept' } } });
    expect(resave.status, JSON.stringify(resave.body)).toBe(200);
    expect(resave.body.OPENAI_API_CONFIGS['0']).toMatchObject({ prefix_id: 'kept', key_set: true });
    const ids = await modelIds();
    expect(ids).toContain('kept.echo');
    expect(ids.filter((id) => id.startsWith('fake.'))).toEqual([]);
  });

  it('a proxy worker started after the change loads it: no announcement is needed to catch up', async () => {
    const current = (await status()).groups.connections!.revision;
    const late = await stack.startProxyWorker(PROXY_ENV);
    proxyWorkers.push(late);
    expect(late.log()).toContain(`config connections: applied revision ${current}`);
    // The late one alone serves: it lists the stored connection with the stored key.
    for (const p of proxyWorkers.filter((w) => w !== late)) await p.stop();
    expect(await modelIds()).toContain('kept.echo');
    const s = await converged('proxy-worker', proxyWorkers, 'connections', current);
    expect(live(s, 'proxy-worker', proxyWorkers).map((r) => r.applied.connections!.revision)).toEqual([current]);
  });

  it('Ollama connections too: switched on with a URL through /ollama/config/update, the OpenAI ones untouched', async () => {
    const ol = await startFakeOllama();
    try {
      const before = (await status()).groups.connections!.revision;
      const r = await call('/ollama/config/update', admin, 'POST', { ENABLE_OLLAMA_API: true, OLLAMA_BASE_URLS: [ol.url], OLLAMA_API_CONFIGS: { '0': { tags: [{ name: 'local' }] } } });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toEqual({
        ENABLE_OLLAMA_API: true,
        OLLAMA_BASE_URLS: [ol.url],
        OLLAMA_API_CONFIGS: { '0': { enable: true, prefix_id: null, model_ids: [], tags: [{ name: 'local' }], connection_type: 'local', key_set: false } },
      });
      const events = await db<{ event: any }[]>`select event from outbox where event ->> 'event' = 'config.connections.updated' order by seq`;
      expect(events.at(-1)!.event.data).toMatchObject({ api: 'ollama', enabled: true, urls: [ol.url] });
      expect(events.at(-1)!.event.data.revision).toBeGreaterThan(before);
      const ids = await modelIds();
      expect(ids).toContain('echo:latest');
      expect(ids).toContain('kept.echo');
      expect((await call('/openai/config', admin)).body.OPENAI_API_CONFIGS['0']).toMatchObject({ prefix_id: 'kept', key_set: true });
    } finally {
      await ol.close();
    }
  });
});

describe('announcing a Postgres-held group', () => {
  it('two writers racing end on the source’s latest value: the one that loaded the older state announces again', async () => {
    const store = await openConfigStore(await stack.busHandle());
    let source: { v: number } = { v: 1 };
    // A loaded { v: 1 }, then B committed { v: 2 } and announced it before A got to its put.
    source = { v: 2 };
    const b = await announceFrom(store, 'race.test', async () => source, 'B');
    expect(b!.envelope.value).toEqual({ v: 2 });
    let stale = true;
    const a = await announceFrom(store, 'race.test', async () => (stale ? ((stale = false), { v: 1 }) : source), 'A');
    const now = await store.get('race.test');
    expect(now!.envelope.value).toEqual({ v: 2 });
    expect(a!.revision).toBe(now!.revision);
    // A put its stale value once and corrected it at once: two more revisions, not a loop.
    expect(now!.revision).toBe(b!.revision + 2);
    // Nothing new: no put at all.
    expect((await announceFrom(store, 'race.test', async () => source, 'C'))!.revision).toBe(now!.revision);
  });
});

describe('the config bucket across a NATS restart', () => {
  it('keeps every group’s value and revision, and a follower that was away catches up with what it missed', async () => {
    const bin = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((b) => existsSync(b));
    expect(bin, 'nats-server is installed (infra/bringup installs it)').toBeDefined();
    const [port, monitor] = [await freePort(), await freePort()];
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-config-nats-'));
    // A server of this test's own, so it can be restarted; JetStream on a file store, as deployed.
    const startNats = async () => {
      const p = spawn(bin!, ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitor), '-js', '-sd', dir], { stdio: 'ignore' });
      await waitFor(async () => (await fetch(`http://127.0.0.1:${monitor}/healthz`).catch(() => undefined))?.ok === true, 10_000, () => 'nats-server did not start');
      return p;
    };
    let nats = await startNats();
    const log = createLogger('config-test', 'silent');
    const buses: Bus[] = [];
    const connect = async (name: string) => {
      const b = await connectBus({ url: `nats://127.0.0.1:${port}`, name, log, ns: 'cfgtest' });
      buses.push(b);
      return b;
    };
    const follower = new LiveConfig<{ n: number }>({ group: 'restart.test', parse: (raw) => raw as { n: number }, initial: { n: 0 }, log, recheckMs: 200 });
    try {
      const writer = await openConfigStore(await connect('writer'));
      const r1 = await writer.put('restart.test', { n: 1 }, 'test');
      await follower.follow(await openConfigStore(await connect('follower')));
      expect(follower.applied).toMatchObject({ revision: r1, value: { n: 1 } });

      const stopped = new Promise((r) => nats.once('exit', r));
      nats.kill('SIGTERM');
      await stopped;
      nats = await startNats();
      // Durable: a connection made after the restart reads the value and revision from before it.
      const fresh = await openConfigStore(await connect('fresh'));
      const kept = await fresh.get('restart.test');
      expect(kept).toMatchObject({ revision: r1, envelope: { value: { n: 1 }, by: 'test' } });

      // Written as soon as the server is back, possibly before the follower reconnected and re-watched.
      const r2 = await fresh.put('restart.test', { n: 2 }, 'test');
      expect(r2).toBeGreaterThan(r1);
      await waitFor(() => follower.applied.revision === r2, 15_000, () => `the follower stayed at revision ${follower.applied.revision}`);
      expect(follower.value).toEqual({ n: 2 });
    } finally {
      follower.stop();
      await Promise.allSettled(buses.map((b) => b.nc.close()));
      nats.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
