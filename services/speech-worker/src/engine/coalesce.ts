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
      const deadline = performance.now() + maxWaitMs;
      while (size < minBytes) {
        const remaining = deadline - performance.now();
        if (remaining <= 0) break;
        pending ??= iterator.next();
        const step = await withinMs(pending, remaining);
        if (step === TIMED_OUT) break;
        pending = undefined;
        if (step.done) {
          finished = true;
          break;
        }
        parts.push(step.value);
        size += step.value.length;
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

async function withinMs<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(resolve, ms, TIMED_OUT)))]);
  } finally {
    clearTimeout(timer);
  }
}
