import { readFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { connectBus, createLogger, DEFAULT_NATS_URL, openConfigStore } from '@gatehouse/common';
import { loadProxyConfig } from '../upstream/config.ts';
import { parseRouting, RoutingConfigError } from './config.ts';
import { ROUTING_GROUP } from './live.ts';

const USAGE = `Usage: node --import tsx services/proxy-worker/src/routing/cli.ts show | put <routing.json> | reset

  show          the routing table every proxy worker runs now (the stored revision, or "the file's")
  put <file>    store a new table (the format of LLMPROXY_CONFIG's "routing" section); checked first
                against the providers of LLMPROXY_CONFIG; every proxy worker applies it without a restart
  reset         store an empty table: only <provider>/<model> ids and native claude-… pass-through remain

Env: NATS_URL (default ${DEFAULT_NATS_URL}), GATEHOUSE_NS, LLMPROXY_CONFIG (the providers a table may name).`;

async function main(args: string[]): Promise<number> {
  const [cmd, file] = args;
  if (cmd !== 'show' && cmd !== 'put' && cmd !== 'reset') {
    process.stderr.write(`${USAGE}\n`);
    return cmd === '--help' || cmd === '-h' ? 0 : 2;
  }
  let value: unknown;
  if (cmd === 'put') {
    if (!file) {
      process.stderr.write(`${USAGE}\n`);
      return 2;
    }
    value = JSON.parse(readFileSync(file, 'utf8'));
    // A table the workers would reject is refused here, with every problem named.
    const providers = new Set(Object.keys(loadProxyConfig(process.env.LLMPROXY_CONFIG, process.env).providers));
    try {
      parseRouting(value, providers, file);
    } catch (err) {
      if (!(err instanceof RoutingConfigError)) throw err;
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
  }
  if (cmd === 'reset') value = {};
  const bus = await connectBus({ url: process.env.NATS_URL ?? DEFAULT_NATS_URL, name: 'llm-routing', log: createLogger('llm-routing', 'warn') });
  try {
    const store = await openConfigStore(bus);
    if (cmd === 'show') {
      const rec = await store.get(ROUTING_GROUP);
      console.log(rec ? JSON.stringify({ revision: rec.revision, at: rec.envelope.at, by: rec.envelope.by, routing: rec.envelope.value }, null, 2) : 'nothing stored: every proxy worker runs the routing section of its LLMPROXY_CONFIG');
      return 0;
    }
    const revision = await store.put(ROUTING_GROUP, value, `llm-routing ${userInfo().username}@${hostname()}`);
    console.log(`${ROUTING_GROUP}: stored revision ${revision}; \`scripts/config status\` shows when every proxy worker runs it`);
    return 0;
  } finally {
    await bus.nc.drain();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`llm-routing: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
