/**
 * Bus writes of one turn of the event loop, sent together. The NATS client flushes its buffer to
 * the socket in a microtask after the first write, so requests (or replies) made in separate I/O
 * callbacks of one turn — several HTTP requests read together, several Postgres results — each
 * cost a socket write, the dearest part of a cheap request. Queued here, they run one after the
 * other in the turn's check phase (setImmediate, right after the I/O callbacks; never a timer),
 * and the client's one flush carries them all. A lone write waits only for the rest of its turn.
 */
const queued: { fn: () => void; failed?: (err: unknown) => void }[] = [];

function runQueued(): void {
  for (const q of queued.splice(0)) {
    try {
      q.fn();
    } catch (err) {
      // A closed connection: the caller hears of it if it asked to (a reply has nobody to tell).
      q.failed?.(err);
    }
  }
}

/** Run the write `fn` in this turn's check phase with the other writes of the turn; `failed` is told if it throws. */
export function soon(fn: () => void, failed?: (err: unknown) => void): void {
  if (queued.push({ fn, failed }) === 1) setImmediate(runQueued);
}
