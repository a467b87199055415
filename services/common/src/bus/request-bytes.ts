import { ErrorCode, NatsError, type Msg } from 'nats';
import type { RequestContract } from '@gatehouse/contracts';
import type { z } from 'zod';
import type { Bus } from './connect.ts';
import { packBody, unpackBody } from './body.ts';
import { WorkerTimeoutError, WorkerUnavailableError } from './errors.ts';
import { requestHeaders, throwIfErrorReply, type RequestOptions } from './request.ts';

/**
 * One request, one reply, for a caller that forwards the reply instead of reading it: the request
 * body goes as the bytes given (already JSON), and the reply's bytes come back as they arrived
 * (a claim redeemed, an error reply thrown as its BusError) — no parse, no validation, no
 * re-serialisation. The worker validated its reply before sending it; reading it again is the
 * caller's choice.
 */
export async function busRequestBytes<Req extends z.ZodType, Res extends z.ZodType>(
  bus: Bus,
  contract: RequestContract<Req, Res>,
  body: Uint8Array,
  opts: RequestOptions = {},
): Promise<Uint8Array> {
  const timeout = opts.timeoutMs ?? 10_000;
  const packed = await packBody(bus, body, requestHeaders(contract, opts.requestId));
  let reply: Msg;
  try {
    reply = await bus.nc.request(bus.subject(contract.subject), packed.data, { timeout, headers: packed.headers });
  } catch (err) {
    if (err instanceof NatsError && err.code === ErrorCode.NoResponders) throw new WorkerUnavailableError(contract.subject);
    if (err instanceof NatsError && err.code === ErrorCode.Timeout) throw new WorkerTimeoutError(contract.subject, timeout);
    throw err;
  }
  const bytes = await unpackBody(bus, reply);
  throwIfErrorReply(reply, bytes);
  return bytes;
}
