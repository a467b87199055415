import { connect, nanos, type JetStreamClient, type NatsConnection, type ObjectStore } from 'nats';
import { CLAIM_BUCKET } from '@gatehouse/contracts';
import type { Logger } from '../logger.ts';

export interface Bus {
  nc: NatsConnection;
  js: JetStreamClient;
  /** The server's max payload; bodies above it (less a margin) go through the object store. */
  maxPayload: number;
  /** Object store for claim-checked bodies, opened on first use. */
  claims(): Promise<ObjectStore>;
  log: Logger;
}

export interface ConnectOptions {
  url: string;
  /** Connection name shown by the server (`nats server report connections`). */
  name: string;
  log: Logger;
}

/**
 * Connect and keep reconnecting forever: a worker or edge that lost NATS should come back by
 * itself when NATS does, not need a restart.
 */
export async function connectBus({ url, name, log }: ConnectOptions): Promise<Bus> {
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: url, name, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 3000 });
  } catch (err) {
    throw new Error(
      `cannot connect to NATS at ${url} (${(err as Error).message}); start it with scripts/start or set NATS_URL`,
    );
  }
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error') {
        log.warn({ nats: s.type, server: String(s.data) }, 'nats connection status changed');
      }
    }
  })();
  const js = nc.jetstream();
  let store: Promise<ObjectStore> | undefined;
  return {
    nc,
    js,
    maxPayload: nc.info?.max_payload ?? 1024 * 1024,
    // Claims are deleted by their reader; the TTL only sweeps bodies whose reader died.
    claims: () => (store ??= js.views.os(CLAIM_BUCKET, { ttl: nanos(10 * 60 * 1000) })),
    log,
  };
}
