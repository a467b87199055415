import type { StreamWriter } from '@gatehouse/common';

/**
 * A stream writer whose chunks written in the same turn of the event loop leave as one chunk (one
 * bus frame, one socket write at the edge). Upstream chunks arrive in bursts — one socket read
 * often holds dozens — and each would otherwise cost a frame of its own all the way to the client.
 * A lone chunk is not held: the batch goes out when the current turn's I/O callbacks are done
 * (`setImmediate`), never on a timer. The meta waits the same way, so it travels with the first
 * chunks when they are already here (one message, and at the edge one write with the headers);
 * end goes out at once, after whatever is pending. Call `flush()` before reporting a failure so
 * nothing written is lost (a meta written still goes first: the failure is then in-band).
 */
export function coalescing<M, E>(out: StreamWriter<M, E>): StreamWriter<M, E> & { flush(): void } {
  let parts: Uint8Array[] = [];
  let meta: { m: M } | undefined;
  let scheduled: NodeJS.Immediate | undefined;
  const flush = () => {
    if (scheduled) clearImmediate(scheduled);
    scheduled = undefined;
    if (meta) {
      const m = meta.m;
      meta = undefined;
      out.meta(m);
    }
    if (!parts.length) return;
    const data = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    parts = [];
    out.chunk(data);
  };
  return {
    meta(m) {
      flush();
      meta = { m };
      scheduled ??= setImmediate(flush);
    },
    chunk(data) {
      if (!data.byteLength) return;
      parts.push(data);
      scheduled ??= setImmediate(flush);
    },
    end(e) {
      flush();
      out.end(e);
    },
    flush,
  };
}
