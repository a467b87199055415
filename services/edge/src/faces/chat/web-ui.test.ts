import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createLogger } from '@gatehouse/common';
import { CHANGELOG, CHAT_PLATFORM_VERSION } from '@gatehouse/contracts';
import { buildChatFace, type ChatFaceOptions } from './chat-face.ts';
import { findPyodide, IMMUTABLE, isApiPath } from './web-ui.ts';

/**
 * The web UI on the chat face, in process: a small build in a temp folder (index.html, a
 * fingerprinted asset with its .br/.gz, a top-level file), the Pyodide package from
 * services/web-ui, and a face whose build folder does not exist.
 */
const sessions: ChatFaceOptions['sessions'] = { isRevoked: async () => false, revoke: async () => undefined, attemptSignin: async () => ({ allowed: true }) };
const base = (dir: string, pyodideDir?: string | null): ChatFaceOptions => ({
  bus: () => undefined,
  sessions,
  redisReady: () => true,
  secret: randomBytes(32).toString('base64url'),
  cookie: { sameSite: 'lax', secure: false },
  streamIdleMs: 1000,
  webUi: { dir, pyodideDir },
});
const log = createLogger('web-ui-test', 'silent');

const root = mkdtempSync(join(tmpdir(), 'gatehouse-web-ui-'));
const dist = join(root, 'dist');
const INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-abc123.js"></script></head><body><div id="app"></div></body></html>';
const JS = `console.log(${JSON.stringify('x'.repeat(2000))});\n`;
let app: FastifyInstance;
let bare: FastifyInstance;

beforeAll(async () => {
  mkdirSync(join(dist, 'assets'), { recursive: true });
  writeFileSync(join(dist, 'index.html'), INDEX);
  writeFileSync(join(dist, 'favicon.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  writeFileSync(join(dist, 'assets', 'index-abc123.js'), JS);
  writeFileSync(join(dist, 'assets', 'index-abc123.js.br'), brotliCompressSync(JS));
  writeFileSync(join(dist, 'assets', 'index-abc123.js.gz'), gzipSync(JS));
  app = await buildChatFace({ log, logRequests: false }, base(dist));
  bare = await buildChatFace({ log, logRequests: false }, base(join(root, 'missing'), null));
});
afterAll(async () => {
  await Promise.all([app.close(), bare.close()]);
  rmSync(root, { recursive: true, force: true });
});

const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

describe('web UI pages', () => {
  it('index.html with no-cache at every page of the app, deep links included', async () => {
    for (const url of ['/', '/auth', '/c/3f1c2a', '/admin/users', '/admin/settings/general', '/settings', '/c/3f1c2a?x=1']) {
      const r = await app.inject({ method: 'GET', url, headers: html });
      expect([url, r.statusCode, r.headers['cache-control'], r.headers['content-type']]).toEqual([url, 200, 'no-cache', 'text/html; charset=utf-8']);
      expect(r.body).toBe(INDEX);
    }
  });

  it('API paths keep their JSON 404s, however they are spelt and whatever the client accepts', async () => {
    for (const url of ['/api/nothing', '/api/v1/nothing/', '/health/x', '/oauth/google/login', '/ws/socket.io', '/API/v1/nothing', '//api/v1/nothing', '/./api/v1/nothing', '/%61pi/v1/nothing']) {
      const r = await app.inject({ method: 'GET', url, headers: html });
      expect([url, r.statusCode, r.json()]).toEqual([url, 404, { detail: 'Not Found' }]);
    }
    expect(isApiPath('/apix')).toBe(false);
    expect(isApiPath('/c/api')).toBe(false);
  });

  it('a client that asks for JSON only gets the JSON 404; other methods too', async () => {
    const j = await app.inject({ method: 'GET', url: '/somewhere', headers: { accept: 'application/json' } });
    expect([j.statusCode, j.json()]).toEqual([404, { detail: 'Not Found' }]);
    const p = await app.inject({ method: 'POST', url: '/auth', headers: html });
    expect([p.statusCode, p.json()]).toEqual([404, { detail: 'Not Found' }]);
  });

  it('a top-level file of the build is sent as it is', async () => {
    const r = await app.inject({ method: 'GET', url: '/favicon.png' });
    expect([r.statusCode, r.headers['content-type'], r.headers['cache-control'], r.rawPayload.length]).toEqual([200, 'image/png', 'no-cache', 4]);
  });
});

describe('web UI assets', () => {
  it('fingerprinted files are cached for a year, immutable', async () => {
    const r = await app.inject({ method: 'GET', url: '/assets/index-abc123.js' });
    expect([r.statusCode, r.headers['cache-control'], r.body]).toEqual([200, IMMUTABLE, JS]);
    expect(r.headers['content-type']).toMatch(/^(text|application)\/javascript/);
  });

  it('the pre-compressed copy goes to a client that accepts it', async () => {
    const br = await app.inject({ method: 'GET', url: '/assets/index-abc123.js', headers: { 'accept-encoding': 'br, gzip' } });
    expect([br.headers['content-encoding'], br.headers['cache-control'], br.headers.vary]).toEqual(['br', IMMUTABLE, 'accept-encoding']);
    expect(brotliDecompressSync(br.rawPayload).toString()).toBe(JS);
    const gz = await app.inject({ method: 'GET', url: '/assets/index-abc123.js', headers: { 'accept-encoding': 'gzip' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.rawPayload).toEqual(readFileSync(join(dist, 'assets', 'index-abc123.js.gz')));
  });

  it('a missing asset is a 404, not the app', async () => {
    const r = await app.inject({ method: 'GET', url: '/assets/index-gone.js', headers: html });
    expect([r.statusCode, r.json()]).toEqual([404, { detail: 'Not Found' }]);
    const dots = await app.inject({ method: 'GET', url: '/assets/../index.html' });
    expect(dots.headers['cache-control']).not.toBe(IMMUTABLE);
  });
});

describe('Pyodide', () => {
  it('is served for any origin with the types a module worker needs', async () => {
    expect(findPyodide(), 'pyodide is a dependency of services/web-ui (pnpm install)').not.toBeNull();
    const mjs = await app.inject({ method: 'GET', url: '/pyodide/pyodide.mjs', headers: { origin: 'null' } });
    expect([mjs.statusCode, mjs.headers['access-control-allow-origin'], mjs.headers['content-type']]).toEqual([200, '*', 'text/javascript; charset=utf-8']);
    expect(mjs.headers['cache-control']).toMatch(/max-age=\d+/);
    const wasm = await app.inject({ method: 'GET', url: '/pyodide/pyodide.asm.wasm' });
    expect([wasm.statusCode, wasm.headers['content-type'], wasm.headers['access-control-allow-origin']]).toEqual([200, 'application/wasm', '*']);
    expect(wasm.rawPayload.subarray(0, 4)).toEqual(Buffer.from([0x00, 0x61, 0x73, 0x6d]));
    const lock = await app.inject({ method: 'GET', url: '/pyodide/pyodide-lock.json' });
    expect(lock.statusCode).toBe(200);
  });
});

describe('no build', () => {
  it('pages answer a 503 saying how to build it; the API is untouched', async () => {
    const r = await bare.inject({ method: 'GET', url: '/', headers: html });
    expect([r.statusCode, r.headers['content-type']]).toEqual([503, 'text/html; charset=utf-8']);
    expect(r.body).toContain('web UI not built — run scripts/start');
    const v = await bare.inject({ method: 'GET', url: '/api/version' });
    expect([v.statusCode, v.json()]).toEqual([200, { version: CHAT_PLATFORM_VERSION }]);
    const a = await bare.inject({ method: 'GET', url: '/assets/index-abc123.js' });
    expect(a.statusCode).toBe(404);
  });
});

describe('GET /api/changelog', () => {
  it("answers Gatehouse's release notes in Open WebUI's shape, newest first, the current version included", async () => {
    const r = await app.inject({ method: 'GET', url: '/api/changelog' });
    expect(r.statusCode).toBe(200);
    const body = r.json() as Record<string, { date: string; added?: { title: string; content: string }[] }>;
    expect(Object.keys(body)[0]).toBe(CHAT_PLATFORM_VERSION);
    expect(Object.keys(body).length).toBeLessThanOrEqual(5);
    expect(body).toEqual(Object.fromEntries(Object.entries(CHANGELOG).slice(0, 5)));
    for (const entry of Object.values(body)) {
      expect(entry.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      for (const item of entry.added ?? []) expect(Object.keys(item).sort()).toEqual(['content', 'title']);
    }
  });
});
