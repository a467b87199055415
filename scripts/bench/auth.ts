import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Stack } from '../../tests/support/local-stack.ts';
import { benchLdapSignin } from './auth-ldap.ts';
import { ms, pct, waitQuiet } from './measure.ts';

/**
 * scripts/bench/run auth — the cost of each sign-in path, through one edge and one chat worker:
 * 1. an `sk-` API key vs a session token on the same request (`GET /api/v1/auths/`, answered by the
 *    worker either way). Paired: each round sends both, in a random order, back to back, and the
 *    per-pair difference is what is reported (p50 of key − token), so the machine's drift cancels.
 *    The key is checked from the edge's cache (api-keys.ts: one SHA-256 and a map lookup); the
 *    token costs an HS256 check and a Redis revocation lookup. Target: key ≤ token + 0.1 ms at p50.
 * 2. LDAP sign-in vs local sign-in (scripts/bench/auth-ldap.ts, a throwaway slapd).
 * 3. OIDC callback handling (scripts/bench/auth-oidc.ts, a provider in this process), when that
 *    file is present; otherwise reported as not measured.
 * Env: BENCH_AUTH_ROUNDS (3000 pairs), BENCH_AUTH_LDAP_ROUNDS (200), BENCH_AUTH_OIDC_ROUNDS (100).
 */
const rounds = Number(process.env.BENCH_AUTH_ROUNDS ?? 3000);
const ldapRounds = Number(process.env.BENCH_AUTH_LDAP_ROUNDS ?? 200);
const oidcRounds = Number(process.env.BENCH_AUTH_OIDC_ROUNDS ?? 100);
const say = (s: string) => console.error(`[bench] ${s}`);
const stack = new Stack();
const watchdog = setTimeout(() => {
  console.error('[bench] watchdog: the run took longer than 10 minutes; stopping');
  process.exit(2);
}, 10 * 60_000);
watchdog.unref();

const line = (label: string, xs: number[]) => `${label.padEnd(44)} p50 ${ms(pct(xs, 50)).padStart(10)}  p99 ${ms(pct(xs, 99)).padStart(10)}  (n=${xs.length})`;

try {
  await stack.startChatWorker({}, { ingest: false });
  const limit = String(Math.max(ldapRounds, oidcRounds) * 2 + 200);
  const edge = await stack.startEdge({ EDGE_FACES: 'chat', SIGNIN_RATE_LIMIT_PER_ACCOUNT: limit, SIGNIN_RATE_LIMIT_PER_ADDRESS: limit });
  const url = edge.chatUrl;
  const admin = { name: 'Bench', email: `bench-${randomBytes(4).toString('hex')}@example.com`, password: randomBytes(12).toString('base64url') };
  const call = async (path: string, method: string, token: string | null, body?: unknown) => {
    const r = await fetch(url + path, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    if (r.status !== 200) throw new Error(`${method} ${path} answered ${r.status}: ${text.slice(0, 200)}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const token = String((await call('/api/v1/auths/signup', 'POST', null, admin)).token);
  await call('/api/v1/auths/admin/config', 'POST', token, { ENABLE_API_KEYS: true });
  const key = String((await call('/api/v1/auths/api_key', 'POST', token)).api_key);

  // ---- 1. key vs token, paired ----
  const timed = async (credential: string) => {
    const t0 = performance.now();
    const r = await fetch(`${url}/api/v1/auths/`, { headers: { authorization: `Bearer ${credential}` } });
    await r.arrayBuffer();
    const dt = performance.now() - t0;
    if (r.status !== 200) throw new Error(`GET /api/v1/auths/ answered ${r.status}`);
    return dt;
  };
  // Warm-up: JIT, connections, and the key's first use (the one bus lookup that fills the cache).
  for (let i = 0; i < 300; i++) await timed(i % 2 ? key : token);
  await waitQuiet('auth keys', 20_000, say);
  const keyMs: number[] = [];
  const tokenMs: number[] = [];
  const delta: number[] = [];
  for (let i = 0; i < rounds; i++) {
    let k: number;
    let t: number;
    if (Math.random() < 0.5) {
      k = await timed(key);
      t = await timed(token);
    } else {
      t = await timed(token);
      k = await timed(key);
    }
    keyMs.push(k);
    tokenMs.push(t);
    delta.push(k - t);
  }
  const d50 = pct(delta, 50);
  const out = [
    '## API key vs session token (GET /api/v1/auths/, one edge, one chat worker)',
    line('sk- API key (edge cache)', keyMs),
    line('session token (JWT + Redis revocation)', tokenMs),
    `paired key − token: p50 ${ms(d50)}, p25 ${ms(pct(delta, 25))}, p75 ${ms(pct(delta, 75))} → ${d50 <= 0.1 ? 'within' : 'OVER'} the 0.1 ms target`,
    '',
  ];
  console.log(out.join('\n'));

  // ---- 2. LDAP vs local sign-in ----
  try {
    const ldap = await benchLdapSignin({ chatUrl: url, admin: { ...admin, token }, rounds: ldapRounds, say });
    console.log(['## LDAP sign-in vs local sign-in', ...ldap.lines, ''].join('\n'));
  } catch (err) {
    console.log(`## LDAP sign-in vs local sign-in\nnot measured: ${(err as Error).message}\n`);
  }

  // ---- 3. OIDC callback ----
  const oidcFile = join(import.meta.dirname, 'auth-oidc.ts');
  if (existsSync(oidcFile)) {
    try {
      const mod = (await import(oidcFile)) as { benchOidcCallback?: (o: { chatUrl: string; adminToken: string; rounds?: number; say?: (s: string) => void }) => Promise<{ lines: string[] }> };
      if (!mod.benchOidcCallback) throw new Error('auth-oidc.ts exports no benchOidcCallback');
      const oidc = await mod.benchOidcCallback({ chatUrl: url, adminToken: token, rounds: oidcRounds, say });
      console.log(['## OIDC callback handling', ...oidc.lines, ''].join('\n'));
    } catch (err) {
      console.log(`## OIDC callback handling\nnot measured: ${(err as Error).message}\n`);
    }
  } else {
    console.log('## OIDC callback handling\nnot measured: scripts/bench/auth-oidc.ts is not there\n');
  }
} finally {
  await stack.close();
}
