/**
 * Postgres connections with TCP_NODELAY (postgres.js's `socket` option). postgres.js leaves
 * Nagle's algorithm on; its ordinary queries are one write each, but a COPY ends with a second,
 * small write (CopyDone) right after the data, which Nagle holds until the server acknowledges
 * the data — up to the 40 ms of a delayed ACK on Linux, for every batch write (staging.ts).
 *
 * Connects like postgres.js itself: a Unix socket for `path`, else each `host`/`port` in turn;
 * postgres.js adds TLS and the start-up on the connected socket.
 */
import net from 'node:net';

type SocketOptions = { host: string[]; port: number[]; path?: string | false; connect_timeout?: number };

function connectOne(make: () => net.Socket, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = make();
    const timer = setTimeout(() => {
      s.destroy();
      reject(Object.assign(new Error('connect timeout'), { code: 'CONNECT_TIMEOUT' }));
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(timer);
      s.removeListener('error', onError);
      s.setNoDelay(true);
      resolve(s);
    });
    const onError = (err: Error) => {
      clearTimeout(timer);
      s.destroy();
      reject(err);
    };
    s.once('error', onError);
  });
}

export async function noDelaySocket(o: SocketOptions): Promise<net.Socket> {
  const timeoutMs = (o.connect_timeout ?? 30) * 1000;
  if (o.path) return connectOne(() => net.connect(o.path as string), timeoutMs);
  let last: unknown;
  for (let i = 0; i < o.host.length; i++) {
    try {
      return await connectOne(() => net.connect({ host: o.host[i]!, port: o.port[i] ?? o.port[0] ?? 5432 }), timeoutMs);
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

/** Spread into postgres.js's options (`socket` is in its runtime, not in its type definitions). */
export const NO_DELAY: object = { socket: noDelaySocket };
