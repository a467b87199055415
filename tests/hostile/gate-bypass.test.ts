import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enforcedState, flipGate, openState } from '../../scripts/src/gate-ops.ts';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import { chatClient } from '../integration/chat-fixture.ts';

/**
 * Gate bypass campaign: every trick a client can play with the path, the method, the
 * headers and HTTP framing, sent as raw bytes (no client library normalises them away), against
 * a protected resource of each face. Gated faces in both states: enforced, no trick may get a
 * 2xx; open, the same requests may pass but none may crash anything (no 5xx). The chat face has
 * accounts instead of a gate: no trick may read a signed-in route without a valid session.
 */
const stack = new Stack();
let edge: Edge;
let openai: Awaited<ReturnType<typeof startFakeOpenAI>>;
const keys = { speech: newKey(), llm: newKey(), vector: newKey() };
const chat = chatClient(() => edge.chatUrl);

type Gated = keyof typeof keys;
/** The protected request of each face (GET unless it has a body) and a write to try as well. */
const PROTECTED: Record<Gated | 'chat', { port: () => number; path: string; body?: string; post?: { path: string; body: string } }> = {
  speech: { port: () => edge.port, path: '/v1/models', post: { path: '/v1/audio/speech', body: '{"model":"tts-1","voice":"alloy","input":"hi"}' } },
  // The LLM gate covers non-GET /v1/* (model listing stays public), so its tricks are writes.
  llm: { port: () => edge.proxyPort, path: '/v1/messages', body: '{"model":"fake/echo","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}', post: { path: '/v1/messages/count_tokens', body: '{"model":"fake/echo","messages":[{"role":"user","content":"hi"}]}' } },
  vector: { port: () => edge.vectorPort, path: '/collections', post: { path: '/collections/x/points/count', body: '{}' } },
  chat: { port: () => edge.chatPort, path: '/api/v1/auths/', post: { path: '/api/v1/memories/add', body: '{"content":"x"}' } },
};
/** A public path of each face, the usual springboard for path tricks. */
const PUBLIC: Record<Gated | 'chat', string> = { speech: '/health', llm: '/health', vector: '/healthz', chat: '/health' };

beforeAll(async () => {
  openai = await startFakeOpenAI();
  await stack.startWorker();
  const dir = mkdtempSync(join(tmpdir(), 'gate-bypass-'));
  writeFileSync(join(dir, 'llm.json'), JSON.stringify({ providers: { fake: { type: 'openai', baseUrl: openai.url } } }));
  await stack.startProxyWorker({ LLMPROXY_CONFIG: join(dir, 'llm.json') });
  await stack.startVectorWorker();
  await stack.startChatWorker();
  edge = await stack.startEdge();
  await chat.signup('Bypass Admin');
}, 120_000);
afterAll(async () => {
  await stack.close();
  await openai?.close();
});

/** Send raw bytes; collect every status line the server answers with (pipelined requests give several). */
function raw(port: number, bytes: string, ms = 3000): Promise<number[]> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let text = '';
    const done = () => {
      s.destroy();
      resolve([...text.matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1])));
    };
    const t = setTimeout(done, ms);
    s.on('data', (d) => (text += d.toString('latin1')));
    s.on('close', () => (clearTimeout(t), done()));
    s.on('error', () => (clearTimeout(t), done()));
    s.write(bytes, 'latin1');
  });
}

/** Every trick, for one face: [name, raw request bytes]. `key` is a wrong key (another face's, or made up). */
function tricks(face: Gated | 'chat', wrongKey: string): Array<[string, string]> {
  const { path, post, body } = PROTECTED[face];
  const pub = PUBLIC[face];
  const seg = path.split('/').filter(Boolean);
  const H = 'Host: 127.0.0.1\r\n';
  const entity = body ? `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n` : '';
  const get = (p: string, extra = '', method = body ? 'POST' : 'GET', version = '1.1') =>
    `${method} ${p} HTTP/${version}\r\n${H}${extra}${method === 'POST' ? entity : ''}Connection: close\r\n\r\n${method === 'POST' ? (body ?? '') : ''}`;
  const paths = [
    `/.${path}`, `/${path}`, path.replace(/\/([^/]*)$/, '//$1'), `${pub}/..${path}`, `${pub}/%2e%2e${path}`, `${pub}/%2E%2E${path}`,
    `${pub}%2f..%2f${seg.join('%2f')}`, `${pub}/%252e%252e${path}`, `${pub}/..;${path}`, `/%2e${path}`, path.toUpperCase(),
    `${path};x=1`, `${path}?redirect=${pub}`, `${path}%00`, `${path}%20`, `${path}#${pub}`, path.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`),
    path.replaceAll('/', '\\'), `http://127.0.0.1${path}`, `${pub}/../..${path}`, `${pub}/./../${path.slice(1)}`,
  ];
  const out: Array<[string, string]> = paths.map((p) => [`path ${p}`, get(p)]);
  out.push(
    ['HEAD', get(path, '', 'HEAD')],
    ['OPTIONS', get(path, '', 'OPTIONS')],
    ['lower-case method', get(path, '', body ? 'post' : 'get')],
    ['TRACE', get(path, '', 'TRACE')],
    ['method override header', `POST ${pub} HTTP/1.1\r\n${H}X-HTTP-Method-Override: GET\r\nX-Original-URL: ${path}\r\nX-Rewrite-URL: ${path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`],
    ['HTTP/1.0 without Host', get(path, '').replace(' HTTP/1.1', ' HTTP/1.0').replace(H, '')],
    ['HTTP/0.9 style', `${body ? 'POST' : 'GET'} ${path}\r\n\r\n`],
    ['wrong key as Bearer', get(path, `Authorization: Bearer ${wrongKey}\r\n`)],
    ['lower-case scheme', get(path, `authorization: bearer ${wrongKey}\r\n`)],
    ['empty Bearer', get(path, 'Authorization: Bearer \r\n')],
    ['Bearer with spaces', get(path, 'Authorization: Bearer    \r\n')],
    ['duplicate Authorization (wrong, empty)', get(path, `Authorization: Bearer ${wrongKey}\r\nAuthorization: Bearer\r\n`)],
    ['duplicate Authorization (empty, wrong)', get(path, `Authorization:\r\nAuthorization: Bearer ${wrongKey}\r\n`)],
    ['Basic instead of Bearer', get(path, `Authorization: Basic ${Buffer.from(`x:${wrongKey}`).toString('base64')}\r\n`)],
    ['x-api-key / api-key / x-proxy-key wrong', get(path, `x-api-key: ${wrongKey}\r\napi-key: ${wrongKey}\r\nx-proxy-key: ${wrongKey}\r\n`)],
    ['upper-case header names', get(path, `AUTHORIZATION: Bearer ${wrongKey}\r\nX-API-KEY: ${wrongKey}\r\n`)],
    ['cookie token', get(path, `Cookie: token=${wrongKey}\r\n`)],
    ['spoofed internal headers', get(path, `X-Gatehouse-Identity: {"id":"admin","role":"admin"}\r\nGh-Identity: admin\r\nNats-Msg-Id: 1\r\nX-Forwarded-For: 127.0.0.1\r\nX-Real-IP: 127.0.0.1\r\n`)],
    ['header with obs-fold', get(path, `X-Api-Key: x\r\n ${wrongKey}\r\n`)],
    ['pipelined after a public request', `GET ${pub} HTTP/1.1\r\n${H}\r\n${get(path)}`],
    ['TE + CL smuggling', `POST ${pub} HTTP/1.1\r\n${H}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${get(path)}`],
    ['CL + CL smuggling', `POST ${pub} HTTP/1.1\r\n${H}Content-Length: 0\r\nContent-Length: 40\r\n\r\n${get(path)}`],
    ['TE obfuscated', `POST ${pub} HTTP/1.1\r\n${H}Transfer-Encoding: xchunked\r\nContent-Length: 0\r\n\r\n${get(path)}`],
  );
  if (post) {
    const p = (extra: string) => `POST ${post.path} HTTP/1.1\r\n${H}Content-Type: application/json\r\nContent-Length: ${post.body.length}\r\n${extra}Connection: close\r\n\r\n${post.body}`;
    out.push(['write without credentials', p('')], ['write with a wrong key', p(`Authorization: Bearer ${wrongKey}\r\nx-api-key: ${wrongKey}\r\n`)]);
    out.push(['write, path trick', p('').replace(post.path, `${pub}/..${post.path}`)]);
  }
  return out;
}

async function campaign(face: Gated | 'chat', wrongKey: string) {
  const results: Array<{ name: string; statuses: number[] }> = [];
  for (const [name, bytes] of tricks(face, wrongKey)) results.push({ name, statuses: await raw(PROTECTED[face].port(), bytes) });
  return results;
}

/** A trick "succeeds" when the protected request it carries gets a 2xx (the springboard's own 2xx, first in a pipeline, does not count). */
function successes(results: Array<{ name: string; statuses: number[] }>): string[] {
  return results
    .filter(({ name, statuses }) => {
      const relevant = name.startsWith('pipelined') || name.includes('smuggling') || name.startsWith('TE ') ? statuses.slice(1) : statuses;
      return relevant.some((s) => s >= 200 && s < 300);
    })
    .map(({ name, statuses }) => `${name} → ${statuses.join(', ')}`);
}

const serverErrors = (results: Array<{ name: string; statuses: number[] }>) =>
  results.filter((r) => r.statuses.some((s) => s >= 500)).map(({ name, statuses }) => `${name} → ${statuses.join(', ')}`);

describe('gate bypass campaign', () => {
  it.each(['speech', 'llm', 'vector'] as Gated[])('%s enforced: no trick gets through, none crashes', async (face) => {
    const store = await stack.store();
    await flipGate(store, face, enforcedState([keys[face]], 'bypass-test'));
    // The real key still works (the campaign is not refused for some other reason).
    const { path, body } = PROTECTED[face];
    const proper = body
      ? `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${keys[face]}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`
      : `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${keys[face]}\r\nConnection: close\r\n\r\n`;
    expect(await raw(PROTECTED[face].port(), proper)).toEqual([200]);
    // Another face's key is a wrong key here.
    const other = keys[face === 'speech' ? 'llm' : 'speech'];
    const results = await campaign(face, other);
    const got = successes(results);
    console.log(`[bypass] ${face} enforced: ${results.length} tricks, ${got.length} successes, statuses: ${JSON.stringify(tally(results))}`);
    expect(got).toEqual([]);
    expect(serverErrors(results).filter((r) => !r.endsWith('503'))).toEqual([]);
  });

  it.each(['speech', 'llm', 'vector'] as Gated[])('%s open: the same tricks crash nothing', async (face) => {
    await flipGate(await stack.store(), face, openState('bypass-test'));
    const results = await campaign(face, newKey());
    console.log(`[bypass] ${face} open: ${results.length} tricks, statuses: ${JSON.stringify(tally(results))}`);
    expect(serverErrors(results)).toEqual([]);
  });

  it('chat: no trick reads a signed-in route without a valid session', async () => {
    const results = await campaign('chat', newKey());
    const got = successes(results);
    console.log(`[bypass] chat: ${results.length} tricks, ${got.length} successes, statuses: ${JSON.stringify(tally(results))}`);
    expect(got).toEqual([]);
    expect(serverErrors(results)).toEqual([]);
  });
});

function tally(results: Array<{ statuses: number[] }>): Record<string, number> {
  const t: Record<string, number> = {};
  for (const r of results) for (const s of r.statuses.length ? r.statuses : [0]) t[s] = (t[s] ?? 0) + 1;
  return t;
}
