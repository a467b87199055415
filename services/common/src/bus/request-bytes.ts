import type { Msg } from 'nats';
import { BUS_HEADERS, type RequestContract } from '@gatehouse/contracts';
import type { z } from 'zod';
import type { Bus } from './connect.ts';
import { packBody, unpackBody } from './body.ts';
import { BusError, WorkerTimeoutError, WorkerUnavailableError } from './errors.ts';
import { requestHeaders, throwIfErrorReply, type RequestOptions } from './request.ts';
import { openStreamInbox } from './stream-mux.ts';

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
 */
export async function busRequestBytes<Req extends z.ZodType, Res extends z.ZodType>(
  bus: Bus,
  contract: RequestContract<Req, Res>,
  body: Uint8Array,
  opts: RequestOptions = {},
): Promise<Uint8Array> {
  const timeout = opts.timeoutMs ?? 10_000;
  const packed = await packBody(bus, body, requestHeaders(contract, opts.trace));
  const inbox = openStreamInbox(bus);
  let timer: NodeJS.Timeout | undefined;
  try {
    bus.nc.publish(bus.subject(contract.subject), packed.data, { reply: inbox.subject, headers: packed.headers });
    const reply: Msg | undefined = await Promise.race([
      inbox.next(),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new WorkerTimeoutError(contract.subject, timeout)), timeout))),
    ]);
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
