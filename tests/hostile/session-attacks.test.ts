import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Edge } from '../support/local-stack.ts';
import { chatClient, type Account } from '../integration/chat-fixture.ts';

/**
 * Session attacks on the chat face: forged tokens (alg none, algorithm confusion with
 * the real secret, a forged identity), expired, tampered, revoked and a deleted user's tokens, and
 * cross-site request forgery with the session cookie. Every forged token is made with the stack's
 * real session secret where that makes the attack stronger: only the algorithm pin, the expiry,
 * revocation and the user's existence stand in the way.
 */
const stack = new Stack();
let edge: Edge;
const chat = chatClient(() => edge.chatUrl);
let admin: Account;
let secret: string;

beforeAll(async () => {
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  admin = await chat.signup('Session Admin');
  // The stack's edges share this generated secret (local-stack.ts); a real attacker would not have it.
  secret = readFileSync(join(tmpdir(), `gatehouse-${stack.ns}-webui-secret-key`), 'utf8').trim();
}, 120_000);
afterAll(() => stack.close());

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
function forge(header: Record<string, unknown>, claims: Record<string, unknown>, sign: (input: string) => string): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${sign(input)}`;
}
const hmac = (alg: 'sha256' | 'sha384' | 'sha512', key: string) => (input: string) => createHmac(alg, key).update(input).digest('base64url');
const now = () => Math.floor(Date.now() / 1000);
const me = (token: string) => chat.call('/api/v1/auths/', token);

describe('forged and stale session tokens', () => {
  it('the real secret with HS256 is accepted (the forgeries below differ in one thing each)', async () => {
    const token = admin.token;
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
    const again = forge({ alg: 'HS256', typ: 'JWT' }, claims, hmac('sha256', secret));
    expect((await me(again)).status).toBe(200);
  });

  it.each([
    ['alg none, no signature', () => forge({ alg: 'none', typ: 'JWT' }, { id: admin.id, jti: randomUUID(), iat: now() }, () => '')],
    ['alg None, signature kept', () => forge({ alg: 'None', typ: 'JWT' }, { id: admin.id, jti: randomUUID(), iat: now() }, hmac('sha256', secret))],
    ['HS512 with the real secret', () => forge({ alg: 'HS512', typ: 'JWT' }, { id: admin.id, jti: randomUUID(), iat: now() }, hmac('sha512', secret))],
    ['RS256 header, HMAC with the real secret (key confusion)', () => forge({ alg: 'RS256', typ: 'JWT' }, { id: admin.id, jti: randomUUID(), iat: now() }, hmac('sha256', secret))],
    ['HS256 with a guessed secret', () => forge({ alg: 'HS256', typ: 'JWT' }, { id: admin.id, jti: randomUUID(), iat: now() }, hmac('sha256', 't0p-s3cret'))],
    ['HS256 with an empty secret', () => forge({ alg: 'HS256', typ: 'JWT' }, { id: admin.id, jti: randomUUID(), iat: now() }, hmac('sha256', ''))],
    ['expired a second ago', () => forge({ alg: 'HS256', typ: 'JWT' }, { id: admin.id, jti: randomUUID(), iat: now() - 60, exp: now() - 1 }, hmac('sha256', secret))],
    ['exp as a string', () => forge({ alg: 'HS256', typ: 'JWT' }, { id: admin.id, jti: randomUUID(), iat: now(), exp: '9999999999' }, hmac('sha256', secret))],
    ['no jti', () => forge({ alg: 'HS256', typ: 'JWT' }, { id: admin.id, iat: now() }, hmac('sha256', secret))],
    ['a user that never existed', () => forge({ alg: 'HS256', typ: 'JWT' }, { id: randomUUID(), jti: randomUUID(), iat: now() }, hmac('sha256', secret))],
    ['payload swapped under a real signature', () => {
      const [h, , s] = admin.token.split('.');
      return `${h}.${b64({ id: randomUUID(), jti: randomUUID(), iat: now() })}.${s}`;
    }],
    ['two dots more', () => `${admin.token}..`],
  ])('%s → 401', async (_name, make) => {
    const r = await me(make());
    expect(r.status).toBe(401);
    expect(r.body).toHaveProperty('detail');
  });

  it('a revoked token (signed out) and a deleted user’s token → 401', async () => {
    const bob = await chat.addUser(admin, 'Bob');
    expect((await me(bob.token)).status).toBe(200);
    const second = await chat.call('/api/v1/auths/signin', null, 'POST', { email: bob.email, password: bob.password });
    expect((await chat.call('/api/v1/auths/signout', bob.token)).status).toBe(200);
    expect((await me(bob.token)).status).toBe(401);
    expect((await me(second.body.token)).status).toBe(200);
    expect((await chat.call(`/api/v1/users/${bob.id}`, admin, 'DELETE')).status).toBe(200);
    expect((await me(second.body.token)).status).toBe(401);
  });
});

describe('cross-site request forgery with the session cookie', () => {
  const post = (headers: Record<string, string>) =>
    fetch(`${edge.chatUrl}/api/v1/memories/add`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ content: 'csrf probe' }) });

  it('refuses a cookie-authenticated change from another origin (Origin, or Sec-Fetch-Site without it)', async () => {
    const cookie = `token=${admin.token}`;
    const own = new URL(edge.chatUrl).origin;
    const refused = [
      await post({ cookie, origin: 'https://evil.example' }),
      await post({ cookie, origin: own.replace('127.0.0.1', 'localhost') }),
      await post({ cookie, origin: 'null' }),
      await post({ cookie, 'sec-fetch-site': 'cross-site' }),
      await post({ cookie, 'sec-fetch-site': 'same-site' }),
    ];
    for (const r of refused) {
      expect(r.status).toBe(403);
      expect((await r.json()).detail).toMatch(/Cross-origin request refused/);
    }
    // From its own pages, and for callers with no ambient credential, it works.
    expect((await post({ cookie, origin: own, 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    expect((await post({ cookie })).status).toBe(200);
    expect((await post({ authorization: `Bearer ${admin.token}`, origin: 'https://evil.example' })).status).toBe(200);
    // Reads are not changes: a cross-origin GET with the cookie is answered (SameSite and CORS keep its answer from the other page).
    expect((await fetch(`${edge.chatUrl}/api/v1/auths/`, { headers: { cookie, origin: 'https://evil.example' } })).status).toBe(200);
  });

  it('the session cookie is HttpOnly, SameSite=Lax, Path=/', async () => {
    const r = await chat.call('/api/v1/auths/signin', null, 'POST', { email: admin.email, password: admin.password });
    const attrs = (r.headers.get('set-cookie') ?? '').split('; ');
    expect(attrs).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Lax', 'Path=/']));
  });
});
