import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startOidcProvider, type OidcTestProvider } from '../support/oidc-provider.ts';
import { openSession, person, type BrowserSession, type WebStack } from './browser-fixture.ts';

/**
 * OIDC sign-in in a real chromium against a real OpenID provider running in this process
 * (tests/support/oidc-provider.ts): the sign-in page's "Continue with <provider>" button, the
 * provider's own login and consent pages, back to the platform signed in as the account the claims describe; a refused sign-in comes
 * back to the sign-in page with the reason in the address.
 */
let session: BrowserSession;
let web: WebStack;
let page: Page;
let idp: OidcTestProvider;
const admin = person('Root');

async function api(path: string, token: string | null, body?: unknown): Promise<any> {
  const r = await fetch(web.url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(r.status, `${path}: ${r.status}`).toBe(200);
  return r.json();
}

/** Start the provider sign-in from the sign-in page's "Continue with <provider>" (the name /api/config lists). */
async function startSignin(): Promise<void> {
  await page.goto(web.url + '/auth');
  const button = page.getByRole('link', { name: 'Continue with Test IdP' });
  await button.waitFor();
  expect(await button.getAttribute('href')).toBe('/oauth/oidc/login');
  await button.click();
}

/** The provider's development pages: any password for a login it knows, then consent. */
async function passProvider(login: string): Promise<void> {
  await page.waitForURL((u) => u.href.startsWith(idp.issuer));
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').first().click();
  const consent = page.getByRole('button', { name: 'Continue' });
  await consent.waitFor();
  await consent.click();
}

beforeAll(async () => {
  session = await openSession();
  ({ web, page } = session);
  const signed = await api('/api/v1/auths/signup', null, { name: admin.name, email: admin.email, password: admin.password });
  idp = await startOidcProvider({ redirectUris: [`${web.url}/oauth/oidc/login/callback`] });
  await api('/api/v1/auths/admin/config/oauth', signed.token, {
    OPENID_PROVIDER_URL: idp.discoveryUrl,
    OAUTH_CLIENT_ID: idp.clientId,
    OAUTH_CLIENT_SECRET: idp.clientSecret,
    OAUTH_PROVIDER_NAME: 'Test IdP',
    OAUTH_SCOPES: 'openid email profile roles groups',
    ENABLE_OAUTH_SIGNUP: true,
    ENABLE_OAUTH_ROLE_MANAGEMENT: true,
    OAUTH_ALLOWED_DOMAINS: 'example.com',
  });
});
afterAll(async () => {
  await session?.close();
  await idp?.close();
});

describe('web UI: sign in with an OpenID provider', () => {
  it('goes to the provider, back signed in as the account its claims describe (role from the roles claim)', async () => {
    const who = person('Pat');
    idp.setAccount('pat', { email: who.email, name: 'Pat Provider', roles: ['user'] });
    await startSignin();
    await passProvider('pat');
    // Back through /auth (token cookie) into the app.
    await page.waitForURL((u) => u.origin === web.url && !u.pathname.startsWith('/auth') && !u.pathname.startsWith('/oauth'));
    await page.locator('#chat-input').waitFor();
    const me = await page.evaluate(async () => (await fetch('/api/v1/auths/', { credentials: 'include' })).json());
    expect(me).toMatchObject({ email: who.email, name: 'Pat Provider', role: 'user' });
  });

  it('comes back to the sign-in page with the reason when the provider’s account is refused', async () => {
    await page.context().clearCookies();
    await page.evaluate(() => localStorage.clear());
    idp.setAccount('quinn', { email: 'quinn@elsewhere.test', name: 'Quinn', roles: ['user'] });
    await startSignin();
    await passProvider('quinn');
    await page.waitForURL((u) => u.origin === web.url && u.pathname === '/auth');
    expect(new URL(page.url()).searchParams.get('error') ?? '').toMatch(/incorrect/);
    // The sign-in page says why.
    await expect.poll(() => page.locator('#auth-error').textContent()).toMatch(/incorrect/);
    const me = await page.evaluate(async () => (await fetch('/api/v1/auths/', { credentials: 'include' })).status);
    expect(me).toBe(401);
  });
});
