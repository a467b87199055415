import fc from 'fast-check';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { CHAT_CATALOG, CHAT_COMPLETION_PATHS, LLM_CATALOG, SPEECH_CATALOG, VECTOR_CATALOG, type HttpRoute } from '@gatehouse/contracts';
import { Stack, type Edge } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import { chatClient } from '../integration/chat-fixture.ts';

/**
 * Hostile input, property-based: random and boundary bodies for every route of the four
 * faces' catalogs — shaped like the route's schema with values of any type, any JSON at all, and
 * raw bytes no JSON parser should accept (invalid UTF-8, duplicate keys, 10 000-deep nesting,
 * numbers beyond every range, truncations) — plus random path parameters. Target: no 5xx, no
 * crash, no hung request, and every refusal in the face's own error format. Counts per face are
 * printed. `FUZZ_RUNS` (default 350) bodies per face; `FUZZ_SEED` replays a run.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 350);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
/** Longer than any answer a healthy stack gives to a bad request; past it a request counts as hung. */
const HUNG_MS = 15_000;

type Face = 'speech' | 'llm' | 'vector' | 'chat';
interface Route extends HttpRoute {
  body?: z.ZodType;
}

const stack = new Stack();
let edge: Edge;
let openai: Awaited<ReturnType<typeof startFakeOpenAI>>;
let token = '';
let admin: { email: string; password: string };
const chat = chatClient(() => edge.chatUrl);

beforeAll(async () => {
  openai = await startFakeOpenAI();
  await stack.startWorker();
  await stack.startProxyWorker({ OPENAI_API_BASE_URLS: openai.url, OPENAI_API_KEYS: 'fuzz-upstream' });
  await stack.startVectorWorker();
  await stack.startChatWorker();
  edge = await stack.startEdge();
  const a = await chat.signup('Fuzz Admin');
  token = a.token;
  admin = a;
}, 120_000);
afterAll(async () => {
  await stack.close();
  await openai?.close();
});

const routesOf = (catalog: Record<string, { routes: readonly HttpRoute[]; body?: z.ZodType }>): Route[] =>
  Object.values(catalog).flatMap((e) => e.routes.map((r) => ({ ...r, body: e.body })));

/** Operations that end the fuzzer's own session or account: sent, then the session is renewed. */
const RENEWS_SESSION = /signout|\/auths\/update\/password|\/users\/.*\/delete|\/users\/.*\/update/;

const FACES: Record<Face, { url: () => string; routes: Route[] }> = {
  speech: { url: () => edge.url, routes: routesOf(SPEECH_CATALOG) },
  llm: { url: () => edge.proxyUrl, routes: routesOf(LLM_CATALOG) },
  vector: { url: () => edge.vectorUrl, routes: routesOf(VECTOR_CATALOG) },
  chat: {
    url: () => edge.chatUrl,
    routes: [...routesOf(CHAT_CATALOG), ...CHAT_COMPLETION_PATHS.map((url) => ({ method: 'POST' as const, url }))],
  },
};

/** Is an error answer in the face's own envelope? (OAuth/OIDC endpoints answer in OAuth's.) */
function inFaceFormat(face: Face, body: unknown, path = ''): boolean {
  const b = body as Record<string, any> | null;
  if (!b || typeof b !== 'object') return false;
  if (face === 'chat' && path.startsWith('/oauth/')) return typeof b.error === 'string' || 'detail' in b;
  switch (face) {
    case 'speech':
      return typeof b.error?.message === 'string' && 'type' in b.error;
    case 'llm':
      return b.type === 'error' && typeof b.error?.type === 'string' && typeof b.error?.message === 'string';
    case 'vector':
      return typeof b.status?.error === 'string' && typeof b.time === 'number';
    case 'chat':
      return 'detail' in b;
  }
}

/** The top-level keys of an object schema (through optional/nullable/pipe wrappers), if it is one. */
function keysOf(schema: z.ZodType | undefined): string[] {
  let s: any = schema;
  for (let i = 0; s && i < 8; i++) {
    if (s.shape && typeof s.shape === 'object') return Object.keys(s.shape);
    s = s.def?.innerType ?? s.def?.in ?? s.def?.schema ?? (s.def?.options ? s.def.options[0] : undefined);
  }
  return [];
}

const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
const boundaryValue = fc.constantFrom<unknown>(
  0, -0, -1, 1.5, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, Number.MIN_VALUE,
  '', ' ', '\u0000', '\ud800', 'x'.repeat(70_000), '../../etc/passwd', '%2e%2e%2f', '<script>', "'; drop table x; --",
  true, false, null, [], {}, [null], { '': null }, { __proto__: { polluted: true } }, { constructor: { prototype: { x: 1 } } },
);
const anyValue = fc.oneof({ weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }) }, { weight: 2, arbitrary: boundaryValue });

/** A body: JSON text or raw bytes. */
function bodyArb(route: Route): fc.Arbitrary<{ kind: string; bytes: Buffer; type?: string }> {
  const keys = keysOf(route.body);
  const json = (kind: string) => (v: unknown) => ({ kind, bytes: Buffer.from(JSON.stringify(v) ?? 'null') });
  const shaped = keys.length
    ? fc.dictionary(fc.constantFrom(...keys), anyValue, { minKeys: 1, maxKeys: keys.length }).map(json('shaped'))
    : fc.dictionary(fc.string({ maxLength: 12 }), anyValue, { maxKeys: 4 }).map(json('shaped'));
  const raw = fc.oneof(
    fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => ({ kind: 'bytes', bytes: Buffer.concat([Buffer.from('{"'), Buffer.from(b)]) })),
    fc.constantFrom(
      Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), // {"\xff\xfe":1} — invalid UTF-8
      Buffer.from(`{"${keys[0] ?? 'a'}":1,"${keys[0] ?? 'a'}":"two"}`), // duplicate keys
      Buffer.from(deep(10_000)),
      Buffer.from(`{"${keys[0] ?? 'a'}":${deep(10_000)}}`),
      Buffer.from(`{"${keys[0] ?? 'a'}":"a\\u0000b","${keys[1] ?? 'b'}":"\\ud800"}`),
      Buffer.from(`{"${keys[0] ?? 'a'}":${'9'.repeat(400)}}`),
      Buffer.from(`{"${keys[0] ?? 'a'}":1e999999}`),
      Buffer.from('\ufeff{}'),
      Buffer.from('{"a":'),
      Buffer.from('null'),
      Buffer.from('"just a string"'),
      Buffer.from(''),
    ).map((bytes) => ({ kind: 'boundary-bytes', bytes })),
  );
  const body = fc.oneof({ weight: 4, arbitrary: shaped }, { weight: 2, arbitrary: anyValue.map(json('any-json')) }, { weight: 2, arbitrary: raw });
  return fc
    .tuple(body, fc.constantFrom<string | undefined>('application/json', 'application/json', 'application/json; charset=latin1', 'text/plain', undefined))
    .map(([b, type]) => ({ ...b, type }));
}

const paramArb = fc.oneof(
  fc.constantFrom('test', 'fuzz', '0', '18446744073709551615', '-1', '00000000-0000-0000-0000-000000000000', '%2e%2e', '%00', '..', 'x'.repeat(3000)),
  fc.string({ maxLength: 20 }).map((s) => encodeURIComponent(s) || 'e'),
);

interface Answer {
  status: number;
  text: string;
  ms: number;
}

/**
 * `declared`: send a content-length of that many bytes but only `bytes` of them, and take the
 * answer when it comes (a server refuses an oversized body as soon as it sees its length).
 */
function send(base: string, method: string, path: string, headers: Record<string, string>, bytes?: Buffer, declared?: number): Promise<Answer> {
  const u = new URL(path, base);
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: u.hostname, port: u.port, method, path: u.pathname + u.search, headers: { ...headers, ...(bytes ? { 'content-length': String(declared ?? bytes.length) } : {}) }, timeout: HUNG_MS },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), ms: performance.now() - t0 }));
        res.on('error', () => resolve({ status: -2, text: 'response aborted', ms: performance.now() - t0 }));
      },
    );
    req.on('timeout', () => {
      req.destroy();
      resolve({ status: -1, text: 'hung', ms: performance.now() - t0 });
    });
    req.on('error', (err) => resolve({ status: -2, text: `connection error: ${err.message}`, ms: performance.now() - t0 }));
    if (declared !== undefined) req.write(bytes!);
    else req.end(bytes);
  });
}

const counts: Record<Face, Record<string, number>> = { speech: {}, llm: {}, vector: {}, chat: {} };
const problems: string[] = [];
const seen = new Set<string>();

describe.each(Object.keys(FACES) as Face[])('hostile bodies: %s face', (face) => {
  it(`${RUNS} random and boundary requests: no 5xx, none hung, every refusal in the face's format (seed ${SEED})`, async () => {
    const { url, routes } = FACES[face];
    const arb = fc.constantFrom(...routes).chain((route) =>
      fc.record({
        route: fc.constant(route),
        params: fc.array(paramArb, { minLength: 4, maxLength: 4 }),
        body: route.method === 'GET' || route.method === 'HEAD' || route.method === 'DELETE' ? fc.option(bodyArb(route), { freq: 5 }) : bodyArb(route).map((b) => b as typeof b | null),
      }),
    );
    const samples = fc.sample(arb, { numRuns: RUNS, seed: SEED + face.length });
    const c = counts[face];
    for (const { route, params, body } of samples) {
      let i = 0;
      const path = route.url.replace(/:[A-Za-z_]+/g, () => params[i++ % params.length]!);
      const headers: Record<string, string> = {};
      if (body?.type) headers['content-type'] = body.type;
      if (face === 'chat') headers.authorization = `Bearer ${token}`;
      if (face === 'llm') headers['anthropic-version'] = '2023-06-01';
      const a = await send(url(), route.method, path, headers, body?.bytes);
      const what = `${route.method} ${path.slice(0, 120)} [${body?.kind ?? 'no body'}, ${body?.type ?? 'no type'}] → ${a.status}`;
      const cls = a.status < 0 ? (a.status === -1 ? 'hung' : 'connection-error') : `${Math.floor(a.status / 100)}xx`;
      c[cls] = (c[cls] ?? 0) + 1;
      if (a.status < 0 || a.status >= 500) {
        // What the services said about it: their error lines (pino level 50+) since the last look.
        const said = [...stack.workers, edge.proc].flatMap((p) => p.log().split('\n').filter((l) => /"level":(50|60)/.test(l) && !seen.has(l)));
        said.forEach((l) => seen.add(l));
        problems.push(`${face}: ${what}: ${a.text.slice(0, 300)}${said.length ? `\n    logged: ${said.map((l) => l.slice(0, 600)).join('\n    logged: ')}` : ''}`);
      }
      else if (a.status >= 400 && a.status !== 431 && !(a.status === 404 && face !== 'chat' && !a.text)) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(a.text);
        } catch {
          parsed = undefined;
        }
        if (!inFaceFormat(face, parsed, path)) {
          c['wrong-format'] = (c['wrong-format'] ?? 0) + 1;
          problems.push(`${face}: ${what}: not in the face's error format: ${a.text.slice(0, 200)}`);
        }
      }
      if (face === 'chat' && (a.status === 401 || RENEWS_SESSION.test(path))) {
        const r = await chat.call('/api/v1/auths/signin', null, 'POST', { email: admin.email, password: admin.password });
        if (r.status === 200) token = r.body.token;
      }
    }
    // The stack is still whole: every process alive, and a plain request still served.
    for (const p of [...stack.workers, edge.proc]) expect(p.running, `${p.name} still running`).toBe(true);
    console.log(`[fuzz] ${face}: ${RUNS} requests over ${routes.length} routes: ${JSON.stringify(c)}`);
    const mine = problems.filter((p) => p.startsWith(`${face}:`));
    for (const p of mine) console.log(`[fuzz] problem: ${p}`);
    expect(mine).toEqual([]);
  }, 600_000);
});

describe('oversized requests', () => {
  it.each(Object.keys(FACES) as Face[])('%s: a body over the limit is refused with 413 in the face format, a huge header with 431', async (face) => {
    const route = FACES[face].routes.find((r) => r.method === 'POST')!;
    const path = route.url.replace(/:[A-Za-z_]+/g, 'test');
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(face === 'chat' ? { authorization: `Bearer ${token}` } : {}) };
    const big = await send(FACES[face].url(), 'POST', path, headers, Buffer.alloc(1024 * 1024, 0x20), 512 * 1024 * 1024);
    expect(big.status).toBe(413);
    expect(inFaceFormat(face, JSON.parse(big.text))).toBe(true);
    const header = await send(FACES[face].url(), 'GET', path, { ...headers, 'x-padding': 'a'.repeat(64 * 1024) });
    expect(header.status).toBe(431);
  });
});
