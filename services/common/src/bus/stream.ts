import type { Msg } from 'nats';
import type { StreamContract } from '@gatehouse/contracts';
import { BUS_HEADERS, CLAIM_MARGIN_BYTES } from '@gatehouse/contracts';
import type { z } from 'zod';
import type { Bus } from './connect.ts';
import { jsonBytes, packBody, parseJson, unpackBody } from './body.ts';
import { BusError, WorkerTimeoutError, WorkerUnavailableError } from './errors.ts';
import { decodeFrames, type RawFrame } from './frames.ts';
import { requestHeaders, throwIfErrorReply } from './request.ts';
import { cancelPrefix, openStreamRoute } from './stream-mux.ts';
import type { TraceCarrier } from '../tracing.ts';

export type StreamFrame<M, E> =
  | { kind: 'meta'; meta: M }
  | { kind: 'chunk'; data: Uint8Array }
  | { kind: 'end'; end: E };

export interface StreamOptions {
  /** Longest silence allowed between two frames (and before the first). Not a total deadline. */
  idleTimeoutMs?: number;
  /** Aborting stops the iteration and tells the worker to stop working. */
  signal?: AbortSignal;
  /** The trace this request belongs to: sent as `traceparent` (request.ts). */
  trace?: TraceCarrier;
}

/** A streamed reply being read: frames as they arrive, and those that already have. */
export interface BusStreamReader<M, E> {
  /** The next frame (waiting for it if need be); undefined after the end frame. Rejects with the stream's error. */
  next(): Promise<StreamFrame<M, E> | undefined>;
  /**
   * The next frame if it has already arrived, else undefined (check `ended` to tell "not yet" from
   * "no more"). Throws the stream's error once the frames before it are read. Never waits.
   */
  buffered(): StreamFrame<M, E> | undefined;
  /** The end frame has been read. */
  readonly ended: boolean;
  /** Stop reading; tells the worker to stop unless the stream ended. Idempotent. */
  close(): void;
}

type Item = RawFrame | { kind: 'fail'; error: unknown };

/**
 * Send a request whose reply is a stream of frames on a private reply subject (one muxed
 * subscription per connection): ordered chunks, then an explicit end or error. Frames are decoded
 * as the messages arrive; nothing waits on a timer except a reader that is waiting for the next
 * one (one idle timer per stream, re-armed lazily). Closing before the end, an abort or a timeout
 * publishes a cancel so the worker kills its work.
 */
export function openBusStream<Req extends z.ZodType, Meta extends z.ZodType, End extends z.ZodType>(
  bus: Bus,
  contract: StreamContract<Req, Meta, End>,
  body: z.input<Req>,
  opts: StreamOptions = {},
): BusStreamReader<z.infer<Meta>, z.infer<End>> {
  type Frame = StreamFrame<z.infer<Meta>, z.infer<End>>;
  const idleMs = opts.idleTimeoutMs ?? 15_000;
  const signal = opts.signal;
  const items: Item[] = [];
  let head = 0;
  let expectSeq = 0;
  let failed: unknown; // an abort or a timeout: ends the stream at once, frames not yet read are dropped
  let ended = false; // the end frame was read
  let finished = false; // the end (or an error) arrived: no cancel needed
  let closed = false;
  let waiter: { resolve: (f: Frame | undefined) => void; reject: (e: unknown) => void } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let lastActivity = performance.now();

  const wake = () => {
    if (!waiter) return;
    const w = waiter;
    waiter = undefined;
    try {
      w.resolve(take());
    } catch (err) {
      w.reject(err);
    }
  };
  const fail = (err: unknown) => {
    if (failed !== undefined || finished) return;
    failed = err;
    wake();
  };
  const push = (item: Item) => {
    items.push(item);
    if (item.kind === 'end' || item.kind === 'fail' || item.kind === 'error') finished = true;
  };

  const onMessage = (msg: Msg) => {
    if (closed || finished) return;
    lastActivity = performance.now();
    if (msg.headers) {
      // Not frames: the server's "no responders" status, or an error reply sent before the worker
      // started streaming (a validation failure), whose body may be claim-checked.
      if (msg.headers.code === 503 && msg.data.byteLength === 0) push({ kind: 'fail', error: new WorkerUnavailableError(contract.subject) });
      else {
        finished = true;
        void unpackBody(bus, msg).then(
          (bytes) => {
            throwIfErrorReply(msg, bytes);
            throw new BusError(502, `unexpected message on the stream from ${contract.subject}`);
          },
        ).catch((error: unknown) => {
          items.push({ kind: 'fail', error });
          wake();
        });
        return;
      }
    } else {
      let decoded;
      try {
        decoded = decodeFrames(msg.data);
      } catch {
        push({ kind: 'fail', error: new BusError(502, `unexpected message on the stream from ${contract.subject}`) });
        return wake();
      }
      if (decoded.seq !== expectSeq) {
        push({ kind: 'fail', error: new BusError(502, `stream from ${contract.subject} lost frames (expected ${expectSeq}, got ${decoded.seq})`) });
        return wake();
      }
      expectSeq++;
      for (const f of decoded.frames) {
        push(f);
        if (finished) break;
      }
    }
    wake();
  };

  /** The next item as a frame, or undefined if none has arrived; throws failures. */
  const take = (): Frame | undefined => {
    if (failed !== undefined) throw failed;
    if (head >= items.length) return undefined;
    const item = items[head]!;
    items[head++] = undefined as never; // let the bytes go
    if (head === items.length) {
      items.length = 0;
      head = 0;
    }
    switch (item.kind) {
      case 'chunk':
        return { kind: 'chunk', data: item.data };
      case 'meta':
        return { kind: 'meta', meta: contract.meta.parse(parseJson(item.data)) };
      case 'end':
        ended = true;
        release();
        return { kind: 'end', end: contract.end.parse(parseJson(item.data)) };
      case 'error': {
        const e = parseJson(item.data) as { status?: number; message?: string; details?: Record<string, unknown> };
        failed = new BusError(Number(e.status) || 500, e.message || 'worker error', e.details && typeof e.details === 'object' ? e.details : {});
        throw failed;
      }
      case 'fail':
        failed = item.error;
        throw failed;
    }
  };

  const onTimer = () => {
    timer = undefined;
    if (closed || failed !== undefined || !waiter) return; // re-armed when someone waits again
    const idle = performance.now() - lastActivity;
    if (idle >= idleMs) fail(new WorkerTimeoutError(contract.subject, idleMs));
    else timer = setTimeout(onTimer, idleMs - idle);
  };
  const onAbort = () => fail(new BusError(499, 'the client went away'));

  const route = openStreamRoute(bus, onMessage);
  const cancelSubject = `${cancelPrefix(bus)}.${route.token}`;
  const release = () => {
    if (closed) return;
    closed = true;
    route.close();
    if (timer) clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  };
  if (signal) {
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  }

  const hdrs = requestHeaders(contract, opts.trace);
  hdrs.set(BUS_HEADERS.cancel, cancelSubject);
  const subject = bus.subject(contract.subject);
  const bytes = jsonBytes(body);
  if (bytes.byteLength <= bus.maxPayload - CLAIM_MARGIN_BYTES) bus.nc.publish(subject, bytes, { reply: route.subject, headers: hdrs });
  else {
    packBody(bus, bytes, hdrs).then(
      (packed) => !closed && bus.nc.publish(subject, packed.data, { reply: route.subject, headers: packed.headers }),
      (err: unknown) => fail(err),
    );
  }

  return {
    get ended() {
      return ended;
    },
    buffered: () => (ended ? undefined : take()),
    next() {
      if (ended) return Promise.resolve(undefined);
      try {
        const f = take();
        if (f) return Promise.resolve(f);
      } catch (err) {
        return Promise.reject(err);
      }
      if (closed) return Promise.reject(new BusError(502, `the stream from ${contract.subject} was closed`));
      lastActivity = performance.now();
      timer ??= setTimeout(onTimer, idleMs);
      return new Promise((resolve, reject) => (waiter = { resolve, reject }));
    },
    close() {
      if (closed) return;
      const cancel = !finished;
      release();
      if (waiter) {
        const w = waiter;
        waiter = undefined;
        w.resolve(undefined);
      }
      if (cancel && !bus.nc.isClosed()) bus.nc.publish(cancelSubject);
    },
  };
}

/**
 * The same as an async iterator: yields frames as they arrive (no buffering). Leaving the loop
 * early, an abort or a timeout publishes a cancel so the worker kills its work.
 */
export async function* busStream<Req extends z.ZodType, Meta extends z.ZodType, End extends z.ZodType>(
  bus: Bus,
  contract: StreamContract<Req, Meta, End>,
  body: z.input<Req>,
  opts: StreamOptions = {},
): AsyncGenerator<StreamFrame<z.infer<Meta>, z.infer<End>>> {
  const s = openBusStream(bus, contract, body, opts);
  try {
    for (let f = await s.next(); f; f = s.ended ? undefined : await s.next()) yield f;
  } finally {
    s.close();
  }
}
