import { headers as natsHeaders, nuid, type Msg, type MsgHdrs } from 'nats';
import { BUS_HEADERS, CLAIM_MARGIN_BYTES } from '@gatehouse/contracts';
import type { Bus } from './connect.ts';
import { parseExactJson, stringifyExactJson } from '../exact-json.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A BigInt travels as its exact digits (exact-json.ts); other values cost what JSON.stringify costs. */
export function jsonBytes(value: unknown): Uint8Array {
  return enc.encode(stringifyExactJson(value));
}

/**
 * Prepare a body for a bus message. Bodies above the server's max payload (less a margin for
 * headers) are put in the object store and the message carries only the claim: the server's
 * default 1 MB limit must never decide whether a request works.
 */
export async function packBody(bus: Bus, body: Uint8Array, hdrs: MsgHdrs = natsHeaders()): Promise<{ data: Uint8Array; headers: MsgHdrs }> {
  if (body.byteLength <= bus.maxPayload - CLAIM_MARGIN_BYTES) return { data: body, headers: hdrs };
  const name = `claim-${nuid.next()}`;
  const store = await bus.claims();
  await store.putBlob({ name }, body);
  hdrs.set(BUS_HEADERS.claim, name);
  return { data: new Uint8Array(0), headers: hdrs };
}

/** Read a message's body, redeeming (and deleting) its claim if it has one. */
export async function unpackBody(bus: Bus, msg: Msg): Promise<Uint8Array> {
  const claim = msg.headers?.get(BUS_HEADERS.claim);
  if (!claim) return msg.data;
  const store = await bus.claims();
  const data = await store.getBlob(claim);
  if (!data) throw new Error(`claim-checked body ${claim} is missing from the object store`);
  // Best effort: the bucket TTL removes it anyway if this delete is lost.
  store.delete(claim).catch(() => undefined);
  return data;
}

/** With `exactIntegers` (the contract's flag), integers beyond 2^53 come back as exact BigInts (exact-json.ts). */
export function parseJson(bytes: Uint8Array, exactIntegers = false): unknown {
  if (bytes.byteLength === 0) return {};
  const text = dec.decode(bytes);
  return exactIntegers ? parseExactJson(text) : JSON.parse(text);
}
