import { request } from 'node:http';

/**
 * GET a path exactly as written: fetch/URL would resolve `..` and `//` before sending, which is
 * precisely what the bypass probes must not do.
 */
export function rawRequest(
  base: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: u.hostname, port: u.port, method: opts.method ?? 'GET', path, headers: opts.headers, timeout: opts.timeoutMs ?? 5000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${base}${path} within ${opts.timeoutMs ?? 5000} ms`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}
