import { promisify } from 'node:util';
import { deflateRaw } from 'node:zlib';
import { CLAIM_MARGIN_BYTES, VECTOR_PACKED, VECTOR_TEXT_BODY_OPS, type VectorOp } from '@gatehouse/contracts';
import { busRequestBytes, type Bus, type TraceCarrier } from '@gatehouse/common';

/**
 * The hot path of the REST port: operations whose body the edge forwards as the client's text
 * (`bodyText` in the bus envelope), unparsed and unvalidated, and whose reply it passes on as the
 * worker's bytes (contracts' VECTOR_TEXT_BODY_OPS: the worker validates those bodies first). The
 * edge decides nothing from them: gate, identity and routing come from method, path and headers.
 */
export const WORKER_VALIDATES = VECTOR_TEXT_BODY_OPS;

/** A JSON body kept as the client's text (the content-type parser's result for WORKER_VALIDATES). */
export class JsonText {
  constructor(readonly text: string) {}
}

/**
 * Whether a body may travel as text: not empty (Fastify's parser words that error) and with no
 * key that secure-json-parse would refuse as prototype poisoning (a plain substring test, so a
 * body that merely mentions either word takes the parsing path, which answers the same).
 */
export function forwardable(text: string): boolean {
  return text.length > 0 && !text.includes('__proto__') && !text.includes('constructor');
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * One bus request whose reply is returned as the worker's bytes (`{"result":…}`), through the
 * connection's shared reply inbox (busRequestBytes: `nc.request` built an Error per request for
 * its stack trace, and another to cancel its timer, ~2 % of this edge's CPU): no responders → 503,
 * timeout → 504, an error reply → its BusError. The reply is not re-parsed here; the worker built
 * it from its own typed result. Every vector subject (the catalog's and the VECTOR_PACKED /
 * VECTOR_F32 frames) is served by the worker runtime, which sends signs of life, so a worker that
 * died is a 503 after the silence limit, not a wait for the total one.
 */
export function requestBytes(bus: Bus, contract: { subject: string; version: number }, body: string | Uint8Array, opts: { trace?: TraceCarrier; timeoutMs: number }): Promise<Uint8Array> {
  // busRequestBytes reads only the contract's subject and version (its reply is not parsed).
  return busRequestBytes(bus, contract as Parameters<typeof busRequestBytes>[1], typeof body === 'string' ? enc.encode(body) : body, opts);
}

const OPEN = enc.encode('{"result":');

/**
 * Qdrant's envelope around the worker's `{"result":…}` bytes: `{"result":…,"status":"ok","time":t}`,
 * the same text the edge's serializer writes for `{result, status, time}`. Undefined when the
 * bytes are not that object (the caller then parses them).
 */
export function envelope(bytes: Uint8Array, time: number): Buffer | undefined {
  const n = bytes.byteLength;
  if (n < OPEN.length + 1 || bytes[n - 1] !== 0x7d) return undefined;
  for (let i = 0; i < OPEN.length; i++) if (bytes[i] !== OPEN[i]) return undefined;
  const tail = Buffer.from(`,"status":"ok","time":${JSON.stringify(time)}}`);
  return Buffer.concat([bytes.subarray(0, n - 1), tail]);
}

export const textOf = (bytes: Uint8Array) => dec.decode(bytes);

const deflate = promisify(deflateRaw);

/**
 * One forwarded operation: its envelope with the body text on `vector.<op>`, or, when the text
 * would not fit in a bus message, deflated on VECTOR_PACKED (zlib runs off the event loop).
 */
export async function forward(
  bus: Bus,
  op: VectorOp,
  contract: { subject: string; version: number },
  env: { collection?: string; id?: string; field?: string; query: Record<string, string> },
  text: string,
  opts: { trace?: TraceCarrier; timeoutMs: number },
): Promise<Uint8Array> {
  if (text.length * 3 < bus.maxPayload - CLAIM_MARGIN_BYTES || Buffer.byteLength(text) < bus.maxPayload - CLAIM_MARGIN_BYTES) {
    return requestBytes(bus, contract, JSON.stringify({ ...env, body: {}, bodyText: text }), opts);
  }
  const head = Buffer.from(JSON.stringify({ op, ...env }));
  const body = await deflate(text, { level: 1 });
  const frame = Buffer.allocUnsafe(4 + head.length + body.length);
  frame.writeUInt32BE(head.length, 0);
  head.copy(frame, 4);
  body.copy(frame, 4 + head.length);
  return requestBytes(bus, VECTOR_PACKED, frame, opts);
}
