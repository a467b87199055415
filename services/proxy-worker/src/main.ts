import { z } from 'zod';
import { LLM_CATALOG, llmConnectionContracts } from '@gatehouse/contracts';
import { connectBus, createLogger, DEFAULT_NATS_URL, parseEnv, serveCatalog, serveUntilSignalled, startWorker } from '@gatehouse/common';
import { loadProxyConfig } from './upstream/config.ts';
import { countTokens, handleMessages, listModels } from './messages.service.ts';
import { ConnectionsConfigError, loadConnectionsConfig } from './connections/config.ts';
import { ConnectionRegistry } from './connections/registry.ts';
import { connectionsView } from './connections/view.ts';
import { handleConnectionChat } from './connections/chat.ts';

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
let cfg;
try {
  cfg = loadProxyConfig(env.LLMPROXY_CONFIG, process.env);
} catch (err) {
  process.stderr.write(`Invalid configuration:\n  LLMPROXY_CONFIG: ${(err as Error).message}\n`);
  process.exit(1);
}
const config = cfg;
let connectionsCfg;
try {
  connectionsCfg = loadConnectionsConfig(process.env);
} catch (err) {
  if (!(err instanceof ConnectionsConfigError)) throw err;
  process.stderr.write(`Invalid configuration (Open WebUI connections): ${err.message}\n`);
  process.exit(1);
}
const connections = connectionsCfg;

const bus = await connectBus({ url: env.NATS_URL, name: 'proxy-worker', log });
const worker = await startWorker(bus, { name: 'llm', version: '1.0.0', description: 'Anthropic-style LLM proxy' });

// The chat platform's connection registry (Open WebUI's OLLAMA_* / OPENAI_API_* plus the providers above).
const registry = new ConnectionRegistry(connections, config, log);

serveCatalog(worker, LLM_CATALOG, {
  messages: (req, out, ctx) => handleMessages(config, req, out, ctx),
  countTokens: async (req) => countTokens(req.raw),
  listModels: async () => listModels(config),
});
serveCatalog(worker, llmConnectionContracts, {
  models: async (req) => ({ data: await registry.models(req.refresh) }),
  config: async () => connectionsView(connections),
  chat: (req, out, ctx) => handleConnectionChat({ registry, timeoutMs: config.timeoutMs, retries: config.retries, log }, req, out, ctx),
});

await serveUntilSignalled(bus, worker, 'proxy worker', {
  providers: Object.keys(config.providers),
  native: config.native.baseUrl,
  serverKeyForNative: Boolean(config.native.serverApiKey),
  ollamaConnections: connections.ollama.enabled ? connections.ollama.connections.length : 0,
  openaiConnections: connections.openai.enabled ? connections.openai.connections.length : 0,
});
