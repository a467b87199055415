import { mkdtempSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REDIS_URL } from '@gatehouse/common';
import { newKey, Stack, testDatabaseUrl, waitFor, type Edge, type Proc } from '../support/local-stack.ts';
import { startFakeOpenAI, type FakeUpstream } from '../../scripts/src/fake-upstreams/openai.ts';
import { callerOf } from '../../services/edge/src/kit/stream-limits.ts';
import { chatClient, type Account } from './chat-fixture.ts';

/**
 * Resource limits (docs/limits.md) over real sockets: concurrent generations per caller on the LLM
 * and chat faces, counted across two edges through Redis and released on every end path; the
 * longest duration of one answer; a noisy caller at its limit while another is served; and a
 * database out of connections answering 503 in the face's format, not 500.
 *
 * Held generations use the fake upstream's `hang` model (never answers: the slot stays taken until
 * the client leaves), so no count depends on timing; waits are bounded loops.
 */
const stack = new Stack();
const redis = new Redis(process.env.REDIS_URL ?? DEFAULT_REDIS_URL, { maxRetriesPerRequest: 1 });
let oa: FakeUpstream;
let speechWorker: Proc;
/** Two edges sharing one count (limits on, no duration limit). */
let edgeA: Edge;
let edgeB: Edge;
/** An edge with short duration and idle limits. */
let edgeC: Edge;
let admin: Account;
let alice: Account;
let bob: Account;
let carol: Account;

const LLM_LIMIT = 3;
const CHAT_LIMIT = 2;
const SPEECH_LIMIT = 2;
const DURATION_MS = 2500;
const marker = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;
const { signup, addUser } = chatClient(() => edgeA.chatUrl);

beforeAll(async () => {
  oa = await startFakeOpenAI();
  const dir = mkdtempSync(join(tmpdir(), 'limits-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ providers: { fake: { type: 'openai', baseUrl: oa.url } }, timeoutMs: 120_000, retries: { max: 0 } }));
  await stack.startProxyWorker({ LLMPROXY_CONFIG: config, OPENAI_API_BASE_URLS: oa.url, OPENAI_API_KEYS: 'unused' });
  await stack.startChatWorker({}, { ingest: false });
  speechWorker = await stack.startWorker();
  const limits = {
    EDGE_FACES: 'speech,llm,chat',
    LLMPROXY_CONFIG: config,
    LLM_MAX_STREAMS_PER_CLIENT: String(LLM_LIMIT),
    CHAT_MAX_STREAMS_PER_USER: String(CHAT_LIMIT),
    SPEECH_MAX_STREAMS_PER_CLIENT: String(SPEECH_LIMIT),
  };
  [edgeA, edgeB, edgeC] = await Promise.all([
    stack.startEdge(limits),
    stack.startEdge(limits),
    stack.startEdge({
      ...limits,
      LLM_STREAM_MAX_DURATION_MS: String(DURATION_MS),
      CHAT_STREAM_MAX_DURATION_MS: String(DURATION_MS),
      SPEECH_STREAM_MAX_DURATION_MS: String(DURATION_MS),
      LLM_STREAM_IDLE_MS: '1500',
    }),
  ]);
  admin = await signup();
  alice = await addUser(admin, 'Alice');
  bob = await addUser(admin, 'Bob');
  carol = await addUser(admin, 'Carol');
});

afterAll(async () => {
  await stack.close();
  await oa?.close();
  const keys = await redis.keys(`${stack.ns}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

// ---- clients ---------------------------------------------------------------------------------

const llm = (edge: Edge, key: string, model: string, opts: { stream?: boolean; content?: string; signal?: AbortSignal } = {}) =>
  fetch(`${edge.proxyUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-proxy-key': key },
    body: JSON.stringify({ model, max_tokens: 64, stream: opts.stream ?? false, messages: [{ role: 'user', content: opts.content ?? 'hello' }] }),
    signal: opts.signal,
  });

const chat = (edge: Edge, who: Account, model: string, opts: { stream?: boolean; content?: string; signal?: AbortSignal } = {}) =>
  fetch(`${edge.chatUrl}/api/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${who.token}` },
    body: JSON.stringify({ model, stream: opts.stream ?? true, messages: [{ role: 'user', content: opts.content ?? 'hello' }] }),
    signal: opts.signal,
  });

const speech = (edge: Edge, key: string, signal?: AbortSignal) =>
  fetch(`${edge.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input: 'Hello from the limits test.' }),
    signal,
  });

/** Requests that hold a slot (the upstream never answers) until `abort`. */
function hold(start: (signal: AbortSignal) => Promise<Response>) {
  const ac = new AbortController();
  const answer = start(ac.signal).catch(() => undefined);
  return { abort: () => ac.abort(), answer };
}

/** Slots in Redis for the caller (leases not yet lapsed). */
async function slotsHeld(face: 'llm' | 'chat' | 'speech', who: string): Promise<number> {
  const [sec, micro] = await redis.time();
  return redis.zcount(`${stack.ns}:edge:streams:${face}:${who}`, Number(sec) * 1000 + Math.floor(Number(micro) / 1000), '+inf');
}
const keyCaller = (key: string) => callerOf(key, '127.0.0.1');

async function waitForSlots(face: 'llm' | 'chat' | 'speech', who: string, n: number): Promise<void> {
  await waitFor(async () => (await slotsHeld(face, who)) === n, 15_000, () => `the ${face} slots of ${who} did not reach ${n}`);
}

/** Upstream requests carrying `mark`. */
const upstreamWith = (mark: string) => oa.requests.filter((r) => r.raw.toString('utf8').includes(mark));

// ---- concurrent generations --------------------------------------------------------------------

describe('LLM face: generations in progress per client (key + address), shared by every edge', () => {
  it('refuses the one over the limit with 429 in Anthropic’s format, on either edge; another client is served', async () => {
    const key = newKey();
    const mark = marker('llm-held');
    const held = [edgeA, edgeA, edgeB].map((e) => hold((signal) => llm(e, key, 'fake/hang', { signal, content: mark })));
    await waitForSlots('llm', keyCaller(key), LLM_LIMIT);
    for (const e of [edgeA, edgeB]) {
      const r = await llm(e, key, 'fake/echo', { stream: true });
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      const body = await r.json();
      expect(body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' }, request_id: expect.stringMatching(/^req_/) });
      expect(body.error.message).toMatch(/3 requests in progress/);
    }
    // The same key from another client address is another client: here a different key stands in.
    const other = await llm(edgeB, newKey(), 'fake/echo');
    expect(other.status).toBe(200);
    expect((await other.json()).content[0].text).toBe('echo: hello');

    // Released when the client goes away, and the upstream requests are cancelled.
    for (const h of held) h.abort();
    await waitForSlots('llm', keyCaller(key), 0);
    await waitFor(() => upstreamWith(mark).length === 3 && upstreamWith(mark).every((r) => r.aborted), 15_000, () => 'the held upstream requests were not cancelled');

    // Open N again: all taken (the count went back to 0, nothing leaked), one more refused.
    const again = [edgeB, edgeA, edgeB].map((e) => hold((signal) => llm(e, key, 'fake/hang', { signal })));
    await waitForSlots('llm', keyCaller(key), LLM_LIMIT);
    expect((await llm(edgeA, key, 'fake/echo')).status).toBe(429);
    for (const h of again) h.abort();
    await waitForSlots('llm', keyCaller(key), 0);
  });

  it('releases the slot on every end path: finished, streamed, upstream error, idle timeout', async () => {
    const key = newKey();
    // Finished (non-streamed and streamed), many more times than the limit, one after another.
    for (let i = 0; i < LLM_LIMIT * 2; i++) {
      const r = await llm(i % 2 ? edgeA : edgeB, key, 'fake/echo', { stream: i % 2 === 0 });
      expect(r.status).toBe(200);
      await r.text();
    }
    // An upstream error (the fake's 400), answered in Anthropic's format.
    for (let i = 0; i < LLM_LIMIT + 1; i++) {
      const r = await llm(edgeA, key, 'fake/error-400');
      expect(r.status).toBe(400);
      await r.text();
    }
    // The idle limit (edge C: 1.5 s of silence) ends a hanging reply with a 504.
    const timedOut = await Promise.all(Array.from({ length: LLM_LIMIT }, () => llm(edgeC, key, 'fake/hang')));
    for (const r of timedOut) {
      expect(r.status).toBe(504);
      expect(await r.json()).toMatchObject({ type: 'error', error: { type: 'timeout_error' } });
    }
    await waitForSlots('llm', keyCaller(key), 0);
    // And the full limit is available again.
    const again = Array.from({ length: LLM_LIMIT }, () => hold((signal) => llm(edgeA, key, 'fake/hang', { signal })));
    await waitForSlots('llm', keyCaller(key), LLM_LIMIT);
    for (const h of again) h.abort();
    await waitForSlots('llm', keyCaller(key), 0);
  });
});

describe('chat face: completions in progress per user, shared by every edge', () => {
  it('refuses the one over the limit with 429 {"detail": …}; another user is served; an abort frees the slots', async () => {
    const held = [edgeA, edgeB].map((e) => hold((signal) => chat(e, alice, 'hang', { signal })));
    await waitForSlots('chat', alice.id, CHAT_LIMIT);
    for (const [e, stream] of [[edgeA, true], [edgeB, false]] as const) {
      const r = await chat(e, alice, 'echo', { stream });
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await r.json()).toEqual({ detail: `You already have ${CHAT_LIMIT} chat completions in progress, the most allowed at once; wait for one to finish.` });
    }
    const r = await chat(edgeB, bob, 'echo');
    expect(r.status).toBe(200);
    expect(await r.text()).toMatch(/data: \[DONE\]\n\n$/);

    for (const h of held) h.abort();
    await waitForSlots('chat', alice.id, 0);
    const again = [edgeB, edgeA].map((e) => hold((signal) => chat(e, alice, 'hang', { signal })));
    await waitForSlots('chat', alice.id, CHAT_LIMIT);
    expect((await chat(edgeA, alice, 'echo')).status).toBe(429);
    for (const h of again) h.abort();
    await waitForSlots('chat', alice.id, 0);
  });
});

describe('speech face: syntheses in progress per client', () => {
  it('429 in OpenAI’s format past the limit, on either edge; the duration limit ends a stalled one with a 504; aborts free the slots', async () => {
    // The worker stopped (SIGSTOP): syntheses wait for it, holding their slots, until the client leaves.
    speechWorker.child.kill('SIGSTOP');
    try {
      const key = newKey();
      const held = [edgeA, edgeB].map((e) => hold((signal) => speech(e, key, signal)));
      await waitForSlots('speech', keyCaller(key), SPEECH_LIMIT);
      for (const e of [edgeA, edgeB]) {
        const r = await speech(e, key);
        expect(r.status).toBe(429);
        expect(r.headers.get('retry-after')).toBe('1');
        expect(await r.json()).toEqual({
          error: { message: `This client already has ${SPEECH_LIMIT} syntheses in progress, the most allowed at once; wait for one to finish.`, type: 'requests', param: null, code: 'rate_limit_exceeded' },
        });
      }
      // Another client is not refused; on edge C it meets the duration limit before any audio.
      const other = await speech(edgeC, newKey());
      expect(other.status).toBe(504);
      expect(await other.json()).toMatchObject({ error: { type: 'server_error', code: 'stream_duration_exceeded', message: expect.stringMatching(/after 2.5 s/) } });
      for (const h of held) h.abort();
      await waitForSlots('speech', keyCaller(key), 0);
    } finally {
      speechWorker.child.kill('SIGCONT');
    }
    // Served again, whole.
    const r = await speech(edgeA, newKey());
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('audio/mpeg');
    expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(1000);
  });
});

describe('a noisy client cannot starve the others', () => {
  it('one client floods both faces past its limits; the others’ requests all succeed meanwhile', async () => {
    const FLOOD = 24;
    const noisyKey = newKey();
    const llmFlood = Array.from({ length: FLOOD }, (_, i) => hold((signal) => llm(i % 2 ? edgeA : edgeB, noisyKey, 'fake/hang', { signal })));
    const chatFlood = Array.from({ length: FLOOD }, (_, i) => hold((signal) => chat(i % 2 ? edgeA : edgeB, alice, 'hang', { signal })));
    const refused = async (hs: { answer: Promise<Response | undefined> }[]) => {
      let n = 0;
      for (const h of hs) {
        const r = await Promise.race([h.answer, new Promise<undefined>((res) => setTimeout(res, 50))]);
        if (r?.status === 429) n++;
      }
      return n;
    };
    // Exactly the limit is taken; every other request of the flood is refused at once.
    await waitFor(async () => (await refused(llmFlood)) === FLOOD - LLM_LIMIT, 20_000, () => 'the LLM flood was not refused past its limit');
    await waitFor(async () => (await refused(chatFlood)) === FLOOD - CHAT_LIMIT, 20_000, () => 'the chat flood was not refused past its limit');
    expect(await slotsHeld('llm', keyCaller(noisyKey))).toBe(LLM_LIMIT);
    expect(await slotsHeld('chat', alice.id)).toBe(CHAT_LIMIT);

    // While the noisy client holds its slots, other clients get every answer, whole (each within
    // its own limit: two at once per chat user).
    const quiet = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => llm(i % 2 ? edgeA : edgeB, newKey(), 'fake/echo', { stream: i % 3 === 0 }).then(async (r) => ({ status: r.status, text: await r.text() }))),
      ...Array.from({ length: 6 }, (_, i) => chat(i % 2 ? edgeA : edgeB, [admin, bob, carol][i % 3]!, 'echo', { stream: i % 2 === 0 }).then(async (r) => ({ status: r.status, text: await r.text() }))),
    ]);
    expect(quiet.map((q) => q.status)).toEqual(Array(12).fill(200));
    // Whole: a JSON answer with the echo, an LLM stream to its message_stop, a chat stream to [DONE].
    for (const q of quiet) expect(q.text).toMatch(/"echo: hello"|event: message_stop\ndata: \{"type":"message_stop"\}\n\n$|data: \[DONE\]\n\n$/);

    for (const h of [...llmFlood, ...chatFlood]) h.abort();
    await waitForSlots('llm', keyCaller(noisyKey), 0);
    await waitForSlots('chat', alice.id, 0);
  });
});

// ---- the longest answer ---------------------------------------------------------------------------

describe('stream duration limit', () => {
  // The fake's `slow` model sends one word every 200 ms: 40 words outlast the 2.5 s limit.
  const long = (mark: string) => `${mark} ${Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ')}`;

  it('LLM face: a streamed reply past the limit ends with Anthropic’s event: error, and the upstream request is cancelled', async () => {
    const key = newKey();
    const mark = marker('llm-long');
    const r = await llm(edgeC, key, 'fake/slow', { stream: true, content: long(mark) });
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text).toMatch(/^event: message_start\n/);
    expect(text).toContain('event: content_block_delta');
    expect(text).not.toContain('event: message_stop');
    const last = text.trimEnd().split('\n\n').at(-1)!;
    expect(last.split('\n')[0]).toBe('event: error');
    const err = JSON.parse(last.split('\n')[1]!.slice('data: '.length));
    expect(err).toMatchObject({ type: 'error', error: { type: 'timeout_error' } });
    expect(err.error.message).toMatch(/still streaming after 2.5 s/);
    await waitFor(() => upstreamWith(mark).length === 1 && upstreamWith(mark)[0]!.aborted, 15_000, () => 'the upstream request was not cancelled');
    await waitForSlots('llm', keyCaller(key), 0);
  });

  it('chat face: a streamed completion past the limit ends with Open WebUI’s in-stream error, and the upstream request is cancelled', async () => {
    const mark = marker('chat-long');
    const r = await chat(edgeC, bob, 'slow', { content: long(mark) });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await r.text();
    expect(text).toMatch(/^data: \{"id": "chatcmpl-/);
    expect(text).not.toContain('data: [DONE]');
    const events = text.trimEnd().split('\n\n');
    expect(events.at(-1)).toBe('data: {"error": {"detail": "the answer was still streaming after 2.5 s, the longest this service allows; it was stopped"}}');
    await waitFor(() => upstreamWith(mark).length === 1 && upstreamWith(mark)[0]!.aborted, 15_000, () => 'the upstream request was not cancelled');
    await waitForSlots('chat', bob.id, 0);
  });
});

// ---- a database out of connections -------------------------------------------------------------

describe('a database out of connections answers 503 in the face’s format', () => {
  // A private stack whose chat worker signs in to Postgres as a throwaway role (a member of the
  // test's superuser role, so it may use the schema, but not a superuser: CONNECTION LIMIT binds it).
  const pg = new Stack();
  const role = `gh_limits_${pg.ns}`;
  const superSql = postgres(testDatabaseUrl(), { max: 1, onnotice: () => undefined });
  let edge: Edge;
  let worker: Proc;
  let user: Account;
  const client = chatClient(() => edge.chatUrl);

  beforeAll(async () => {
    await superSql.unsafe(`create role ${role} login nosuperuser connection limit 50 in role postgres`);
    const url = new URL(testDatabaseUrl());
    url.username = role;
    url.password = '';
    await pg.migrate('chat', pg.chatEnv());
    await pg.startProxyWorker({ OPENAI_API_BASE_URLS: oa.url, OPENAI_API_KEYS: 'unused' });
    worker = await pg.startChatWorker({ DATABASE_URL: url.toString() }, { ingest: false });
    edge = await pg.startEdge({ EDGE_FACES: 'chat' });
    user = await client.signup('Dora');
  });

  afterAll(async () => {
    await pg.close();
    await superSql.unsafe(`select pg_terminate_backend(pid) from pg_stat_activity where usename = '${role}'`).catch(() => undefined);
    await superSql.unsafe(`drop owned by ${role}`).catch(() => undefined);
    await superSql.unsafe(`drop role if exists ${role}`).catch(() => undefined);
    await superSql.end({ timeout: 5 });
  });

  it('too many connections for the role (SQLSTATE 53300): 503 {"detail": …}, never 500; served again once connections are free', async () => {
    expect((await client.call('/api/v1/memories/', user)).status).toBe(200);
    // No connection left for the role; its open ones are closed, so the worker must reconnect.
    await superSql.unsafe(`alter role ${role} connection limit 0`);
    await superSql.unsafe(`select pg_terminate_backend(pid) from pg_stat_activity where usename = '${role}'`);
    const answers: { status: number; body: any }[] = [];
    for (let i = 0; i < 4; i++) answers.push(await client.call('/api/v1/memories/', user));
    const completion = await fetch(`${edge.chatUrl}/api/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
      body: JSON.stringify({ model: 'echo', stream: false, messages: [{ role: 'user', content: 'hi' }] }),
    });
    answers.push({ status: completion.status, body: await completion.json() });
    for (const a of answers) {
      expect(a.status, JSON.stringify(a.body)).toBe(503);
      expect(a.body).toEqual({ detail: expect.stringMatching(/database/) });
    }
    // The worker did meet Postgres' refusal, not something else.
    expect(worker.log()).toMatch(/53300/);
    expect(answers.some((a) => /out of connections/.test(a.body.detail))).toBe(true);

    await superSql.unsafe(`alter role ${role} connection limit 50`);
    await waitFor(async () => (await client.call('/api/v1/memories/', user)).status === 200, 15_000, () => 'the worker did not recover');
  });
});
