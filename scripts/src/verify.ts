import { randomBytes } from 'node:crypto';
import { rawRequest } from './probe.ts';

export interface ProbeResult {
  what: string;
  expected: number | 'passed';
  got: number | string;
  ok: boolean;
}

/**
 * The gate status matrix for the speech face (docs/gates.md), for the state it should be in. `key` (optional)
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
  return runProbes(base, probes);
}

/**
 * The gate status matrix for the LLM proxy, without calling any upstream: the probe model names a
 * provider that cannot exist, so a request the gate lets through is answered 400 by routing,
 * and one the gate refuses is answered 401. GET /health and GET /v1/models stay open.
 */
export async function verifyLlm(base: string, desired: 'open' | 'enforced', key?: string): Promise<ProbeResult[]> {
  const enforced = desired === 'enforced';
  const body = JSON.stringify({ model: 'gatehouse-verify-probe/none', max_tokens: 1, messages: [{ role: 'user', content: 'probe' }] });
  const json = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };
  const probes: Probe[] = [
    { what: 'GET /health', path: '/health', expected: 200 },
    { what: 'GET /v1/models (GET is not gated)', path: '/v1/models', expected: passed },
    { what: 'POST /v1/messages without key', path: '/v1/messages', method: 'POST', headers: json, body, expected: enforced ? 401 : passed },
    {
      what: 'POST /v1/messages with a wrong x-proxy-key',
      path: '/v1/messages',
      method: 'POST',
      headers: { ...json, 'x-proxy-key': randomBytes(32).toString('base64url') },
      body,
      expected: enforced ? 401 : passed,
    },
  ];
  if (enforced) {
    probes.push({ what: 'HEAD /v1/messages without key', path: '/v1/messages', method: 'HEAD', expected: 401 });
    for (const path of ['/v1//messages', '/health/../v1/messages', '/v1/%6dessages']) {
      probes.push({ what: `POST ${path} without key (bypass attempt)`, path, method: 'POST', headers: json, body, expected: 401 });
    }
    if (key) {
      for (const h of <Record<string, string>[]>[{ 'x-proxy-key': key }, { 'x-api-key': key }, { authorization: `Bearer ${key}` }]) {
        probes.push({ what: `POST /v1/messages with the key in ${Object.keys(h)[0]}`, path: '/v1/messages', method: 'POST', headers: { ...json, ...h }, body, expected: passed });
      }
    }
  }
  return runProbes(base, probes);
}

/**
 * `passed`: the gate let the request through — whatever answered next (400 from routing, 503 from
 * a worker that is down) — so neither a 401 nor the gate's own fail-closed 503.
 */
const passed = 'passed' as const;

interface Probe {
  what: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  expected: number | typeof passed;
}

async function runProbes(base: string, probes: Probe[]): Promise<ProbeResult[]> {
  const results: ProbeResult[] = [];
  for (const p of probes) {
    try {
      const r = await rawRequest(base, p.path, { method: p.method, headers: p.headers, body: p.body });
      const ok = p.expected === passed ? r.status !== 401 && !/access gate/.test(r.body) : r.status === p.expected;
      results.push({ what: p.what, expected: p.expected, got: r.status, ok });
    } catch (err) {
      results.push({ what: p.what, expected: p.expected, got: (err as Error).message, ok: false });
    }
  }
  return results;
}

/** The gate status matrix for the vector store: `api-key` on every path but Qdrant's health paths. */
export async function verifyVector(base: string, desired: 'open' | 'enforced', key?: string): Promise<ProbeResult[]> {
  const enforced = desired === 'enforced';
  const wrong = randomBytes(32).toString('base64url');
  const probes: Probe[] = [
    { what: 'GET / (public)', path: '/', expected: 200 },
    { what: 'GET /healthz (public)', path: '/healthz', expected: 200 },
    { what: 'GET /collections without key', path: '/collections', expected: enforced ? 401 : passed },
    { what: 'GET /collections with a wrong api-key', path: '/collections', headers: { 'api-key': wrong }, expected: enforced ? 401 : passed },
  ];
  if (enforced) {
    for (const path of ['/healthz/../collections', '//collections', '/livez/%2e%2e/collections']) {
      probes.push({ what: `GET ${path} without key (bypass attempt)`, path, expected: 401 });
    }
    if (key) {
      probes.push({ what: 'GET /collections with the api-key', path: '/collections', headers: { 'api-key': key }, expected: passed });
      probes.push({ what: 'GET /collections with the key as Bearer', path: '/collections', headers: { authorization: `Bearer ${key}` }, expected: passed });
    }
  }
  return runProbes(base, probes);
}
