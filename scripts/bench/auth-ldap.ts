import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { runChatBenchAlone } from './chat-alone.ts';
import { startSlapd } from '../../tests/support/slapd.ts';
import { ms, pct, waitQuiet } from './measure.ts';

/**
 * LDAP sign-in vs local sign-in through the edge (`POST /api/v1/auths/ldap` vs
 * `/api/v1/auths/signin`), against a throwaway slapd on loopback (tests/support/slapd.ts; needs
 * slapd from infra/bringup). Both answer the same session (the edge mints the token); the LDAP
 * path adds two binds and a search on two short-lived LDAP connections, the local one a scrypt
 * verification. Rounds alternate the two so both see the same machine. The first LDAP sign-in of
 * each user (account creation) is measured apart.
 *
 * `benchLdapSignin` runs against an edge someone else started (scripts/bench/auth.ts): that edge
 * must allow `rounds` sign-ins per account and twice that per address
 * (SIGNIN_RATE_LIMIT_PER_ACCOUNT / _PER_ADDRESS). Run alone (`node --import tsx
 * scripts/bench/auth-ldap.ts`) it starts its own stack. Env: BENCH_AUTH_LDAP_ROUNDS (200).
 */

export interface LdapBenchResult {
  /** Sign-in round trips in ms, after warm-up. */
  ldap: number[];
  local: number[];
  /** First sign-in of new LDAP users (the account is created). */
  firstLdap: number[];
  lines: string[];
}

export async function benchLdapSignin(opts: {
  chatUrl: string;
  admin: { token: string; email: string; password: string };
  rounds?: number;
  say?: (s: string) => void;
}): Promise<LdapBenchResult> {
  const rounds = opts.rounds ?? 200;
  const say = opts.say ?? ((s: string) => console.error(`[bench] ${s}`));
  const newUsers = 20;
  const ldap = await startSlapd({ users: [{ uid: 'bench' }, ...Array.from({ length: newUsers }, (_, i) => ({ uid: `new${i}` }))] });
  try {
    const post = async (path: string, body: unknown, token?: string) => {
      const t0 = performance.now();
      const r = await fetch(opts.chatUrl + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
      const text = await r.text();
      const dt = performance.now() - t0;
      if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${text.slice(0, 300)}`);
      return dt;
    };
    await post(
      '/api/v1/auths/admin/config/ldap/server',
      {
        label: 'bench', host: '127.0.0.1', port: ldap.port, app_dn: ldap.appDn, app_dn_password: ldap.appPassword,
        search_base: ldap.peopleBase, search_filters: '', use_tls: false, use_starttls: false,
      },
      opts.admin.token,
    );
    await post('/api/v1/auths/admin/config/ldap', { enable_ldap: true }, opts.admin.token);
    const user = ldap.users[0]!;
    const ldapOnce = () => post('/api/v1/auths/ldap', { user: user.uid, password: user.password });
    const localOnce = () => post('/api/v1/auths/signin', { email: opts.admin.email, password: opts.admin.password });

    const firstLdap: number[] = [];
    for (const u of ldap.users.slice(1)) firstLdap.push(await post('/api/v1/auths/ldap', { user: u.uid, password: u.password }));
    for (let i = 0; i < 10; i++) {
      await ldapOnce();
      await localOnce();
    }
    await waitQuiet('auth ldap', 20_000, say);
    const ldapMs: number[] = [];
    const localMs: number[] = [];
    for (let i = 0; i < rounds; i++) {
      ldapMs.push(await ldapOnce());
      localMs.push(await localOnce());
    }
    const line = (label: string, xs: number[]) => `${label.padEnd(44)} p50 ${ms(pct(xs, 50)).padStart(10)}  p99 ${ms(pct(xs, 99)).padStart(10)}  (n=${xs.length})`;
    const lines = [
      line('LDAP sign-in (existing account)', ldapMs),
      line('local sign-in (scrypt)', localMs),
      line('LDAP first sign-in (account created)', firstLdap),
      `LDAP − local at p50: ${ms(pct(ldapMs, 50) - pct(localMs, 50))}`,
    ];
    return { ldap: ldapMs, local: localMs, firstLdap, lines };
  } finally {
    await ldap.stop();
  }
}

// Run alone: a stack of its own (one chat worker, one edge), the first sign-up as admin.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rounds = Number(process.env.BENCH_AUTH_LDAP_ROUNDS ?? 200);
  const limit = String(rounds * 2 + 100);
  await runChatBenchAlone({ SIGNIN_RATE_LIMIT_PER_ACCOUNT: limit, SIGNIN_RATE_LIMIT_PER_ADDRESS: limit }, ({ chatUrl, admin }) => benchLdapSignin({ chatUrl, admin, rounds }));
}
