// Shared by the *.test.ts files beside it.

/** Polls `predicate` every 10 ms for at most `timeoutMs`; throws when it never held. */
export async function waitUntil(predicate: () => boolean, timeoutMs = 2000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Collects an async iterable into an array (bounded by `max` items). */
export async function collectAll<T>(iter: AsyncIterable<T>, max = 10_000): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iter) {
    out.push(item);
    if (out.length > max) throw new Error(`more than ${max} items`);
  }
  return out;
}

/** Runs `fn` and returns what it threw (fails when it did not throw) and how long it took. */
export async function failure(fn: () => Promise<unknown>): Promise<{ error: Error; ms: number }> {
  const start = performance.now();
  try {
    await fn();
  } catch (error) {
    return { error: error as Error, ms: performance.now() - start };
  }
  throw new Error('expected a failure');
}
