import { z } from 'zod';
import { llmContracts } from '@gatehouse/contracts';
import { connectBus, createLogger, DEFAULT_NATS_URL, parseEnv, serveUntilSignalled, startWorker } from '@gatehouse/common';
import { loadProxyConfig } from './upstream/config.ts';
import { countTokens, handleMessages, listModels } from './messages.service.ts';

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

const bus = await connectBus({ url: env.NATS_URL, name: 'proxy-worker', log });
const worker = await startWorker(bus, { name: 'llm', version: '1.0.0', description: 'Anthropic-style LLM proxy' });

worker.stream(llmContracts.messages, (req, out, ctx) => handleMessages(config, req, out, ctx));
worker.handle(llmContracts.countTokens, async (req) => countTokens(req.raw));
worker.handle(llmContracts.listModels, async () => listModels(config));

await serveUntilSignalled(bus, worker, 'proxy worker', { providers: Object.keys(config.providers), native: config.native.baseUrl, serverKeyForNative: Boolean(config.native.serverApiKey) });
