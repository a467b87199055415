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
 *
 * Every stream of the process flushes in the same callback (one `setImmediate` for all), so the
 * bus client writes what they all published in that turn with one socket write, not one each.
 */
export function coalescing<M, E>(out: StreamWriter<M, E>): StreamWriter<M, E> & { flush(): void } {
  let parts: Uint8Array[] = [];
  let meta: { m: M } | undefined;
  const flush = () => {
    due.delete(flush);
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
      schedule(flush);
    },
    chunk(data) {
      if (!data.byteLength) return;
      parts.push(data);
      schedule(flush);
    },
    end(e) {
      flush();
      out.end(e);
    },
    flush,
  };
}

/** The flushes due at the end of this turn, run by one setImmediate. */
const due = new Set<() => void>();
let turn: NodeJS.Immediate | undefined;

function schedule(flush: () => void): void {
  due.add(flush);
  turn ??= setImmediate(flushAll);
}

function flushAll(): void {
  turn = undefined;
  // A flush may schedule nothing new (it writes to the bus), but iterate a copy all the same.
  for (const f of [...due]) f();
}
