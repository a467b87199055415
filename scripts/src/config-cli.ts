import { connectBus, createLogger, DEFAULT_NATS_URL, openConfigStore } from '@gatehouse/common';

const USAGE = `Usage: scripts/config status

  status    every setting group of the config bucket with its revision, and every live replica
            (chat workers, proxy workers, webhook dispatchers) with the revision of each group it runs; exits 1 when a
            replica is behind (docs/config.md)

Env: NATS_URL (default ${DEFAULT_NATS_URL}), GATEHOUSE_NS. Values are never printed, only digests.`;

async function main(args: string[]): Promise<number> {
  if (args[0] !== 'status') {
    process.stderr.write(`${USAGE}\n`);
    return args[0] === '--help' || args[0] === '-h' ? 0 : 2;
  }
  const bus = await connectBus({ url: process.env.NATS_URL ?? DEFAULT_NATS_URL, name: 'scripts/config', log: createLogger('config', 'warn') });
  try {
    const store = await openConfigStore(bus);
    const replicas = (await store.listPresence()).sort((a, b) => a.service.localeCompare(b.service) || a.instance.localeCompare(b.instance));
    const groups = [...new Set(replicas.flatMap((r) => Object.keys(r.applied)))].sort();
    const current = new Map<string, number>();
    for (const g of groups) {
      const rec = await store.get(g);
      current.set(g, rec?.revision ?? 0);
      console.log(rec ? `${g}: revision ${rec.revision}, ${rec.envelope.digest.slice(0, 12)}, ${rec.envelope.at} by ${rec.envelope.by}` : `${g}: nothing announced (the environment's seed runs)`);
    }
    let behind = 0;
    for (const r of replicas) {
      const runs = Object.entries(r.applied).map(([g, a]) => {
        const ok = a.revision === current.get(g);
        if (!ok) behind++;
        return `${g}@${a.revision}${ok ? '' : ` (behind ${current.get(g)})`}`;
      });
      console.log(`  ${r.service} ${r.instance} (pid ${r.pid} on ${r.host}): ${runs.join(', ') || 'no groups'}`);
    }
    if (!replicas.length) console.log('no live replica reports (none running in this namespace?)');
    return behind ? 1 : 0;
  } finally {
    await bus.nc.drain();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`scripts/config: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
