import type { Msg } from 'nats';
import { BUS_HEADERS, type RequestContract } from '@gatehouse/contracts';
import type { z } from 'zod';
import type { Bus } from './connect.ts';
import { packBody, unpackBody } from './body.ts';
import { BusError, WorkerSilentError, WorkerTimeoutError, WorkerUnavailableError } from './errors.ts';
import { requestHeaders, throwIfErrorReply, type RequestOptions } from './request.ts';
import { openStreamInbox } from './stream-mux.ts';
import { soon } from './soon.ts';
import { commonEnv } from '../env.ts';

/**
 * One request, one reply, for a caller that forwards the reply instead of reading it: the request
 * body goes as the bytes given (already JSON), and the reply's bytes come back as they arrived
 * (a claim redeemed, an error reply thrown as its BusError) — no parse, no validation, no
 * re-serialisation. The worker validated its reply before sending it; reading it again is the
 * caller's choice.
 *
 * The reply comes through the connection's one wildcard inbox (stream-mux.ts) rather than
 * `nc.request`, which builds an Error per request for its stack trace: a measurable share of an
 * edge's CPU on cheap requests (docs/benchmarks.md, chat face 2026-11-27). No responders is the
 * server's 503 status message on the reply subject, as for streams.
 *
 * A request whose total limit is longer than the silence limit asks the worker for signs of life
 * (BUS_HEADERS.alive, every ALIVE_EVERY_MS); when none comes for `silenceMs`, the worker died or
 * lost the bus, and the caller gets a 503 then rather than a 504 at the end of a limit that may
 * be minutes (a vector write, an upload). One timer per request: it is re-armed when
 * it fires, not when a sign of life arrives.
 */
/** How often a worker sends a sign of life to a request that asked for them. */
export const ALIVE_EVERY_MS = 1000;

export async function busRequestBytes<Req extends z.ZodType, Res extends z.ZodType>(
  bus: Bus,
  contract: RequestContract<Req, Res>,
  body: Uint8Array,
  opts: RequestOptions = {},
): Promise<Uint8Array> {
  const timeout = opts.timeoutMs ?? 10_000;
  const silence = opts.silenceMs ?? commonEnv().GATEHOUSE_BUS_SILENCE_MS;
  const watch = silence < timeout;
  const hdrs = requestHeaders(contract, opts.trace);
  if (watch) hdrs.set(BUS_HEADERS.alive, String(ALIVE_EVERY_MS));
  const packed = await packBody(bus, body, hdrs);
  const inbox = openStreamInbox(bus);
  let timer: NodeJS.Timeout | undefined;
  try {
    const start = performance.now();
    let heard = start;
    let unsent: (err: unknown) => void = () => undefined;
    const failed = new Promise<never>((_, reject) => {
      unsent = reject;
      const check = () => {
        const now = performance.now();
        if (now - start >= timeout) return reject(new WorkerTimeoutError(contract.subject, timeout));
        if (now - heard >= silence) return reject(new WorkerSilentError(contract.subject, silence));
        timer = setTimeout(check, Math.max(1, Math.min(heard + silence, start + timeout) - now));
      };
      timer = setTimeout(check, watch ? silence : timeout);
    });
    // Sent with the other requests of this turn (soon.ts): one socket write for all of them.
    soon(() => bus.nc.publish(bus.subject(contract.subject), packed.data, { reply: inbox.subject, headers: packed.headers }), unsent);
    let reply: Msg | undefined;
    for (;;) {
      reply = await Promise.race([inbox.next(), failed]);
      if (!reply?.headers?.get(BUS_HEADERS.alive)) break;
      heard = performance.now();
    }
    if (!reply) throw new BusError(502, `no reply from ${contract.subject}`);
    if (reply.headers?.code === 503 && reply.data.byteLength === 0 && !reply.headers.get(BUS_HEADERS.errorCode)) {
      throw new WorkerUnavailableError(contract.subject);
    }
    const bytes = await unpackBody(bus, reply);
    throwIfErrorReply(reply, bytes);
    return bytes;
  } finally {
    clearTimeout(timer);
    inbox.close();
  }
}
