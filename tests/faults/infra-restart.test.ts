import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Face } from '@gatehouse/contracts';
import { enforcedState, flipGate } from '../../scripts/src/gate-ops.ts';
import { newKey, Stack, waitFor, type Edge, type Proc } from '../support/local-stack.ts';
import { startPrivateInfra, type PrivateInfra } from '../../scripts/src/private-infra.ts';
import { chatClient, type Account } from '../integration/chat-fixture.ts';
import { CLIENT_LIMITS, EDGE_LIMITS, fakeLlm, type LlmSetup } from './fixture.ts';
import { send, Tally, type Call } from './load.ts';

/**
 * Restart the infrastructure under the edges and workers, while probes keep asking every face of
 * two edges, with and without keys: NATS (gates fail closed while it is away, come back at the same
 * revision, and a request without a key never gets through an enforced gate), then Postgres, then
 * Redis (sign-in and sessions answer 503 while their store is away and recover with no restart).
 */
let infra: PrivateInfra;
let stack: Stack;
let llm: LlmSetup;
const edges: Edge[] = [];
let admin: Account;
const procs: Proc[] = [];
const keys: Record<'speech' | 'llm' | 'vector', string> = { speech: newKey(), llm: newKey(), vector: newKey() };
const GATED = ['speech', 'llm', 'vector'] as const;

beforeAll(async () => {
  infra = await startPrivateInfra();
  stack = new Stack({ ...infra.urls(), startTimeoutMs: 90_000 });
  llm = await fakeLlm();
  procs.push(await stack.startWorker(), await stack.startProxyWorker(llm.env), await stack.startVectorWorker(), await stack.startChatWorker());
  const env = { ...EDGE_LIMITS, ...llm.env, SIGNIN_RATE_LIMIT_PER_ACCOUNT: '1000000', SIGNIN_RATE_LIMIT_PER_ADDRESS: '1000000' };
  edges.push(await stack.startEdge(env), await stack.startEdge(env));
  const store = await stack.store();
  for (const face of GATED) expect((await flipGate(store, face, enforcedState([keys[face]], 'faults'))).lagging).toEqual([]);
  admin = await chatClient(() => edges[0]!.chatUrl).signup();
}, 240_000);

afterAll(async () => {
  await stack?.close();
  await llm?.close();
  await infra?.close();
}, 60_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const get = (headers: Record<string, string> = {}): RequestInit => ({ method: 'GET', headers });
const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** Keyed and unkeyed probes of the gated faces of `e`: keyed 200 or 503; unkeyed 401 or 503, never 2xx. */
function gateProbes(e: Edge, i: number): (() => Call)[] {
  const auth = { speech: { authorization: `Bearer ${keys.speech}` }, llm: { 'x-proxy-key': keys.llm }, vector: { 'api-key': keys.vector } };
  const tokens = { model: 'fake/echo', messages: [{ role: 'user', content: 'count me' }] };
  const mk = (face: Face, path: string, init: (h: Record<string, string>) => RequestInit, keyed: boolean): (() => Call) => {
    const base = face === 'speech' ? e.url : face === 'llm' ? e.proxyUrl : e.vectorUrl;
    const h = keyed ? auth[face as keyof typeof auth] : {};
    return () => ({ face, op: `edge${i} ${keyed ? 'keyed' : 'unkeyed'}`, url: base + path, init: init(h), limitMs: CLIENT_LIMITS[face as 'speech'], expect: keyed ? [] : [401], refuse: !keyed });
  };
  return [true, false].flatMap((keyed) => [
    mk('speech', '/v1/models', (h) => get(h), keyed),
    mk('llm', '/v1/messages/count_tokens', (h) => post(tokens, h), keyed),
    mk('vector', '/collections', (h) => get(h), keyed),
  ]);
}

/** The chat face's sign-in and a session's use (a Postgres read): 200, or 503 while a store is away. */
function sessionProbes(e: Edge): (() => Call)[] {
  const session = { authorization: `Bearer ${admin.token}` };
  const c = (op: string, path: string, init: RequestInit) => (): Call => ({ face: 'chat', op, url: e.chatUrl + path, init, limitMs: CLIENT_LIMITS.chat });
  return [
    c('sign-in', '/api/v1/auths/signin', post({ email: admin.email, password: admin.password })),
    c('session', '/api/v1/auths/', get(session)),
    c('session memories', '/api/v1/memories/', get(session)),
  ];
}

/** Run each probe in its own loop, one request at a time, until stopped. */
function probe(t: Tally, calls: (() => Call)[]) {
  let on = true;
  const last = new Map<string, number | string>();
  const done = Promise.all(
    calls.map(async (mk) => {
      while (on) {
        const c = mk();
        last.set(`${c.face} ${c.op} ${c.url}`, await send(t, c));
        await sleep(25);
      }
    }),
  );
  return {
    /** Every probe's latest answer is `status`. */
    all: (status: number, which?: (k: string) => boolean) => [...last.entries()].filter(([k]) => !which || which(k)).every(([, s]) => s === status),
    /** The probes whose last answer is not `status`, with that answer: for a failure's message. */
    notAt: (status: number) => [...last.entries()].filter(([, s]) => s !== status).map(([k, s]) => `${k}: ${s}`).join('; '),
    stop: async () => {
      on = false;
      await done;
    },
  };
}

const pids = () => [...stack.edges.map((e) => e.proc), ...procs].map((p) => (p.running ? p.child.pid : 'exited'));

async function revisions(): Promise<string> {
  const store = await stack.store();
  const out: string[] = [];
  for (const face of GATED) out.push(`${face} ${(await store.get(face))?.revision}`);
  for (const [i, e] of edges.entries()) {
    for (const [face, url] of [['speech', e.url], ['llm', e.proxyUrl]] as const) {
      const h = (await (await fetch(`${url}/health`)).json()) as { gate: { state: string; revision: number } };
      out.push(`edge${i} ${face} ${h.gate.state}@${h.gate.revision}`);
    }
  }
  return out.join(', ');
}

describe('restarting the infrastructure under load', () => {
  it('NATS: gates fail closed while it is away, come back at the same revision, never open', async () => {
    const before = await revisions();
    const ps = pids();
    const t = new Tally();
    const p = probe(t, edges.flatMap((e, i) => gateProbes(e, i)));
    await sleep(1000);
    const down = Date.now();
    await infra.nats.stop('SIGKILL');
    // Keyed requests too are refused while no edge can confirm its gate: fail closed, not open.
    await waitFor(() => p.all(503, (k) => k.includes(' keyed ')), 20_000, () => 'the edges did not fail closed with NATS away');
    const closedAfter = Date.now() - down;
    await sleep(2000);
    await infra.nats.start();
    const up = Date.now();
    await waitFor(() => p.all(200, (k) => k.includes(' keyed ')), 30_000, () => 'the edges did not recover after NATS came back');
    const recoveredAfter = Date.now() - up;
    await sleep(500);
    await p.stop();
    const after = await revisions();
    const text = t.print('NATS restart (SIGKILL, 2 s away) under gate probes of two edges', {}, [
      `gates before: ${before}`,
      `gates after:  ${after}`,
      `every edge refused keyed requests ${closedAfter} ms after NATS went away; served them again ${recoveredAfter} ms after it came back`,
    ]);
    expect(t.bad, text).toEqual([]);
    expect(after).toBe(before);
    expect(pids()).toEqual(ps);
  }, 120_000);

  it('Postgres: sign-in and sessions answer 503 while it is away and recover with no restart', async () => {
    const ps = pids();
    const t = new Tally();
    const p = probe(t, [...sessionProbes(edges[0]!), ...gateProbes(edges[0]!, 0).filter((mk) => mk().op.endsWith(' keyed'))]);
    await sleep(1000);
    await infra.pg.stop('immediate');
    await waitFor(() => p.all(503, (k) => k.includes('sign-in')), 20_000, () => 'sign-in did not fail closed with Postgres away');
    await sleep(2000);
    await infra.pg.start();
    const up = Date.now();
    await waitFor(() => p.all(200), 30_000, () => `the faces did not recover after Postgres came back (${p.notAt(200)})`);
    const recoveredAfter = Date.now() - up;
    await sleep(500);
    await p.stop();
    const text = t.print('Postgres restart (immediate stop, 2 s away) under sign-in, session and keyed probes', {}, [`all probes answered 200 again ${recoveredAfter} ms after Postgres came back; no process restarted`]);
    expect(t.bad, text).toEqual([]);
    expect(t.kinds['chat sign-in']?.['503 clean'] ?? 0, text).toBeGreaterThan(0);
    expect(pids()).toEqual(ps);
  }, 120_000);

  it('Redis: sign-in and sessions answer 503 while it is away and recover with no restart', async () => {
    const ps = pids();
    const t = new Tally();
    const p = probe(t, [...sessionProbes(edges[0]!), ...gateProbes(edges[0]!, 0)]);
    await sleep(1000);
    await infra.redis.stop('SIGKILL');
    await waitFor(() => p.all(503, (k) => k.includes('chat ')), 20_000, () => 'sign-in and sessions did not fail closed with Redis away');
    await sleep(2000);
    await infra.redis.start();
    const up = Date.now();
    await waitFor(() => p.all(200, (k) => k.includes('chat ') || k.includes(' keyed ')), 30_000, () => 'the chat face did not recover after Redis came back');
    const recoveredAfter = Date.now() - up;
    await sleep(500);
    await p.stop();
    const text = t.print('Redis restart (SIGKILL, 2 s away, comes back empty) under sign-in, session and gate probes', {}, [`sign-in and sessions answered 200 again ${recoveredAfter} ms after Redis came back; no process restarted`]);
    expect(t.bad, text).toEqual([]);
    expect(t.kinds['chat session']?.['503 clean'] ?? 0, text).toBeGreaterThan(0);
    expect(pids()).toEqual(ps);
  }, 120_000);
});
