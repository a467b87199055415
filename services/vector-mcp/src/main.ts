import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { parseConfig } from './config.ts';
import { createEmbedder } from './create-embedder.ts';
import { createServer, SERVER_NAME } from './server.ts';

// stdout carries the MCP protocol: everything human-readable goes to stderr.
const log = (line: string): void => {
  process.stderr.write(`${SERVER_NAME}: ${line}\n`);
};

// Validate everything before the transport starts: a client must never talk to a server that
// cannot authenticate to its vector store.
const parsed = parseConfig(process.env);
if (!parsed.ok) {
  log(`invalid configuration, not starting:\n${parsed.errors.map((e) => `  ${e}`).join('\n')}`);
  process.exit(2);
}
const { config } = parsed;
const embedder = createEmbedder(config.embedding);

const url = new URL(config.vectordbUrl);
const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) || url.hostname.startsWith('127.');
if (url.protocol === 'http:' && !loopback) {
  log(`warning: VECTORDB_URL is plain http to ${url.host}; the API key crosses the network unencrypted`);
}
log(
  `vector store ${config.vectordbUrl}, ` +
    `collection ${config.collection ?? '(chosen per call)'}, ` +
    `embedding ${embedder.description} as vector "${embedder.vectorName}"` +
    `${config.readOnly ? ', read-only' : ''}`,
);

const server = createServer(config, embedder);
const transport = new StdioServerTransport();
await server.connect(transport);

const shutdown = (): void => {
  void server.close().finally(() => process.exit(0));
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
process.stdin.once('end', shutdown);
