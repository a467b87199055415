import { randomBytes } from 'node:crypto';
import { rawRequest } from './probe.ts';

export interface ProbeResult {
  what: string;
  expected: number;
  got: number | string;
  ok: boolean;
}

/**
 * Seed 000's status matrix for the speech face, for the state it should be in. `key` (optional)
 * lets the enforced case check that the right key is accepted, not only that others are refused.
 */
export async function verifySpeech(base: string, desired: 'open' | 'enforced', key?: string): Promise<ProbeResult[]> {
  const enforced = desired === 'enforced';
  const wrong = `Bearer ${randomBytes(32).toString('base64url')}`;
  const probes: { what: string; path: string; headers?: Record<string, string>; expected: number }[] = [
    { what: 'GET /health (public)', path: '/health', expected: 200 },
    { what: 'GET /openapi.json (public)', path: '/openapi.json', expected: 200 },
    { what: 'GET /docs (public)', path: '/docs', expected: 200 },
    { what: 'GET /redoc (public)', path: '/redoc', expected: 200 },
    { what: 'GET /v1/models without key', path: '/v1/models', expected: enforced ? 401 : 200 },
    { what: 'GET /v1/models with a wrong key', path: '/v1/models', headers: { authorization: wrong }, expected: enforced ? 401 : 200 },
  ];
  if (enforced) {
    for (const path of ['/health/../v1/models', '//v1/models', '/docs/%2e%2e/v1/models', '/admin/../v1/models', '/HEALTH']) {
      probes.push({ what: `GET ${path} without key (bypass attempt)`, path, expected: 401 });
    }
    if (key) probes.push({ what: 'GET /v1/models with the key', path: '/v1/models', headers: { authorization: `Bearer ${key}` }, expected: 200 });
  }
  const results: ProbeResult[] = [];
  for (const p of probes) {
    try {
      const r = await rawRequest(base, p.path, { headers: p.headers });
      results.push({ what: p.what, expected: p.expected, got: r.status, ok: r.status === p.expected });
    } catch (err) {
      results.push({ what: p.what, expected: p.expected, got: (err as Error).message, ok: false });
    }
  }
  return results;
}
