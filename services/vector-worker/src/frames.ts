import { promisify } from 'node:util';
import { inflateRaw } from 'node:zlib';
import { z } from 'zod';
import { BusError, parseExactJson } from '@gatehouse/common';
import { F32FrameError, unpackF32Frame, VECTOR_F32, VECTOR_TEXT_BODY_OPS, VectorOpRequest, type VectorOp } from '@gatehouse/contracts';

/**
 * The two frame subjects' requests (contracts' VECTOR_PACKED and VECTOR_F32) decoded into the bus
 * request of the operation they carry, which the worker then serves as if it came on
 * `vector.<op>`: the frames change how a body travels, never what it means.
 */

/** A frame's head: the operation and its bus request. */
const FrameHead = VectorOpRequest.extend({ op: z.string() });
export type FrameRequest = VectorOpRequest & { op: VectorOp };

const inflate = promisify(inflateRaw);

/**
 * `[u32 BE n][n bytes: JSON head][raw DEFLATE of the body text]`: a big forwarded body, inflated
 * (off the event loop) and left as `bodyText` for the operation to parse and validate once.
 */
export async function packedRequest(frame: Uint8Array): Promise<FrameRequest> {
  const view = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  const n = view.readUInt32BE(0);
  const head = FrameHead.parse(JSON.parse(view.subarray(4, 4 + n).toString('utf8')));
  const op = head.op as VectorOp;
  if (!VECTOR_TEXT_BODY_OPS.has(op)) throw new BusError(400, `${op} does not take a packed body`);
  const text = (await inflate(view.subarray(4 + n))).toString('utf8');
  return { ...head, op, body: undefined, bodyText: text };
}

const utf8 = new TextDecoder();

/** A gRPC request with its vectors as Float32 bytes (vector-f32.ts): the head with its body restored. */
export function f32Request(frame: Uint8Array, served: (op: string) => op is VectorOp): FrameRequest {
  let head: unknown;
  try {
    head = unpackF32Frame(frame, (b) => parseExactJson(utf8.decode(b)));
  } catch (err) {
    if (err instanceof F32FrameError || err instanceof SyntaxError) throw new BusError(400, `not a ${VECTOR_F32.subject} frame: ${err.message}`);
    throw err;
  }
  const req = FrameHead.parse(head);
  if (!served(req.op)) throw new BusError(400, `no operation ${req.op}`);
  return { ...req, op: req.op };
}
