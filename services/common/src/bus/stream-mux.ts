import { createInbox, nuid, type Msg, type NatsConnection } from 'nats';
import type { Bus } from './connect.ts';

/**
 * One wildcard inbox subscription per connection for every streamed reply, instead of a
 * subscribe/unsubscribe pair per request: those two protocol messages per request were a
 * measurable share of the LLM proxy's per-request cost (docs/benchmarks.md).
 */
class Channel {
  private readonly queue: Msg[] = [];
  private waiter: ((m: Msg | undefined) => void) | undefined;
  private closed = false;

  push(m: Msg): void {
    if (this.closed) return;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w(m);
    } else this.queue.push(m);
  }

  close(): void {
    this.closed = true;
    this.waiter?.(undefined);
    this.waiter = undefined;
  }

  /** The next message, or undefined once closed. */
  next(): Promise<Msg | undefined> {
    const m = this.queue.shift();
    if (m) return Promise.resolve(m);
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.waiter = resolve));
  }
}

interface Mux {
  prefix: string;
  channels: Map<string, Channel>;
}

const muxes = new WeakMap<NatsConnection, Mux>();

export interface StreamInbox {
  /** Reply subject for this stream. */
  subject: string;
  /** Token that names this stream (also used for its cancel subject). */
  token: string;
  next(): Promise<Msg | undefined>;
  close(): void;
}

export function openStreamInbox(bus: Bus): StreamInbox {
  let mux = muxes.get(bus.nc);
  if (!mux) {
    const m: Mux = { prefix: createInbox(), channels: new Map() };
    bus.nc.subscribe(`${m.prefix}.*`, {
      callback: (err, msg) => {
        if (!err) m.channels.get(msg.subject.slice(m.prefix.length + 1))?.push(msg);
      },
    });
    muxes.set(bus.nc, m);
    mux = m;
  }
  const token = nuid.next();
  const channel = new Channel();
  mux.channels.set(token, channel);
  const owner = mux;
  return {
    subject: `${mux.prefix}.${token}`,
    token,
    next: () => channel.next(),
    close: () => {
      owner.channels.delete(token);
      channel.close();
    },
  };
}

/** Where cancels go: one wildcard subscription per worker process listens on `<prefix>.*`. */
export function cancelPrefix(bus: Bus): string {
  return bus.subject('gh.cancel');
}
