/** Gives back a slot; calling it more than once is harmless, so every exit path may call it. */
export type Release = () => void;

interface Waiter {
  grant: (release: Release) => void;
  cleanup: () => void;
}

/**
 * First-in-first-out concurrency cap. A burst of requests waits in order for a slot instead of forking two
 * processes each all at once; a waiter whose signal aborts (client went away) leaves the queue.
 */
export class Limiter {
  private running = 0;
  private readonly queue: Waiter[] = [];

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`Limiter max must be a positive integer, got ${max}`);
  }

  get active(): number {
    return this.running;
  }

  get waiting(): number {
    return this.queue.length;
  }

  acquire(signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.running < this.max && this.queue.length === 0) {
      this.running++;
      return Promise.resolve(this.makeRelease());
    }
    return new Promise<Release>((resolve, reject) => {
      const onAbort = () => {
        const index = this.queue.indexOf(waiter);
        if (index >= 0) this.queue.splice(index, 1);
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        grant: resolve,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  private makeRelease(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.queue.shift();
      if (next) {
        // The slot passes straight to the next waiter, so `running` stays the same.
        next.cleanup();
        next.grant(this.makeRelease());
      } else {
        this.running--;
      }
    };
  }
}
