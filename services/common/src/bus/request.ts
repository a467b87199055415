import { ErrorCode, headers as natsHeaders, NatsError, type Msg, type MsgHdrs } from 'nats';
import { BUS_HEADERS, contractTag, type RequestContract } from '@gatehouse/contracts';
import type { z } from 'zod';
import type { Bus } from './connect.ts';
import { jsonBytes, packBody, parseJson, unpackBody } from './body.ts';
import { BusError, WorkerTimeoutError, WorkerUnavailableError } from './errors.ts';
import { TRACEPARENT, type TraceCarrier } from '../tracing.ts';

export interface RequestOptions {
  timeoutMs?: number;
  /** The trace this request belongs to (the edge's request, a worker's context): sent as `traceparent`. */
  trace?: TraceCarrier;
  /**
   * busRequestBytes only: give up with a 503 after this long without a reply or a sign of life
   * from the worker (BUS_HEADERS.alive), when that is shorter than `timeoutMs`. Defaults to
   * GATEHOUSE_BUS_SILENCE_MS (10 000).
   */
  silenceMs?: number;
}

/** Throw the BusError an error reply carries (NATS services convention), if it is one. */
export function throwIfErrorReply(msg: Msg, body: Uint8Array): void {
  const code = msg.headers?.get(BUS_HEADERS.errorCode);
  if (!code) return;
  let details: Record<string, unknown> = {};
  try {
    const parsed = parseJson(body);
    if (parsed && typeof parsed === 'object') details = parsed as Record<string, unknown>;
  } catch {
    // An error reply without a JSON body is fine: the headers carry what matters.
  }
  throw new BusError(Number(code) || 500, msg.headers?.get(BUS_HEADERS.errorMessage) || 'worker error', details);
}

export function requestHeaders(contract: { subject: string; version: number }, trace?: TraceCarrier): MsgHdrs {
  const h = natsHeaders();
  h.set(BUS_HEADERS.contract, contractTag(contract));
  if (trace) h.set(TRACEPARENT, trace.traceparent);
  return h;
}

/** One request, one reply, validated against the contract on the way back. */
export async function busRequest<Req extends z.ZodType, Res extends z.ZodType>(
  bus: Bus,
  contract: RequestContract<Req, Res>,
  body: z.input<Req>,
  opts: RequestOptions = {},
): Promise<z.infer<Res>> {
  const timeout = opts.timeoutMs ?? 10_000;
  const packed = await packBody(bus, jsonBytes(body), requestHeaders(contract, opts.trace));
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
  return contract.reply.parse(parseJson(bytes, contract.exactIntegers));
}
