import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { COLLECTION_NAME, type Config } from './config.ts';
import type { Embedder } from './embedding.ts';
import { formatFindResult, noResults } from './format.ts';
import { VectorStoreClient } from './vector-store.ts';

export const SERVER_NAME = 'gatehouse-vector-mcp';
export const SERVER_VERSION = '0.1.0';

const text = (t: string, isError = false): CallToolResult => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError } : {}) });

/**
 * The MCP server with mcp-server-qdrant's two tools. `qdrant-store` is left out when read-only, and the
 * `collection_name` argument is left out when a default collection is configured.
 */
export function createServer(config: Config, embedder: Embedder, store?: VectorStoreClient): McpServer {
  const vectors = store ?? new VectorStoreClient({ baseUrl: config.vectordbUrl, apiKey: config.vectordbApiKey });
  const server = new McpServer({ name: SERVER_NAME, version: SERVER_VERSION });
  const fixed = config.collection;

  const collectionArg = (description: string): Record<string, z.ZodType> =>
    fixed ? {} : { collection_name: COLLECTION_NAME.describe(description) };
  const pick = (args: { collection_name?: string }): string => fixed ?? args.collection_name!;

  // A tool never throws: a failure becomes an MCP error result the model can read.
  const guarded = async (run: () => Promise<string>): Promise<CallToolResult> => {
    try {
      return text(await run());
    } catch (err) {
      return text(`Error: ${err instanceof Error ? err.message : String(err)}`, true);
    }
  };

  server.registerTool(
    'qdrant-find',
    {
      description: config.toolFindDescription,
      inputSchema: {
        query: z.string().describe('What to search for'),
        ...collectionArg('The collection to search in'),
      } as Record<string, z.ZodType>,
      annotations: { readOnlyHint: true },
    },
    (input) =>
      guarded(async () => {
        const args = input as { query: string; collection_name?: string };
        const collection = pick(args);
        if (!(await vectors.collectionExists(collection))) return noResults(args.query);
        const [vector] = await embedder.embed([args.query]);
        const points = await vectors.query(collection, vector!, embedder.vectorName, config.searchLimit);
        const entries = points.flatMap((p) => {
          const document = p.payload?.document;
          return typeof document === 'string' ? [{ content: document, metadata: p.payload?.metadata }] : [];
        });
        return formatFindResult(args.query, entries);
      }),
  );

  if (!config.readOnly) {
    server.registerTool(
      'qdrant-store',
      {
        description: config.toolStoreDescription,
        inputSchema: {
          information: z.string().describe('Text to store'),
          ...collectionArg('The collection to store the information in'),
          metadata: z
            .record(z.string(), z.unknown())
            .nullable()
            .optional()
            .describe('Extra metadata stored along with memorized information. Any JSON is accepted.'),
        } as Record<string, z.ZodType>,
      },
      (input) =>
        guarded(async () => {
          const args = input as { information: string; collection_name?: string; metadata?: Record<string, unknown> | null };
          const collection = pick(args);
          // Embed first: a remote model's dimension is only known after its first answer.
          const [vector] = await embedder.embed([args.information]);
          if (!(await vectors.collectionExists(collection))) {
            await vectors.createCollection(collection, embedder.vectorName, embedder.dimension ?? vector!.length);
          }
          await vectors.upsert(collection, [
            {
              id: randomUUID().replaceAll('-', ''),
              vector: { [embedder.vectorName]: vector! },
              payload: { document: args.information, metadata: args.metadata ?? null },
            },
          ]);
          return `Remembered: ${args.information} in collection ${collection}`;
        }),
    );
  }
  return server;
}
