/**
 * Postgres connections with TCP_NODELAY (postgres.js's `socket` option). postgres.js leaves
 * Nagle's algorithm on; its ordinary queries are one write each, but a COPY ends with a second,
 * small write (CopyDone) right after the data, which Nagle holds until the server acknowledges
 * the data — up to the 40 ms of a delayed ACK on Linux, for every batch write (staging.ts).
 *
 * The socket is returned while it is still connecting, as postgres.js's own is: postgres.js
 * writes its start-up message at once (Node holds it until the connection is up), and a refused
 * or failed connection reaches postgres.js as the socket's `error` and `close` events, so its
 * reconnect logic runs as usual. (A factory that awaited the connection and threw instead left
 * postgres.js's connection neither open nor closed: after a Postgres restart the pool never
 * recovered, found by the fault suite.) Hosts are tried in turn, one per connection attempt, as
 * postgres.js does; a Unix socket for `path`.
 */
import net from 'node:net';

type SocketOptions = { host: string[]; port: number[]; path?: string | false };

let next = 0;

export function noDelaySocket(o: SocketOptions): net.Socket {
  if (o.path) return net.connect({ path: o.path });
  const i = next++ % o.host.length;
  return net.connect({ host: o.host[i]!, port: o.port[i] ?? o.port[0] ?? 5432, noDelay: true });
}

/** Spread into postgres.js's options (`socket` is in its runtime, not in its type definitions). */
export const NO_DELAY: object = { socket: noDelaySocket };
