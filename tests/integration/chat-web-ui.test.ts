import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_PLATFORM_VERSION } from '@gatehouse/contracts';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient } from './chat-fixture.ts';

/**
 * What the web UI reads before anyone signs in, over the real stack: `GET /api/config` from the
 * chat worker (onboarding while the platform has no account, sign-up closed after the first),
 * `GET /api/changelog`, and the app's pages next to the API's JSON 404s. The build is a stand-in
 * in a temp folder (the browser suite serves the real one).
 */
const stack = new Stack();
const dist = mkdtempSync(join(tmpdir(), 'gatehouse-web-ui-dist-'));
const INDEX = '<!doctype html><title>Gatehouse</title><div id="app"></div>';
let edge: Edge;
const { call, signup } = chatClient(() => edge.chatUrl);

beforeAll(async () => {
  mkdirSync(join(dist, 'assets'));
  writeFileSync(join(dist, 'index.html'), INDEX);
  await stack.startChatWorker({ PASSWORD_SCRYPT_LOG2N: '10' });
  edge = await stack.startEdge({ EDGE_FACES: 'chat', WEB_UI_DIR: dist });
});
afterAll(async () => {
  await stack.close();
  rmSync(dist, { recursive: true, force: true });
});

describe('GET /api/config', () => {
  it('says onboarding while no account exists, then not; sign-up closes after the first admin', async () => {
    const before = await call('/api/config');
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ onboarding: true, status: true, name: 'Gatehouse', version: CHAT_PLATFORM_VERSION, features: { auth: true, enable_signup: true, enable_login_form: true } });
    await signup('Admin');
    const after = await call('/api/config');
    expect(after.status).toBe(200);
    expect(after.body).not.toHaveProperty('onboarding');
    expect(after.body.features).toMatchObject({ auth: true, enable_signup: false, enable_login_form: true });
    const version = await call('/api/version');
    expect(version.body).toEqual({ version: after.body.version });
  });
});

describe('GET /api/changelog', () => {
  it('the current version first, each with its date and {title, content} items', async () => {
    const r = await call('/api/changelog');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)[0]).toBe(CHAT_PLATFORM_VERSION);
    expect(r.body[CHAT_PLATFORM_VERSION].added[0]).toEqual({ title: expect.any(String), content: expect.any(String) });
  });
});

describe('pages and API paths on the real edge', () => {
  it('a deep link answers the app; an unknown API path its JSON 404', async () => {
    const page = await fetch(`${edge.chatUrl}/c/some-chat-id`, { headers: { accept: 'text/html' } });
    expect([page.status, page.headers.get('cache-control'), await page.text()]).toEqual([200, 'no-cache', INDEX]);
    const api = await fetch(`${edge.chatUrl}/api/v1/nothing`, { headers: { accept: 'text/html' } });
    expect([api.status, await api.json()]).toEqual([404, { detail: 'Not Found' }]);
  });
});
