import { performance } from 'node:perf_hooks';
import { openConfigStore, type ConfigPresence } from '@gatehouse/common';
import { newKey, Stack, type Proc } from '../../tests/support/local-stack.ts';
import { startFakeOpenAI } from '../src/fake-upstreams/openai.ts';
import { ms, pct, waitQuiet } from './measure.ts';

/**
 * Config benchmark: an admin change → applied on every replica. CHAT_REPLICAS chat workers and
 * PROXY_REPLICAS proxy workers in one stack; CHANGES sequential changes of a chat setting through
 * the API (`POST /api/v1/auths/admin/config`: HTTP → edge → one chat worker → Postgres commit →
 * announcement in the config bucket → every replica's watch applies it and writes its presence record),
 * then CONN_CHANGES connection updates (`POST /openai/config/update` → a proxy worker stores it →
 * every proxy worker rebuilds its registry).
 * "Applied on all" is the moment this process sees the last replica's presence record at the new
 * revision (replicas write it right after applying). Measured from the request's start and from the
 * announcement's arrival here. Baseline: the bus's own floor in the same run — a KV put in this
 * process until its own watch delivers it — and the admin request's own response time.
 * Loopback only; each wait bounded (5 s), a watchdog ends the run.
 * Env: BENCH_CONFIG_CHANGES (200), BENCH_CONFIG_CHAT_REPLICAS (3), BENCH_CONFIG_PROXY_REPLICAS (2).
 */
const CHANGES = Number(process.env.BENCH_CONFIG_CHANGES ?? 200);
const CONN_CHANGES = Math.max(10, Math.floor(CHANGES / 4));
const CHAT_REPLICAS = Number(process.env.BENCH_CONFIG_CHAT_REPLICAS ?? 3);
const PROXY_REPLICAS = Number(process.env.BENCH_CONFIG_PROXY_REPLICAS ?? 2);
const WAIT_MS = 5000;
const watchdog = setTimeout(() => {
  console.error('[bench] watchdog: the run took longer than 10 minutes; stopping');
  process.exit(2);
}, 10 * 60_000);
watchdog.unref();
const say = (s: string) => console.error(`[bench] ${s}`);
const line = (label: string, xs: number[]) => `${label.padEnd(52)} p50 ${ms(pct(xs, 50)).padStart(10)}  p99 ${ms(pct(xs, 99)).padStart(10)}  max ${ms(Math.max(...xs)).padStart(10)}  (n=${xs.length})`;

/** Arrival times (this process's clock) of config records and presence records, as the watches deliver them. */
class Observer {
  /** group → revision → first time seen here. */
  readonly announced = new Map<string, Map<number, number>>();
  /** instance → group → revision reported, with the time the report arrived. */
  readonly reports = new Map<string, Map<string, { revision: number; t: number }>>();
  private waiters: (() => void)[] = [];

  note(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
  changed(): Promise<void> {
    return new Promise((r) => this.waiters.push(r));
  }
  presence(p: ConfigPresence): void {
    const now = performance.now();
    let m = this.reports.get(p.instance);
    if (!m) this.reports.set(p.instance, (m = new Map()));
    for (const [g, a] of Object.entries(p.applied)) {
      const prev = m.get(g);
      if (!prev || prev.revision < a.revision) m.set(g, { revision: a.revision, t: now });
    }
    this.note();
  }
  /** When every instance reported `group` at `revision` or later (the last one's arrival), waiting up to WAIT_MS. */
  async allAt(instances: string[], group: string, revision: number): Promise<number> {
    const deadline = performance.now() + WAIT_MS;
    for (;;) {
      const rs = instances.map((i) => this.reports.get(i)?.get(group));
      if (rs.every((r) => r && r.revision >= revision)) return Math.max(...rs.map((r) => r!.t));
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`not every replica reached ${group} revision ${revision} within ${WAIT_MS} ms`);
      await Promise.race([this.changed(), new Promise((r) => setTimeout(r, left))]);
    }
  }
  async announcedAt(group: string, revision: number): Promise<number> {
    const deadline = performance.now() + WAIT_MS;
    for (;;) {
      const t = this.announced.get(group)?.get(revision);
      if (t !== undefined) return t;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`${group} revision ${revision} not seen within ${WAIT_MS} ms`);
      await Promise.race([this.changed(), new Promise((r) => setTimeout(r, left))]);
    }
  }
}

async function main(): Promise<void> {
  const stack = new Stack();
  const oa = await startFakeOpenAI();
  try {
    const proxies: Proc[] = [];
    for (let i = 0; i < PROXY_REPLICAS; i++) proxies.push(await stack.startProxyWorker({ ENABLE_OLLAMA_API: 'false' }));
    const chats: Proc[] = [];
    for (let i = 0; i < CHAT_REPLICAS; i++) chats.push(await stack.startChatWorker({}, { ingest: false }));
    const edge = await stack.startEdge({ EDGE_FACES: 'chat' });
    const call = async (path: string, token: string | undefined, body?: unknown) => {
      const r = await fetch(edge.chatUrl + path, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await r.json()) as any;
      if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(json)}`);
      return json;
    };
    const admin = await call('/api/v1/auths/signup', undefined, { name: 'Admin', email: `admin-${stack.ns}@example.com`, password: newKey() });
    const token = admin.token as string;

    const bus = await stack.busHandle();
    const store = await openConfigStore(bus);
    const obs = new Observer();
    void (async () => {
      for await (const p of await store.watchPresence()) obs.presence(p);
    })();
    // The config bucket itself, watched as a replica watches it (the announcement's arrival).
    const kv = await bus.js.views.kv(bus.bucket('gatehouse_config'));
    void (async () => {
      for await (const e of await kv.watch()) {
        let m = obs.announced.get(e.key);
        if (!m) obs.announced.set(e.key, (m = new Map()));
        if (!m.has(e.revision)) m.set(e.revision, performance.now());
        obs.note();
      }
    })();
    const live = await store.listPresence();
    const chatInstances = live.filter((p) => p.service === 'chat-worker').map((p) => p.instance);
    const proxyInstances = live.filter((p) => p.service === 'proxy-worker').map((p) => p.instance);
    if (chatInstances.length !== CHAT_REPLICAS || proxyInstances.length !== PROXY_REPLICAS) throw new Error(`presence shows ${chatInstances.length} chat and ${proxyInstances.length} proxy replicas`);
    say(`${CHAT_REPLICAS} chat workers, ${PROXY_REPLICAS} proxy workers; ${CHANGES} setting changes, ${CONN_CHANGES} connection updates`);

    // Baseline: the bus's own floor — a put in this process until its own watch hands it back.
    const scratch = await bus.js.views.kv(bus.bucket('bench_config_floor'), { history: 1 });
    const floor: number[] = [];
    {
      const seen = new Map<number, number>();
      let wake: (() => void) | undefined;
      void (async () => {
        for await (const e of await scratch.watch()) {
          seen.set(e.revision, performance.now());
          wake?.();
        }
      })();
      for (let i = 0; i < CHANGES; i++) {
        const t0 = performance.now();
        const rev = await scratch.put('k', new TextEncoder().encode(String(i)));
        const deadline = Date.now() + WAIT_MS;
        while (!seen.has(rev) && Date.now() < deadline) await new Promise<void>((r) => (wake = r));
        floor.push(seen.get(rev)! - t0);
      }
    }

    /** `n` sequential changes made by `send(i)`, each timed until every one of `instances` runs it. */
    const measure = async (label: string, n: number, group: string, instances: string[], send: (i: number) => Promise<unknown>) => {
      await waitQuiet(`before the ${label}`, 20_000, say);
      const r = { fromRequest: [] as number[], fromAnnounce: [] as number[], response: [] as number[] };
      for (let i = 0; i < n; i++) {
        const before = (await store.get(group))?.revision ?? 0;
        const t0 = performance.now();
        await send(i);
        const tResp = performance.now();
        const after = (await store.get(group))?.revision ?? 0;
        if (after <= before) throw new Error(`${group}: the change was not announced`);
        const tAll = await obs.allAt(instances, group, after);
        const tAnn = await obs.announcedAt(group, after);
        r.response.push(tResp - t0);
        r.fromRequest.push(tAll - t0);
        r.fromAnnounce.push(tAll - tAnn);
      }
      return r;
    };
    const setting = await measure('setting changes', CHANGES, 'chat.settings', chatInstances, (i) =>
      call('/api/v1/auths/admin/config', token, { RESPONSE_WATERMARK: `bench ${i}` }),
    );
    const conn = await measure('connection updates', CONN_CHANGES, 'connections', proxyInstances, (i) =>
      call('/openai/config/update', token, { ENABLE_OPENAI_API: true, OPENAI_API_BASE_URLS: [oa.url], OPENAI_API_KEYS: [''], OPENAI_API_CONFIGS: { '0': { prefix_id: `p${i}` } } }),
    );

    const out = [
      `config: ${CHAT_REPLICAS} chat workers, ${PROXY_REPLICAS} proxy workers, sequential changes`,
      line('baseline: KV put → own watch delivers (bus floor)', floor),
      line('chat setting: admin request → response', setting.response),
      line(`chat setting: request → applied on all ${CHAT_REPLICAS} replicas`, setting.fromRequest),
      line('chat setting: announcement → applied on all replicas', setting.fromAnnounce),
      line('connections: admin request → response', conn.response),
      line(`connections: request → applied on all ${PROXY_REPLICAS} proxy workers`, conn.fromRequest),
      line('connections: announcement → applied on all', conn.fromAnnounce),
    ];
    console.log(out.join('\n'));
    void proxies;
    void chats;
  } finally {
    await stack.close();
    await oa.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
