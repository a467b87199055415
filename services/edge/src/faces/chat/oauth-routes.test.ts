import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createLogger } from '@gatehouse/common';
import { buildChatFace, type ChatFaceOptions } from './chat-face.ts';

/**
 * The OAuth routes' answers that need no worker, in process (the flow itself runs against a real
 * provider in tests/integration/auth-oidc.test.ts): a provider this build does not offer is Open
 * WebUI's bare 404, the configured one without the bus is the face's 503 (JSON, never the web UI's
 * page), and a back-channel logout without a token is the specification's 400.
 */
const sessions: ChatFaceOptions['sessions'] = { isRevoked: async () => false, revoke: async () => undefined, attemptSignin: async () => ({ allowed: true }) };
let app: FastifyInstance;

beforeAll(async () => {
  app = await buildChatFace(
    { log: createLogger('oauth-routes-test', 'silent'), logRequests: false, trustProxy: false },
    { bus: () => undefined, sessions, redisReady: () => true, secret: randomBytes(32).toString('base64url'), cookie: { sameSite: 'lax', secure: false }, streamIdleMs: 1000 },
  );
});
afterAll(() => app?.close());

describe('OAuth routes without a worker', () => {
  it('answers 404 for a provider this build does not offer, on the login and both callback paths', async () => {
    for (const url of ['/oauth/google/login', '/oauth/github/login/callback?code=x&state=y', '/oauth/microsoft/callback']) {
      const r = await app.inject({ method: 'GET', url });
      expect([url, r.statusCode, r.json()]).toEqual([url, 404, { detail: 'Not Found' }]);
    }
  });

  it('answers the bus-down 503 as JSON for the configured provider', async () => {
    const r = await app.inject({ method: 'GET', url: '/oauth/oidc/login', headers: { accept: 'text/html' } });
    expect(r.statusCode).toBe(503);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
  });

  it('refuses a back-channel logout without a logout token (form post) with the specification’s error', async () => {
    for (const body of ['', 'other=1']) {
      const r = await app.inject({ method: 'POST', url: '/oauth/backchannel-logout', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: body });
      expect(r.statusCode).toBe(400);
      expect(r.json()).toEqual({ error: 'invalid_request', error_description: 'logout_token is required (a form post).' });
      expect(r.headers['cache-control']).toBe('no-store');
    }
  });
});
