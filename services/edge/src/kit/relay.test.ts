import { describe, expect, it } from 'vitest';
import { BusError, type BusStreamReader } from '@gatehouse/common';
import { responseBody } from './relay.ts';

/** A stream reader that has sent its status and one chunk, then fails (the worker went silent). */
function failingStream(): BusStreamReader<unknown, unknown> {
  let sent = false;
  return {
    ended: false,
    buffered: () => undefined,
    next: async () => {
      if (sent) throw new BusError(504, 'the worker went silent');
      sent = true;
      return { kind: 'chunk', data: new TextEncoder().encode('event: ping\n\n') };
    },
    close: () => undefined,
  };
}

const read = async (r: NodeJS.ReadableStream) => {
  let out = '';
  for await (const c of r) out += c.toString();
  return out;
};

describe('responseBody', () => {
  it('without a trailer, a stream that fails after its status errors the body (the connection is cut)', async () => {
    await expect(read(responseBody(failingStream()) as NodeJS.ReadableStream)).rejects.toThrow('the worker went silent');
  });

  it('with a trailer, the failure becomes the protocol’s in-band error and the body ends cleanly', async () => {
    const body = await read(responseBody(failingStream(), (err) => Buffer.from(`event: error\ndata: ${(err as BusError).status}\n\n`)) as NodeJS.ReadableStream);
    expect(body).toBe('event: ping\n\nevent: error\ndata: 504\n\n');
  });
});
