import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Validator } from '@seriousme/openapi-schema-validator';
import { CHAT_CATALOG, LLM_CATALOG, SPEECH_CATALOG, VECTOR_CATALOG, type HttpRoute } from '@gatehouse/contracts';
import { createLogger } from '@gatehouse/common';
import { faceForTests, quietServer } from '../gates/test-support.ts';
import { buildSpeechFace } from './speech/speech-face.ts';
import { buildVectorFace } from './vector/vector-face.ts';
import { buildLlmFace } from './llm/llm-face.ts';
import { buildChatFace, type ChatFaceOptions } from './chat/chat-face.ts';

/**
 * Each face's OpenAPI document (GET /openapi.json, made from its catalog): valid OpenAPI 3.1, a
 * path and method for every catalog route, and reachable as the face's other reads are.
 */
type Doc = { openapi: string; paths: Record<string, Record<string, { operationId?: string; requestBody?: unknown }>> };

async function documentOf(app: FastifyInstance, headers: Record<string, string> = {}): Promise<Doc> {
  const res = await app.inject({ method: 'GET', url: '/openapi.json', headers });
  expect(res.statusCode).toBe(200);
  return res.json() as Doc;
}

async function expectValid(doc: Doc): Promise<void> {
  const result = await new Validator().validate(doc as never);
  expect(result.errors ?? []).toEqual([]);
  expect(result.valid).toBe(true);
  expect(doc.openapi).toBe('3.1.0');
}

/** Every route of a catalog, as the document names it (`:id` → `{id}`). */
function catalogRoutes(catalog: Record<string, { routes: readonly HttpRoute[]; body?: unknown }>) {
  return Object.values(catalog).flatMap((e) => e.routes.map((r) => ({ method: r.method.toLowerCase(), path: r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}'), body: e.body })));
}

function expectEveryRoute(doc: Doc, catalog: Parameters<typeof catalogRoutes>[0]): void {
  const missing = catalogRoutes(catalog).filter((r) => !doc.paths[r.path]?.[r.method]);
  expect(missing).toEqual([]);
  for (const r of catalogRoutes(catalog)) if (r.body && r.method !== 'get') expect(doc.paths[r.path]![r.method]!.requestBody, `${r.method} ${r.path}`).toBeDefined();
}

describe('speech face document', () => {
  const face = faceForTests('speech', 'open', (gates) => buildSpeechFace(quietServer, { gates, bus: () => undefined, streamIdleMs: 1000 }));
  it('is valid OpenAPI with every catalog route, the request body from the catalog form', async () => {
    await face().set('speech', { keys: [randomBytes(32).toString('base64url')] });
    // Public, also while the gate is enforced.
    const doc = await documentOf(face().app);
    await expectValid(doc);
    expectEveryRoute(doc, SPEECH_CATALOG);
    expect(JSON.stringify(doc.paths['/v1/audio/speech']!.post!.requestBody)).toContain('response_format');
    expect((await face().app.inject({ url: '/docs' })).statusCode).toBeLessThan(400);
  });
});

describe('LLM face document', () => {
  const face = faceForTests('llm', 'open', (gates) => buildLlmFace(quietServer, { gates, bus: () => undefined, streamIdleMs: 1000 }));
  it('is valid OpenAPI with every catalog route, and public as every GET is, also with the gate enforced', async () => {
    await face().set('llm', { keys: [randomBytes(32).toString('base64url')] });
    const doc = await documentOf(face().app);
    await expectValid(doc);
    expectEveryRoute(doc, LLM_CATALOG);
    expect((await face().app.inject({ url: '/docs' })).statusCode).toBeLessThan(400);
    await face().set('llm', 'open');
  });
});

describe('vector face document', () => {
  const face = faceForTests('vector', 'open', (gates) => buildVectorFace(quietServer, { gates, bus: () => undefined }));
  it('is valid OpenAPI with every catalog route', async () => {
    await face().set('vector', 'open');
    const doc = await documentOf(face().app);
    await expectValid(doc);
    expectEveryRoute(doc, VECTOR_CATALOG);
  });
  it('is behind the gate as every read is: a key, or a read-only key, when enforced', async () => {
    const full = randomBytes(32).toString('base64url');
    const readOnly = randomBytes(32).toString('base64url');
    await face().set('vector', { keys: [full], readOnlyKeys: [readOnly] });
    expect((await face().app.inject({ url: '/openapi.json' })).statusCode).toBe(401);
    expect((await face().app.inject({ url: '/docs' })).statusCode).toBe(401);
    await expectValid(await documentOf(face().app, { 'api-key': readOnly }));
    await face().set('vector', 'open');
  });
});

describe('chat face document', () => {
  const options = (apiDocs: boolean): ChatFaceOptions => ({
    bus: () => undefined,
    sessions: { isRevoked: async () => false, revoke: async () => undefined, attemptSignin: async () => ({ allowed: true }) },
    redisReady: () => true,
    secret: randomBytes(32).toString('base64url'),
    cookie: { sameSite: 'lax', secure: false },
    streamIdleMs: 1000,
    apiDocs,
  });
  const build = (apiDocs: boolean) => buildChatFace({ log: createLogger('chat-docs-test', 'silent'), logRequests: false }, options(apiDocs));

  it('with ENV=dev: valid OpenAPI with every catalog route, public as Open WebUI serves it', async () => {
    const app = await build(true);
    try {
      const doc = await documentOf(app);
      await expectValid(doc);
      expectEveryRoute(doc, CHAT_CATALOG);
      expect(doc.paths['/api/chat/completions']?.post).toBeDefined();
      expect((await app.inject({ url: '/docs' })).statusCode).toBeLessThan(400);
    } finally {
      await app.close();
    }
  });

  it('otherwise: no document, the path is any other (a JSON 404 without the web UI)', async () => {
    const app = await build(false);
    try {
      const res = await app.inject({ url: '/openapi.json' });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ detail: 'Not Found' });
      expect((await app.inject({ url: '/docs' })).statusCode).toBe(404);
    } finally {
      await app.close();
    }
  });
});
