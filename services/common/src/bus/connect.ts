import { connect, nanos, type JetStreamClient, type NatsConnection, type ObjectStore } from 'nats';
import { CLAIM_BUCKET } from '@gatehouse/contracts';
import type { Logger } from '../logger.ts';
import { commonEnv } from '../env.ts';

export interface Bus {
  nc: NatsConnection;
  js: JetStreamClient;
  /** The server's max payload; bodies above it (less a margin) go through the object store. */
  maxPayload: number;
  /** Object store for claim-checked bodies, opened on first use. */
  claims(): Promise<ObjectStore>;
  log: Logger;
  /**
   * Namespace (GATEHOUSE_NS): prefixes every subject and bucket, so a test run or a second stack
   * can share one NATS server without crossing wires. Empty in normal deployments.
   */
  ns: string;
  subject(s: string): string;
  bucket(b: string): string;
}

export interface ConnectOptions {
  url: string;
  /** Connection name shown by the server (`nats server report connections`). */
  name: string;
  log: Logger;
  /** Defaults to the GATEHOUSE_NS environment variable. */
  ns?: string;
}

/**
 * Connect and keep reconnecting forever: a worker or edge that lost NATS should come back by
 * itself when NATS does, not need a restart.
 */
export async function connectBus({ url, name, log, ns = commonEnv().GATEHOUSE_NS }: ConnectOptions): Promise<Bus> {
  let nc: NatsConnection;
  try {
    // noAsyncTraces: the client would otherwise build an Error (a stack trace) for every request
    // and flush, only to enrich a failure's message; a measurable share of a cheap request's CPU.
    nc = await connect({ servers: url, name, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 3000, noAsyncTraces: true });
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
  if (ns && !/^[A-Za-z0-9_-]+$/.test(ns)) throw new Error(`GATEHOUSE_NS must be letters, digits, _ or -; got "${ns}"`);
  let store: Promise<ObjectStore> | undefined;
  const bucket = (b: string) => (ns ? `${ns}_${b}` : b);
  return {
    nc,
    js,
    maxPayload: nc.info?.max_payload ?? 1024 * 1024,
    // Claims are deleted by their reader; the TTL only sweeps bodies whose reader died.
    claims: () => (store ??= js.views.os(bucket(CLAIM_BUCKET), { ttl: nanos(10 * 60 * 1000) })),
    log,
    ns,
    subject: (sub) => (ns ? `${ns}.${sub}` : sub),
    bucket,
  };
}
