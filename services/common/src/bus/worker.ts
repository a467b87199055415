import { headers as natsHeaders, type ServiceMsg } from 'nats';
import {
  BUS_HEADERS,
  contractTag,
  STREAM_CHUNK_BYTES,
  type RequestContract,
  type StreamContract,
  type StreamFrameKind,
} from '@gatehouse/contracts';
import type { z } from 'zod';
import type { Bus } from './connect.ts';
import { jsonBytes, packBody, parseJson, unpackBody } from './body.ts';
import { BusError } from './errors.ts';
import { cancelPrefix } from './stream-mux.ts';
import { FrameBatcher } from './frames.ts';
import { soon } from './soon.ts';
import { busHandled, busInFlight } from '../metrics.ts';
import type { Logger } from '../logger.ts';
import { continueTrace, initTracing, shutdownTracing, startSpan, TRACEPARENT, type SpanHandle, type Trace, type TraceCarrier } from '../tracing.ts';

/**
 * Connection failures (node's, DNS, postgres.js's own, SQLSTATE class 08 and 57P01-05): a store
 * that is away, not a bug. Class 53 (insufficient resources: 53300 too many connections — the
 * server's max_connections or a role's or database's CONNECTION LIMIT —, out of memory, disk full)
 * is a store that is full right now. Either way the client may retry: 503.
 */
const STORE_AWAY = /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|CONNECTION_CLOSED|CONNECTION_ENDED|CONNECTION_DESTROYED|CONNECT_TIMEOUT|08\d{3}|57P0[1-5])$/;
const STORE_FULL = /^53\d{3}$/;

/** 503 for a store that is away or full (the error or its cause), else undefined. */
export function storeUnavailable(err: unknown): BusError | undefined {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 3; e = (e as { cause?: unknown }).cause, depth++) {
    const code = String((e as { code?: unknown }).code ?? '');
    if (STORE_AWAY.test(code)) return new BusError(503, 'the service cannot reach its database right now; try again shortly');
    if (STORE_FULL.test(code)) return new BusError(503, 'the database is out of connections (or another resource) right now; try again shortly');
  }
  return undefined;
}

export interface HandlerContext extends TraceCarrier {
  /** Aborts when the requester cancels (client disconnected) or the worker stops. */
  signal: AbortSignal;
  /** This request's place in its trace: continued from the message's `traceparent`, or new if it had none. */
  readonly trace: Trace;
  /** The worker's logger with this request's `trace_id` and `span_id`: every line about the request goes through it. */
  readonly log: Logger;
  /** The `traceparent` for bus calls made for this request: pass the context as their `trace` option. */
  readonly traceparent: string;
}

/**
 * A request's context. The trace and the child logger are made on first use: a request that
 * neither logs nor calls onwards costs the header lookup only (with tracing on, the span is the trace).
 */
class RequestContext implements HandlerContext {
  private t: Trace | undefined;
  private l: Logger | undefined;
  constructor(
    readonly signal: AbortSignal,
    private readonly incoming: string | undefined,
    private readonly base: Logger,
    span: SpanHandle | undefined,
  ) {
    this.t = span?.trace;
  }
  get trace(): Trace {
    return (this.t ??= continueTrace(this.incoming));
  }
  get log(): Logger {
    return (this.l ??= this.base.child(this.trace.logFields));
  }
  get traceparent(): string {
    return this.trace.traceparent;
  }
}

/** How often a worker looks for requests owed a sign of life (BUS_HEADERS.alive). */
const ALIVE_TICK_MS = 250;
const NO_BODY = new Uint8Array(0);

/** Writes one streamed reply: optional meta, chunks, then end (or error, sent by the runner). */
export interface StreamWriter<M, E> {
  meta(meta: M): void;
  chunk(data: Uint8Array): void;
  end(end: E): void;
}

export interface Worker {
  handle<Req extends z.ZodType, Res extends z.ZodType>(
    contract: RequestContract<Req, Res>,
    handler: (req: z.infer<Req>, ctx: HandlerContext) => Promise<z.input<Res>>,
  ): void;
  stream<Req extends z.ZodType, M extends z.ZodType, E extends z.ZodType>(
    contract: StreamContract<Req, M, E>,
    handler: (req: z.infer<Req>, out: StreamWriter<z.input<M>, z.input<E>>, ctx: HandlerContext) => Promise<void>,
  ): void;
  /**
   * A subject whose requests and replies are frames in an encoding of the caller's own (deflated
   * text, Float32 bytes), not a contract's JSON: the handler gets the body's bytes (a claim
   * redeemed) and returns the reply's, so nothing is parsed or serialised twice on a hot path.
   * Everything else is `handle`'s: the version check, signs of life, cancel, trace, metrics,
   * error replies.
   */
  handleBytes(contract: { subject: string; version: number }, handler: (body: Uint8Array, ctx: HandlerContext) => Promise<Uint8Array>): void;
  /** Stop taking requests, let the ones in progress finish for up to `graceMs`, then abort them. */
  stop(graceMs?: number): Promise<void>;
}

/** The request's body bytes (a claim redeemed), once its contract tag is this worker's. */
function requestBody(bus: Bus, contract: { subject: string; version: number }, msg: ServiceMsg): Promise<Uint8Array> {
  const tag = msg.headers?.get(BUS_HEADERS.contract);
  if (tag && tag !== contractTag(contract)) {
    throw new BusError(502, `version skew: the worker speaks ${contractTag(contract)}, the request is ${tag}`);
  }
  return unpackBody(bus, msg);
}

/** The request parsed and validated with its contract: 400 with the first issue otherwise. */
async function decodeRequest<Req extends z.ZodType>(
  bus: Bus,
  contract: { subject: string; version: number; request: Req; exactIntegers?: boolean },
  msg: ServiceMsg,
): Promise<z.infer<Req>> {
  const body = await requestBody(bus, contract, msg);
  let raw: unknown;
  try {
    raw = parseJson(body, contract.exactIntegers);
  } catch {
    throw new BusError(400, 'the request body is not valid JSON');
  }
  const parsed = contract.request.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new BusError(400, issue?.message ?? 'invalid request', { param: issue?.path.join('.') || null });
  }
  return parsed.data;
}

/** A handler's failure as the error reply the requester reads. */
/**
 * An error reply's message travels in a NATS header, where a line break is refused (the publish
 * throws, and a throw there ended the process): line breaks become spaces.
 */
const headerSafe = (message: string): string => message.replace(/[\r\n]+/g, ' ');

function toBusError(err: unknown, subject: string, log: Logger): BusError {
  if (err instanceof BusError) return err;
  // The worker's store is away (Postgres restarting) or full (out of connections): the client
  // may retry, it did nothing wrong.
  const away = storeUnavailable(err);
  if (away) {
    log.warn({ err, subject }, 'store unavailable');
    return away;
  }
  // Postgres's data exceptions (SQLSTATE class 22: a NUL in text, a number out of range, an
  // invalid value for a type) and row-size limits are what the client sent, not a fault here.
  const code = (err as { code?: unknown; name?: unknown }).code;
  if ((err as { name?: unknown }).name === 'PostgresError' && typeof code === 'string' && (code.startsWith('22') || code === '54000')) {
    return new BusError(400, code === '22021' || code === '22P05' ? 'text may not contain NUL (\\u0000) characters' : `invalid value: ${(err as Error).message}`);
  }
  log.error({ err, subject }, 'worker handler failed');
  return new BusError(500, 'internal error in the worker');
}

/**
 * Each request's abort signal: aborted when its requester cancels or the worker stops. One
 * wildcard subscription serves every cancel addressed to this process's requests; a cancel for a
 * request another copy is serving finds nothing in the map and is ignored.
 */
function requestContexts(bus: Bus, stopping: AbortSignal) {
  const cancels = new Map<string, AbortController>();
  const cancelAt = `${cancelPrefix(bus)}.`;
  const subscription = bus.nc.subscribe(`${cancelAt}*`, { callback: (err, m) => !err && cancels.get(m.subject)?.abort() });
  // Every request in flight, so a stop can abort them all (cheaper than a listener per request on
  // the stop signal).
  const live = new Set<AbortController>();
  stopping.addEventListener('abort', () => {
    for (const ac of live) ac.abort();
  });
  return {
    open(msg: ServiceMsg, traceparent: string | undefined, span: SpanHandle | undefined): { ctx: HandlerContext; done: () => void } {
      const ac = new AbortController();
      if (stopping.aborted) ac.abort();
      else live.add(ac);
      const cancelSubject = msg.headers?.get(BUS_HEADERS.cancel) || undefined;
      // A cancel subject under our wildcard is served by the map; any other (an older requester)
      // gets a subscription of its own.
      const shared = cancelSubject?.startsWith(cancelAt) ?? false;
      if (cancelSubject && shared) cancels.set(cancelSubject, ac);
      const cancelSub =
        cancelSubject && !shared ? bus.nc.subscribe(cancelSubject, { max: 1, callback: () => ac.abort() }) : undefined;
      return {
        ctx: new RequestContext(ac.signal, traceparent, bus.log, span),
        done: () => {
          if (cancelSubject && shared) cancels.delete(cancelSubject);
          cancelSub?.unsubscribe();
          live.delete(ac);
        },
      };
    },
    close: () => subscription.unsubscribe(),
  };
}

/**
 * Signs of life for requests that asked for them (BUS_HEADERS.alive): one timer for the whole
 * worker, and a request costs only a set entry unless it outlives its interval. A worker that
 * died, or lost its connection for good, sends none, and the requester gives up after its
 * silence limit instead of its (much longer) total one.
 */
function signsOfLife(bus: Bus) {
  const owed = new Set<{ reply: string; every: number; next: number }>();
  const aliveHeaders = natsHeaders();
  aliveHeaders.set(BUS_HEADERS.alive, '1');
  const timer = setInterval(() => {
    if (!owed.size) return;
    // A closed connection (the process is going away) owes nothing it could still send.
    if (bus.nc.isClosed()) return owed.clear();
    const now = performance.now();
    for (const o of owed) {
      if (now < o.next) continue;
      bus.nc.publish(o.reply, NO_BODY, { headers: aliveHeaders });
      o.next = now + o.every;
    }
  }, ALIVE_TICK_MS);
  timer.unref();
  return {
    /** Start owing `msg` signs of life if it asked; the returned function stops. */
    keepAlive(msg: ServiceMsg): (() => void) | undefined {
      const every = Number(msg.headers?.get(BUS_HEADERS.alive));
      if (!msg.reply || !(every >= ALIVE_TICK_MS)) return undefined;
      const o = { reply: msg.reply, every, next: performance.now() + every };
      owed.add(o);
      return () => owed.delete(o);
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * One streamed reply: the handler's frames batched per turn (frames.ts), big chunks cut, then
 * its end; a failure before any frame is an error reply, after one an error frame. Resolves to
 * the status the metrics record.
 */
async function runStream(
  bus: Bus,
  contract: StreamContract<z.ZodType, z.ZodType, z.ZodType>,
  handler: (req: unknown, out: StreamWriter<unknown, unknown>, ctx: HandlerContext) => Promise<void>,
  msg: ServiceMsg,
  ctx: HandlerContext,
  stopping: AbortSignal,
): Promise<number> {
  let closed = false;
  const reply = msg.reply;
  // Frames written in one turn leave as one message (frames.ts).
  const batch = new FrameBatcher((data) => bus.nc.publish(reply!, data));
  const send = (kind: StreamFrameKind, data: Uint8Array) => {
    if (closed || !reply) return;
    batch.add(kind, data);
  };
  const out = {
    meta: (m: unknown) => send('meta', jsonBytes(contract.meta.parse(m))),
    chunk: (data: Uint8Array) => {
      // Cut big chunks so a frame never nears the server's max payload.
      if (data.byteLength <= STREAM_CHUNK_BYTES) return send('chunk', data);
      for (let off = 0; off < data.byteLength; off += STREAM_CHUNK_BYTES) {
        send('chunk', data.subarray(off, off + STREAM_CHUNK_BYTES));
      }
    },
    end: (e: unknown) => {
      send('end', jsonBytes(contract.end.parse(e)));
      // Nothing follows an end: out it goes now, with whatever is still batched.
      batch.flush();
      closed = true;
    },
  };
  try {
    const req = await decodeRequest(bus, contract, msg);
    await handler(req, out, ctx);
    if (!closed && (!ctx.signal.aborted || stopping.aborted)) throw new Error('stream handler returned without end()');
    return 200;
  } catch (err) {
    // Cancelled by the requester: nobody reads an error. Stopped by shutdown: say so, or
    // the requester would wait out its idle timeout. (499: nginx's "client closed request".)
    if (ctx.signal.aborted && !stopping.aborted) return 499;
    const e = stopping.aborted
      ? new BusError(503, 'the worker stopped before finishing; try again')
      : toBusError(err, contract.subject, ctx.log);
    if (batch.written === 0) msg.respondError(e.status, headerSafe(e.message), jsonBytes(e.details));
    else {
      send('error', jsonBytes({ status: e.status, message: e.message, details: e.details }));
      batch.flush();
    }
    closed = true;
    return e.status;
  }
}

/**
 * A NATS service (micro) in a queue group named after it: start N copies and they share the
 * load; `$SRV.PING` / `$SRV.STATS` show them. Each message is handled concurrently.
 */
export async function startWorker(bus: Bus, opts: { name: string; version: string; description?: string }): Promise<Worker> {
  // OpenTelemetry only if an OTLP endpoint is configured (tracing.ts): nothing is loaded otherwise.
  await initTracing(`${opts.name}-worker`, bus.log);
  const srv = await bus.nc.services.add({
    name: opts.name,
    version: opts.version,
    description: opts.description ?? '',
    queue: opts.name,
  });
  const stopping = new AbortController();
  const inflight = new Set<Promise<void>>();
  // nats 2.29: srv.stop() drains the subscriptions but does not end the endpoints' (unused)
  // iterators; they are stopped here too.
  const endpoints: { stop(): void }[] = [];
  const log = bus.log;
  const contexts = requestContexts(bus, stopping.signal);
  const alive = signsOfLife(bus);

  function track(p: Promise<void>): void {
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  }

  /**
   * One endpoint per contract; each message is handled concurrently with its own context, straight
   * from the subscription's callback (no iterator between the socket and the handler).
   */
  function serve(subject: string, onMessage: (msg: ServiceMsg, ctx: HandlerContext) => Promise<number>): void {
    // Metric children bound once per endpoint (metrics.ts): per request, an increment and an observation.
    const inFlight = busInFlight.labels({ subject });
    const byStatus = new Map<number, ReturnType<typeof busHandled.labels>>();
    const ep = srv.addEndpoint(subject.replace(/[^A-Za-z0-9_-]/g, '_'), {
      subject: bus.subject(subject),
      handler: (err, msg) => {
        if (err) return;
        const traceparent = msg.headers?.get(TRACEPARENT) || undefined;
        // A span only when tracing is on (startSpan is undefined otherwise), a child of the caller's.
        const span = startSpan(subject, 'server', traceparent, { 'messaging.system': 'nats', 'messaging.destination.name': subject });
        const { ctx, done } = contexts.open(msg, traceparent, span);
        const t0 = performance.now();
        inFlight.inc();
        track(
          onMessage(msg, ctx)
            .then((status) => {
              const ms = performance.now() - t0;
              let h = byStatus.get(status);
              if (!h) byStatus.set(status, (h = busHandled.labels({ subject, status: String(status) })));
              h.observe(ms / 1000);
              span?.end(undefined, { 'gatehouse.status': status }, status >= 500);
              // One line per request at debug level, with the request's trace (LOG_LEVEL=debug).
              if (log.isLevelEnabled('debug')) ctx.log.debug({ subject, status, ms: Math.round(ms * 10) / 10 }, 'bus request handled');
            })
            .finally(() => {
              inFlight.dec();
              done();
            }),
        );
      },
    });
    endpoints.push(ep);
  }

  /** One request, one reply: `produce` makes the reply's bytes; a failure is an error reply. */
  function serveReply(subject: string, produce: (msg: ServiceMsg, ctx: HandlerContext) => Promise<Uint8Array>): void {
    serve(subject, async (msg, ctx) => {
      const owed = alive.keepAlive(msg);
      try {
        const packed = await packBody(bus, await produce(msg, ctx));
        owed?.();
        // With the other replies of this turn (soon.ts): one socket write for all of them.
        soon(() => msg.respond(packed.data, { headers: packed.headers }));
        return 200;
      } catch (err) {
        owed?.();
        const e = toBusError(err, subject, ctx.log);
        msg.respondError(e.status, headerSafe(e.message), jsonBytes(e.details));
        return e.status;
      }
    });
  }

  return {
    handle(contract, handler) {
      serveReply(contract.subject, async (msg, ctx) => jsonBytes(await handler(await decodeRequest(bus, contract, msg), ctx)));
    },

    handleBytes(contract, handler) {
      serveReply(contract.subject, async (msg, ctx) => handler(await requestBody(bus, contract, msg), ctx));
    },

    stream(contract, handler) {
      const run = handler as (req: unknown, out: StreamWriter<unknown, unknown>, ctx: HandlerContext) => Promise<void>;
      serve(contract.subject, (msg, ctx) => runStream(bus, contract, run, msg, ctx, stopping.signal));
    },

    async stop(graceMs = 5000) {
      await srv.stop();
      for (const ep of endpoints) ep.stop();
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
      await Promise.race([Promise.allSettled([...inflight]), grace]);
      clearTimeout(timer);
      stopping.abort();
      await Promise.allSettled([...inflight]);
      alive.stop();
      contexts.close();
      await shutdownTracing();
    },
  };
}

/**
 * Announce a started worker and stop it cleanly on SIGINT/SIGTERM: flush first (the endpoints'
 * subscriptions are on the server once it returns, so "serving" is true when logged), then on a
 * signal let requests in flight finish (5 s), drain the connection, run `cleanup`, exit.
 */
export async function serveUntilSignalled(
  bus: Bus,
  worker: Worker,
  name: string,
  info: Record<string, unknown>,
  cleanup: () => Promise<unknown> = async () => undefined,
): Promise<void> {
  await bus.nc.flush();
  bus.log.info(info, `${name} serving on the bus`);
  let stopping = false;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, async () => {
      if (stopping) return;
      stopping = true;
      bus.log.info({ signal: sig }, `${name} stopping`);
      await worker.stop(5000);
      await bus.nc.drain();
      await cleanup();
      process.exit(0);
    });
  }
}
