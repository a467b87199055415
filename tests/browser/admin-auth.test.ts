import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startSlapd, type Slapd } from '../support/slapd.ts';
import { startOidcProvider, type OidcTestProvider } from '../support/oidc-provider.ts';
import { newPage, openSession, person, shotsEverySize, signUpIntoApp, type BrowserSession, type WebStack } from './browser-fixture.ts';

/**
 * Admin → Authentication driven in chromium: API keys switched on there and a key made in
 * Settings → Account that then works against the API; LDAP configured on the page against a
 * throwaway slapd ("Test connection" binds) and used from the sign-in page; OIDC configured on the
 * page against a real provider in this process ("Check discovery"), then "Continue with <provider>".
 */
let session: BrowserSession;
let web: WebStack;
let page: Page;
let slapd: Slapd;
let idp: OidcTestProvider;
const admin = person('Root');

const me = async (token: string) => {
  const r = await fetch(`${web.url}/api/v1/auths/`, { headers: { authorization: `Bearer ${token}` } });
  return { status: r.status, body: (await r.json()) as { email?: string; role?: string } };
};

/** A fresh browser context: nobody signed in. */
async function signedOutPage(): Promise<Page> {
  return newPage(session.browser);
}

beforeAll(async () => {
  session = await openSession();
  ({ web, page } = session);
  [slapd, idp] = await Promise.all([
    startSlapd({ users: [{ uid: 'lee', cn: 'Lee Directory' }] }),
    startOidcProvider({ redirectUris: [`${web.url}/oauth/oidc/login/callback`] }),
  ]);
  await signUpIntoApp(page, web.url, admin);
});
afterAll(async () => {
  await session?.close();
  await Promise.all([slapd?.stop(), idp?.close()]);
});

describe('Admin → Authentication', () => {
  it('switches API keys on; a key made in Settings → Account is shown once and works against the API', async () => {
    await page.goto(`${web.url}/admin/authentication`);
    const toggle = page.locator('#auth-enable-api-keys');
    await toggle.waitFor();
    expect(await toggle.isChecked()).toBe(false);
    await toggle.check();
    await page.locator('#auth-general-save').click();
    await expect.poll(() => page.locator('#auth-general-status').textContent()).toBe('Settings saved successfully!');
    await shotsEverySize(page, 'admin-auth');

    // A full load, so the app reads /api/config again (it offers keys only when they are on);
    // the key is in Settings → Account.
    await page.goto(`${web.url}/settings/account`);
    await page.locator('#api-key-create').click();
    const key = (await page.locator('#api-key-value').textContent())!.trim();
    expect(key).toMatch(/^sk-[0-9a-f]{32}$/);
    expect(await me(key)).toEqual({ status: 200, body: expect.objectContaining({ email: admin.email, role: 'admin' }) });
    // Shown once: after a reload only its last characters.
    await page.reload();
    await expect.poll(() => page.locator('#api-key-masked').textContent()).toBe(`sk-…${key.slice(-4)}`);
    expect(await page.locator('#api-key-value').count()).toBe(0);
    await page.locator('#api-key-delete').click();
    await page.locator('#api-key-masked').waitFor({ state: 'detached' });
    expect((await me(key)).status).toBe(401);
  });

  it('configures LDAP (Test connection binds), then a directory user signs in from the sign-in page', async () => {
    await page.goto(`${web.url}/admin/authentication`);
    await page.locator('#ldap-host').waitFor();
    await page.locator('#ldap-label').fill('Test directory');
    await page.locator('#ldap-host').fill(slapd.host);
    await page.locator('#ldap-port').fill(String(slapd.port));
    await page.locator('#ldap-use-tls').uncheck();
    await page.locator('#ldap-app-dn').fill(slapd.appDn);
    await page.locator('#ldap-app-dn-password').fill(slapd.appPassword);
    await page.locator('#ldap-search-base').fill(slapd.peopleBase);
    await page.locator('#ldap-attr-username').fill('uid');
    await page.locator('#ldap-attr-mail').fill('mail');
    await page.locator('#ldap-test-button').click();
    const result = page.locator('#ldap-test-result');
    await result.waitFor();
    expect(await result.getAttribute('data-ok'), (await result.textContent()) ?? '').toBe('true');
    await page.locator('#ldap-enable').check();
    await page.locator('#ldap-group-management').check();
    await page.locator('#ldap-save-button').click();
    await expect.poll(() => page.locator('#ldap-status').textContent()).toBe('LDAP settings saved.');
    const adminToken = (await page.evaluate(() => localStorage.getItem('token')))!;
    const stored = await fetch(`${web.url}/api/v1/auths/admin/config/ldap`, { headers: { authorization: `Bearer ${adminToken}` } }).then((r) => r.json());
    expect(stored).toMatchObject({ ENABLE_LDAP: true, ENABLE_LDAP_GROUP_MANAGEMENT: true, ENABLE_LDAP_GROUP_CREATION: false });
    await shotsEverySize(page, 'admin-auth-ldap');

    // A wrong application password is reported, not thrown.
    await page.locator('#ldap-app-dn-password').fill('not-the-password');
    await page.locator('#ldap-test-button').click();
    await expect.poll(() => result.getAttribute('data-ok')).toBe('false');

    const lee = slapd.users.find((u) => u.uid === 'lee')!;
    const visitor = await signedOutPage();
    await visitor.goto(`${web.url}/auth`);
    await visitor.locator('#ldap-toggle').click();
    await visitor.locator('#username').fill('lee');
    await visitor.locator('input[type="password"]').fill(lee.password);
    await visitor.locator('form button[type="submit"]').click();
    await visitor.waitForURL((u) => !u.pathname.startsWith('/auth'));
    const token = await visitor.evaluate(() => localStorage.getItem('token'));
    expect((await me(token!)).body.email).toBe(lee.mail);
    await visitor.context().close();
  });

  it('configures OIDC (Check discovery reads the provider), then "Continue with" signs a new user in', async () => {
    await page.goto(`${web.url}/admin/authentication`);
    await page.locator('#oauth-provider-url').waitFor();
    await page.locator('#oauth-provider-name').fill('Test IdP');
    await page.locator('#oauth-provider-url').fill(idp.discoveryUrl);
    await page.locator('#oauth-client-id').fill(idp.clientId);
    await page.locator('#oauth-client-secret').fill(idp.clientSecret);
    await page.locator('#oauth-scopes').fill('openid email profile');
    await page.locator('#oauth-allowed-domains').fill('example.com');
    await page.locator('#oauth-enable-signup').check();
    await page.locator('#oauth-discover-button').click();
    const found = page.locator('#oauth-discover-result');
    await found.waitFor();
    expect(await found.getAttribute('data-ok'), (await found.textContent()) ?? '').toBe('true');
    expect(await found.textContent()).toContain(idp.issuer);
    await page.locator('#oauth-save-button').click();
    await expect.poll(() => page.locator('#oauth-status').textContent()).toBe('OAuth settings saved.');
    await shotsEverySize(page, 'admin-auth-oidc');

    const who = person('Pat');
    idp.setAccount('pat', { email: who.email, name: 'Pat Provider' });
    const visitor = await signedOutPage();
    await visitor.goto(`${web.url}/auth`);
    // Both other ways are offered now: the provider, and LDAP (enabled by the test before).
    await visitor.locator('#ldap-toggle').waitFor();
    await shotsEverySize(visitor, 'admin-auth-signin');
    await visitor.getByRole('link', { name: 'Continue with Test IdP' }).click();
    await visitor.waitForURL((u) => u.href.startsWith(idp.issuer));
    await visitor.locator('input[name="login"]').fill('pat');
    await visitor.locator('input[name="password"]').fill('any password');
    await visitor.locator('button[type="submit"]').first().click();
    const consent = visitor.getByRole('button', { name: 'Continue' });
    await consent.waitFor();
    await consent.click();
    await visitor.waitForURL((u) => u.href.startsWith(web.url) && !u.pathname.startsWith('/auth') && !u.pathname.startsWith('/oauth'));
    await expect.poll(() => visitor.evaluate(() => localStorage.getItem('token'))).toBeTruthy();
    const token = await visitor.evaluate(() => localStorage.getItem('token'));
    expect((await me(token!)).body.email).toBe(who.email);
    await visitor.context().close();
  });
});
