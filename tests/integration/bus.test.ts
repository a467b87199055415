import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BUS_HEADERS, CLAIM_BUCKET, requestContract, STREAM_CHUNK_BYTES, streamContract } from '@gatehouse/contracts';
import {
  busRequest,
  busRequestBytes,
  busStream,
  BusError,
  connectBus,
  continueTrace,
  createLogger,
  startWorker,
  WorkerSilentError,
  WorkerTimeoutError,
  WorkerUnavailableError,
  type Bus,
  type StreamFrame,
  type Worker,
} from '@gatehouse/common';
import { natsUrl, Stack, waitFor } from '../support/local-stack.ts';

/**
 * The bus library (services/common/src/bus) against the real NATS server, without HTTP: test
 * contracts on test subjects, served by workers in this process, in the stack's own namespace.
 */
const stack = new Stack();
let bus: Bus;
let worker: Worker;
const extraWorkers: Worker[] = [];
const extraBuses: Bus[] = [];

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

// ---------------------------------------------------------------- contracts
const echo = requestContract(
  'test.echo',
  1,
  z.object({ text: z.string().min(1, 'text must not be empty'), n: z.number().int() }),
  z.object({ text: z.string(), n: z.number().int() }),
);
const echoV2 = { ...echo, version: 2 };
const conflict = requestContract('test.conflict', 1, z.object({ id: z.string() }), z.object({}));
const crash = requestContract('test.crash', 1, z.object({}), z.object({}));
const multiline = requestContract('test.multiline', 1, z.object({}), z.object({}));
const silentRequest = requestContract('test.silent-request', 1, z.object({}), z.object({}));
const big = requestContract(
  'test.big',
  1,
  z.object({ data: z.string() }),
  z.object({ receivedSha: z.string(), receivedLength: z.number().int(), data: z.string() }),
);
const nobody = requestContract('test.nobody', 1, z.object({}), z.object({}));
const shared = requestContract('test.shared', 1, z.object({ i: z.number().int() }), z.object({ worker: z.string(), i: z.number().int() }));

const Mode = z.enum(['ok', 'big', 'fail-mid', 'fail-early', 'crash-mid', 'silent', 'endless']);
const frames = streamContract(
  'test.frames',
  1,
  z.object({ mode: Mode, n: z.number().int().min(0).max(100).default(0), size: z.number().int().min(1).max(1_000_000).default(1) }),
  z.object({ mode: Mode }),
  z.object({ count: z.number().int(), sha: z.string() }),
);
const nobodyStream = streamContract('test.nobody-stream', 1, z.object({}), z.object({}), z.object({}));

/** Per request id: whether the handler's ctx.signal aborted (set by the handlers below). */
const handlerAborted = new Map<string, boolean>();
/** Per request id: releases a `silentRequest` handler that took its request and holds it. */
const silentHeld = new Map<string, () => void>();
/** Chunks the `endless` handler sent per request id, so a test can see it stopped. */
const endlessSent = new Map<string, number>();

/** Bounded wait for the handler's signal (or `ms`), whichever is first. */
function abortedOrAfter(signal: AbortSignal, ms: number): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}

/** Chunk i of an `ok` stream: `size` bytes of value i, so order and content are both checkable. */
const okChunk = (i: number, size: number) => new Uint8Array(size).fill(i & 0xff);

beforeAll(async () => {
  bus = await stack.busHandle();
  worker = await startWorker(bus, { name: 'test', version: '1.0.0' });

  worker.handle(echo, async (req) => ({ text: req.text, n: req.n }));
  worker.handle(conflict, async (req) => {
    throw new BusError(409, `item ${req.id} already exists`, { param: 'id', code: 'conflict' });
  });
  worker.handle(multiline, async () => {
    throw new BusError(400, 'first line\r\nsecond line\nthird', { param: 'x' });
  });
  worker.handle(crash, async () => {
    throw new Error('database password is hunter2 at /srv/secret/config.ts:12');
  });
  worker.handle(silentRequest, async (_req, ctx) => {
    // Holds the request until the test lets go (bounded so the test cannot leak a handler).
    const release = new AbortController();
    silentHeld.set(ctx.trace.traceId, () => release.abort());
    await abortedOrAfter(AbortSignal.any([ctx.signal, release.signal]), 10_000);
    return {};
  });
  worker.handle(big, async (req) => ({
    receivedSha: sha(Buffer.from(req.data, 'base64')),
    receivedLength: Buffer.from(req.data, 'base64').byteLength,
    // A reply of ~3 MB as well: deterministic, so the caller can check it.
    data: replyPayload.toString('base64'),
  }));

  worker.stream(frames, async (req, out, ctx) => {
    const id = ctx.trace.traceId;
    ctx.signal.addEventListener('abort', () => handlerAborted.set(id, true), { once: true });
    handlerAborted.set(id, ctx.signal.aborted);
    const h = createHash('sha256');
    const chunk = (data: Uint8Array) => {
      h.update(data);
      out.chunk(data);
    };
    switch (req.mode) {
      case 'fail-early':
        throw new BusError(404, 'nothing to stream for this request', { param: 'mode' });
      case 'ok':
        out.meta({ mode: req.mode });
        for (let i = 0; i < req.n; i++) chunk(okChunk(i, req.size));
        out.end({ count: req.n, sha: h.digest('hex') });
        return;
      case 'big': {
        out.meta({ mode: req.mode });
        chunk(randomBytes(req.size));
        out.end({ count: 1, sha: h.digest('hex') });
        return;
      }
      case 'fail-mid':
        out.meta({ mode: req.mode });
        chunk(okChunk(0, 10));
        chunk(okChunk(1, 10));
        throw new BusError(422, 'failed in the middle of the stream', { param: 'mid' });
      case 'crash-mid':
        out.meta({ mode: req.mode });
        chunk(okChunk(0, 10));
        throw new Error('internal path /srv/secret leaked?');
      case 'silent':
        out.meta({ mode: req.mode });
        // Goes quiet; returns when the caller cancels (bounded so the test cannot leak a handler).
        await abortedOrAfter(ctx.signal, 10_000);
        return;
      case 'endless':
        out.meta({ mode: req.mode });
        // A chunk every 20 ms until cancelled; bounded at 500 chunks (10 s).
        for (let i = 0; i < 500 && !ctx.signal.aborted; i++) {
          chunk(okChunk(i, 100));
          endlessSent.set(id, i + 1);
          await abortedOrAfter(ctx.signal, 20);
        }
        if (!ctx.signal.aborted) out.end({ count: 500, sha: h.digest('hex') });
        return;
    }
  });
});

/** worker.stop(), bounded, so a regression in stop() fails a test instead of hanging afterAll. */
function stopBounded(w: Worker | undefined, ms = 3000): Promise<'stopped' | 'hung'> {
  if (!w) return Promise.resolve('stopped');
  let t: NodeJS.Timeout | undefined;
  return Promise.race([
    w.stop(500).then(() => 'stopped' as const),
    new Promise<'hung'>((r) => (t = setTimeout(() => r('hung'), ms))),
  ]).finally(() => clearTimeout(t));
}

afterAll(async () => {
  await Promise.allSettled([stopBounded(worker), ...extraWorkers.map((w) => stopBounded(w))]);
  await Promise.allSettled(extraBuses.map((b) => b.nc.drain()));
  await stack.close();
});

const replyPayload = Buffer.alloc(3 * 1024 * 1024);
for (let i = 0; i < replyPayload.length; i++) replyPayload[i] = (i * 131 + 17) & 0xff;

/** Rejects with what `p` rejected with, or fails if it resolved. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** Collect a stream's frames; returns them and the error that ended it, if any. */
async function drain<M, E>(it: AsyncGenerator<StreamFrame<M, E>>): Promise<{ frames: StreamFrame<M, E>[]; error?: unknown }> {
  const got: StreamFrame<M, E>[] = [];
  try {
    // Bounded by the stream's own idle timeout and by the worker's bounded handlers.
    for await (const f of it) got.push(f);
    return { frames: got };
  } catch (error) {
    return { frames: got, error };
  }
}

describe('request / reply', () => {
  it('round-trips a request and its reply', async () => {
    const r = await busRequest(bus, echo, { text: 'hello bus', n: 42 }, { timeoutMs: 5000 });
    expect(r).toEqual({ text: 'hello bus', n: 42 });
  });

  it('refuses a request body that fails the contract with 400 and the field in details.param', async () => {
    const err = await rejection(busRequest(bus, echo, { text: '', n: 1 }, { timeoutMs: 5000 }));
    expect(err).toBeInstanceOf(BusError);
    expect((err as BusError).status).toBe(400);
    expect((err as BusError).details.param).toBe('text');
    expect((err as BusError).message).toBe('text must not be empty');

    const wrongType = await rejection(busRequest(bus, echo, { text: 'x', n: 'one' } as never, { timeoutMs: 5000 }));
    expect((wrongType as BusError).status).toBe(400);
    expect((wrongType as BusError).details.param).toBe('n');
  });

  it('passes a BusError thrown by the handler to the caller with its status, message and details', async () => {
    const err = (await rejection(busRequest(bus, conflict, { id: 'abc' }, { timeoutMs: 5000 }))) as BusError;
    expect(err).toBeInstanceOf(BusError);
    expect(err.status).toBe(409);
    expect(err.message).toBe('item abc already exists');
    expect(err.details).toEqual({ param: 'id', code: 'conflict' });
  });

  it('carries an error message with line breaks (a header cannot) as one line, and the worker keeps serving', async () => {
    const err = (await rejection(busRequest(bus, multiline, {}, { timeoutMs: 5000 }))) as BusError;
    expect(err).toBeInstanceOf(BusError);
    expect([err.status, err.message, err.details]).toEqual([400, 'first line second line third', { param: 'x' }]);
    expect(await busRequest(bus, echo, { text: 'still here', n: 1 }, { timeoutMs: 5000 })).toEqual({ text: 'still here', n: 1 });
  });

  it('turns an unexpected throw into a 500 with a generic message (no internals)', async () => {
    const err = (await rejection(busRequest(bus, crash, {}, { timeoutMs: 5000 }))) as BusError;
    expect(err).toBeInstanceOf(BusError);
    expect(err.status).toBe(500);
    expect(err.message).toBe('internal error in the worker');
    expect(JSON.stringify({ m: err.message, d: err.details })).not.toMatch(/hunter2|secret|config\.ts/);
  });

  it('fails with WorkerUnavailableError, not a timeout, when no worker serves the subject', async () => {
    // NATS answers "no responders"; a request that waited out its timeout would be a WorkerTimeoutError.
    const err = await rejection(busRequest(bus, nobody, {}, { timeoutMs: 10_000 }));
    expect(err).toBeInstanceOf(WorkerUnavailableError);
    expect(err).not.toBeInstanceOf(WorkerTimeoutError);
    expect((err as BusError).status).toBe(503);
  });

  it('gives WorkerTimeoutError when the worker takes a request and does not answer in time', async () => {
    const trace = continueTrace(undefined); // the worker knows the request by its trace id
    const requestId = trace.traceId;
    const err = await rejection(busRequest(bus, silentRequest, {}, { timeoutMs: 300, trace }));
    expect(err).toBeInstanceOf(WorkerTimeoutError);
    expect(err).not.toBeInstanceOf(WorkerUnavailableError);
    expect((err as BusError).status).toBe(504);
    // A worker took it and still holds it: the caller gave up on a request that was served, not missing.
    await waitFor(() => silentHeld.has(requestId), 5000, () => 'no worker took the request');
    silentHeld.get(requestId)!();
  });

  it('refuses a request whose contract version differs from the worker\'s with 502 naming both versions', async () => {
    const err = (await rejection(busRequest(bus, echoV2, { text: 'x', n: 1 }, { timeoutMs: 5000 }))) as BusError;
    expect(err).toBeInstanceOf(BusError);
    expect(err.status).toBe(502);
    expect(err.message).toContain('test.echo@1');
    expect(err.message).toContain('test.echo@2');
    expect(err.message).toMatch(/version skew/);
  });
});

describe('claim check (bodies over the server max payload)', () => {
  it('carries a ~3 MB request and a ~3 MB reply intact through the object store and leaves no claim behind', async () => {
    const payload = randomBytes(Math.floor(2.25 * 1024 * 1024)); // ~3 MB once base64-encoded
    const body = { data: payload.toString('base64') };
    expect(JSON.stringify(body).length).toBeGreaterThan(bus.maxPayload * 2);

    // Watch the request message on the wire (a plain, non-queue subscription sees a copy): it must
    // carry a claim, not the body.
    const seen: { claim: string | undefined; bytes: number }[] = [];
    const spy = bus.nc.subscribe(bus.subject(big.subject), {
      callback: (_e, m) => seen.push({ claim: m.headers?.get(BUS_HEADERS.claim) || undefined, bytes: m.data.byteLength }),
    });
    await bus.nc.flush();
    try {
      const r = await busRequest(bus, big, body, { timeoutMs: 30_000 });
      expect(r.receivedLength).toBe(payload.byteLength);
      expect(r.receivedSha).toBe(sha(payload));
      const reply = Buffer.from(r.data, 'base64');
      expect(reply.byteLength).toBe(replyPayload.byteLength);
      expect(sha(reply)).toBe(sha(replyPayload));
    } finally {
      spy.unsubscribe();
    }
    expect(seen).toHaveLength(1);
    expect(seen[0]!.claim).toMatch(/^claim-/);
    expect(seen[0]!.bytes).toBe(0);

    // Both claims (request and reply) are deleted by their readers, asynchronously: wait (bounded).
    const store = await bus.js.views.os(bus.bucket(CLAIM_BUCKET));
    let left: string[] = [];
    await waitFor(
      async () => {
        left = (await store.list()).map((o) => o.name);
        return left.length === 0;
      },
      5000,
      () => `claims left in ${bus.bucket(CLAIM_BUCKET)}: ${left.join(', ')}`,
    );
  });
});

describe('streams', () => {
  it('delivers meta, the chunks in order with the right bytes, then end', async () => {
    const n = 12;
    const size = 1000;
    const { frames: got, error } = await drain(busStream(bus, frames, { mode: 'ok', n, size }, { idleTimeoutMs: 5000 }));
    expect(error).toBeUndefined();
    expect(got.map((f) => f.kind)).toEqual(['meta', ...Array<string>(n).fill('chunk'), 'end']);
    expect(got[0]).toEqual({ kind: 'meta', meta: { mode: 'ok' } });
    got.slice(1, -1).forEach((f, i) => {
      expect(f.kind).toBe('chunk');
      const data = (f as { data: Uint8Array }).data;
      expect(data.byteLength).toBe(size);
      expect(data.every((b) => b === i)).toBe(true);
    });
    const end = got.at(-1) as { kind: 'end'; end: { count: number; sha: string } };
    expect(end.end.count).toBe(n);
  });

  it('splits a chunk bigger than 64 KiB and it reassembles exactly', async () => {
    const size = 5 * STREAM_CHUNK_BYTES + 1234;
    const { frames: got, error } = await drain(busStream(bus, frames, { mode: 'big', size }, { idleTimeoutMs: 5000 }));
    expect(error).toBeUndefined();
    const chunks = got.filter((f): f is { kind: 'chunk'; data: Uint8Array } => f.kind === 'chunk');
    expect(chunks.length).toBe(6);
    for (const c of chunks) expect(c.data.byteLength).toBeLessThanOrEqual(STREAM_CHUNK_BYTES);
    const whole = Buffer.concat(chunks.map((c) => c.data));
    expect(whole.byteLength).toBe(size);
    const end = got.at(-1) as { kind: 'end'; end: { sha: string } };
    expect(end.kind).toBe('end');
    expect(sha(whole)).toBe(end.end.sha);
  });

  it('reports an error thrown after some chunks as a BusError with its status, after the chunks', async () => {
    const { frames: got, error } = await drain(busStream(bus, frames, { mode: 'fail-mid' }, { idleTimeoutMs: 5000 }));
    expect(got.map((f) => f.kind)).toEqual(['meta', 'chunk', 'chunk']);
    expect(error).toBeInstanceOf(BusError);
    expect((error as BusError).status).toBe(422);
    expect((error as BusError).message).toBe('failed in the middle of the stream');
    expect((error as BusError).details.param).toBe('mid');
  });

  it('reports an unexpected throw after some chunks as a generic 500', async () => {
    const { frames: got, error } = await drain(busStream(bus, frames, { mode: 'crash-mid' }, { idleTimeoutMs: 5000 }));
    expect(got.map((f) => f.kind)).toEqual(['meta', 'chunk']);
    expect((error as BusError).status).toBe(500);
    expect((error as BusError).message).not.toMatch(/secret/);
  });

  it('reports an error before any frame as an error reply, status and details kept', async () => {
    const { frames: got, error } = await drain(busStream(bus, frames, { mode: 'fail-early' }, { idleTimeoutMs: 5000 }));
    expect(got).toEqual([]);
    expect(error).toBeInstanceOf(BusError);
    expect((error as BusError).status).toBe(404);
    expect((error as BusError).message).toBe('nothing to stream for this request');
    expect((error as BusError).details.param).toBe('mode');
  });

  it('reports a request that fails the contract as a 400 error reply naming the field', async () => {
    const { frames: got, error } = await drain(busStream(bus, frames, { mode: 'ok', n: 1000 }, { idleTimeoutMs: 5000 }));
    expect(got).toEqual([]);
    expect((error as BusError).status).toBe(400);
    expect((error as BusError).details.param).toBe('n');
  });

  it('fails with WorkerUnavailableError, not a timeout, when no worker serves the stream', async () => {
    // As for requests: "no responders", not the idle timeout (that would be a WorkerTimeoutError).
    const { frames: got, error } = await drain(busStream(bus, nobodyStream, {}, { idleTimeoutMs: 10_000 }));
    expect(got).toEqual([]);
    expect(error).toBeInstanceOf(WorkerUnavailableError);
    expect(error).not.toBeInstanceOf(WorkerTimeoutError);
    expect((error as BusError).status).toBe(503);
  });

  it('gives WorkerTimeoutError when the worker goes silent, and the worker is told to stop', async () => {
    const trace = continueTrace(undefined); // the worker knows the request by its trace id
    const requestId = trace.traceId;
    const { frames: got, error } = await drain(busStream(bus, frames, { mode: 'silent' }, { idleTimeoutMs: 300, trace }));
    // The meta frame came, then silence: the stream ends in a timeout, not an error reply.
    expect(got.map((f) => f.kind)).toEqual(['meta']);
    expect(error).toBeInstanceOf(WorkerTimeoutError);
    expect((error as BusError).status).toBe(504);
    await waitFor(() => handlerAborted.get(requestId) === true, 3000, () => 'the silent handler was never cancelled');
  });

  it("aborting the caller's signal aborts the worker's ctx.signal", async () => {
    const trace = continueTrace(undefined); // the worker knows the request by its trace id
    const requestId = trace.traceId;
    const ac = new AbortController();
    const it = busStream(bus, frames, { mode: 'endless' }, { idleTimeoutMs: 5000, signal: ac.signal, trace });
    const kinds: string[] = [];
    let error: unknown;
    try {
      for await (const f of it) {
        kinds.push(f.kind);
        if (kinds.length === 3) ac.abort(); // meta + two chunks, then the client goes away
        if (kinds.length > 100) break; // bound: the abort must have ended the loop long before
      }
    } catch (err) {
      error = err;
    }
    expect(kinds.length).toBeLessThanOrEqual(4);
    expect(error).toBeInstanceOf(BusError);
    expect((error as BusError).status).toBe(499);
    await waitFor(() => handlerAborted.get(requestId) === true, 3000, () => "the worker's ctx.signal did not abort");
    // And the handler stopped sending (it checks its signal between chunks).
    const sent = endlessSent.get(requestId) ?? 0;
    await new Promise((r) => setTimeout(r, 200));
    expect(endlessSent.get(requestId) ?? 0).toBe(sent);
  });

  it("breaking out of the loop aborts the worker's ctx.signal", async () => {
    const trace = continueTrace(undefined); // the worker knows the request by its trace id
    const requestId = trace.traceId;
    let count = 0;
    for await (const f of busStream(bus, frames, { mode: 'endless' }, { idleTimeoutMs: 5000, trace })) {
      if (f.kind === 'chunk' && ++count === 2) break;
    }
    expect(count).toBe(2);
    await waitFor(() => handlerAborted.get(requestId) === true, 3000, () => "the worker's ctx.signal did not abort after break");
  });
});

describe('queue group', () => {
  it('two workers on the same contract share the requests', async () => {
    // One on this connection, one on a connection of its own (as two processes would be).
    const other = await connectBus({ url: natsUrl(), name: 'test-2', log: createLogger('test', 'warn'), ns: stack.ns });
    extraBuses.push(other);
    const a = await startWorker(bus, { name: 'test-shared', version: '1.0.0' });
    const b = await startWorker(other, { name: 'test-shared', version: '1.0.0' });
    extraWorkers.push(a, b);
    a.handle(shared, async (req) => ({ worker: 'a', i: req.i }));
    b.handle(shared, async (req) => ({ worker: 'b', i: req.i }));
    await Promise.all([bus.nc.flush(), other.nc.flush()]);

    const counts: Record<string, number> = { a: 0, b: 0 };
    for (let i = 0; i < 20; i++) {
      const r = await busRequest(bus, shared, { i }, { timeoutMs: 5000 });
      expect(r.i).toBe(i);
      counts[r.worker] = (counts[r.worker] ?? 0) + 1;
    }
    expect(counts.a! + counts.b!).toBe(20);
    // Random distribution: the chance that one worker gets all 20 is 2 × 2^-20.
    expect(counts.a).toBeGreaterThan(0);
    expect(counts.b).toBeGreaterThan(0);
  });
});

describe('signs of life (a worker that died vs one that is slow)', () => {
  const slow = requestContract('test.slow', 1, z.object({ ms: z.number().int().max(5000) }), z.object({ waited: z.number().int() }));
  const doomed = requestContract('test.doomed', 1, z.object({}), z.object({}));
  const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

  it('a request that outlives the silence limit is answered: the worker sends signs of life while it works', async () => {
    const w = await startWorker(bus, { name: 'test-slow', version: '1.0.0' });
    extraWorkers.push(w);
    w.handle(slow, async (req) => {
      await new Promise((r) => setTimeout(r, req.ms));
      return { waited: req.ms };
    });
    await bus.nc.flush();
    // 3.5 s of work against 1.5 s of allowed silence: only the signs of life (every 1 s) carry it.
    const reply = await busRequestBytes(bus, slow, bytes({ ms: 3500 }), { timeoutMs: 20_000, silenceMs: 1500 });
    expect(JSON.parse(new TextDecoder().decode(reply))).toEqual({ waited: 3500 });
  });

  it('a worker that dies holding a request: the caller gets a 503 after the silence limit, not a 504 at its total limit', async () => {
    // The worker on a connection of its own, as a process would be; "dies" = its connection closes
    // while its handler holds the request (what kill -9 looks like from the bus).
    const own = await connectBus({ url: natsUrl(), name: 'test-doomed', log: createLogger('test', 'warn'), ns: stack.ns });
    const w = await startWorker(own, { name: 'test-doomed', version: '1.0.0' });
    let taken!: () => void;
    const tookIt = new Promise<void>((r) => (taken = r));
    w.handle(doomed, async (_req, ctx) => {
      taken();
      await abortedOrAfter(ctx.signal, 10_000);
      return {};
    });
    await own.nc.flush();
    const pending = rejection(busRequestBytes(bus, doomed, bytes({}), { timeoutMs: 60_000, silenceMs: 1500 }));
    await tookIt;
    await own.nc.close();
    const err = await pending;
    expect(err).toBeInstanceOf(WorkerSilentError);
    expect(err).not.toBeInstanceOf(WorkerTimeoutError);
    expect((err as BusError).status).toBe(503);
    expect((err as BusError).message).toMatch(/stopped answering/);
    await stopBounded(w);
  });

  it('without a shorter silence limit, no signs of life are asked for and the total limit applies (504)', async () => {
    const trace = continueTrace(undefined); // the worker knows the request by its trace id
    const requestId = trace.traceId;
    const err = await rejection(busRequestBytes(bus, silentRequest, bytes({}), { timeoutMs: 400, silenceMs: 5000, trace }));
    expect(err).toBeInstanceOf(WorkerTimeoutError);
    expect((err as BusError).status).toBe(504);
    await waitFor(() => silentHeld.has(requestId), 5000, () => 'no worker took the request');
    silentHeld.get(requestId)!();
  });
});

describe('stopping a worker', () => {
  const stoppable = requestContract('test.stoppable', 1, z.object({}), z.object({ ok: z.boolean() }));
  let w: Worker;
  let stopped: Promise<'stopped' | 'hung'>;

  it('stops taking requests: the subject has no responders afterwards', async () => {
    w = await startWorker(bus, { name: 'test-stoppable', version: '1.0.0' });
    w.handle(stoppable, async () => ({ ok: true }));
    await bus.nc.flush();
    expect(await busRequest(bus, stoppable, {}, { timeoutMs: 5000 })).toEqual({ ok: true });
    stopped = stopBounded(w, 3000);
    let last: unknown;
    await waitFor(
      async () => {
        last = await rejection(busRequest(bus, stoppable, {}, { timeoutMs: 1000 })).catch((e) => e);
        return last instanceof WorkerUnavailableError;
      },
      5000,
      () => `still answered after stop(): ${String(last)}`,
    );
  });

  // nats 2.29.3's srv.stop() does not end the endpoint iterators; Worker.stop() must, or a
  // worker never exits on SIGTERM.
  it('stop() resolves once the work in flight is done (bounded at 3 s)', async () => {
    expect(await stopped).toBe('stopped');
  });
});

