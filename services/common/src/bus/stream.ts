import type { Msg } from 'nats';
import { BUS_HEADERS, type StreamContract } from '@gatehouse/contracts';
import type { z } from 'zod';
import type { Bus } from './connect.ts';
import { jsonBytes, packBody, parseJson, unpackBody } from './body.ts';
import { BusError, WorkerTimeoutError, WorkerUnavailableError } from './errors.ts';
import { requestHeaders, throwIfErrorReply } from './request.ts';
import { cancelPrefix, openStreamInbox, type StreamInbox } from './stream-mux.ts';

export type StreamFrame<M, E> =
  | { kind: 'meta'; meta: M }
  | { kind: 'chunk'; data: Uint8Array }
  | { kind: 'end'; end: E };

export interface StreamOptions {
  /** Longest silence allowed between two frames (and before the first). Not a total deadline. */
  idleTimeoutMs?: number;
  /** Aborting stops the iteration and tells the worker to stop working. */
  signal?: AbortSignal;
  requestId?: string;
}

/**
 * Send a request whose reply is a stream of frames on a private inbox: ordered chunks, then an
 * explicit end or error. Iterating yields frames as they arrive (no buffering). Leaving the loop
 * early, an abort or a timeout publishes a cancel so the worker kills its work.
 */
export async function* busStream<Req extends z.ZodType, Meta extends z.ZodType, End extends z.ZodType>(
  bus: Bus,
  contract: StreamContract<Req, Meta, End>,
  body: z.input<Req>,
  opts: StreamOptions = {},
): AsyncGenerator<StreamFrame<z.infer<Meta>, z.infer<End>>> {
  const idleMs = opts.idleTimeoutMs ?? 15_000;
  const inbox = openStreamInbox(bus);
  const cancelSubject = `${cancelPrefix(bus)}.${inbox.token}`;
  const hdrs = requestHeaders(contract, opts.requestId);
  hdrs.set(BUS_HEADERS.cancel, cancelSubject);
  let finished = false;
  try {
    const packed = await packBody(bus, jsonBytes(body), hdrs);
    bus.nc.publish(bus.subject(contract.subject), packed.data, { reply: inbox.subject, headers: packed.headers });
    let expectSeq = 0;
    while (true) {
      const msg = await nextWithin(inbox, idleMs, opts.signal, contract.subject);
      if (!msg) throw new BusError(502, `the stream from ${contract.subject} closed without an end frame`);
      const frame = msg.headers?.get(BUS_HEADERS.frame);
      if (!frame) {
        // Not a frame: either the server's "no responders" status or an error reply sent before
        // the worker started streaming (validation failure).
        if (msg.headers?.code === 503 && msg.data.byteLength === 0) throw new WorkerUnavailableError(contract.subject);
        const bytes = await unpackBody(bus, msg);
        throwIfErrorReply(msg, bytes);
        throw new BusError(502, `unexpected message on the stream from ${contract.subject}`);
      }
      const seq = Number(msg.headers?.get(BUS_HEADERS.seq));
      if (seq !== expectSeq) {
        throw new BusError(502, `stream from ${contract.subject} lost frames (expected ${expectSeq}, got ${seq})`);
      }
      expectSeq++;
      const bytes = await unpackBody(bus, msg);
      if (frame === 'chunk') yield { kind: 'chunk', data: bytes };
      else if (frame === 'meta') yield { kind: 'meta', meta: contract.meta.parse(parseJson(bytes)) };
      else if (frame === 'error') throwIfErrorReply(msg, bytes);
      else if (frame === 'end') {
        finished = true;
        yield { kind: 'end', end: contract.end.parse(parseJson(bytes)) };
        return;
      }
    }
  } finally {
    if (!finished && !bus.nc.isClosed()) bus.nc.publish(cancelSubject);
    inbox.close();
  }
}

async function nextWithin(
  inbox: StreamInbox,
  ms: number,
  signal: AbortSignal | undefined,
  subject: string,
): Promise<Msg | undefined> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      inbox.next(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new WorkerTimeoutError(subject, ms)), ms);
        if (signal) {
          onAbort = () => reject(new BusError(499, 'the client went away'));
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        }
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
