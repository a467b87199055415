import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RecordedRequest } from './fake-qdrant.ts';

export const FAKE_EMBEDDING_DIMENSION = 8;

/**
 * An OpenAI-compatible `POST /v1/embeddings` that returns a deterministic 8-dimensional vector per
 * input (letter counts folded into 8 buckets), in reverse order with `index` set, so a client that
 * ignores `index` gets them wrong. Records every request.
 */
export async function startFakeEmbeddings(): Promise<{ url: string; requests: RecordedRequest[]; close(): Promise<void> }> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') as { input?: string[]; model?: string } | null;
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (req.method !== 'POST' || req.url !== '/v1/embeddings' || !Array.isArray(body?.input)) {
        res.writeHead(404).end();
        return;
      }
      const data = body.input.map((text, index) => ({ object: 'embedding', index, embedding: letterBuckets(text) })).reverse();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function letterBuckets(text: string): number[] {
  const v = new Array<number>(FAKE_EMBEDDING_DIMENSION).fill(0);
  for (const ch of text.toLowerCase()) {
    const c = ch.charCodeAt(0);
    if (c >= 97 && c <= 122) v[(c - 97) % FAKE_EMBEDDING_DIMENSION]! += 1;
  }
  v[0]! += 0.001; // never all zeros
  return v;
}
