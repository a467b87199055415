import { z } from 'zod';
import { LLM_CATALOG, llmConnectionContracts } from '@gatehouse/contracts';
import { ConfigReporter, connectBus, createLogger, DEFAULT_NATS_URL, openConfigStore, parseEnv, serveCatalog, serveUntilSignalled, startWorker, serveMetricsFromEnv } from '@gatehouse/common';
import { loadProxyConfig } from './upstream/config.ts';
import { countTokens, handleMessages, listModels } from './messages.service.ts';
import { ConnectionsConfigError } from './connections/config.ts';
import { LiveConnections } from './connections/live.ts';
import { connectionsView } from './connections/view.ts';
import { handleConnectionChat } from './connections/chat.ts';
import { liveRouting } from './routing/live.ts';

/**
 * LLM proxy worker: a NATS service in queue group `llm`. It owns every upstream connection
 * (providers from LLMPROXY_CONFIG, native pass-through to the first-party API); the edge only
 * authenticates and relays.
 */
const env = parseEnv(
  z.object({
    NATS_URL: z.string().default(DEFAULT_NATS_URL),
    /** JSON config file: providers, native base URL, timeouts, retries (docs/llm-proxy-config.example.json). */
    LLMPROXY_CONFIG: z.string().optional(),
  }),
);
const log = createLogger('proxy-worker');
// Prometheus metrics on METRICS_PORT when set (common/src/metrics.ts).
await serveMetricsFromEnv('proxy-worker', log);
let cfg;
try {
  cfg = loadProxyConfig(env.LLMPROXY_CONFIG, process.env);
} catch (err) {
  process.stderr.write(`Invalid configuration:\n  LLMPROXY_CONFIG: ${(err as Error).message}\n`);
  process.exit(1);
}
const config = cfg;
// The chat platform's connections: the environment (Open WebUI's OLLAMA_* / OPENAI_API_*) seeds them,
// what admins save travels the config bucket (group `connections`) and is applied live.
let liveConnections;
try {
  liveConnections = new LiveConnections({ ...process.env }, config, log);
} catch (err) {
  if (!(err instanceof ConnectionsConfigError)) throw err;
  process.stderr.write(`Invalid configuration (Open WebUI connections): ${err.message}\n`);
  process.exit(1);
}
const connections = liveConnections;

const bus = await connectBus({ url: env.NATS_URL, name: 'proxy-worker', log });
const configStore = await openConfigStore(bus);
await connections.follow(configStore);
// The routing table: the file's `routing` is the seed, the config bucket's `llm.routing` runs live.
const routing = liveRouting(config, log);
await routing.follow(configStore);
const configReporter = new ConfigReporter(configStore, 'proxy-worker', log);
configReporter.track(connections.live);
configReporter.track(routing);
await configReporter.start();
const worker = await startWorker(bus, { name: 'llm', version: '1.0.0', description: 'Anthropic-style LLM proxy' });

serveCatalog(worker, LLM_CATALOG, {
  messages: (req, out, ctx) => handleMessages(config, req, out, ctx, routing.value),
  countTokens: async (req) => countTokens(req.raw),
  listModels: async () => listModels(config, routing.value),
});
serveCatalog(worker, llmConnectionContracts, {
  // The registry of the revision running now (rebuilt when an update is applied).
  models: async (req) => ({ data: await connections.registry.models(req.refresh) }),
  config: async () => connectionsView(connections.config),
  update: (req) => connections.update(configStore, req),
  // Its log lines carry the request's trace (ctx.log, made on first use).
  chat: (req, out, ctx) =>
    handleConnectionChat({ registry: connections.registry, timeoutMs: config.timeoutMs, retries: config.retries, get log() { return ctx.log; } }, req, out, ctx),
});

await serveUntilSignalled(bus, worker, 'proxy worker', {
  providers: Object.keys(config.providers),
  native: config.native.baseUrl,
  serverKeyForNative: Boolean(config.native.serverApiKey),
  ollamaConnections: connections.config.ollama.enabled ? connections.config.ollama.connections.length : 0,
  openaiConnections: connections.config.openai.enabled ? connections.config.openai.connections.length : 0,
  // The connections revision this replica runs (0: the environment's; the presence record follows it live).
  configRevision: connections.live.applied.revision,
  routingRevision: routing.applied.revision,
}, async () => {
  connections.live.stop();
  routing.stop();
  await configReporter.stop();
});
