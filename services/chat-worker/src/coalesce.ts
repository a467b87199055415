import type { StreamWriter } from '@gatehouse/common';

/**
 * A stream writer whose chunks written in the same turn of the event loop leave as one chunk (one
 * bus frame, one socket write at the edge). Upstream chunks arrive in bursts — one socket read
 * often holds dozens — and each would otherwise cost a frame of its own all the way to the client.
 * A lone chunk is not held: the batch goes out when the current turn's I/O callbacks are done
 * (`setImmediate`), never on a timer. Meta and end go out after whatever is pending; call
 * `flush()` before reporting a failure so no written chunk is lost.
 */
export function coalescing<M, E>(out: StreamWriter<M, E>): StreamWriter<M, E> & { flush(): void } {
  let parts: Uint8Array[] = [];
  let scheduled: NodeJS.Immediate | undefined;
  const flush = () => {
    if (scheduled) clearImmediate(scheduled);
    scheduled = undefined;
    if (!parts.length) return;
    const data = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    parts = [];
    out.chunk(data);
  };
  return {
    meta(m) {
      flush();
      out.meta(m);
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
