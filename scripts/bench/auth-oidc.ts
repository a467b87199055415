import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { runChatBenchAlone } from './chat-alone.ts';
import { CookieJar, passProviderPages, startOidcProvider } from '../../tests/support/oidc-provider.ts';
import { ms, pct, waitQuiet } from './measure.ts';

/**
 * OIDC callback handling time: `GET /oauth/oidc/login/callback` through the edge, against a real
 * OpenID provider (oidc-provider) in this process on loopback. Each round is a whole browser flow
 * (login redirect, the provider's login and consent pages — not timed), then the callback is timed:
 * the edge takes the state from Redis, exchanges the code at the provider's token endpoint (PKCE,
 * client secret), verifies the ID token, asks the chat worker for the account, mints the session
 * and redirects. Two numbers per round: the client's round trip and the edge's own `Server-Timing:
 * oidc-callback` (from the first line of its handler to the redirect). The provider answers from
 * this same process, so its token endpoint's work is inside both. The first sign-in of each user
 * (account created, groups synced) is measured apart.
 *
 * `benchOidcCallback` runs against an edge someone else started (scripts/bench/auth.ts) with an
 * admin's token; run alone (`node --import tsx scripts/bench/auth-oidc.ts`) it starts its own
 * stack. Env: BENCH_AUTH_OIDC_ROUNDS (100).
 */

export interface OidcBenchResult {
  /** Callback round trips in ms (existing account), after warm-up. */
  callback: number[];
  /** The edge's own handling of those callbacks (Server-Timing), ms. */
  edge: number[];
  /** Parts of it: the code exchange at the provider (token endpoint + ID token checks), the worker's account decision. */
  exchange: number[];
  account: number[];
  /** Callbacks that created the account. */
  firstCallback: number[];
  lines: string[];
}

export async function benchOidcCallback(opts: { chatUrl: string; adminToken: string; rounds?: number; say?: (s: string) => void }): Promise<OidcBenchResult> {
  const rounds = opts.rounds ?? 100;
  const say = opts.say ?? ((s: string) => console.error(`[bench] ${s}`));
  const callbackUrl = `${opts.chatUrl}/oauth/oidc/login/callback`;
  const idp = await startOidcProvider({ redirectUris: [callbackUrl] });
  try {
    const r = await fetch(`${opts.chatUrl}/api/v1/auths/admin/config/oauth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${opts.adminToken}` },
      body: JSON.stringify({
        OPENID_PROVIDER_URL: idp.discoveryUrl,
        OAUTH_CLIENT_ID: idp.clientId,
        OAUTH_CLIENT_SECRET: idp.clientSecret,
        OAUTH_SCOPES: 'openid email profile roles groups',
        ENABLE_OAUTH_SIGNUP: true,
        ENABLE_OAUTH_ROLE_MANAGEMENT: true,
        ENABLE_OAUTH_GROUP_MANAGEMENT: true,
        ENABLE_OAUTH_GROUP_CREATION: true,
      }),
    });
    if (r.status !== 200) throw new Error(`OAuth config answered ${r.status}: ${(await r.text()).slice(0, 300)}`);

    /** One whole flow as `login`; answers the callback's timings. */
    const once = async (login: string) => {
      const jar = new CookieJar();
      const start = await jar.fetch(`${opts.chatUrl}/oauth/oidc/login`);
      if (start.status !== 302) throw new Error(`login answered ${start.status}: ${(await start.text()).slice(0, 300)}`);
      const back = await passProviderPages(jar, start.headers.get('location')!, login, callbackUrl);
      const t0 = performance.now();
      const res = await jar.fetch(back);
      const dt = performance.now() - t0;
      const where = res.headers.get('location') ?? '';
      if (res.status !== 307 || where.includes('error=') || !jar.get(opts.chatUrl, 'token')) throw new Error(`callback for ${login} did not sign in: ${res.status} ${where}`);
      const timing = (name: string) => Number(new RegExp(`${name};dur=([\\d.]+)`).exec(res.headers.get('server-timing') ?? '')?.[1]);
      return { dt, edgeMs: timing('oidc-callback'), exchangeMs: timing('oidc-exchange'), accountMs: timing('oidc-account') };
    };

    const firstCallback: number[] = [];
    for (let i = 0; i < 20; i++) {
      idp.setAccount(`new${i}`, { email: `new${i}-${randomBytes(3).toString('hex')}@example.com`, name: `New ${i}`, roles: ['user'], groups: ['bench', `team${i % 3}`] });
      firstCallback.push((await once(`new${i}`)).dt);
    }
    idp.setAccount('bench', { email: `bench-oidc-${randomBytes(3).toString('hex')}@example.com`, name: 'Bench', roles: ['user'], groups: ['bench'] });
    for (let i = 0; i < 10; i++) await once('bench');
    await waitQuiet('auth oidc', 20_000, say);
    const callback: number[] = [];
    const edge: number[] = [];
    const exchange: number[] = [];
    const account: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const t = await once('bench');
      callback.push(t.dt);
      if (Number.isFinite(t.edgeMs)) edge.push(t.edgeMs);
      if (Number.isFinite(t.exchangeMs)) exchange.push(t.exchangeMs);
      if (Number.isFinite(t.accountMs)) account.push(t.accountMs);
    }
    const line = (label: string, xs: number[]) => `${label.padEnd(44)} p50 ${ms(pct(xs, 50)).padStart(10)}  p99 ${ms(pct(xs, 99)).padStart(10)}  (n=${xs.length})`;
    const lines = [
      line('OIDC callback (existing account)', callback),
      line('  of which the edge (Server-Timing)', edge),
      line('    code exchange at the provider', exchange),
      line('    account decision (chat worker)', account),
      line('OIDC callback, first sign-in (created)', firstCallback),
    ];
    return { callback, edge, exchange, account, firstCallback, lines };
  } finally {
    await idp.close();
  }
}

// Run alone: a stack of its own (one chat worker, one edge), the first sign-up as admin.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rounds = Number(process.env.BENCH_AUTH_OIDC_ROUNDS ?? 100);
  await runChatBenchAlone({}, ({ chatUrl, admin }) => benchOidcCallback({ chatUrl, adminToken: admin.token, rounds }));
  process.exit(0);
}
