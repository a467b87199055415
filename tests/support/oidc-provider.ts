import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';

/**
 * A real OpenID provider (`oidc-provider`) inside the test process, on loopback, for the OIDC
 * sign-in tests (integration and browser). One confidential client whose secret is generated here;
 * accounts are whatever the test puts in with `setAccount(login, claims)` — the provider's
 * development login page accepts any password for a login it knows, and its consent page one click.
 * Back-channel logout is on: the provider posts logout tokens to the client's
 * `backchannelLogoutUri` when a session ends there, and `logoutToken()` signs one directly with the
 * provider's own key (for tests that need a token the provider would not send on its own).
 */

export interface OidcAccountClaims {
  email?: string;
  email_verified?: boolean;
  name?: string;
  picture?: string;
  roles?: string[] | string;
  groups?: string[] | string;
  [claim: string]: unknown;
}

export interface OidcProviderOptions {
  /** Where the provider may send the browser back with a code (the edge's `/oauth/oidc/login/callback`…). */
  redirectUris: string[];
  postLogoutRedirectUris?: string[];
  /** The relying party's back-channel logout endpoint (the edge's `/oauth/backchannel-logout`). */
  backchannelLogoutUri?: string;
  clientId?: string;
}

export interface OidcTestProvider {
  issuer: string;
  /** `OPENID_PROVIDER_URL`: the discovery document. */
  discoveryUrl: string;
  clientId: string;
  clientSecret: string;
  /** Add or replace an account; `login` is both what the login form takes and the `sub`. */
  setAccount(login: string, claims: OidcAccountClaims): void;
  /** Each back-channel logout call the provider made: delivered, or the error. */
  backchannel: { ok: boolean; detail: string }[];
  /** A back-channel logout token for `sub` (and `sid` when given), signed with the provider's key. */
  logoutToken(claims: { sub?: string; sid?: string; aud?: string; iat?: number; events?: unknown; nonce?: string }): Promise<string>;
  /** Stop answering (the "provider down" case); `start()` again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startOidcProvider(opts: OidcProviderOptions): Promise<OidcTestProvider> {
  const accounts = new Map<string, OidcAccountClaims>();
  const clientId = opts.clientId ?? `gatehouse-${randomUUID().slice(0, 8)}`;
  const clientSecret = randomBytes(24).toString('base64url');
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };

  // Listen first: the issuer names the port.
  let server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: opts.redirectUris,
        post_logout_redirect_uris: opts.postLogoutRedirectUris ?? [],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        ...(opts.backchannelLogoutUri ? { backchannel_logout_uri: opts.backchannelLogoutUri, backchannel_logout_session_required: true } : {}),
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'picture'],
      roles: ['roles'],
      groups: ['groups'],
    },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    // Every claim in the ID token too (the relying party may read either).
    conformIdTokenClaims: false,
    features: {
      devInteractions: { enabled: true },
      backchannelLogout: { enabled: true },
      rpInitiatedLogout: { enabled: true },
    },
    // Its outgoing calls (back-channel logout) go to the relying party on loopback, which its SSRF
    // guard refuses: this test provider drops the guard's dispatcher.
    fetch: (url: string | URL | Request, options?: RequestInit) => {
      const { dispatcher: _guard, ...rest } = (options ?? {}) as RequestInit & { dispatcher?: unknown };
      return globalThis.fetch(url, rest);
    },
    findAccount: async (_ctx, sub) => {
      const claims = accounts.get(sub);
      if (!claims) return undefined;
      return { accountId: sub, claims: async () => ({ ...claims, sub }) };
    },
  });
  // Plain HTTP on loopback: the provider must not insist on secure cookies.
  provider.proxy = false;
  // What the provider's own back-channel logout calls gave (a test can tell "not sent" from "refused").
  const backchannel: { ok: boolean; detail: string }[] = [];
  const events = provider as unknown as NodeJS.EventEmitter;
  events.on('backchannel.success', (_ctx: unknown, _client: unknown, accountId: string, sid: string) => backchannel.push({ ok: true, detail: `${accountId} ${sid}` }));
  events.on('backchannel.error', (_ctx: unknown, err: Error) => backchannel.push({ ok: false, detail: err.message }));
  const handler = provider.callback();

  const listen = async () => {
    server = createServer(handler);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  };
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    });
  // Swap the bare listener for the provider's.
  await stop();
  await listen();

  return {
    issuer,
    discoveryUrl: `${issuer}/.well-known/openid-configuration`,
    clientId,
    clientSecret,
    setAccount: (login, claims) => void accounts.set(login, claims),
    backchannel,
    logoutToken: async (c) => {
      const payload: Record<string, unknown> = {
        events: c.events ?? { 'http://schemas.openid.net/event/backchannel-logout': {} },
        jti: randomUUID(),
        ...(c.sub ? { sub: c.sub } : {}),
        ...(c.sid ? { sid: c.sid } : {}),
        ...(c.nonce ? { nonce: c.nonce } : {}),
      };
      return new SignJWT(payload)
        .setProtectedHeader({ alg: 'RS256', kid: jwk.kid!, typ: 'logout+jwt' })
        .setIssuer(issuer)
        .setAudience(c.aud ?? clientId)
        .setIssuedAt(c.iat ?? Math.floor(Date.now() / 1000))
        .setExpirationTime('2m')
        .sign(privateKey);
    },
    stop,
    start: listen,
    close: stop,
  };
}

/** A cookie jar for `fetch` with manual redirects: what a browser would send back to each host. */
export class CookieJar {
  private readonly byHost = new Map<string, Map<string, string>>();

  store(url: string, res: Response): void {
    const host = new URL(url).host;
    const jar = this.byHost.get(host) ?? new Map<string, string>();
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=Thu, 01 Jan 1970/i.test(a));
      if (expired || value === '""' || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    this.byHost.set(host, jar);
  }

  get(url: string, name: string): string | undefined {
    return this.byHost.get(new URL(url).host)?.get(name);
  }

  header(url: string): string {
    return [...(this.byHost.get(new URL(url).host) ?? new Map()).entries()].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** One request with this jar's cookies; the response's cookies are kept. Redirects are not followed. */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookie = this.header(url);
    if (cookie) headers.set('cookie', cookie);
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    this.store(url, res);
    return res;
  }
}

/**
 * Follow redirects from `url` through the provider's development login and consent pages (the
 * form posts a browser would make) until a redirect leaves for `stopAt` (the relying party's
 * callback). Returns that callback URL without requesting it. Bounded: at most 20 hops.
 */
export async function passProviderPages(jar: CookieJar, url: string, login: string, stopAt: string): Promise<string> {
  let next = url;
  let method = 'GET';
  let body: URLSearchParams | undefined;
  for (let hop = 0; hop < 20; hop++) {
    if (next.startsWith(stopAt)) return next;
    const res = await jar.fetch(next, { method, ...(body ? { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } } : {}) });
    method = 'GET';
    body = undefined;
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      next = new URL(location, next).toString();
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`provider page ${next} answered ${res.status}: ${html.slice(0, 300)}`);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`provider page ${next} has no form: ${html.slice(0, 300)}`);
    next = new URL(action.replace(/&amp;/g, '&'), next).toString();
    method = 'POST';
    body = html.includes('name="login"') ? new URLSearchParams({ prompt: 'login', login, password: 'any' }) : new URLSearchParams({ prompt: 'consent' });
  }
  throw new Error(`no redirect to ${stopAt} after 20 hops`);
}
