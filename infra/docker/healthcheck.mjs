// Container healthchecks for docker-compose.yml: plain Node (no packages, no loader), exit 0 = healthy.
//   node healthcheck.mjs http <url>             the URL answers 2xx (the edge's /health)
//   node healthcheck.mjs nats-service <name>    a NATS connection from this container serves the
//                                               NATS service <name> (the worker's $SRV.PING.<name>)
// The worker check asks the NATS server's monitor (NATS_MONITOR_URL, default http://nats:8222)
// which connections come from this container's addresses and what they subscribe to: it fails
// when this process lost NATS or never registered its service, even while other replicas serve.
import { networkInterfaces } from 'node:os';

const [mode, arg] = process.argv.slice(2);
const timeout = () => AbortSignal.timeout(Number(process.env.HEALTHCHECK_TIMEOUT_MS ?? 3000));

async function check() {
  if (mode === 'http' && arg) {
    const res = await fetch(arg, { signal: timeout() });
    if (!res.ok) throw new Error(`${arg} answered ${res.status}`);
    return `${arg} answered ${res.status}`;
  }
  if (mode === 'nats-service' && arg) {
    const monitor = process.env.NATS_MONITOR_URL ?? 'http://nats:8222';
    const res = await fetch(`${monitor}/connz?subs=1&limit=4096`, { signal: timeout() });
    if (!res.ok) throw new Error(`NATS monitor ${monitor} answered ${res.status}`);
    const { connections = [] } = await res.json();
    const mine = new Set(Object.values(networkInterfaces()).flat().map((a) => a.address));
    const ours = connections.filter((c) => mine.has(c.ip));
    if (!ours.length) throw new Error(`no NATS connection from this container (${[...mine].join(', ')})`);
    const subject = `$SRV.PING.${arg}`;
    if (!ours.some((c) => (c.subscriptions_list ?? []).includes(subject))) {
      throw new Error(`connected to NATS but not serving ${arg} (no ${subject} subscription)`);
    }
    return `serving ${arg} on NATS`;
  }
  throw new Error('usage: healthcheck.mjs http <url> | nats-service <name>');
}

check().then(
  (ok) => {
    process.stdout.write(`healthy: ${ok}\n`);
    process.exit(0);
  },
  (err) => {
    process.stderr.write(`unhealthy: ${err.message}\n`);
    process.exit(1);
  },
);
