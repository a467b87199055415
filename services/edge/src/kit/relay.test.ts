import { describe, expect, it } from 'vitest';
import { BusError, type StreamFrame } from '@gatehouse/common';
import { relayChunks } from './relay.ts';

async function* failingStream(): AsyncGenerator<StreamFrame<unknown, unknown>> {
  yield { kind: 'chunk', data: new TextEncoder().encode('event: ping\n\n') };
  throw new BusError(504, 'the worker went silent');
}

const read = async (r: NodeJS.ReadableStream) => {
  let out = '';
  for await (const c of r) out += c.toString();
  return out;
};

describe('relayChunks', () => {
  it('without a trailer, a stream that fails after its status errors the body (the connection is cut)', async () => {
    await expect(read(relayChunks(failingStream()))).rejects.toThrow('the worker went silent');
  });

  it('with a trailer, the failure becomes the protocol’s in-band error and the body ends cleanly', async () => {
    const body = await read(relayChunks(failingStream(), (err) => Buffer.from(`event: error\ndata: ${(err as BusError).status}\n\n`)));
    expect(body).toBe('event: ping\n\nevent: error\ndata: 504\n\n');
  });
});
