import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the fake saw it. */
export interface RecordedRequest {
  method: string;
  /** Path and query string, e.g. `/collections/mem/points?wait=true`. */
  url: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

interface Collection {
  vectors: Record<string, { size: number; distance: string }>;
  points: Map<string, { vector: Record<string, number[]>; payload: unknown; version: number }>;
}

export interface FakeQdrant {
  url: string;
  requests: RecordedRequest[];
  collections: Map<string, Collection>;
  close(): Promise<void>;
}

const MAX_BODY = 1 << 20;

/**
 * A Qdrant-compatible HTTP server with just the calls the MCP tools make: collection exists, create,
 * upsert and query (exact cosine over the stored vectors). It records every request and, like Qdrant
 * with auth on, answers 401 in plain text when `api-key` is not `apiKey`.
 */
export async function startFakeQdrant(apiKey: string): Promise<FakeQdrant> {
  const requests: RecordedRequest[] = [];
  const collections = new Map<string, Collection>();
  let version = 0;

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown ;
      if (raw) {
        try {
          body = JSON.parse(raw);
        } catch {
          body = raw;
        }
      }
      const method = req.method ?? '';
      const url = req.url ?? '';
      requests.push({ method, url, headers: req.headers, body });

      const send = (status: number, payload: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      const ok = (result: unknown): void => send(200, { result, status: 'ok', time: 0.0001 });
      const fail = (status: number, error: string): void => send(status, { status: { error }, time: 0.0001 });

      if (req.headers['api-key'] !== apiKey) {
        res.writeHead(401, { 'content-type': 'text/plain' });
        res.end('Invalid API key or JWT');
        return;
      }

      const { pathname, searchParams } = new URL(url, 'http://fake');
      const m = /^\/collections\/([^/]+)(\/.*)?$/.exec(pathname);
      if (!m) return fail(404, `Not found: ${pathname}`);
      const name = decodeURIComponent(m[1]!);
      const rest = m[2] ?? '';
      const collection = collections.get(name);
      const missing = (): void => fail(404, `Not found: Collection \`${name}\` doesn't exist!`);

      if (method === 'GET' && rest === '/exists') return ok({ exists: collection !== undefined });

      if (method === 'PUT' && rest === '') {
        if (collection) return fail(409, `Wrong input: Collection \`${name}\` already exists!`);
        const vectors = (body as { vectors?: Collection['vectors'] } | undefined)?.vectors;
        if (!vectors || typeof vectors !== 'object') return fail(400, 'Bad request: vectors missing');
        collections.set(name, { vectors, points: new Map() });
        return ok(true);
      }

      if (method === 'PUT' && rest === '/points') {
        if (!collection) return missing();
        const points = (body as { points?: { id: string; vector: Record<string, number[]>; payload: unknown }[] }).points ?? [];
        for (const p of points) {
          for (const [vname, v] of Object.entries(p.vector)) {
            const params = collection.vectors[vname];
            if (!params) return fail(400, `Wrong input: Not existing vector name error: ${vname}`);
            if (v.length !== params.size) {
              return fail(400, `Wrong input: Vector dimension error: expected dim: ${params.size}, got ${v.length}`);
            }
          }
        }
        for (const p of points) collection.points.set(dashed(p.id), { vector: p.vector, payload: p.payload, version: ++version });
        return ok({ operation_id: version, status: searchParams.get('wait') === 'true' ? 'completed' : 'acknowledged' });
      }

      if (method === 'POST' && rest === '/points/query') {
        if (!collection) return missing();
        const q = body as { query: number[]; using: string; limit?: number; with_payload?: boolean };
        if (!collection.vectors[q.using]) return fail(400, `Wrong input: Not existing vector name error: ${q.using}`);
        const scored = [...collection.points.entries()]
          .filter(([, p]) => p.vector[q.using])
          .map(([id, p]) => ({
            id,
            version: p.version,
            score: cosine(q.query, p.vector[q.using]!),
            ...(q.with_payload ? { payload: p.payload ?? {} } : {}),
          }))
          .sort((a, b) => b.score - a.score)
          .slice(0, q.limit ?? 10);
        return ok({ points: scored });
      }

      return fail(404, `Not found: ${method} ${pathname}`);
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    collections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * (b[i] ?? 0);
    na += a[i]! * a[i]!;
    nb += (b[i] ?? 0) * (b[i] ?? 0);
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

/** Qdrant answers UUIDs in the hyphenated form whatever form they were sent in. */
function dashed(id: string): string {
  const h = id.replaceAll('-', '').toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
