/**
 * ffmpeg writes every encoded packet on its own (-flush_packets 1), so a fast reader sees one ~200-byte
 * mp3 frame per chunk: thousands of HTTP chunks or NATS messages per request. This merges chunks into
 * batches of about `minBytes`, waiting at most `maxWaitMs` for a batch to fill. The first chunk is passed
 * on at once, so batching never delays the first bytes; later batches arrive far ahead of playback anyway
 * (espeak-ng + ffmpeg run at ~100× real time).
 */
export async function* coalesce(
  source: AsyncIterable<Buffer>,
  { minBytes, maxWaitMs }: { minBytes: number; maxWaitMs: number },
): AsyncGenerator<Buffer, void, undefined> {
  const iterator = source[Symbol.asyncIterator]();
  // A read that outlived its batch's deadline; the next batch starts with it.
  let pending: Promise<IteratorResult<Buffer>> | undefined;
  let finished = false;
  try {
    const first = await iterator.next();
    if (first.done) {
      finished = true;
      return;
    }
    yield first.value;

    while (!finished) {
      const head = await (pending ?? iterator.next());
      pending = undefined;
      if (head.done) {
        finished = true;
        break;
      }
      const parts = [head.value];
      let size = head.value.length;
      if (size < minBytes) {
        // One timer per batch, not one per read: ffmpeg writes every packet on its own (~200 reads per
        // 10 s of mp3), and a timer armed and cleared per read was a visible share of the worker's time.
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(resolve, maxWaitMs, TIMED_OUT)));
        try {
          while (size < minBytes) {
            pending ??= iterator.next();
            const step = await Promise.race([pending, deadline]);
            if (step === TIMED_OUT) break;
            pending = undefined;
            if (step.done) {
              finished = true;
              break;
            }
            parts.push(step.value);
            size += step.value.length;
          }
        } finally {
          clearTimeout(timer);
        }
      }
      yield parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
    }
  } finally {
    if (!finished) {
      // Stopped early (consumer return or error). A read may still be outstanding: it settles when the owner
      // destroys the source, and must not become an unhandled rejection. return() is not awaited because an
      // async iterator queues it behind that outstanding read.
      pending?.catch(() => {});
      Promise.resolve(iterator.return?.()).catch(() => {});
    }
  }
}

const TIMED_OUT = Symbol('timed out');
