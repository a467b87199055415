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
  /** Token → the stream's handler; the handler runs in the subscription callback (no queue, no await). */
  routes: Map<string, (m: Msg) => void>;
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

function muxOf(bus: Bus): Mux {
  let mux = muxes.get(bus.nc);
  if (!mux) {
    const m: Mux = { prefix: createInbox(), routes: new Map() };
    bus.nc.subscribe(`${m.prefix}.*`, {
      callback: (err, msg) => {
        if (!err) m.routes.get(msg.subject.slice(m.prefix.length + 1))?.(msg);
      },
    });
    muxes.set(bus.nc, m);
    mux = m;
  }
  return mux;
}

/** A reply subject whose messages are handed to `onMessage` as they arrive; `close` stops that. */
export function openStreamRoute(bus: Bus, onMessage: (m: Msg) => void): { subject: string; token: string; close(): void } {
  const mux = muxOf(bus);
  const token = nuid.next();
  mux.routes.set(token, onMessage);
  return { subject: `${mux.prefix}.${token}`, token, close: () => void mux.routes.delete(token) };
}

export function openStreamInbox(bus: Bus): StreamInbox {
  const channel = new Channel();
  const route = openStreamRoute(bus, (m) => channel.push(m));
  return {
    subject: route.subject,
    token: route.token,
    next: () => channel.next(),
    close: () => {
      route.close();
      channel.close();
    },
  };
}

/** Where cancels go: one wildcard subscription per worker process listens on `<prefix>.*`. */
export function cancelPrefix(bus: Bus): string {
  return bus.subject('gh.cancel');
}
